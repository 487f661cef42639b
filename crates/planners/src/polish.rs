//! Schedule polishing: a pass over any strategy's schedule that drops recomputations the
//! memory target does not need.
//!
//! Dropping the recomputation of `u` at step `j` makes the uses that read it read `u`'s
//! previous instance `i` instead, which then stays resident through the gap between its last
//! use and `j`. So the drop costs `bytes(u)` over that gap and saves the cost of step `j`;
//! an instance nothing reads (TWRemat computes whole separator bags) costs nothing to drop.
//! A drop is taken when the memory at every step of the gap, plus `bytes(u)`, stays within
//! the target; most expensive recomputations first. The bookkeeping is conservative (a drop
//! can also end the lifetimes of step `j`'s inputs earlier, which is not credited), so the
//! peak never exceeds the target; rounds repeat on the exactly re-simulated schedule until
//! nothing more drops. Only steps are removed, so the cost never rises.
//!
//! An instance nothing reads is dropped too, when its node keeps another instance: the first
//! one of its node (a strategy that computed a value and evicted it unread, as DTR can) or a
//! view (which would only pin its source). The lowering erases such ops, so keeping them would
//! plan memory the step never holds.
//!
//! Views nothing reads aside, views are never dropped (a view re-made from a newer source instance would pin an older
//! one), nor are instances that views were made from. Where a step takes the buffer of an
//! instance that dies there ([`remat_graph::Node::reuses`]), extending that instance costs the
//! step a buffer of its own too, which the bookkeeping counts. A recomputation fused into its
//! reader ([`remat_graph::Lifetimes::fused`]) holds no bytes: dropping it keeps the previous
//! instance alive through its reader, and it is never made to live on for a later reader;
//! each round's exact re-simulation decides fusions afresh, and a fusion never makes a step
//! hold more than it would unfused. Fusions decided afresh can still undo one the bookkeeping
//! counted on (a reader's buffer reuse returns once an input dies there, so fusing no longer
//! pays), and buffer reuses can move when instances live longer: each round's schedule is
//! re-simulated exactly, and where it exceeds what was allowed, the longest prefix of its
//! drops that fits is kept (a bisection of exact re-simulations), and polishing stops.

use crate::Deadline;
use remat_graph::{lifetimes, Graph, Schedule};

/// At most this many rounds of re-simulation.
const MAX_ROUNDS: usize = 8;

/// Drops recomputations from `schedule` while its peak stays at most `target` (a schedule
/// that already exceeds `target` only loses drops that lower memory). `schedule` must be
/// valid for `graph`.
pub fn polish(graph: &Graph, schedule: &[remat_graph::NodeId], target: u64) -> Schedule {
    polish_until(graph, schedule, target, Deadline::NONE).0
}

/// `schedule` with every value made from nothing resident (its inputs all arguments or
/// constants that own no bytes) recomputed right before each reader that does not follow the
/// previous use (or the making) at once; `None` where there is no such reader. The copies
/// cost their work and hold nothing between uses, so polishing the result can drop dearer
/// recomputations the held value made necessary, and drops the copies back where there is
/// room (a constant broadcast held across a recurrent step's whole backward:
/// docs/bench/README.md, "Paired blocks").
pub(crate) fn sources_just_in_time(graph: &Graph, schedule: &[remat_graph::NodeId]) -> Option<Schedule> {
    let is_source = |v: remat_graph::NodeId| {
        let node = graph.node(v);
        !node.argument
            && node.pure
            && !node.output
            && node.bytes > 0
            && node.view_of.is_none()
            && node.reuses.is_none()
            && graph.preds(v).iter().all(|&p| {
                let input = graph.node(p);
                input.argument || (input.bytes == 0 && input.view_of.is_none())
            })
    };
    // Per node: the step of the last use of its current instance.
    let mut last_use = vec![usize::MAX; graph.len()];
    let mut out = Vec::with_capacity(schedule.len());
    let mut inserted = 0;
    for &v in schedule {
        let mut read: Vec<remat_graph::NodeId> = graph.preds(v).to_vec();
        read.sort_unstable();
        read.dedup();
        for u in read {
            let last = last_use[u.index()];
            if last != usize::MAX && last + 1 < out.len() && is_source(u) {
                out.push(u);
                inserted += 1;
            }
            last_use[u.index()] = out.len();
        }
        last_use[v.index()] = out.len();
        out.push(v);
    }
    (inserted > 0).then_some(out)
}

/// [`polish`], stopped once `deadline` passes: the drops taken by then are kept (each one
/// keeps the schedule valid and within the target on its own), the rest are not tried. The
/// flag says whether the deadline cut it short (a schedule with nothing to drop never is).
pub fn polish_until(
    graph: &Graph,
    schedule: &[remat_graph::NodeId],
    target: u64,
    deadline: Deadline,
) -> (Schedule, bool) {
    let mut schedule = schedule.to_vec();
    let mut probe = deadline.probe();
    let mut cut = false;
    for _ in 0..MAX_ROUNDS {
        if cut {
            break;
        }
        let Ok(life) = lifetimes(graph, &schedule) else { break };
        let steps = schedule.len();
        let mut memory = MaxTree::new(&life.step_bytes);
        let mut end = life.end.clone();
        let mut has_views = vec![false; steps];
        for s in life.view_source.iter().flatten() {
            has_views[*s] = true;
        }
        // taken_at[i]: the step that takes instance i's buffer (it dies there).
        let mut taken_at: Vec<Option<usize>> = vec![None; steps];
        for (s, reused) in life.reused.iter().enumerate() {
            if let Some(i) = reused {
                taken_at[*i] = Some(s);
            }
        }
        let mut previous = vec![usize::MAX; steps];
        let mut last_seen = vec![usize::MAX; graph.len()];
        // following[j]: the node's next instance after j.
        let mut following = vec![usize::MAX; steps];
        for (j, &u) in schedule.iter().enumerate() {
            previous[j] = last_seen[u.index()];
            if previous[j] != usize::MAX {
                following[previous[j]] = j;
            }
            last_seen[u.index()] = j;
        }
        // An instance nothing reads (an output's latest instance is read by the end of the step).
        let unread =
            |j: usize| !(end[j] > j || (graph.node(schedule[j]).output && last_seen[schedule[j].index()] == j));
        // A recomputation fused into its reader ([`remat_graph::Lifetimes::fused`]) holds no
        // bytes: dropping it keeps the previous instance alive up to the reader, and it is never
        // kept alive itself for a later reader. Dropping its reader leaves it a buffer nothing
        // reads, for one step (the next round drops it).
        let mut candidates: Vec<usize> = (0..steps)
            .filter(|&j| {
                !has_views[j]
                    && if graph.node(schedule[j]).view_of.is_none() {
                        previous[j] != usize::MAX || unread(j)
                    } else {
                        // A view nothing reads only pins its source.
                        unread(j)
                    }
            })
            .collect();
        candidates
            .sort_by(|&a, &b| graph.node(schedule[b]).cost.total_cmp(&graph.node(schedule[a]).cost).then(b.cmp(&a)));
        let mut removed = vec![false; steps];
        // The drops in the order taken (each judged on the ones before it).
        let mut taken: Vec<usize> = Vec::new();
        // Fused recomputations as this round's drops leave them.
        let mut fused = life.fused.clone();
        let mut dropped = 0;
        // Instances of each node not dropped: every node keeps one (the schedule's rule).
        let mut instances = vec![0usize; graph.len()];
        for &u in &schedule {
            instances[u.index()] += 1;
        }
        for j in candidates {
            if probe.expired() {
                cut = true;
                break;
            }
            let mut i = previous[j];
            while i != usize::MAX && removed[i] {
                i = previous[i];
            }
            // The recomputation fused into j, unfused once j goes: its buffer at its own step.
            let unfused = (j > 0 && fused[j - 1] && !removed[j - 1]).then(|| graph.node(schedule[j - 1]).bytes as i128);
            if let Some(held) = unfused {
                if memory.max(j - 1, j - 1) + held > target as i128 {
                    continue;
                }
                memory.add(j - 1, j - 1, held);
            }
            let keep = |memory: &mut MaxTree| {
                if let Some(held) = unfused {
                    memory.add(j - 1, j - 1, -held);
                }
            };
            let bytes = graph.node(schedule[j]).bytes as i128;
            // An output's latest instance is read by the end of the step even at the last step.
            let read = end[j] > j || (graph.node(schedule[j]).output && last_seen[schedule[j].index()] == j);
            if i == usize::MAX || graph.node(schedule[j]).view_of.is_some() {
                // An instance nothing reads with no earlier one, or a view nothing reads: dropped
                // when its node keeps another instance. The lowering erases such an op, so
                // keeping it would plan a buffer (or a pinned source) that never exists.
                // The node's next instance becomes its first, which is never fused.
                let mut next = following[j];
                while next != usize::MAX && removed[next] {
                    next = following[next];
                }
                let unfuses_next = i == usize::MAX && next != usize::MAX && fused[next];
                if read || instances[schedule[j].index()] < 2 || unfuses_next {
                    keep(&mut memory);
                    continue;
                }
                memory.add(j, j, -(1i128 << 100));
                removed[j] = true;
                taken.push(j);
                instances[schedule[j].index()] -= 1;
                dropped += 1;
                if unfused.is_some() {
                    fused[j - 1] = false;
                }
                continue;
            }
            // A step that took i's buffer where i died needs a buffer of its own once i lives on.
            let taken_at_end = taken_at[i] == Some(end[i]);
            // Where i, living on, starts to hold bytes it did not: a fused i from its own step
            // (it was never a buffer), else that step, else the step past its end.
            let held_from = if fused[i] {
                i
            } else if taken_at_end {
                end[i]
            } else {
                end[i] + 1
            };
            if fused[j] {
                // Fused, j held nothing: i lives on through j's reader, which now reads it.
                if end[i] < end[j] {
                    if memory.max(held_from, end[j]) + bytes > target as i128 {
                        keep(&mut memory);
                        continue;
                    }
                    memory.add(held_from, end[j], bytes);
                    taken_at[i] = None;
                    fused[i] = false;
                }
            } else if read && end[i] < j {
                // The gap (end[i], j) must fit the value held over it.
                if held_from < j {
                    if memory.max(held_from, j - 1) + bytes > target as i128 {
                        keep(&mut memory);
                        continue;
                    }
                    memory.add(held_from, j - 1, bytes);
                }
                taken_at[i] = taken_at[j];
                fused[i] = false;
            } else if read {
                // Both instances were live at once over [j, min(end[i], end[j])] — except at i's
                // end if a step took its buffer there and i now lives on: that step held one
                // buffer for both, and now holds its own beside i.
                let lives_on = end[j] > end[i];
                let last = if taken_at_end && lives_on { end[i].checked_sub(1) } else { Some(end[i].min(end[j])) };
                if let Some(last) = last.filter(|&l| l >= j) {
                    memory.add(j, last, -bytes);
                }
                if lives_on {
                    taken_at[i] = taken_at[j];
                }
            }
            end[i] = end[i].max(if read { end[j] } else { i });
            memory.add(j, j, -(1i128 << 100));
            removed[j] = true;
            taken.push(j);
            instances[schedule[j].index()] -= 1;
            dropped += 1;
            if unfused.is_some() {
                fused[j - 1] = false;
            }
        }
        if dropped == 0 {
            break;
        }
        let without = |drops: &[usize]| -> Schedule {
            let mut gone = vec![false; steps];
            for &j in drops {
                gone[j] = true;
            }
            schedule.iter().enumerate().filter(|&(j, _)| !gone[j]).map(|(_, &u)| u).collect()
        };
        let allowed = target.max(life.step_bytes.iter().copied().max().unwrap_or(0));
        let peak = |s: &[remat_graph::NodeId]| {
            lifetimes(graph, s).map_or(u64::MAX, |l| l.step_bytes.into_iter().max().unwrap_or(0))
        };
        let polished = without(&taken);
        if peak(&polished) <= allowed {
            schedule = polished;
            continue;
        }
        // Fusions decided afresh can undo one the bookkeeping counted on (a reader's reuse
        // returns, so fusing no longer pays), and buffer reuses can move where instances live
        // longer: keep the longest prefix of the drops that fits.
        let (mut fits, mut over) = (0, taken.len());
        while over - fits > 1 {
            let mid = (fits + over) / 2;
            if peak(&without(&taken[..mid])) <= allowed {
                fits = mid;
            } else {
                over = mid;
            }
        }
        schedule = without(&taken[..fits]);
        break;
    }
    (schedule, cut)
}

/// Range add, range max over step memory (a lazy segment tree).
struct MaxTree {
    size: usize,
    max: Vec<i128>,
    pending: Vec<i128>,
}

impl MaxTree {
    fn new(values: &[u64]) -> Self {
        let size = values.len().max(1).next_power_of_two();
        let mut max = vec![i128::MIN / 4; 2 * size];
        for (i, &v) in values.iter().enumerate() {
            max[size + i] = v as i128;
        }
        for i in (1..size).rev() {
            max[i] = max[2 * i].max(max[2 * i + 1]);
        }
        MaxTree { size, max, pending: vec![0; 2 * size] }
    }

    fn add(&mut self, lo: usize, hi: usize, delta: i128) {
        if lo <= hi {
            self.add_in(1, 0, self.size - 1, lo, hi, delta);
        }
    }

    fn add_in(&mut self, node: usize, l: usize, r: usize, lo: usize, hi: usize, delta: i128) {
        if hi < l || r < lo {
            return;
        }
        if lo <= l && r <= hi {
            self.max[node] += delta;
            self.pending[node] += delta;
            return;
        }
        let mid = (l + r) / 2;
        self.add_in(2 * node, l, mid, lo, hi, delta);
        self.add_in(2 * node + 1, mid + 1, r, lo, hi, delta);
        self.max[node] = self.max[2 * node].max(self.max[2 * node + 1]) + self.pending[node];
    }

    fn max(&self, lo: usize, hi: usize) -> i128 {
        self.max_in(1, 0, self.size - 1, lo, hi)
    }

    fn max_in(&self, node: usize, l: usize, r: usize, lo: usize, hi: usize) -> i128 {
        if hi < l || r < lo {
            return i128::MIN / 4;
        }
        if lo <= l && r <= hi {
            return self.max[node];
        }
        let mid = (l + r) / 2;
        self.max_in(2 * node, l, mid, lo, hi).max(self.max_in(2 * node + 1, mid + 1, r, lo, hi)) + self.pending[node]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_graph::{simulate, GraphBuilder, NodeSpec};

    #[test]
    fn the_tree_adds_and_finds_maxima() {
        let mut t = MaxTree::new(&[1, 5, 2, 7, 3]);
        assert_eq!(t.max(0, 4), 7);
        assert_eq!(t.max(0, 2), 5);
        t.add(1, 2, 10);
        assert_eq!(t.max(0, 4), 15);
        assert_eq!(t.max(3, 4), 7);
        t.add(0, 4, -1);
        assert_eq!(t.max(2, 2), 11);
    }

    #[test]
    fn a_source_recomputed_where_read_lets_polishing_drop_a_dearer_recomputation() {
        // S (10 B, cost 1) is made from a constant and read by P and, much later, by D; X
        // (10 B, cost 100) too. Holding both through C peaks at 31, so the plan recomputes X
        // before D (peak 22). With S recomputed before D instead of held, X fits held.
        let mut g = GraphBuilder::new();
        let k = g.add(NodeSpec::op("K", 0, 0.0), &[]);
        let s = g.add(NodeSpec::op("S", 10, 1.0), &[k]);
        let x = g.add(NodeSpec::op("X", 10, 100.0), &[]);
        let p = g.add(NodeSpec::op("P", 1, 1.0), &[s, x]);
        let c = g.add(NodeSpec::op("C", 10, 1.0), &[p]);
        let e = g.add(NodeSpec::op("E", 1, 1.0), &[c]);
        let d = g.add(NodeSpec::op("D", 1, 1.0).output(), &[s, x, e]);
        let g = g.finish().unwrap();
        let plan = vec![k, s, x, p, c, e, x, d];
        assert_eq!(simulate(&g, &plan).unwrap().peak_bytes, 22);
        assert_eq!(polish(&g, &plan, 22), plan, "nothing to drop as it stands");
        let copied = sources_just_in_time(&g, &plan).unwrap();
        // S and X before each reader a step or more after their last use.
        assert_eq!(copied, vec![k, s, x, s, x, p, c, e, x, s, x, d]);
        let polished = polish(&g, &copied, 22);
        let sim = simulate(&g, &polished).unwrap();
        assert_eq!((sim.peak_bytes, sim.cost), (22, 106.0), "{polished:?}");
        assert_eq!(polished.iter().filter(|&&v| v == x).count(), 1, "X runs once");
        // Reads that follow the making at once are left alone.
        assert_eq!(sources_just_in_time(&g, &[k, s]), None);
    }

    #[test]
    fn drops_a_recomputation_the_target_allows_and_keeps_one_it_needs() {
        // A (10) feeds B and D; C (10) and E run in between. Recomputing A before D keeps it
        // out of memory while C is live: peak 12 instead of 21.
        let mut g = GraphBuilder::new();
        let a = g.add(NodeSpec::op("A", 10, 5.0), &[]);
        let b = g.add(NodeSpec::op("B", 1, 1.0), &[a]);
        let c = g.add(NodeSpec::op("C", 10, 1.0), &[b]);
        let e = g.add(NodeSpec::op("E", 1, 1.0), &[c]);
        let d = g.add(NodeSpec::op("D", 1, 1.0).output(), &[a, e]);
        let g = g.finish().unwrap();
        let remat = vec![a, b, c, e, a, d];
        assert_eq!(simulate(&g, &remat).unwrap().peak_bytes, 12);
        // A target at the rematerialized peak keeps the recomputation...
        assert_eq!(polish(&g, &remat, 12), remat);
        // ...the plain order's peak drops it.
        let plain = polish(&g, &remat, 21);
        assert_eq!(plain, vec![a, b, c, e, d]);
        assert_eq!(simulate(&g, &plain).unwrap().peak_bytes, 21);
    }

    #[test]
    fn unread_recomputations_always_go() {
        let mut g = GraphBuilder::new();
        let a = g.add(NodeSpec::op("A", 10, 1.0), &[]);
        let b = g.add(NodeSpec::op("B", 1, 1.0).output(), &[a]);
        let g = g.finish().unwrap();
        assert_eq!(polish(&g, &[a, b, a], 0), vec![a, b]);
    }
}

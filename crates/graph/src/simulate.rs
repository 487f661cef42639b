//! The memory model: schedule validity and the per-step memory timeline.
//!
//! Kumar et al. (2019) §2.1 define the memory of step `i` as the sizes of
//! `U_i = {u_i} ∪ in(u_i) ∪ ⋃_{j>i} {u' ∈ in(u_j) | prev(u', j) ≤ i}`. We track *instances*
//! (one per step) rather than nodes, which states the same thing for repeated nodes, and add
//! what MLIR needs (docs/memory-model.md):
//!
//! * arguments are resident throughout and counted separately (`argument_bytes`);
//! * the latest instance of every output node stays live to the end;
//! * a view instance owns no bytes and keeps the source instance it was made from live for as
//!   long as it is live itself.
//!
//! # Host transfers
//!
//! A plan may also move values to host memory and back ([`Transfer`], Beaumont et al. 2021's
//! offload and prefetch). Memory is then two numbers per step: *device* bytes (`step_bytes`,
//! the peak the budget bounds) and *host* bytes (`host_step_bytes`). An instance offloaded
//! after step `a` and prefetched before step `p` holds no device bytes at steps `a+1 … p-1`
//! (its device buffer is freed once the copy to the host is done, and the copy back is
//! allocated right before step `p`), and holds host bytes between steps `a` and `p`. No step
//! in that window may read it.
//!
//! Cost: O(steps + Σ inputs + transfers) time and memory.

use crate::graph::{Graph, NodeId};

/// What is wrong with a schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleErrorKind {
    /// A step names a node id outside the graph.
    UnknownNode,
    /// A step executes a pinned argument.
    ExecutesArgument,
    /// A step uses an input that no earlier step computed.
    InputNotComputed(NodeId),
    /// An impure node is executed more than once.
    ImpureRepeated,
    /// A node is never executed.
    NeverExecuted,
    /// A host transfer breaks a rule (what is wrong, in words).
    InvalidTransfer(&'static str),
}

/// A schedule that breaks the rules, with the step (if any) and node at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct ScheduleError {
    /// What is wrong.
    pub kind: ScheduleErrorKind,
    /// The offending step, when the problem is at one.
    pub step: Option<usize>,
    /// The offending node.
    pub node: NodeId,
}

impl ScheduleError {
    fn describe(&self) -> String {
        let at = self.step.map(|s| format!("step {s}: ")).unwrap_or_default();
        match &self.kind {
            ScheduleErrorKind::UnknownNode => format!("{at}node {} does not exist", self.node),
            ScheduleErrorKind::ExecutesArgument => {
                format!("{at}node {} is an argument and cannot be executed", self.node)
            }
            ScheduleErrorKind::InputNotComputed(p) => {
                format!("{at}node {} uses node {p}, which no earlier step computed", self.node)
            }
            ScheduleErrorKind::ImpureRepeated => format!("{at}node {} is impure and executed twice", self.node),
            ScheduleErrorKind::NeverExecuted => format!("node {} is never executed", self.node),
            ScheduleErrorKind::InvalidTransfer(why) => format!("{at}the host transfer of node {}: {why}", self.node),
        }
    }
}

/// A host round trip of one value instance: the instance computed at step `instance` is
/// copied to host memory after step `offload_after` and copied back right before step
/// `prefetch_before`, which (or a later step) reads the copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Transfer {
    /// The step that computed the instance.
    pub instance: usize,
    /// The step after which it is offloaded (`>= instance`).
    pub offload_after: usize,
    /// The step before which it is prefetched (`> offload_after`).
    pub prefetch_before: usize,
}

/// The measured memory and cost of a valid schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Simulation {
    /// Device bytes resident at each step (arguments excluded).
    pub step_bytes: Vec<u64>,
    /// The maximum of `step_bytes` (0 for an empty schedule).
    pub peak_bytes: u64,
    /// The first step at which the peak is reached.
    pub peak_step: Option<usize>,
    /// Sum of the costs of all steps.
    pub cost: f64,
    /// Number of steps that re-execute a node already executed earlier.
    pub recomputations: usize,
    /// Of those, the ones fused into the step after them ([`Lifetimes::fused`]).
    pub fused_recomputations: usize,
    /// Host bytes held between each step and the next (all zero without transfers).
    pub host_step_bytes: Vec<u64>,
    /// The maximum of `host_step_bytes`.
    pub host_peak_bytes: u64,
    /// Bytes copied to the host over the whole schedule (each transfer counted once).
    pub offloaded_bytes: u64,
}

/// Checks that `schedule` is a complete, valid schedule of `graph`: every input of a step was
/// computed by an earlier step (or is an argument), impure nodes run exactly once, and every
/// non-argument node runs at least once.
pub fn validate(graph: &Graph, schedule: &[NodeId]) -> Result<(), ScheduleError> {
    let mut executed = vec![0u32; graph.len()];
    for (step, &node) in schedule.iter().enumerate() {
        if node.index() >= graph.len() {
            return Err(ScheduleError { kind: ScheduleErrorKind::UnknownNode, step: Some(step), node });
        }
        let info = graph.node(node);
        if info.argument {
            return Err(ScheduleError { kind: ScheduleErrorKind::ExecutesArgument, step: Some(step), node });
        }
        for &p in graph.preds(node) {
            if !graph.node(p).argument && executed[p.index()] == 0 {
                return Err(ScheduleError { kind: ScheduleErrorKind::InputNotComputed(p), step: Some(step), node });
            }
        }
        if !info.pure && executed[node.index()] > 0 {
            return Err(ScheduleError { kind: ScheduleErrorKind::ImpureRepeated, step: Some(step), node });
        }
        executed[node.index()] += 1;
    }
    if let Some(node) = graph.ids().find(|&n| !graph.node(n).argument && executed[n.index()] == 0) {
        return Err(ScheduleError { kind: ScheduleErrorKind::NeverExecuted, step: None, node });
    }
    Ok(())
}

/// Per-instance lifetimes of a valid schedule: what [`simulate`] sums, for passes that edit a
/// schedule and need to know which instance each step's value lives in.
#[derive(Clone, Debug, PartialEq)]
pub struct Lifetimes {
    /// `end[i]`: the last step at which the instance made at step `i` is live (its last use
    /// before the node's next execution, the end for an output's latest instance, or the end
    /// of a view made from it); `end[i] == i` for an instance nothing reads.
    pub end: Vec<usize>,
    /// `view_source[i]`: for a view made at step `i`, the step that made its source instance.
    pub view_source: Vec<Option<usize>>,
    /// Bytes resident at each step (arguments excluded).
    pub step_bytes: Vec<u64>,
    /// `reused[i]`: the instance whose buffer the step `i` takes for its result (its node
    /// [`reuses`](crate::Node::reuses) it, and it dies at step `i`).
    pub reused: Vec<Option<usize>>,
    /// `fused[i]`: step `i` recomputes a value that step `i + 1` alone reads and computes
    /// itself (its node [`fuses`](crate::Node::fuses) it): the two run as one fused op, the
    /// value is never materialized, and its inputs live until step `i + 1`.
    pub fused: Vec<bool>,
    /// Sum of the costs of all steps.
    pub cost: f64,
    /// Number of steps that re-execute a node already executed earlier.
    pub recomputations: usize,
}

/// Validates `schedule` and computes the lifetime of every instance.
pub fn lifetimes(graph: &Graph, schedule: &[NodeId]) -> Result<Lifetimes, ScheduleError> {
    lifetimes_with_transfers(graph, schedule, &[])
}

/// [`lifetimes`] of a schedule with host `transfers` (not checked here): a step after which
/// something is offloaded is never fused into the next, so every transfer's window keeps the
/// reads it had.
pub fn lifetimes_with_transfers(
    graph: &Graph,
    schedule: &[NodeId],
    transfers: &[Transfer],
) -> Result<Lifetimes, ScheduleError> {
    validate(graph, schedule)?;
    let steps = schedule.len();
    // latest[n] = the step whose instance of n is the most recent so far.
    let mut latest: Vec<Option<usize>> = vec![None; graph.len()];
    let mut end: Vec<usize> = (0..steps).collect();
    let mut view_source: Vec<Option<usize>> = vec![None; steps];
    let mut reuse_input: Vec<Option<usize>> = vec![None; steps];
    let mut cost = 0.0;
    let mut recomputations = 0;
    for (step, &node) in schedule.iter().enumerate() {
        for &p in graph.preds(node) {
            if let Some(instance) = latest[p.index()] {
                end[instance] = end[instance].max(step);
            }
        }
        if let Some(input) = graph.node(node).reuses {
            reuse_input[step] = latest[input.index()];
        }
        if let Some(source) = graph.node(node).view_of {
            view_source[step] = latest[source.index()];
        }
        if latest[node.index()].is_some() {
            recomputations += 1;
        }
        latest[node.index()] = Some(step);
        cost += graph.node(node).cost;
    }
    // Instances whose storage an output holds at the end (its latest instance, or the source
    // of a view that is): never a buffer a step may take.
    let mut held_to_end = vec![false; steps];
    if steps > 0 {
        for out in graph.outputs() {
            if let Some(instance) = latest[out.index()] {
                end[instance] = steps - 1;
                held_to_end[instance] = true;
            }
        }
    }
    // A view is created after its source, so one backward sweep carries lifetimes down chains.
    for step in (0..steps).rev() {
        if let Some(source) = view_source[step] {
            end[source] = end[source].max(end[step]);
            held_to_end[source] |= held_to_end[step];
        }
    }
    // A step takes its reused input's buffer when that instance dies there (nothing reads it
    // later, no view of it lives on, and no output holds it): the instance's bytes leave as
    // the step's arrive, so the step holds one buffer, not two.
    let reuse_at = |end: &[usize], step: usize, input: Option<usize>| {
        input.filter(|&i| end[i] == step && !graph.node(schedule[i]).output && !held_to_end[i])
    };
    let mut reused: Vec<Option<usize>> =
        reuse_input.iter().enumerate().map(|(step, &input)| reuse_at(&end, step, input)).collect();
    let mut fused = vec![false; steps];
    let mut step_bytes = step_bytes_of(graph, schedule, &end, &reused, &fused);
    if graph.has_fusions() {
        let (inputs, expected) =
            fused_steps(graph, schedule, transfers, &end, &view_source, &reused, &step_bytes, &mut fused);
        if !expected.is_empty() {
            // The fused op reads the recomputed value's inputs: the instances that died at its
            // step live one step longer. A fused consumer writes a buffer of its own.
            for &instance in &inputs {
                end[instance] += 1;
            }
            for step in 0..steps {
                reused[step] = if step > 0 && fused[step - 1] { None } else { reuse_at(&end, step, reuse_input[step]) };
            }
            step_bytes = step_bytes_of(graph, schedule, &end, &reused, &fused);
            debug_assert!(expected.iter().all(|&(step, bytes)| step_bytes[step] == bytes), "fused steps {expected:?}");
        }
    }
    Ok(Lifetimes { end, view_source, step_bytes, reused, fused, cost, recomputations })
}

/// Bytes resident at each step: every instance from its step to its end, except a fused
/// step's value (never materialized); a step that takes a dying input's buffer holds one
/// buffer for both.
fn step_bytes_of(
    graph: &Graph,
    schedule: &[NodeId],
    end: &[usize],
    reused: &[Option<usize>],
    fused: &[bool],
) -> Vec<u64> {
    let steps = schedule.len();
    let mut delta = vec![0i128; steps + 1];
    for (step, &node) in schedule.iter().enumerate() {
        if fused[step] {
            continue;
        }
        let bytes = graph.node(node).bytes as i128;
        delta[step] += bytes;
        delta[end[step] + 1] -= bytes;
        let workspace = graph.node(node).workspace as i128;
        delta[step] += workspace;
        delta[step + 1] -= workspace;
        if reused[step].is_some() {
            delta[step] -= bytes;
            delta[step + 1] += bytes;
        }
    }
    let mut step_bytes = Vec::with_capacity(steps);
    let mut current: i128 = 0;
    for d in &delta[..steps] {
        current += d;
        step_bytes.push(current as u64);
    }
    step_bytes
}

/// Decides which steps fuse into the next (sets `fused`) and returns the instances whose life
/// the fusions extend by one step (each once), and each fused op's step with the bytes it holds.
///
/// Step `i` fuses into step `i + 1` when `i` *recomputes* a node `P` (its first execution
/// stays a buffer, so the input order and everything the lower bound counts about `P` stay as
/// they are), step `i + 1`'s node fuses `P`, nothing but step `i + 1` reads this instance (nor
/// is it an output), step `i` is not itself a fused consumer, no transfer offloads after step
/// `i`, and the fused op holds no more than step `i + 1` did: with the value gone, the storage
/// behind `P`'s inputs that died at `i` held one step longer, and the consumer's result in a
/// buffer of its own. Those two steps are the only ones a fusion changes (step `i` then holds
/// what was resident before it), so each decision is exact on its own and no step holds more
/// than it would unfused: whatever a planner or polishing counts without fusion stays an
/// upper bound.
#[allow(clippy::too_many_arguments)]
fn fused_steps(
    graph: &Graph,
    schedule: &[NodeId],
    transfers: &[Transfer],
    end: &[usize],
    view_source: &[Option<usize>],
    reused: &[Option<usize>],
    step_bytes: &[u64],
    fused: &mut [bool],
) -> (Vec<usize>, Vec<(usize, u64)>) {
    let steps = schedule.len();
    let mut latest: Vec<Option<usize>> = vec![None; graph.len()];
    let mut extended: Vec<usize> = Vec::new();
    let mut candidate: Vec<usize> = Vec::new();
    let mut holds = Vec::new();
    for (i, &node) in schedule.iter().enumerate() {
        let recomputed = latest[node.index()].is_some();
        if recomputed
            && i + 1 < steps
            && !(i > 0 && fused[i - 1])
            && end[i] == i + 1
            && !graph.node(node).output
            && graph.node(schedule[i + 1]).fuses.contains(&node)
            && !transfers.iter().any(|t| t.offload_after == i || t.instance == i)
        {
            // The storage (and views of it) behind P's inputs that dies at step i.
            candidate.clear();
            let mut grown = 0u64;
            for &p in graph.preds(node) {
                let mut instance = latest[p.index()];
                while let Some(k) = instance {
                    if end[k] == i && !candidate.contains(&k) {
                        candidate.push(k);
                        if view_source[k].is_none() {
                            grown += graph.node(schedule[k]).bytes;
                        }
                    }
                    instance = view_source[k];
                }
            }
            // Fused, step i + 1 gains the grown inputs and (where it took a dying input's
            // buffer) a buffer of its own, and loses P's result.
            let own_buffer = if reused[i + 1].is_some() { graph.node(schedule[i + 1]).bytes } else { 0 };
            let saved = graph.node(node).bytes;
            if grown + own_buffer <= saved {
                fused[i] = true;
                extended.extend_from_slice(&candidate);
                holds.push((i + 1, step_bytes[i + 1] + grown + own_buffer - saved));
            }
        }
        latest[node.index()] = Some(i);
    }
    (extended, holds)
}

/// The recompute overhead of a plan: `cost / baseline_cost − 1`, the extra work over the input
/// order as a fraction of it (0 when the baseline costs nothing). The one formula every report,
/// table and benchmark uses.
pub fn recompute_overhead(cost: f64, baseline_cost: f64) -> f64 {
    if baseline_cost > 0.0 {
        cost / baseline_cost - 1.0
    } else {
        0.0
    }
}

/// Validates `schedule` and measures it under the memory model.
pub fn simulate(graph: &Graph, schedule: &[NodeId]) -> Result<Simulation, ScheduleError> {
    simulate_with_transfers(graph, schedule, &[])
}

/// Validates `schedule` and its host `transfers` and measures them: device bytes per step
/// (offloaded instances excluded while they are on the host) and host bytes between steps.
///
/// A transfer must name an instance that owns bytes (not a view) and that no view was made
/// from; no step inside the window may read it, and a step at or after the prefetch must
/// read it, before its node runs again (or it is an output). Windows of one instance must
/// not overlap.
pub fn simulate_with_transfers(
    graph: &Graph,
    schedule: &[NodeId],
    transfers: &[Transfer],
) -> Result<Simulation, ScheduleError> {
    let Lifetimes { end, view_source, mut step_bytes, cost, recomputations, fused, .. } =
        lifetimes_with_transfers(graph, schedule, transfers)?;
    let fused_recomputations = fused.iter().filter(|&&f| f).count();
    let steps = schedule.len();
    let mut host_step_bytes = vec![0u64; steps];
    let mut offloaded_bytes = 0;
    if !transfers.is_empty() {
        check_transfers(graph, schedule, transfers, &end, &view_source)?;
        let mut device = vec![0i128; steps + 1];
        let mut host = vec![0i128; steps + 1];
        for t in transfers {
            let bytes = graph.node(schedule[t.instance]).bytes;
            offloaded_bytes += bytes;
            device[t.offload_after + 1] -= bytes as i128;
            device[t.prefetch_before] += bytes as i128;
            host[t.offload_after] += bytes as i128;
            host[t.prefetch_before] -= bytes as i128;
        }
        let (mut d, mut h) = (0i128, 0i128);
        for step in 0..steps {
            d += device[step];
            h += host[step];
            step_bytes[step] = (step_bytes[step] as i128 + d) as u64;
            host_step_bytes[step] = h as u64;
        }
    }
    let mut peak_bytes = 0;
    let mut peak_step = None;
    for (i, &b) in step_bytes.iter().enumerate() {
        if peak_step.is_none() || b > peak_bytes {
            peak_bytes = b;
            peak_step = Some(i);
        }
    }
    let host_peak_bytes = host_step_bytes.iter().copied().max().unwrap_or(0);
    Ok(Simulation {
        step_bytes,
        peak_bytes,
        peak_step,
        cost,
        recomputations,
        fused_recomputations,
        host_step_bytes,
        host_peak_bytes,
        offloaded_bytes,
    })
}

/// The rules of [`simulate_with_transfers`], for a schedule that is valid already.
fn check_transfers(
    graph: &Graph,
    schedule: &[NodeId],
    transfers: &[Transfer],
    end: &[usize],
    view_source: &[Option<usize>],
) -> Result<(), ScheduleError> {
    let steps = schedule.len();
    let fail = |t: &Transfer, step: usize, why: &'static str| {
        let node = schedule.get(t.instance).copied().unwrap_or(NodeId(0));
        Err(ScheduleError { kind: ScheduleErrorKind::InvalidTransfer(why), step: Some(step), node })
    };
    // Windows per instance, in offload order.
    let mut windows: Vec<(usize, usize, usize)> = Vec::with_capacity(transfers.len());
    for t in transfers {
        if t.instance >= steps || t.prefetch_before >= steps {
            return fail(t, t.instance.min(steps.saturating_sub(1)), "a step index is past the end of the schedule");
        }
        if t.offload_after < t.instance || t.prefetch_before <= t.offload_after {
            return fail(
                t,
                t.offload_after,
                "it must be offloaded after it is computed and prefetched after it is offloaded",
            );
        }
        let node = schedule[t.instance];
        if graph.node(node).view_of.is_some() || graph.node(node).bytes == 0 {
            return fail(t, t.instance, "it owns no bytes to move (a view or an empty value)");
        }
        if view_source.contains(&Some(t.instance)) {
            return fail(t, t.instance, "a view was made from it, which would point at freed memory");
        }
        if end[t.instance] < t.prefetch_before {
            return fail(t, t.prefetch_before, "nothing reads the prefetched copy");
        }
        windows.push((t.instance, t.offload_after, t.prefetch_before));
    }
    windows.sort_unstable();
    for pair in windows.windows(2) {
        if pair[0].0 == pair[1].0 && pair[1].1 < pair[0].2 {
            let t = Transfer { instance: pair[1].0, offload_after: pair[1].1, prefetch_before: pair[1].2 };
            return fail(&t, t.offload_after, "it overlaps another transfer of the same instance");
        }
    }
    // Reads inside a window: an instance is read at step s when a predecessor of s's node has
    // it as its latest instance.
    let mut offloaded_at: Vec<Vec<(usize, usize)>> = vec![Vec::new(); steps];
    for &(instance, after, before) in &windows {
        offloaded_at[instance].push((after, before));
    }
    let mut latest: Vec<Option<usize>> = vec![None; graph.len()];
    for (step, &node) in schedule.iter().enumerate() {
        for &p in graph.preds(node) {
            if let Some(instance) = latest[p.index()] {
                if let Some(&(after, before)) = offloaded_at[instance].iter().find(|(a, b)| *a < step && step < *b) {
                    let t = Transfer { instance, offload_after: after, prefetch_before: before };
                    return fail(&t, step, "a step reads it while it is on the host");
                }
            }
        }
        latest[node.index()] = Some(step);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GraphBuilder, NodeSpec};

    /// A chain with a skip edge, unit sizes: A feeds B and E; B -> C -> D -> E.
    fn chain_with_skip() -> (Graph, [NodeId; 5]) {
        let mut g = GraphBuilder::new();
        let a = g.add(NodeSpec::op("A", 1, 1.0), &[]);
        let b = g.add(NodeSpec::op("B", 1, 1.0), &[a]);
        let c = g.add(NodeSpec::op("C", 1, 1.0), &[b]);
        let d = g.add(NodeSpec::op("D", 1, 1.0), &[c]);
        let e = g.add(NodeSpec::op("E", 1, 1.0).output(), &[a, d]);
        (g.finish().unwrap(), [a, b, c, d, e])
    }

    #[test]
    fn recomputing_the_skip_source_lowers_the_middle() {
        let (g, [a, b, c, d, e]) = chain_with_skip();
        // Without remat A is held from step 0 to E; recomputing A right before E frees it
        // while C and D run.
        let plain = simulate(&g, &[a, b, c, d, e]).unwrap();
        assert_eq!(plain.step_bytes, vec![1, 2, 3, 3, 3]);
        let remat = simulate(&g, &[a, b, c, d, a, e]).unwrap();
        assert_eq!(remat.step_bytes, vec![1, 2, 2, 2, 2, 3]);
        assert_eq!(remat.recomputations, 1);
        assert_eq!(remat.cost, 6.0);
    }

    /// x (argument) → p → f → big; c reads p and big and may compute p itself.
    fn fusable_consumer(p_bytes: u64) -> (Graph, [NodeId; 4]) {
        let mut g = GraphBuilder::new();
        let x = g.add(NodeSpec::argument("x", 100), &[]);
        let p = g.add(NodeSpec::op("p", p_bytes, 1.0), &[x]);
        let f = g.add(NodeSpec::op("f", 100, 1.0), &[p]);
        let big = g.add(NodeSpec::op("big", 500, 1.0), &[f]);
        let c = g.add(NodeSpec::op("c", 100, 1.0).output().fusing(&[p]), &[p, big]);
        (g.finish().unwrap(), [p, f, big, c])
    }

    #[test]
    fn a_recomputation_read_by_its_fusing_consumer_alone_is_never_materialized() {
        let (g, [p, f, big, c]) = fusable_consumer(100);
        // Unfused, the recomputed p is resident beside big at steps 3 and 4.
        let life = lifetimes(&g, &[p, f, big, p, c]).unwrap();
        assert_eq!(life.fused, vec![false, false, false, true, false]);
        assert_eq!(life.step_bytes, vec![100, 200, 600, 500, 600]);
        assert_eq!(simulate(&g, &[p, f, big, p, c]).unwrap().cost, 5.0);
        // The first execution is a buffer: the input order keeps its figures.
        assert_eq!(simulate(&g, &[p, f, big, c]).unwrap().step_bytes, vec![100, 200, 700, 700]);
        assert_eq!(lifetimes(&g, &[p, f, big, c]).unwrap().fused, vec![false; 4]);
        // Read by something else before it dies, or offloaded: a buffer again.
        let offloaded = [Transfer { instance: 0, offload_after: 3, prefetch_before: 4 }];
        let kept = lifetimes_with_transfers(&g, &[p, f, big, p, c], &offloaded).unwrap();
        assert_eq!(kept.fused, vec![false; 5]);
    }

    #[test]
    fn a_fusion_that_would_hold_more_is_not_taken() {
        // p is small and its input q large: fused, c would hold q instead of p.
        let mut g = GraphBuilder::new();
        let q = g.add(NodeSpec::op("q", 300, 1.0), &[]);
        let p = g.add(NodeSpec::op("p", 10, 1.0), &[q]);
        let big = g.add(NodeSpec::op("big", 500, 1.0), &[p]);
        let c = g.add(NodeSpec::op("c", 100, 1.0).output().fusing(&[p]), &[p, big]);
        let g = g.finish().unwrap();
        // q recomputed for p, p for c: fused, q would live beside c (900 > 810 and 610).
        let life = lifetimes(&g, &[q, p, big, q, p, c]).unwrap();
        assert_eq!(life.fused, vec![false; 6]);
        assert_eq!(life.step_bytes, vec![300, 310, 510, 800, 810, 610]);
    }

    #[test]
    fn a_fused_consumer_writes_a_buffer_of_its_own() {
        // c may also write into p where p dies at it; fused, p is gone and c needs its own.
        let mut g = GraphBuilder::new();
        let x = g.add(NodeSpec::argument("x", 100), &[]);
        let p = g.add(NodeSpec::op("p", 100, 1.0), &[x]);
        let big = g.add(NodeSpec::op("big", 500, 1.0), &[p]);
        let c = g.add(NodeSpec::op("c", 100, 1.0).output().reusing(p).fusing(&[p]), &[p, big]);
        let g = g.finish().unwrap();
        let life = lifetimes(&g, &[p, big, p, c]).unwrap();
        assert_eq!(life.fused, vec![false, false, true, false]);
        assert_eq!(life.reused, vec![None; 4]);
        assert_eq!(life.step_bytes, vec![100, 600, 500, 600]);
    }

    #[test]
    fn a_buffer_an_output_view_holds_is_never_taken() {
        // v is an output view of a; b may write into a where a dies, but a dies only at the
        // end, where the output v still needs it.
        let mut g = GraphBuilder::new();
        let a = g.add(NodeSpec::op("a", 10, 1.0), &[]);
        let v = g.add(NodeSpec::op("v", 0, 0.0).view_of(a).output(), &[a]);
        let b = g.add(NodeSpec::op("b", 10, 1.0).output().reusing(a), &[a]);
        let g = g.finish().unwrap();
        let life = lifetimes(&g, &[a, v, b]).unwrap();
        assert_eq!(life.reused, vec![None; 3]);
        assert_eq!(life.step_bytes, vec![10, 10, 20]);
    }

    #[test]
    fn invalid_schedules_are_named() {
        let (g, [a, b, c, d, e]) = chain_with_skip();
        let err = simulate(&g, &[a, c, b, d, e]).unwrap_err();
        assert_eq!(err.kind, ScheduleErrorKind::InputNotComputed(b));
        assert_eq!(err.step, Some(1));
        let err = simulate(&g, &[a, b, c, d]).unwrap_err();
        assert_eq!(err.kind, ScheduleErrorKind::NeverExecuted);
        assert_eq!(err.node, e);
    }

    #[test]
    fn views_keep_their_source_alive_and_arguments_are_free() {
        let mut g = GraphBuilder::new();
        let arg = g.add(NodeSpec::argument("x", 100), &[]);
        let big = g.add(NodeSpec::op("big", 8, 1.0), &[arg]);
        let view = g.add(NodeSpec::op("view", 0, 0.0).view_of(big), &[big]);
        let other = g.add(NodeSpec::op("other", 4, 1.0), &[arg]);
        let user = g.add(NodeSpec::op("user", 2, 1.0).output(), &[view, other]);
        let g = g.finish().unwrap();
        let sim = simulate(&g, &[big, view, other, user]).unwrap();
        // `big` stays live through `user` because its view is used there.
        assert_eq!(sim.step_bytes, vec![8, 8, 12, 14]);
        assert_eq!(g.argument_bytes(), 100);
    }

    #[test]
    fn impure_nodes_run_once() {
        let mut g = GraphBuilder::new();
        let a = g.add(NodeSpec::op("rng", 1, 1.0).impure(), &[]);
        let b = g.add(NodeSpec::op("b", 1, 1.0).output(), &[a]);
        let g = g.finish().unwrap();
        let err = simulate(&g, &[a, a, b]).unwrap_err();
        assert_eq!(err.kind, ScheduleErrorKind::ImpureRepeated);
    }

    #[test]
    fn an_offloaded_instance_leaves_the_device_until_its_prefetch() {
        let (g, [a, b, c, d, e]) = chain_with_skip();
        let schedule = [a, b, c, d, e];
        // A is read by B (step 1) and E (step 4): offload after 1, prefetch before 4.
        let t = Transfer { instance: 0, offload_after: 1, prefetch_before: 4 };
        let sim = simulate_with_transfers(&g, &schedule, &[t]).unwrap();
        assert_eq!(sim.step_bytes, vec![1, 2, 2, 2, 3]);
        assert_eq!(sim.host_step_bytes, vec![0, 1, 1, 1, 0]);
        assert_eq!((sim.host_peak_bytes, sim.offloaded_bytes, sim.recomputations), (1, 1, 0));
        // Without transfers nothing is on the host.
        let plain = simulate(&g, &schedule).unwrap();
        assert_eq!(plain.step_bytes, vec![1, 2, 3, 3, 3]);
        assert_eq!(plain.host_peak_bytes, 0);
    }

    #[test]
    fn transfers_that_break_the_rules_are_named() {
        let (g, [a, b, c, d, e]) = chain_with_skip();
        let schedule = [a, b, c, d, e];
        let bad = |t: Transfer| match simulate_with_transfers(&g, &schedule, &[t]).unwrap_err().kind {
            ScheduleErrorKind::InvalidTransfer(why) => why,
            other => panic!("{other:?}"),
        };
        // B reads A at step 1, inside a window (0, 4).
        assert!(bad(Transfer { instance: 0, offload_after: 0, prefetch_before: 4 }).contains("reads it while"));
        // C is last read at step 2: nothing reads a copy prefetched before step 4.
        assert!(bad(Transfer { instance: 2, offload_after: 2, prefetch_before: 4 }).contains("nothing reads"));
        assert!(bad(Transfer { instance: 0, offload_after: 3, prefetch_before: 2 }).contains("prefetched after"));
        assert!(bad(Transfer { instance: 0, offload_after: 1, prefetch_before: 9 }).contains("past the end"));
        let twice = simulate_with_transfers(
            &g,
            &schedule,
            &[
                Transfer { instance: 0, offload_after: 1, prefetch_before: 3 },
                Transfer { instance: 0, offload_after: 2, prefetch_before: 4 },
            ],
        );
        assert!(matches!(twice.unwrap_err().kind, ScheduleErrorKind::InvalidTransfer(w) if w.contains("overlaps")));
        // Once A is recomputed (step 3), E reads the new instance: the first one has no reader
        // after step 1 to prefetch for.
        let remat = [a, b, c, a, d, e];
        let err =
            simulate_with_transfers(&g, &remat, &[Transfer { instance: 0, offload_after: 1, prefetch_before: 5 }])
                .unwrap_err();
        assert!(matches!(err.kind, ScheduleErrorKind::InvalidTransfer(w) if w.contains("nothing reads")));
    }

    /// x → a → b (b may take a's buffer) → c, 100 bytes each: where a dies at b, b writes in
    /// place and the step holds one buffer; where a is read later, it cannot.
    #[test]
    fn a_node_takes_the_buffer_of_an_input_that_dies_there() {
        let mut g = GraphBuilder::new();
        let x = g.add(NodeSpec::argument("x", 100), &[]);
        let a = g.add(NodeSpec::op("a", 100, 1.0), &[x]);
        let b = g.add(NodeSpec::op("b", 100, 1.0).reusing(a), &[a]);
        let c = g.add(NodeSpec::op("c", 10, 1.0).output(), &[b]);
        let g = g.finish().unwrap();
        let sim = simulate(&g, &[a, b, c]).unwrap();
        assert_eq!(sim.step_bytes, vec![100, 100, 110]);
        assert_eq!(lifetimes(&g, &[a, b, c]).unwrap().reused, vec![None, Some(0), None]);
        assert_eq!(crate::lower_bound(&g), 110, "b's step holds one buffer in some schedule");
        // Read again after b (a recomputed b, here): no reuse at the first b.
        let mut h = GraphBuilder::new();
        let x = h.add(NodeSpec::argument("x", 100), &[]);
        let a = h.add(NodeSpec::op("a", 100, 1.0), &[x]);
        let b = h.add(NodeSpec::op("b", 100, 1.0).reusing(a), &[a]);
        let d = h.add(NodeSpec::op("d", 10, 1.0).output(), &[a, b]);
        let h = h.finish().unwrap();
        assert_eq!(simulate(&h, &[a, b, d]).unwrap().step_bytes, vec![100, 200, 210]);
        // An output is never overwritten.
        let mut o = GraphBuilder::new();
        let x = o.add(NodeSpec::argument("x", 100), &[]);
        let a = o.add(NodeSpec::op("a", 100, 1.0).output(), &[x]);
        let b = o.add(NodeSpec::op("b", 100, 1.0).reusing(a).output(), &[a]);
        let o = o.finish().unwrap();
        assert_eq!(simulate(&o, &[a, b]).unwrap().step_bytes, vec![100, 200]);
        // Reuse is checked when the graph is built.
        let mut bad = GraphBuilder::new();
        let x = bad.add(NodeSpec::op("x", 100, 1.0), &[]);
        let y = bad.add(NodeSpec::op("y", 50, 1.0).reusing(x), &[x]);
        let _ = y;
        assert!(matches!(bad.finish(), Err(crate::GraphError::InvalidReuse { .. })));
    }
}

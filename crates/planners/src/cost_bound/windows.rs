//! The anchor argument over several anchors at once, in integers: the recomputation a value
//! needs *again* because it was rebuilt between two anchors and is read after the later one.
//!
//! One anchor ([`super::recompute_lower_bound`]) prices each value at most once: whatever is
//! neither resident at the anchor's step nor read before it is rebuilt once afterwards. Where
//! the budget is tight for a long stretch (a ResNet's backward at 40 %), a schedule rebuilds the
//! same forward value for several readers far apart, and a single step cannot see that; nor
//! can the Lagrangian relaxation of one anchor see that holding half of a 1 MiB value does not
//! exist. Here a chain of anchors `x_1, …, x_k` (each a descendant of the one before, so their
//! first steps `t_1 < … < t_k` come in that order in every schedule) splits time into windows
//! `W_i = [t_i, t_{i+1})` (the last one open), and per value `v` among the ancestors of `x_k`
//! two binaries per anchor: `H_i(v)`, an instance of `v` is resident at `t_i` (its bytes
//! counted there, besides `x_i`'s footprint), and `R_i(v)`, `v` runs in `W_i`. Every valid
//! schedule within the budget sets them so that (docs/memory-model.md, "The recomputation
//! lower bound"):
//!
//! ```text
//!   v ancestor of x_i, read after t_i (or an output):  H_i(v) + Σ_{j≥i} R_j(v) ≥ 1
//!   v ancestor of x_i, read by some d with x_i < d ≤ x_{i+1}:  H_i(v) + R_i(v) ≥ 1
//!   R_i(v) ⇒ H_i(u) + R_i(u) ≥ 1 for each input u of v      (v ran in W_i from them)
//!   H_{i+1}(v) ≤ H_i(v) + R_i(v)                            (resident at t_{i+1}: made before)
//!   H_i(view) ≤ H_i(source),  H_i(v) = 0 for x_i and its descendants,
//!   R_j(v) = 0 for an impure ancestor v of x_i and j ≥ i,
//!   Σ_v bytes_i(v)·H_i(v) ≤ budget − footprint(x_i)
//! ```
//!
//! ("d ≤ x_{i+1}": d is x_{i+1} or one of its ancestors, so its first run falls in `W_i`.) A run
//! of `v` in `W_i` is a recomputation wherever `v` is an ancestor of `x_i` (its first run came
//! before `t_i`), and runs in different windows are different runs, so
//!
//! ```text
//!   recomputation ≥ min Σ_i Σ_{v ancestor of x_i} cost(v)·R_i(v).
//! ```
//!
//! With one anchor this is the integer version of the anchor's problem, whose Lagrangian the
//! single-anchor search solves; HiGHS's dual bound on the program (optimal or not) is the proof.
//! Sound, not tight: values beside the chain and first runs are free, reads are only located to
//! a window where a reader is an ancestor of the next anchor.

use crate::ilp::model::{Model, Outcome};
use remat_graph::{unfused_footprint, Graph, NodeId};

/// Why no bound came out.
#[derive(Clone, Debug, PartialEq)]
pub enum WindowedOutcome {
    /// Every schedule within the budget recomputes at least this much (cost units; HiGHS's
    /// dual bound on the program, optimal or not), possibly 0.
    Bound(f64),
    /// No schedule within the budget exists: the program has no solution.
    Infeasible,
    /// The anchors are not a chain of descendants, an anchor's footprint alone exceeds the
    /// budget (the single-anchor search reports that), or HiGHS had no time.
    Nothing,
}

/// The least recomputation every schedule of `graph` within `budget` needs by the windowed
/// argument over `anchors` (module docs), each a descendant of the one before; HiGHS gets at
/// most `seconds`.
pub fn windowed_bound(
    graph: &Graph,
    anchors: &[NodeId],
    budget: u64,
    seconds: f64,
    max_nodes: usize,
) -> WindowedOutcome {
    let n = graph.len();
    let k = anchors.len();
    if k == 0 || anchors.windows(2).any(|w| !reaches(graph, w[0], w[1])) {
        return WindowedOutcome::Nothing;
    }
    // ancestor[i][v]: v is a (non-argument) ancestor of x_i; descendant[i][v]: v is x_i or below.
    let ancestor: Vec<Vec<bool>> = anchors.iter().map(|&x| closure(graph, x, Direction::Up)).collect();
    let descendant: Vec<Vec<bool>> = anchors.iter().map(|&x| closure(graph, x, Direction::Down)).collect();
    // The values: ancestors of the last anchor, which include the others and theirs.
    let values: Vec<NodeId> = graph.ids().filter(|v| ancestor[k - 1][v.index()] || *v == anchors[k - 1]).collect();
    let mut index = vec![usize::MAX; n];
    for (j, v) in values.iter().enumerate() {
        index[v.index()] = j;
    }
    let mut model = Model::default();
    let mut held = vec![vec![usize::MAX; values.len()]; k];
    let mut runs = vec![vec![usize::MAX; values.len()]; k];
    for i in 0..k {
        for (j, &v) in values.iter().enumerate() {
            let node = graph.node(v);
            let recomputation = ancestor[i][v.index()];
            // Impure: no second run, so none in a window after an anchor it precedes.
            let may_run = node.pure || !(0..=i).any(|e| ancestor[e][v.index()]);
            runs[i][j] =
                model.column(0.0, if may_run { 1.0 } else { 0.0 }, true, if recomputation { node.cost } else { 0.0 });
            let may_hold = !descendant[i][v.index()];
            held[i][j] = model.column(0.0, if may_hold { 1.0 } else { 0.0 }, true, 0.0);
        }
    }
    for (i, &x) in anchors.iter().enumerate() {
        let mut roots = Vec::new();
        let footprint = unfused_footprint(graph, x, &mut roots);
        if footprint > budget {
            return WindowedOutcome::Nothing;
        }
        let mut memory = Vec::new();
        for (j, &v) in values.iter().enumerate() {
            let node = graph.node(v);
            let counted_elsewhere = node.view_of.is_some() || roots.contains(&v);
            if !counted_elsewhere && node.bytes > 0 && !descendant[i][v.index()] {
                memory.push((held[i][j], node.bytes as f64));
            }
            if let Some(source) = node.view_of {
                if index[source.index()] != usize::MAX {
                    model.row(vec![(held[i][j], 1.0), (held[i][index[source.index()]], -1.0)], f64::NEG_INFINITY, 0.0);
                }
            }
            if i + 1 < k {
                model.row(vec![(held[i + 1][j], 1.0), (held[i][j], -1.0), (runs[i][j], -1.0)], f64::NEG_INFINITY, 0.0);
            }
            for &u in graph.preds(v) {
                if graph.node(u).argument || index[u.index()] == usize::MAX {
                    continue;
                }
                let u = index[u.index()];
                model.row(vec![(held[i][u], 1.0), (runs[i][u], 1.0), (runs[i][j], -1.0)], 0.0, f64::INFINITY);
            }
            if !ancestor[i][v.index()] {
                continue;
            }
            let read_later = node.output || graph.succs(v).iter().any(|s| descendant[i][s.index()] && *s != x);
            if read_later {
                let mut terms = vec![(held[i][j], 1.0)];
                terms.extend((i..k).map(|e| (runs[e][j], 1.0)));
                model.row(terms, 1.0, f64::INFINITY);
            }
            let read_in_window = i + 1 < k
                && graph.succs(v).iter().any(|&s| {
                    s != x && descendant[i][s.index()] && (s == anchors[i + 1] || ancestor[i + 1][s.index()])
                });
            if read_in_window {
                model.row(vec![(held[i][j], 1.0), (runs[i][j], 1.0)], 1.0, f64::INFINITY);
            }
        }
        // Each anchor runs in its own window (its first run).
        let me = index[x.index()];
        model.row(vec![(runs[i][me], 1.0)], 1.0, 1.0);
        model.row(memory, f64::NEG_INFINITY, (budget - footprint) as f64);
    }
    let solved = match model.solve(false, seconds, 0.0, None, false, Some(max_nodes)) {
        Ok(solved) => solved,
        Err(error) => {
            tracing::debug!(target: "remat_planners::cost_bound", %error, "windowed bound: no answer");
            return WindowedOutcome::Nothing;
        }
    };
    tracing::debug!(
        target: "remat_planners::cost_bound",
        anchors = k,
        columns = model.columns.len(),
        rows = model.rows.len(),
        outcome = ?solved.outcome,
        objective = solved.objective,
        dual_bound = solved.dual_bound,
        seconds = solved.seconds,
        "windowed bound"
    );
    match solved.outcome {
        Outcome::Infeasible => WindowedOutcome::Infeasible,
        Outcome::NoSolution => WindowedOutcome::Nothing,
        Outcome::Optimal | Outcome::TimeLimit if solved.dual_bound.is_finite() => {
            WindowedOutcome::Bound((solved.dual_bound * (1.0 - 1e-9)).max(0.0))
        }
        Outcome::Optimal | Outcome::TimeLimit => WindowedOutcome::Nothing,
    }
}

#[derive(Clone, Copy)]
enum Direction {
    Up,
    Down,
}

/// Per node: whether it is a non-argument ancestor of `x` (`Up`, `x` excluded) or `x` or one
/// of its descendants (`Down`).
fn closure(graph: &Graph, x: NodeId, direction: Direction) -> Vec<bool> {
    let mut seen = vec![false; graph.len()];
    let mut stack = match direction {
        Direction::Up => graph.preds(x).to_vec(),
        Direction::Down => vec![x],
    };
    while let Some(v) = stack.pop() {
        if std::mem::replace(&mut seen[v.index()], true) {
            continue;
        }
        match direction {
            Direction::Up => stack.extend(graph.preds(v).iter().copied()),
            Direction::Down => stack.extend(graph.succs(v).iter().copied()),
        }
    }
    if let Direction::Up = direction {
        for v in graph.ids() {
            if graph.node(v).argument {
                seen[v.index()] = false;
            }
        }
    }
    seen
}

/// Whether `to` is a descendant of `from` (other than itself).
fn reaches(graph: &Graph, from: NodeId, to: NodeId) -> bool {
    from != to && closure(graph, from, Direction::Down)[to.index()]
}

/// Anchor counts tried by [`refine`], each as evenly spaced anchors along the spine.
const ANCHOR_COUNTS: [usize; 5] = [1, 2, 3, 4, 6];

/// Branch-and-bound nodes HiGHS may spend on one windowed program (a limit that gives the same
/// bound on every machine; the deadline still stops it earlier).
const MAX_NODES: usize = 200;

/// A count of anchors must prove this much more (relatively) than fewer did, or the search stops.
const IMPROVEMENT: f64 = 1e-3;

/// Steps with more nodes than this try the best anchor alone (finding the spine takes a
/// traversal of the step per candidate).
const SPINE_NODES: usize = 20_000;

/// Seconds one windowed program may take at most, whatever the deadline.
const MAX_SECONDS: f64 = 10.0;

/// Programs with more binaries than this are not built (three anchors over 1,000 values; a
/// 2,000-node transformer step's single anchor is 1,434).
const MAX_COLUMNS: usize = 6_000;

/// The best windowed bound over a few chains of anchors through `best` (the single anchor that
/// proved the most): the *spine* is the chain of `candidates` (input-order steps over the
/// budget that can anchor) through `best`, each an ancestor of the next, and the programs take
/// 1, 2, 3, 4 and 6 anchors spread evenly along it (`best` always among them). `None` where none
/// proved anything; otherwise the cost and the anchors of the program that proved it.
pub(super) fn refine(
    graph: &Graph,
    candidates: &[NodeId],
    best: NodeId,
    budget: u64,
    deadline: crate::Deadline,
) -> Option<(f64, usize)> {
    // The smallest program, one anchor's, must fit before any chain is looked for (the spine
    // costs a traversal per candidate).
    if columns(graph, &[best]) > MAX_COLUMNS {
        return None;
    }
    let spine = if graph.len() <= SPINE_NODES { spine(graph, candidates, best) } else { vec![best] };
    let at = spine.iter().position(|&x| x == best)?;
    let mut proved: Option<(f64, usize)> = None;
    for count in ANCHOR_COUNTS {
        if count > spine.len() {
            break;
        }
        let Some(seconds) =
            deadline.remaining().map_or(Some(MAX_SECONDS), |left| (left > 0.1).then_some(left.min(MAX_SECONDS)))
        else {
            break;
        };
        let mut chosen: Vec<usize> =
            (0..count).map(|i| if count == 1 { at } else { i * (spine.len() - 1) / (count - 1) }).collect();
        chosen.push(at);
        chosen.sort_unstable();
        chosen.dedup();
        let anchors: Vec<NodeId> = chosen.iter().map(|&i| spine[i]).collect();
        if columns(graph, &anchors) > MAX_COLUMNS {
            break;
        }
        let out = windowed_bound(graph, &anchors, budget, seconds, MAX_NODES);
        let improved = match out {
            WindowedOutcome::Bound(bound) if proved.is_none_or(|(cost, _)| bound > cost * (1.0 + IMPROVEMENT)) => {
                proved = Some((bound, anchors.len()));
                true
            }
            _ => false,
        };
        // More anchors cost more and seldom find what fewer missed.
        if !improved && anchors.len() > 1 {
            break;
        }
    }
    proved
}

/// The binaries of [`windowed_bound`]'s program over `anchors`: two per anchor and value (the
/// last anchor and its non-argument ancestors).
fn columns(graph: &Graph, anchors: &[NodeId]) -> usize {
    let last = anchors[anchors.len() - 1];
    let values = 1 + closure(graph, last, Direction::Up).iter().filter(|&&a| a).count();
    2 * values * anchors.len()
}

/// The chain of `candidates` (in input order) through `best`: walking back from `best`, each
/// earlier candidate that reaches the chain's head joins it; walking forward from the last
/// candidate `best` reaches, each later one that reaches the chain's tail joins it.
fn spine(graph: &Graph, candidates: &[NodeId], best: NodeId) -> Vec<NodeId> {
    let Some(at) = candidates.iter().position(|&x| x == best) else { return vec![best] };
    let below = closure(graph, best, Direction::Down);
    let later: Vec<NodeId> = candidates[at + 1..].iter().copied().filter(|x| below[x.index()]).collect();
    let mut after = Vec::new();
    if let Some(&last) = later.last() {
        after.push(last);
        for &x in later.iter().rev().skip(1) {
            if closure(graph, x, Direction::Down)[after[after.len() - 1].index()] {
                after.push(x);
            }
        }
        after.reverse();
    }
    let mut before = Vec::new();
    let mut above_head = closure(graph, best, Direction::Up);
    for &x in candidates[..at].iter().rev() {
        if above_head[x.index()] {
            before.push(x);
            above_head = closure(graph, x, Direction::Up);
        }
    }
    before.reverse();
    before.push(best);
    before.extend(after);
    before
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost_bound::recompute_lower_bound;
    use crate::{plan_within_budget, strategy, Deadline, PlannerOptions};
    use remat_graph::simulate;
    use remat_graph::training::{Architecture, ConvNet};

    #[test]
    fn anchors_out_of_order_prove_nothing() {
        let g = ConvNet::new(Architecture::ResNet, &[1, 1, 1, 1]).generate();
        let order = g.topological_schedule();
        let (first, last) = (order[0], order[order.len() - 1]);
        assert_eq!(windowed_bound(&g, &[last, first], u64::MAX, 1.0, MAX_NODES), WindowedOutcome::Nothing);
        assert_eq!(windowed_bound(&g, &[], u64::MAX, 1.0, MAX_NODES), WindowedOutcome::Nothing);
    }

    #[test]
    fn several_anchors_see_a_value_rebuilt_twice_and_stay_below_the_plans() {
        // ResNet's smallest layout at 60 %: the first stage's 1 MiB activations are rebuilt for
        // readers in different stages of the backward, which one step cannot see.
        let g = ConvNet::new(Architecture::ResNet, &[1, 1, 1, 1]).generate();
        let order = g.topological_schedule();
        let baseline = simulate(&g, &order).unwrap();
        let budget = baseline.peak_bytes * 60 / 100;
        let bound = recompute_lower_bound(&g, &order, budget, Deadline::NONE);
        let (best, _) = bound.anchor.clone().expect("an anchor");
        let WindowedOutcome::Bound(one) = windowed_bound(&g, &[best], budget, 10.0, MAX_NODES) else {
            panic!("no single-anchor program")
        };
        assert!(bound.windows >= 2, "{bound:?}");
        assert!(bound.cost > one * 1.2, "{} against one anchor's {one}", bound.cost);
        // Below every plan that fits, as a bound must be.
        let mut planned = 0;
        for name in ["hierarchical", "greedy"] {
            let Some(planner) = strategy(name) else { continue };
            let Ok(plan) = plan_within_budget(planner, &g, &order, Some(budget), &PlannerOptions::default()) else {
                continue;
            };
            planned += 1;
            let recomputation = plan.simulation.cost - baseline.cost;
            assert!(bound.cost <= recomputation * (1.0 + 1e-9), "{name}: {recomputation} below {}", bound.cost);
        }
        assert_eq!(planned, 2, "hierarchical and greedy plan at 60 %");
    }
}

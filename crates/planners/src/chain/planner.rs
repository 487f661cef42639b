//! `chain`: a training step seen as a chain (Beaumont, Eyraud-Dubois, Shilova, NeurIPS 2021,
//! Figure 1) and planned with the optimal chain dynamic program ([`super::dp`]).
//!
//! # The chain view
//!
//! The forward part of the step (as [`crate::acg::ForwardPart`] finds it) is cut at its
//! articulation points in program order: after forward node `c` when no forward value computed
//! before `c` is read by a forward node after it, so that `c` is the only forward value that
//! crosses. The stretches between cuts are the stages; what follows the last cut (the loss and
//! what feeds it) is the loss stage L+1. Each backward node joins the lowest stage among its
//! inputs' (forward inputs by their stage, backward inputs by theirs; none: the loss stage),
//! so B_ℓ only waits for backward nodes of stages ≥ ℓ, which the chain order runs first.
//!
//! Table 1's terms, per stage ℓ: u_F and u_B sum the stage's forward and backward costs;
//! a_ℓ is the bytes the cut node keeps resident; ā_ℓ adds the stage's forward values that a
//! backward node reads; δ_ℓ is the bytes of backward values of later stages read by stage ℓ
//! or earlier; of_ℓ and ob_ℓ charge every other value of the stage as transient overhead
//! (an over-estimate: the memory model frees values after their last use). Stages beyond
//! [`MAX_STAGES`] are merged with their neighbours, cheapest merge first.
//!
//! # From a chain schedule to a step schedule
//!
//! F_all^ℓ, F_ck^ℓ and F_∅^ℓ run stage ℓ's forward nodes, B_ℓ its backward nodes, each in
//! program order; the memory model then keeps exactly what later nodes read, so an F_∅'s input
//! dies and a later F_all recomputes what B_ℓ needs. The chain's memory terms only
//! approximate the memory model, so the planner measures every candidate with
//! [`remat_graph::simulate`] and searches the DP's budget downward (bisection) for the
//! cheapest schedule that fits the real budget.
//!
//! # Offloading
//!
//! With `--bandwidth` the DP also plans offloads and prefetches (Theorem 1); the planner
//! reports that plan's makespan beside the rematerialization-only one (`chain` in the report).
//! The step schedule is the rematerialization-only plan: the rewriter has no host copies yet,
//! so offloaded activations would stay on the device.

use super::dp;
use super::model::{Chain, ChainOp, Loss, Stage};
use crate::acg::{stored_bytes, ForwardPart};
use crate::{PlanDetails, PlanError, PlanRequest, Planner};
use remat_graph::{simulate, Graph, NodeId, Schedule};

/// The most stages the chain view keeps (the DP is cubic in L).
pub const MAX_STAGES: usize = 64;

/// The chain planner's knobs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChainOptions {
    /// Host link bandwidth in bytes per second (`--bandwidth`, given in GB/s); `None`: no
    /// offloading.
    pub bandwidth: Option<f64>,
    /// Cost units the device executes per second, to turn costs into time (`--compute-rate`).
    pub compute_rate: f64,
    /// Memory discretization of the DP (`--mem-slots`; `None`: the DP's default).
    pub mem_slots: Option<usize>,
}

impl Default for ChainOptions {
    fn default() -> Self {
        // 10 TFLOP/s: costs are FLOP estimates under the default cost model.
        ChainOptions { bandwidth: None, compute_rate: 1e13, mem_slots: None }
    }
}

impl ChainOptions {
    /// β of the paper: bytes moved per cost unit of compute.
    pub fn beta(&self) -> Option<f64> {
        self.bandwidth.filter(|b| *b > 0.0).map(|b| b / self.compute_rate)
    }
}

/// What the chain planner found (for the report).
#[derive(Clone, Debug, PartialEq)]
pub struct ChainStats {
    /// Stages L (the loss not counted).
    pub stages: usize,
    /// The budget the DP was run at (bytes, in the chain's own accounting).
    pub dp_budget: u64,
    /// Makespan of the rematerialization-only plan (cost units).
    pub remat_makespan: f64,
    /// With `--bandwidth`: the makespan with offloading at the same DP budget, and the bytes
    /// it offloads.
    pub offload: Option<(f64, u64)>,
    /// The chain operations of the plan, as the paper writes them.
    pub ops: Vec<String>,
}

/// A step as a chain: stages of forward and backward nodes, and Table 1's terms.
#[derive(Clone, Debug)]
pub struct ChainView {
    /// The chain's parameters.
    pub chain: Chain,
    /// Forward nodes of stages 1..=L+1 (index ℓ − 1), in program order.
    pub forward: Vec<Vec<NodeId>>,
    /// Backward nodes of stages 1..=L+1 (index ℓ − 1), in program order.
    pub backward: Vec<Vec<NodeId>>,
}

impl ChainView {
    /// Cuts the step at the articulation points of its forward part.
    pub fn of(graph: &Graph, order: &[NodeId]) -> ChainView {
        let part = ForwardPart::of(graph, order);
        let fwd = &part.nodes;
        let mut position = vec![usize::MAX; graph.len()];
        for (i, &v) in fwd.iter().enumerate() {
            position[v.index()] = i;
        }
        // last_read[i]: the last forward position reading the value at position i (values that
        // hold no memory, constants and views of arguments, may cross any cut).
        let last_read: Vec<usize> = fwd
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                if stored_bytes(graph, v) == 0 {
                    return i;
                }
                graph.succs(v).iter().filter(|s| part.contains[s.index()]).map(|s| position[s.index()]).max().unwrap_or(i).max(i)
            })
            .collect();
        // Cut after position i when everything before i is read no later than i.
        let mut cuts = Vec::new();
        let mut reach = 0usize;
        for (i, &read) in last_read.iter().enumerate() {
            if reach <= i && i + 1 < fwd.len() {
                cuts.push(i);
            }
            reach = reach.max(read);
        }
        // Stage of each forward position: cuts end stages 1..=L, the rest is the loss.
        let mut groups: Vec<Vec<NodeId>> = Vec::new();
        let mut start = 0;
        for &c in &cuts {
            groups.push(fwd[start..=c].to_vec());
            start = c + 1;
        }
        groups.push(fwd[start..].to_vec());
        let groups = merge_stages(graph, groups, MAX_STAGES + 1);
        let stages = groups.len();
        let mut stage_of = vec![usize::MAX; graph.len()];
        for (k, g) in groups.iter().enumerate() {
            for &v in g {
                stage_of[v.index()] = k;
            }
        }
        let mut backward = vec![Vec::new(); stages];
        for &v in order.iter().filter(|v| !part.contains[v.index()]) {
            let s = graph.preds(v).iter().map(|p| stage_of[p.index()]).filter(|&s| s != usize::MAX).min().unwrap_or(stages - 1);
            stage_of[v.index()] = s;
            backward[s].push(v);
        }
        let bytes = |v: NodeId| graph.node(v).bytes;
        let cost = |vs: &[NodeId]| vs.iter().map(|&v| graph.node(v).cost).sum::<f64>();
        let read_backward = |v: NodeId| graph.succs(v).iter().any(|s| !part.contains[s.index()]);
        let mut chain_stages = Vec::new();
        for k in 0..stages - 1 {
            let cut = *groups[k].last().expect("stages are not empty");
            let a = stored_bytes(graph, cut);
            let kept: u64 = groups[k].iter().filter(|&&v| v != cut && read_backward(v)).map(|&v| bytes(v)).sum();
            let all: u64 = groups[k].iter().map(|&v| bytes(v)).sum();
            // δ_ℓ: backward values of later stages read at stage ≤ ℓ.
            let delta: u64 = backward[k + 1..]
                .iter()
                .flatten()
                .filter(|&&x| graph.succs(x).iter().any(|s| stage_of[s.index()] <= k))
                .map(|&x| bytes(x))
                .sum();
            let back: u64 = backward[k].iter().map(|&v| bytes(v)).sum();
            chain_stages.push(Stage { u_f: cost(&groups[k]), u_b: cost(&backward[k]), a, a_bar: a + kept, delta, of: all.saturating_sub(a), ob: back });
        }
        let last = stages - 1;
        let loss = Loss {
            u_f: cost(&groups[last]),
            u_b: cost(&backward[last]),
            a_bar: groups[last].iter().map(|&v| bytes(v)).sum(),
            of: 0,
            ob: backward[last].iter().map(|&v| bytes(v)).sum(),
        };
        ChainView { chain: Chain { a0: 0, delta0: 0, stages: chain_stages, loss }, forward: groups, backward }
    }

    /// The step schedule of a chain schedule (transfers are not steps).
    pub fn schedule(&self, ops: &[ChainOp]) -> Schedule {
        let mut out = Vec::new();
        for &op in ops {
            match op {
                ChainOp::FAll(l) | ChainOp::FCk(l) | ChainOp::FNone(l) => out.extend_from_slice(&self.forward[l - 1]),
                ChainOp::B(l) => out.extend_from_slice(&self.backward[l - 1]),
                ChainOp::Offload(_) | ChainOp::Prefetch(_) => {}
            }
        }
        out
    }
}

/// Merges adjacent stages (never into the loss) until at most `limit` remain, each time the
/// adjacent pair with the least forward cost together.
fn merge_stages(graph: &Graph, mut groups: Vec<Vec<NodeId>>, limit: usize) -> Vec<Vec<NodeId>> {
    let cost = |g: &[NodeId]| g.iter().map(|&v| graph.node(v).cost).sum::<f64>();
    while groups.len() > limit.max(2) {
        let pairs = groups.len() - 2; // pairs among stages 1..=L (the loss stays alone)
        let k = (0..pairs).min_by(|&a, &b| (cost(&groups[a]) + cost(&groups[a + 1])).total_cmp(&(cost(&groups[b]) + cost(&groups[b + 1])))).unwrap();
        let next = groups.remove(k + 1);
        groups[k].extend(next);
    }
    groups
}

/// The chain planner (`--remat=chain`).
pub struct ChainRemat;

impl ChainRemat {
    /// The cheapest step schedule the DP gives within `budget` (searching the DP's budget
    /// downward from it), or the lowest-peak one when none fits; with the DP budget used.
    fn plan_at(view: &ChainView, graph: &Graph, budget: u64, options: &ChainOptions) -> Option<(Schedule, u64, f64, Vec<ChainOp>)> {
        let run = |dp_budget: u64| -> Option<(Schedule, u64, f64, Vec<ChainOp>, u64)> {
            let plan = dp::solve_remat_only(&view.chain, dp_budget, options.mem_slots)?;
            let schedule = view.schedule(&plan.ops);
            let peak = simulate(graph, &schedule).ok()?.peak_bytes;
            Some((schedule, dp_budget, plan.makespan, plan.ops, peak))
        };
        let first = run(budget)?;
        if first.4 <= budget {
            return Some((first.0, first.1, first.2, first.3));
        }
        // The chain over-estimates transients but can miss a value the memory model keeps:
        // lower the DP's budget until the measured peak fits.
        let (mut low, mut high) = (0u64, budget);
        let mut best: Option<(Schedule, u64, f64, Vec<ChainOp>, u64)> = None;
        while low + 1 < high {
            let mid = low + (high - low) / 2;
            match run(mid) {
                Some(found) if found.4 <= budget => {
                    low = mid;
                    best = Some(found);
                }
                _ => high = mid,
            }
        }
        let found = best.unwrap_or(first);
        Some((found.0, found.1, found.2, found.3))
    }
}

impl Planner for ChainRemat {
    fn name(&self) -> &'static str {
        "chain"
    }
    fn summary(&self) -> &'static str {
        "the step as a chain of stages, planned by Beaumont et al.'s optimal dynamic program"
    }
    fn plan(&self, request: &PlanRequest<'_>) -> Result<Schedule, PlanError> {
        Ok(self.plan_detailed(request)?.0)
    }
    fn plan_detailed(&self, request: &PlanRequest<'_>) -> Result<(Schedule, PlanDetails), PlanError> {
        request.order_positions()?;
        let graph = request.graph;
        let options = &request.options.chain;
        let view = ChainView::of(graph, request.order);
        let baseline = simulate(graph, request.order).map_err(|e| PlanError::InvalidRequest(e.to_string()))?.peak_bytes;
        let budget = match request.budget {
            Some(b) => b,
            // Least memory: the smallest budget the chain plan meets (bisected).
            None => match crate::smallest_feasible_budget(self, graph, request.order, request.options) {
                Some(b) => b,
                None => return Ok((request.order.to_vec(), PlanDetails::default())),
            },
        };
        let Some((schedule, dp_budget, makespan, ops)) = Self::plan_at(&view, graph, budget, options) else {
            return Ok((request.order.to_vec(), PlanDetails::default()));
        };
        // A chain plan that misses a budget the input order meets is no plan.
        if baseline <= budget && simulate(graph, &schedule).map_or(true, |s| s.peak_bytes > budget) {
            return Ok((request.order.to_vec(), PlanDetails::default()));
        }
        let offload = options.beta().and_then(|beta| {
            let plan = dp::solve(&view.chain, dp_budget, Some(beta), options.mem_slots)?;
            let moved: u64 = plan.ops.iter().filter_map(|op| if let ChainOp::Offload(l) = op { Some(transfer_bytes(&view.chain, &plan.ops, *l)) } else { None }).sum();
            Some((plan.makespan, moved))
        });
        let stats = ChainStats { stages: view.chain.len(), dp_budget, remat_makespan: makespan, offload, ops: ops.iter().map(ToString::to_string).collect() };
        Ok((schedule, PlanDetails { chain: Some(stats), ..PlanDetails::default() }))
    }
}

/// Bytes an `Offload(l)` moves: ā_l when the plan stores ā_l, else a_l.
fn transfer_bytes(chain: &Chain, ops: &[ChainOp], l: usize) -> u64 {
    if l >= 1 && ops.contains(&ChainOp::FAll(l)) {
        chain.abar(l)
    } else {
        chain.a(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_graph::training::{linear_network, FeedForward};

    #[test]
    fn the_linear_network_is_a_chain_of_single_layers() {
        let graph = linear_network(8);
        let order = graph.topological_schedule();
        let view = ChainView::of(&graph, &order);
        // t1..t8 are the forward part (no backward flags would make the loss dt1's cone);
        // every t_i but the last is a cut.
        assert!(!view.chain.is_empty());
        let all: usize = view.forward.iter().chain(&view.backward).map(Vec::len).sum();
        assert_eq!(all, order.len(), "every node is in exactly one stage");
    }

    #[test]
    fn chain_plans_are_valid_and_fit_the_budget() {
        let graph = FeedForward::mlp(12).generate();
        let order = graph.topological_schedule();
        let baseline = simulate(&graph, &order).unwrap().peak_bytes;
        let view = ChainView::of(&graph, &order);
        assert!(view.chain.len() >= 6, "the MLP has a cut per layer: {} stages", view.chain.len());
        let options = crate::PlannerOptions::default();
        for percent in [100, 80, 60, 50] {
            let budget = baseline * percent / 100;
            let request = PlanRequest { graph: &graph, order: &order, budget: Some(budget), options: &options };
            let (schedule, details) = ChainRemat.plan_detailed(&request).unwrap();
            let sim = simulate(&graph, &schedule).unwrap();
            if details.chain.is_some() {
                assert!(sim.peak_bytes <= budget, "{percent}%: {} > {budget}", sim.peak_bytes);
            }
        }
    }
}

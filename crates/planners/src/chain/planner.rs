//! `chain`: a training step seen as a chain (Beaumont, Eyraud-Dubois, Shilova, NeurIPS 2021,
//! Figure 1) and planned with the optimal chain dynamic program ([`super::dp`]).
//!
//! # The chain view
//!
//! The forward part of the step (as [`crate::step::ForwardPart`] finds it; when that is the
//! whole step, the prefix before the input order's peak) is cut at its articulation points in
//! program order: after forward node `c` when no forward value computed before `c` is read by
//! a forward node after it, so that `c` is the only forward value that crosses. Values that
//! hold no memory, and values computed from constants alone (a broadcast zero read by every
//! ReLU, a causal mask), may cross any cut: they stay resident, which the memory model sees.
//! When a stage still lumps more than a quarter of the forward, [`ChainView::views`] adds a
//! view where small long edges may cross too (an RNG key split once and read by every
//! layer's dropout; see `small_values`); the planners measure a plan from each view and keep
//! the better.
//! The stretches between cuts are the stages; what follows the last cut (the loss and what
//! feeds it) is the loss stage L+1. Each backward node joins the lowest stage among its
//! inputs' (forward inputs by their stage, backward inputs by theirs, crossing values not
//! counted), so B_ℓ only waits for backward nodes of stages ≥ ℓ, which the chain order runs
//! first; a backward node with no such input (a transposed weight) joins the highest stage
//! among its readers', so that it runs when first needed (none: the loss stage); and no node
//! joins a higher stage than a backward value it reads (one holding no memory included).
//!
//! Table 1's terms, per stage ℓ: u_F and u_B sum the stage's forward and backward costs;
//! a_ℓ is the bytes the cut node keeps resident; ā_ℓ adds the stage's forward values that a
//! backward node reads; δ_ℓ is the bytes of backward values of later stages read by stage ℓ
//! or earlier; of_ℓ and ob_ℓ charge every other value of the stage as transient overhead
//! (an over-estimate: the memory model frees values after their last use). Stages beyond
//! [`MAX_STAGES`] are merged with their neighbours, cheapest merge first.
//!
//! A backward buffer that later stages only reach through views of it — the gradient stack
//! of scanned layers, made by the last layer's backward and written by every other layer's
//! through an in-place `insert_slice` — is in no δ: its own readers are in its stage. The
//! chain's terms then miss it for the whole backward (2.4 MB of a 6.1 MB peak on
//! transformer_scan.linalg at 19 %), and the DP budget that fits ends far below the real
//! one. So each view also comes in a second form whose δ count reads through views
//! ([`ChainView::views`]); that form counts such a buffer twice while a B_ℓ holds δ_ℓ and
//! δ_{ℓ−1}. Neither is right everywhere, so the planners plan with both and keep the plan
//! cheapest once polished.
//!
//! A parameter update joins its gradient's stage, so it runs as soon as it can. With plain
//! SGD that costs nothing (the new parameter takes the gradient's place); Adam's update makes
//! three step outputs per gradient, resident from there to the end, so at the lowest budgets
//! it is better run last, holding the gradients instead. When the updates make more bytes
//! than they read ([`deferrable_updates`]), every view is also planned with them in stage 1's
//! backward, the last to run.
//!
//! # From a chain schedule to a step schedule
//!
//! F_all^ℓ, F_ck^ℓ and F_∅^ℓ run stage ℓ's forward nodes, B_ℓ its backward nodes, each in
//! program order; the memory model then keeps exactly what later nodes read, so an F_∅'s input
//! dies and a later F_all recomputes what B_ℓ needs. The chain's memory terms only
//! approximate the memory model (in both directions), so the planner measures every
//! candidate with [`remat_graph::simulate_with_transfers`] and bisects the DP's budget for
//! the largest one whose schedule fits the real budget.
//!
//! # Offloading
//!
//! With `--bandwidth` the DP also plans offloads and prefetches (Theorem 1), and
//! [`ChainView::lower`] turns them into host [`Transfer`]s of the step schedule: `O_ℓ` moves
//! what stage ℓ stores (ā_ℓ after F_all^ℓ, else a_ℓ) once its last reader before the
//! prefetch has run, `P_ℓ` brings it back right before the next step. The rewriter writes
//! them as copies to host memory and back. The chain's timing overlaps transfers with
//! compute; the step's cost counts compute only, and the report gives the DP's makespan.

use super::dp;
use super::model::{Chain, ChainOp, Loss, Stage};
use crate::step::{stored_bytes, ForwardPart};
use crate::{Deadline, InvalidRequest, PlanDetails, PlanError, PlanRequest, Planner, StopReason, StrategyFacts};
use remat_graph::{simulate, simulate_with_transfers, Graph, NodeId, Schedule, Transfer};

/// The most stages the chain view keeps (the DP is cubic in L).
pub const MAX_STAGES: usize = 64;

/// The parameter updates that may wait for the end of the backward, when waiting saves
/// bytes: backward nodes that are step outputs, read no forward value that holds memory, and
/// are read only by such nodes (an optimizer's new parameters and state; closed under
/// readers, so all of them can run last, in program order). Run where their gradient is
/// made, they stay resident from there to the end; run last, their inputs do instead. That
/// saves bytes when the updates hold well more than the backward values they read (half as
/// much again): Adam makes three buffers per gradient, plain SGD one (`None` then: nothing
/// to gain).
pub(crate) fn deferrable_updates(graph: &Graph, order: &[NodeId]) -> Option<Vec<bool>> {
    let part = ChainView::forward_part(graph, order);
    let mut deferred = vec![false; graph.len()];
    for &v in order.iter().rev().filter(|v| !part.contains[v.index()]) {
        let node = graph.node(v);
        deferred[v.index()] = node.output
            && !node.argument
            && graph.preds(v).iter().all(|p| !part.contains[p.index()] || stored_bytes(graph, *p) == 0)
            && graph.succs(v).iter().all(|s| deferred[s.index()]);
    }
    let made: u64 = order.iter().filter(|v| deferred[v.index()]).map(|&v| graph.node(v).bytes).sum();
    let mut read: Vec<NodeId> = order
        .iter()
        .filter(|v| deferred[v.index()])
        .flat_map(|&v| graph.preds(v).iter().copied())
        .filter(|p| !deferred[p.index()] && !part.contains[p.index()])
        .map(|p| graph.storage_root(p))
        .collect();
    read.sort();
    read.dedup();
    let freed: u64 = read.iter().map(|&r| stored_bytes(graph, r)).sum();
    // Half as much again, not merely more: SGD's updates read about what they make.
    (2 * made > 3 * freed).then_some(deferred)
}

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
    /// Makespan of the rematerialization-only plan within the same budget (cost units; NaN
    /// when only offloading fits).
    pub remat_makespan: f64,
    /// With `--bandwidth`, when the offloading plan fits: its makespan (the DP's, transfers
    /// overlapped with compute) and the bytes the schedule copies to the host.
    pub offload: Option<(f64, u64)>,
    /// The chain operations of the plan, as the paper writes them.
    pub ops: Vec<String>,
}

impl StrategyFacts for ChainStats {
    fn key(&self) -> &'static str {
        "chain"
    }

    fn to_json(&self, _deterministic: bool) -> serde_json::Value {
        let mut chain = serde_json::json!({
            "stages": self.stages,
            "dp_budget_bytes": self.dp_budget,
            "remat_makespan": self.remat_makespan,
            "ops": self.ops,
        });
        if let Some((makespan, moved)) = self.offload {
            chain["offload"] = serde_json::json!({
                "makespan": makespan,
                "offloaded_bytes": moved,
                "overhead_saved": 1.0 - makespan / self.remat_makespan,
            });
        }
        chain
    }

    fn lines(&self, _deterministic: bool) -> Vec<(String, String)> {
        use remat_graph::units::Bytes;
        let mut lines = vec![(
            "chain".to_string(),
            format!(
                "{} stages, DP at {} ({} bytes), rematerialization-only makespan {:.4e}",
                self.stages,
                Bytes(self.dp_budget),
                self.dp_budget,
                self.remat_makespan
            ),
        )];
        if let Some((makespan, moved)) = self.offload {
            lines.push((
                "chain offload".into(),
                format!(
                    "makespan {makespan:.4e} ({:+.1}% vs rematerialization only), {} offloaded",
                    100.0 * (makespan / self.remat_makespan - 1.0),
                    Bytes(moved)
                ),
            ));
        }
        lines
    }
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
    /// What ā_ℓ holds, stages 1..=L (index ℓ − 1): the cut node a_ℓ first, then the stage's
    /// forward values that a backward node reads.
    pub stored: Vec<Vec<NodeId>>,
    /// Whether the step's parameter updates were deferred to the last stage
    /// ([`deferrable_updates`]).
    pub deferred_updates: bool,
}

impl ChainView {
    /// Cuts the step at the articulation points of its forward part.
    pub fn of(graph: &Graph, order: &[NodeId]) -> ChainView {
        Self::cut(graph, order, false, None, None).0
    }

    /// The cut nodes a_1..a_L: the block outputs, in forward order.
    pub fn cut_nodes(&self) -> Vec<NodeId> {
        self.stored.iter().filter_map(|s| s.first().copied()).collect()
    }

    /// The strict view with its stages merged in pairs, from the first stage and from the
    /// second (none when it has fewer than three): a merged block's menu can drop what its
    /// first half hands its second (a stem's activation, recomputed late in the next block's
    /// backward, as the ILP's optimum on a small ResNet does), which a block's own menu cannot
    /// (its input is the DP's a_{ℓ−1}, held through its backward). For the hierarchical
    /// planner, which plans them with its tight backward term.
    pub fn paired_views(graph: &Graph, order: &[NodeId]) -> Vec<ChainView> {
        let strict = Self::cut(graph, order, false, None, None).0;
        if strict.chain.len() < 3 {
            return Vec::new();
        }
        (0..2).map(|offset| Self::cut(graph, order, false, None, Some(offset)).0).collect()
    }

    /// The views worth planning with: [`ChainView::of`], and, when one of its stages holds more
    /// than 1/[`LUMP_SHARE`] of the forward nodes and letting small long edges cross cuts
    /// (together at most 1/[`SMALL_VALUES_SHARE`] of the input order's peak) cuts the forward
    /// elsewhere, that view too. Such a lump is the mark of
    /// a small long edge, an RNG key or a step counter read by every layer, hiding the layers;
    /// the finer view finds them. It does not win everywhere (its cuts leave values the
    /// chain's terms do not see), so the planners measure a plan from each and keep the better.
    ///
    /// Each of these comes in a second form when the step has backward buffers that views keep
    /// alive below the stage that reads them directly (a gradient stack that every layer's
    /// backward writes into through a view): δ counting such a buffer at every stage it spans
    /// (see [`Self::cut`]). Which form plans better differs by step, so both are planned.
    ///
    /// And when the step's parameter updates make more bytes than they free (Adam's new
    /// parameters, moments and variances, three buffers per gradient), every view is also
    /// planned with those updates deferred to the end of the backward
    /// ([`deferrable_updates`]): each block then holds its gradients, not three times their
    /// bytes, through the rest of the backward, which is what the lowest budgets need.
    pub fn views(graph: &Graph, order: &[NodeId]) -> Vec<ChainView> {
        let (strict, strict_spanning) = Self::cut(graph, order, false, None, None);
        let forward: usize = strict.forward.iter().map(Vec::len).sum();
        let lumpy = !strict.forward.iter().all(|stage| stage.len() * LUMP_SHARE <= forward);
        let finer =
            lumpy.then(|| Self::cut(graph, order, true, None, None)).filter(|(f, _)| f.forward != strict.forward);
        let crossings: &[bool] = if finer.is_some() { &[false, true] } else { &[false] };
        let mut views = vec![strict];
        let mut spanning: Vec<ChainView> = strict_spanning.into_iter().collect();
        if let Some((finer, finer_spanning)) = finer {
            views.push(finer);
            spanning.extend(finer_spanning);
        }
        views.extend(spanning);
        if let Some(deferred) = deferrable_updates(graph, order) {
            let mut later = Vec::new();
            for &small_may_cross in crossings {
                let (view, spanning) = Self::cut(graph, order, small_may_cross, Some(&deferred), None);
                views.push(view);
                later.extend(spanning);
            }
            views.extend(later);
        }
        views
    }

    /// The chain view with small long edges free to cross cuts or not, and its second form
    /// when that differs. δ_ℓ counts the backward values of later stages that stage ℓ or an
    /// earlier one reads; in the second form, reads of views of a value count as reads of it
    /// (its buffer lives as long as they do), which counts a buffer spanning several stages in
    /// each of their δ: twice during a B_ℓ, which holds δ_ℓ and δ_{ℓ−1}, but never not at all.
    ///
    /// `deferred` names backward nodes that join the lowest stage, to run last
    /// ([`deferrable_updates`]).
    fn cut(
        graph: &Graph,
        order: &[NodeId],
        small_may_cross: bool,
        deferred: Option<&[bool]>,
        paired: Option<usize>,
    ) -> (ChainView, Option<ChainView>) {
        let part = Self::forward_part(graph, order);
        let fwd = &part.nodes;
        let mut position = vec![usize::MAX; graph.len()];
        for (i, &v) in fwd.iter().enumerate() {
            position[v.index()] = i;
        }
        // Values computed from constants alone (a broadcast zero, a causal mask, a position
        // table) are often read by every layer; they may cross any cut, or few steps would be
        // chains. They stay resident in the memory model, which the planner measures with.
        let mut from_constants = vec![false; graph.len()];
        for &v in order {
            from_constants[v.index()] = graph.node(v).pure
                && graph.preds(v).iter().all(|p| !graph.node(*p).argument && from_constants[p.index()]);
        }
        // With `small_may_cross`, so may small long edges ([`small_values`]).
        let mut may_cross = from_constants;
        if small_may_cross {
            for v in small_values(graph, order, fwd, &position) {
                may_cross[v.index()] = true;
            }
        }
        // last_read[i]: the last forward position reading the value at position i (values that
        // hold no memory, constants and views of arguments, may cross any cut too).
        let last_read: Vec<usize> = fwd
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                if stored_bytes(graph, v) == 0 || may_cross[v.index()] {
                    return i;
                }
                graph
                    .succs(v)
                    .iter()
                    .filter(|s| part.contains[s.index()])
                    .map(|s| position[s.index()])
                    .max()
                    .unwrap_or(i)
                    .max(i)
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
        let mut groups = merge_stages(graph, groups, MAX_STAGES + 1);
        if let Some(offset) = paired {
            groups = pair_stages(groups, offset);
        }
        let stages = groups.len();
        tracing::debug!(forward = fwd.len(), cuts = cuts.len(), stages, sizes = ?groups.iter().map(Vec::len).collect::<Vec<_>>(), "chain view");
        let mut stage_of = vec![usize::MAX; graph.len()];
        for (k, g) in groups.iter().enumerate() {
            for &v in g {
                stage_of[v.index()] = k;
            }
        }
        // A backward node joins the lowest stage among its inputs'; values that may cross cuts
        // say nothing about where it belongs. One with no such input (a transposed weight, a
        // zero gradient) joins the highest stage among its readers', the first to run in the
        // backward, so that it is computed when first needed rather than with the loss.
        let backward_nodes: Vec<NodeId> = order.iter().copied().filter(|v| !part.contains[v.index()]).collect();
        let mut floating = vec![false; graph.len()];
        for &v in &backward_nodes {
            let s = graph
                .preds(v)
                .iter()
                .filter(|p| !may_cross[p.index()] && stored_bytes(graph, **p) > 0 && !floating[p.index()])
                .map(|p| stage_of[p.index()])
                .filter(|&s| s != usize::MAX)
                .min();
            match s {
                Some(s) => stage_of[v.index()] = s,
                None => floating[v.index()] = true,
            }
        }
        for &v in backward_nodes.iter().rev().filter(|v| floating[v.index()]) {
            let readers = graph.succs(v).iter().filter(|s| !part.contains[s.index()]).map(|s| stage_of[s.index()]);
            stage_of[v.index()] = readers.filter(|&s| s != usize::MAX).max().unwrap_or(stages - 1);
        }
        // Whatever the rules above chose, a backward node may not run before a backward value it
        // reads (one that holds no memory included): it joins no higher stage than theirs.
        for &v in &backward_nodes {
            let inputs = graph.preds(v).iter().filter(|p| !part.contains[p.index()] && !graph.node(**p).argument);
            if let Some(lowest) = inputs.map(|p| stage_of[p.index()]).min() {
                stage_of[v.index()] = stage_of[v.index()].min(lowest);
            }
        }
        if let Some(deferred) = deferred {
            for &v in backward_nodes.iter().filter(|v| deferred[v.index()]) {
                stage_of[v.index()] = 0;
            }
        }
        let mut backward = vec![Vec::new(); stages];
        for &v in &backward_nodes {
            backward[stage_of[v.index()]].push(v);
        }
        // The lowest stage reading each backward value, directly and through a view of it.
        let mut lowest_reader = vec![usize::MAX; graph.len()];
        let mut lowest_through_views = vec![usize::MAX; graph.len()];
        for &v in &backward_nodes {
            let root = graph.storage_root(v);
            for s in graph.succs(v) {
                lowest_reader[v.index()] = lowest_reader[v.index()].min(stage_of[s.index()]);
                lowest_through_views[root.index()] = lowest_through_views[root.index()].min(stage_of[s.index()]);
            }
        }
        let mut spanning_deltas = Vec::new();
        let bytes = |v: NodeId| graph.node(v).bytes;
        let cost = |vs: &[NodeId]| vs.iter().map(|&v| graph.node(v).cost).sum::<f64>();
        let read_backward = |v: NodeId| graph.succs(v).iter().any(|s| !part.contains[s.index()]);
        let mut chain_stages = Vec::new();
        let mut stored = Vec::new();
        for k in 0..stages - 1 {
            let cut = *groups[k].last().expect("stages are not empty");
            stored.push(
                std::iter::once(cut)
                    .chain(groups[k].iter().copied().filter(|&v| v != cut && read_backward(v)))
                    .collect(),
            );
            let a = stored_bytes(graph, cut);
            let kept: u64 = groups[k].iter().filter(|&&v| v != cut && read_backward(v)).map(|&v| bytes(v)).sum();
            let all: u64 = groups[k].iter().map(|&v| bytes(v)).sum();
            // δ_ℓ: backward values of later stages read at stage ≤ ℓ.
            let later = || backward[k + 1..].iter().flatten();
            let delta: u64 = later().filter(|&&x| lowest_reader[x.index()] <= k).map(|&x| bytes(x)).sum();
            spanning_deltas.push(later().filter(|&&x| lowest_through_views[x.index()] <= k).map(|&x| bytes(x)).sum());
            let back: u64 = backward[k].iter().map(|&v| bytes(v)).sum();
            chain_stages.push(Stage {
                u_f: cost(&groups[k]),
                u_b: cost(&backward[k]),
                a,
                a_bar: a + kept,
                delta,
                of: all.saturating_sub(a),
                ob: back,
            });
        }
        let last = stages - 1;
        let loss = Loss {
            u_f: cost(&groups[last]),
            u_b: cost(&backward[last]),
            a_bar: groups[last].iter().map(|&v| bytes(v)).sum(),
            of: 0,
            ob: backward[last].iter().map(|&v| bytes(v)).sum(),
        };
        let view = ChainView {
            chain: Chain { a0: 0, delta0: 0, stages: chain_stages, loss },
            forward: groups,
            backward,
            stored,
            deferred_updates: deferred.is_some(),
        };
        let spanning =
            (spanning_deltas.iter().zip(&view.chain.stages).any(|(&d, stage)| d != stage.delta)).then(|| {
                let mut spanning = view.clone();
                for (stage, d) in spanning.chain.stages.iter_mut().zip(spanning_deltas) {
                    stage.delta = d;
                }
                spanning
            });
        (view, spanning)
    }

    /// The forward part ([`ForwardPart`]); when that is the whole step (no `backward` marks
    /// and one output that depends on everything), the program order's prefix before the
    /// input order's peak: a training step's memory grows while it runs forward and shrinks
    /// from where its backward starts consuming what the forward kept.
    pub(crate) fn forward_part(graph: &Graph, order: &[NodeId]) -> ForwardPart {
        let part = ForwardPart::of(graph, order);
        if part.nodes.len() < order.len() {
            return part;
        }
        let Some(peak) = simulate(graph, order).ok().and_then(|s| s.peak_step).filter(|&p| p > 0) else { return part };
        ForwardPart::prefix(graph, order, peak)
    }

    /// The step schedule of a chain schedule (an impure node runs with its stage's first
    /// forward only), with its host transfers: `Offload(ℓ)` moves
    /// what stage ℓ stores (ā_ℓ after an F_all^ℓ, else a_ℓ) to the host once the last step
    /// before `Prefetch(ℓ)` that reads it has run, and `Prefetch(ℓ)` brings it back right
    /// before the next step. A transfer the memory model rejects (a step would read the value
    /// while it is away) is dropped: the value then stays on the device.
    pub fn lower(&self, graph: &Graph, ops: &[ChainOp]) -> (Schedule, Vec<Transfer>) {
        let mut schedule: Schedule = Vec::new();
        let mut latest: Vec<Option<usize>> = vec![None; graph.len()];
        let mut saved_all = vec![false; self.stored.len() + 1];
        let mut ran = vec![false; self.forward.len()];
        // Offloads listed and not yet prefetched: (stage, instance, listed after step).
        let mut away: Vec<(usize, usize, Option<usize>)> = Vec::new();
        let mut transfers = Vec::new();
        for &op in ops {
            match op {
                ChainOp::FAll(l) | ChainOp::FCk(l) | ChainOp::FNone(l) => {
                    if l <= self.stored.len() {
                        saved_all[l] = matches!(op, ChainOp::FAll(_));
                    }
                    // An impure node (an op writing a buffer in place) runs exactly once: later
                    // runs of its stage read its one value.
                    let again = std::mem::replace(&mut ran[l - 1], true);
                    for &v in self.forward[l - 1].iter().filter(|&&v| !again || graph.node(v).pure) {
                        latest[v.index()] = Some(schedule.len());
                        schedule.push(v);
                    }
                }
                ChainOp::B(l) => {
                    for &v in &self.backward[l - 1] {
                        latest[v.index()] = Some(schedule.len());
                        schedule.push(v);
                    }
                }
                // a_0 is the step's input (arguments): nothing to move.
                ChainOp::Offload(l) if l >= 1 => {
                    let moved = if saved_all[l] { &self.stored[l - 1][..] } else { &self.stored[l - 1][..1] };
                    for &v in moved {
                        if let Some(instance) = latest[v.index()] {
                            away.push((l, instance, schedule.len().checked_sub(1)));
                        }
                    }
                }
                ChainOp::Prefetch(l) if l >= 1 => {
                    for (_, instance, listed) in away.extract_if(.., |(stage, _, _)| *stage == l) {
                        let after = listed.unwrap_or(instance).max(instance);
                        transfers.push(Transfer { instance, offload_after: after, prefetch_before: schedule.len() });
                    }
                }
                ChainOp::Offload(_) | ChainOp::Prefetch(_) => {}
            }
        }
        // A copy to the host waits for the instance's last reader before the prefetch (the
        // chain lets a reader run alongside the offload).
        let mut last_read: Vec<Vec<usize>> = vec![Vec::new(); schedule.len()];
        let mut current: Vec<Option<usize>> = vec![None; graph.len()];
        for (step, &node) in schedule.iter().enumerate() {
            for &p in graph.preds(node) {
                if let Some(instance) = current[p.index()] {
                    last_read[instance].push(step);
                }
            }
            current[node.index()] = Some(step);
        }
        for t in &mut transfers {
            if let Some(&read) = last_read[t.instance].iter().filter(|&&r| r < t.prefetch_before).max() {
                t.offload_after = t.offload_after.max(read);
            }
        }
        transfers.retain(|t| t.offload_after + 1 < t.prefetch_before && t.prefetch_before < schedule.len());
        transfers.sort_unstable();
        // Drop what the memory model rejects, a transfer of the named node at a time (an
        // invalid schedule is left for the caller's measurement to reject).
        while !transfers.is_empty() {
            let Err(e) = simulate_with_transfers(graph, &schedule, &transfers) else { break };
            match transfers.iter().position(|t| schedule[t.instance] == e.node) {
                Some(k) => drop(transfers.remove(k)),
                None => transfers.clear(),
            }
        }
        (schedule, transfers)
    }
}

/// A stage holding more than this part of the forward nodes is a lump ([`ChainView::views`]).
pub const LUMP_SHARE: usize = 4;

/// The part of the input order's peak that the small values crossing cuts may hold together.
pub const SMALL_VALUES_SHARE: u64 = 100;

/// The forward values that may cross cuts, their stored bytes together within
/// 1/[`SMALL_VALUES_SHARE`] of the input order's peak: an RNG key split once and read by
/// every layer's dropout, a step counter, a norm's statistics. Each may be a long edge that
/// merges every layer it spans into one stage; resident all along, they cost little, and the
/// memory model the plans are measured with counts them. They are taken by bytes per forward
/// position spanned (to their last forward reader), least first, ties in program order: a
/// long edge before the many short-lived words of an unrolled PRNG, which would use up the
/// share while crossing no cut (JAX's threefry rounds, unrolled, are thousands of 4- and
/// 8-byte values).
/// `position` maps a node to its place in `fwd` (`usize::MAX` outside it).
fn small_values(graph: &Graph, order: &[NodeId], fwd: &[NodeId], position: &[usize]) -> Vec<NodeId> {
    let Ok(peak) = simulate(graph, order).map(|s| s.peak_bytes) else { return Vec::new() };
    let allowance = peak / SMALL_VALUES_SHARE;
    let span = |i: usize, v: NodeId| {
        let last = graph.succs(v).iter().map(|s| position[s.index()]).filter(|&p| p != usize::MAX).max();
        last.map_or(0, |last| last.saturating_sub(i))
    };
    let mut candidates: Vec<(f64, u64, NodeId)> = fwd
        .iter()
        .enumerate()
        .map(|(i, &v)| (stored_bytes(graph, v), span(i, v), v))
        .filter(|&(bytes, span, _)| bytes > 0 && span > 0)
        .map(|(bytes, span, v)| (bytes as f64 / span as f64, bytes, v))
        .collect();
    candidates.sort_by(|a, b| a.0.total_cmp(&b.0)); // stable: program order among equals
    let mut used = 0u64;
    candidates
        .into_iter()
        .take_while(|&(_, bytes, _)| {
            used += bytes;
            used <= allowance
        })
        .map(|(_, _, v)| v)
        .collect()
}

/// Stages 1..=L merged in pairs, the first pair starting at stage `offset + 1` (the loss
/// stays alone).
fn pair_stages(groups: Vec<Vec<NodeId>>, offset: usize) -> Vec<Vec<NodeId>> {
    let last = groups.len() - 1;
    let mut paired: Vec<Vec<NodeId>> = Vec::new();
    for (k, group) in groups.into_iter().enumerate() {
        if k > offset && k < last && (k - offset) % 2 == 1 {
            paired.last_mut().expect("a stage before it").extend(group);
        } else {
            paired.push(group);
        }
    }
    paired
}

/// Merges adjacent stages (never into the loss) until at most `limit` remain, each time the
/// adjacent pair with the least forward cost together.
fn merge_stages(graph: &Graph, mut groups: Vec<Vec<NodeId>>, limit: usize) -> Vec<Vec<NodeId>> {
    // Each group's cost summed in order once, and a merged group's continued over what it
    // takes in (the same sum as summing it afresh): summing every group at every merge made
    // this quadratic in the nodes (70 % of hierarchical's time on a 100k-node chain).
    let mut costs: Vec<f64> = groups.iter().map(|g| g.iter().map(|&v| graph.node(v).cost).sum()).collect();
    while groups.len() > limit.max(2) {
        let pairs = groups.len() - 2; // pairs among stages 1..=L (the loss stays alone)
        let k = (0..pairs).min_by(|&a, &b| (costs[a] + costs[a + 1]).total_cmp(&(costs[b] + costs[b + 1]))).unwrap();
        let next = groups.remove(k + 1);
        costs.remove(k + 1);
        costs[k] = next.iter().fold(costs[k], |sum, &v| sum + graph.node(v).cost);
        groups[k].extend(next);
    }
    groups
}

/// What [`search_dp_budget`] found.
pub(crate) struct DpSearch<T> {
    /// The smallest DP budget the DP solves (within the resolution).
    pub floor: u64,
    /// The largest DP budget found whose plan fits.
    pub largest: u64,
    /// That plan.
    pub plan: T,
}

/// The DP-budget search of the planners that run a chain DP and measure its plan (`chain`,
/// `hierarchical`): the DP's terms err both ways, so below some DP budget it finds nothing at
/// all, and above it the measured peak need not follow the DP's budget. The plan at `total`
/// when it fits; else the smallest DP budget `solvable` accepts, then the largest above it
/// whose plan `fits`, each bisected until the interval is within `resolution(its top)`.
/// `None` when not even the smallest solvable DP budget gives a plan that fits. Once
/// `deadline` passes, each bisection stops where it is (the plan is then the best so far).
pub(crate) fn search_dp_budget<T>(
    total: u64,
    deadline: Deadline,
    resolution: impl Fn(u64) -> u64,
    solvable: impl Fn(u64) -> bool,
    run: impl Fn(u64) -> Option<T>,
    fits: impl Fn(&T) -> bool,
) -> Option<DpSearch<T>> {
    let open = |low: u64, high: u64| low + 1 < high && high - low > resolution(high) && !deadline.expired();
    if let Some(plan) = run(total).filter(&fits) {
        return Some(DpSearch { floor: total, largest: total, plan });
    }
    let (mut low, mut high) = (0u64, total);
    while open(low, high) {
        let mid = low + (high - low) / 2;
        if solvable(mid) {
            high = mid;
        } else {
            low = mid;
        }
    }
    let floor = high;
    let mut plan = run(floor).filter(&fits)?;
    let (mut low, mut high) = (floor, total);
    while open(low, high) {
        let mid = low + (high - low) / 2;
        match run(mid).filter(&fits) {
            Some(found) => {
                low = mid;
                plan = found;
            }
            None => high = mid,
        }
    }
    Some(DpSearch { floor, largest: low, plan })
}

/// The chain planner (`--remat=chain`).
pub struct ChainRemat;

/// One chain plan turned into a step schedule, measured.
struct LoweredPlan {
    schedule: Schedule,
    transfers: Vec<Transfer>,
    dp_budget: u64,
    makespan: f64,
    ops: Vec<ChainOp>,
    simulation: remat_graph::Simulation,
}

impl ChainRemat {
    /// The schedule of the DP run at the largest DP budget whose measured device peak fits
    /// `budget` (bisection: the chain's memory terms only approximate the memory model, in
    /// both directions), with offloading at β = `beta` or rematerialization only. `None`
    /// when no DP budget gives a schedule within `budget`.
    fn plan_at(
        view: &ChainView,
        graph: &Graph,
        budget: u64,
        beta: Option<f64>,
        mem_slots: Option<usize>,
        deadline: Deadline,
    ) -> Option<LoweredPlan> {
        let run = |dp_budget: u64| -> Option<LoweredPlan> {
            let plan = match beta {
                Some(beta) => dp::solve(&view.chain, dp_budget, Some(beta), mem_slots)?,
                None => dp::solve_remat_only(&view.chain, dp_budget, mem_slots)?,
            };
            let (schedule, transfers) = view.lower(graph, &plan.ops);
            let simulation = simulate_with_transfers(graph, &schedule, &transfers).ok()?;
            Some(LoweredPlan { schedule, transfers, dp_budget, makespan: plan.makespan, ops: plan.ops, simulation })
        };
        let solvable = |dp_budget: u64| match beta {
            Some(beta) => dp::solve_value(&view.chain, dp_budget, Some(beta), mem_slots).is_some(),
            None => dp::remat_only_value(&view.chain, dp_budget, mem_slots).is_some(),
        };
        let fits = |p: &LoweredPlan| p.simulation.peak_bytes <= budget;
        let total = view.chain.total_bytes().max(budget);
        search_dp_budget(total, deadline, |_| 1, solvable, run, fits).map(|found| found.plan)
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
        // The chain view takes seconds on 10^5 nodes: not begun past the deadline (a
        // bisection's probes after it, for one).
        if request.options.deadline.expired() {
            return Ok(request.no_plan());
        }
        simulate(graph, request.order).map_err(InvalidRequest::from)?;
        let views = ChainView::views(graph, request.order);
        // Without a budget, least memory: the smallest budget the chain plan meets (bisected).
        let budget =
            request.budget.or_else(|| crate::smallest_feasible_budget(self, graph, request.order, request.options));
        let Some(budget) = budget else { return Ok(request.no_plan()) };
        let deadline = request.options.deadline;
        // Per view: with a link, the offloading plan when it fits (the DP's makespan already
        // weighs its transfers against recomputation), else rematerialization only. Of the
        // views' plans, the fastest (then the smallest) wins.
        let plans = views.iter().filter_map(|view| {
            let remat_only = Self::plan_at(view, graph, budget, None, options.mem_slots, deadline);
            let offloading = options
                .beta()
                .and_then(|beta| Self::plan_at(view, graph, budget, Some(beta), options.mem_slots, deadline));
            let remat_makespan = remat_only.as_ref().map_or(f64::NAN, |p| p.makespan);
            let offloads = offloading.is_some();
            let chosen = offloading.or(remat_only)?;
            // Time: the DP's makespan with transfers overlapped, else the measured cost.
            let time = if offloads { chosen.makespan } else { chosen.simulation.cost };
            Some((view, chosen, remat_makespan, offloads, time))
        });
        let plans: Vec<_> = plans.collect();
        // Without transfers, the plan cheapest once polished (polishing can reverse the views'
        // raw order); with them, the fastest (then the smallest).
        let (best, polished) = if plans.iter().any(|p| p.3) {
            let fastest = plans
                .into_iter()
                .min_by(|a, b| a.4.total_cmp(&b.4).then(a.1.simulation.peak_bytes.cmp(&b.1.simulation.peak_bytes)));
            (fastest, None)
        } else {
            let raw: Vec<(&Schedule, f64)> = plans.iter().map(|p| (&p.1.schedule, p.4)).collect();
            match crate::cheapest_finished(graph, budget, request.options, &raw) {
                Some((i, polished)) => (plans.into_iter().nth(i), polished),
                None => (None, None),
            }
        };
        let Some((view, chosen, remat_makespan, offloads, _)) = best else { return Ok(request.no_plan()) };
        let offload = offloads.then_some((chosen.makespan, chosen.simulation.offloaded_bytes));
        let stats = ChainStats {
            stages: view.chain.len(),
            dp_budget: chosen.dp_budget,
            remat_makespan,
            offload,
            ops: chosen.ops.iter().map(ToString::to_string).collect(),
        };
        let details = PlanDetails {
            transfers: chosen.transfers,
            stop: request.stop_unless_out_of_time(StopReason::Completed),
            polished,
            ..PlanDetails::default()
        };
        Ok((chosen.schedule, details.with_facts(stats)))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::StopReason;
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
    fn a_gradient_stack_written_through_views_counts_in_the_deltas_it_spans() {
        use remat_graph::{GraphBuilder, NodeSpec};
        // Three layers; the top layer's backward makes a stack that the lower layers' backwards
        // write their gradients into in place (impure views), and the update reads at the end.
        let mut b = GraphBuilder::new();
        let x = b.add(NodeSpec::argument("x", 64), &[]);
        let h1 = b.add(NodeSpec::op("h1", 64, 1.0), &[x]);
        let h2 = b.add(NodeSpec::op("h2", 64, 1.0), &[h1]);
        let h3 = b.add(NodeSpec::op("h3", 64, 1.0), &[h2]);
        let loss = b.add(NodeSpec::op("loss", 4, 1.0), &[h3]);
        let g3 = b.add(NodeSpec::op("g3", 64, 1.0).backward(true), &[loss, h3]);
        let stack = b.add(NodeSpec::op("stack", 1000, 1.0).backward(true), &[g3, h2]);
        let g2 = b.add(NodeSpec::op("g2", 64, 1.0).backward(true), &[g3, h2]);
        let s2 = b.add(NodeSpec::op("s2", 0, 1.0).backward(true).view_of(stack).impure(), &[stack, g2]);
        let g1 = b.add(NodeSpec::op("g1", 64, 1.0).backward(true), &[g2, h1]);
        let s1 = b.add(NodeSpec::op("s1", 0, 1.0).backward(true).view_of(s2).impure(), &[s2, g1]);
        b.add(NodeSpec::op("update", 1000, 1.0).backward(true).output(), &[s1, x]);
        let graph = b.finish().unwrap();
        let order = graph.topological_schedule();
        let views = ChainView::views(&graph, &order);
        assert_eq!(views.len(), 2, "the direct view and the spanning one");
        let (direct, spanning) = (&views[0], &views[1]);
        assert_eq!(direct.forward, spanning.forward);
        let stage_of = |v: NodeId| direct.backward.iter().position(|b| b.contains(&v)).unwrap();
        assert!(stage_of(stack) > stage_of(s1), "the stack spans stages");
        // Below the stack's own stage, the spanning view holds its 1000 bytes in every δ down to
        // the stage of the last write; the direct one never does.
        let mut spanned = 0;
        for k in stage_of(s1)..stage_of(stack) {
            assert_eq!(spanning.chain.delta(k + 1), direct.chain.delta(k + 1) + 1000, "δ_{}", k + 1);
            spanned += 1;
        }
        assert!(spanned >= 1);
        // And plans from both fit their budgets.
        let options = crate::PlannerOptions::default();
        let baseline = remat_graph::simulate(&graph, &order).unwrap().peak_bytes;
        let request = PlanRequest { graph: &graph, order: &order, budget: Some(baseline), options: &options };
        let schedule = ChainRemat.plan(&request).unwrap();
        assert!(remat_graph::simulate(&graph, &schedule).unwrap().peak_bytes <= baseline);
    }

    /// Three linear layers trained with Adam (three step outputs per weight gradient) or with
    /// SGD (one), as graph nodes: (graph, the updates).
    pub(crate) fn layers_with_updates(adam: bool) -> (Graph, Vec<NodeId>) {
        use remat_graph::{GraphBuilder, NodeSpec};
        let mut b = GraphBuilder::new();
        let x = b.add(NodeSpec::argument("x", 64), &[]);
        let weights: Vec<NodeId> = (0..3).map(|i| b.add(NodeSpec::argument(format!("w{i}"), 64), &[])).collect();
        let state: Vec<NodeId> = (0..6).map(|i| b.add(NodeSpec::argument(format!("s{i}"), 64), &[])).collect();
        let mut h = vec![x];
        for &w in &weights {
            let prev = *h.last().unwrap();
            h.push(b.add(NodeSpec::op("h", 64, 1.0), &[prev, w]));
        }
        let mut g = b.add(NodeSpec::op("loss", 4, 1.0), &[h[3]]);
        let mut updates = Vec::new();
        for k in (0..3).rev() {
            let dw = b.add(NodeSpec::op("dw", 64, 1.0).backward(true), &[g, h[k]]);
            if adam {
                let m = b.add(NodeSpec::op("m", 64, 1.0).backward(true).output(), &[state[2 * k], dw]);
                let v = b.add(NodeSpec::op("v", 64, 1.0).backward(true).output(), &[state[2 * k + 1], dw]);
                updates.extend([m, v, b.add(NodeSpec::op("p", 64, 1.0).backward(true).output(), &[weights[k], m, v])]);
            } else {
                updates.push(b.add(NodeSpec::op("p", 64, 1.0).backward(true).output(), &[weights[k], dw]));
            }
            if k > 0 {
                g = b.add(NodeSpec::op("g", 64, 1.0).backward(true), &[g, weights[k]]);
            }
        }
        (b.finish().unwrap(), updates)
    }

    #[test]
    fn paired_stages_merge_neighbours_and_leave_the_loss_alone() {
        let v = NodeId;
        let groups: Vec<Vec<NodeId>> = (0..6).map(|i| vec![v(i)]).collect(); // stages 1..=5, the loss
        let merged = |offset| pair_stages(groups.clone(), offset);
        assert_eq!(merged(0), vec![vec![v(0), v(1)], vec![v(2), v(3)], vec![v(4)], vec![v(5)]]);
        assert_eq!(merged(1), vec![vec![v(0)], vec![v(1), v(2)], vec![v(3), v(4)], vec![v(5)]]);
    }

    #[test]
    fn adam_updates_are_also_planned_after_the_whole_backward_sgd_ones_are_not() {
        let (graph, updates) = layers_with_updates(true);
        let order = graph.topological_schedule();
        let deferred = deferrable_updates(&graph, &order).expect("Adam's updates make 3x what they read");
        assert_eq!((0..graph.len()).filter(|&i| deferred[i]).count(), updates.len());
        let views = ChainView::views(&graph, &order);
        let plain = views.iter().find(|v| !v.deferred_updates).unwrap();
        let later = views.iter().find(|v| v.deferred_updates).expect("a deferred view");
        let stage_of = |view: &ChainView, v: NodeId| view.backward.iter().position(|b| b.contains(&v)).unwrap();
        assert!(updates.iter().any(|&u| stage_of(plain, u) > 0), "updates run with their gradients");
        assert!(updates.iter().all(|&u| stage_of(later, u) == 0), "all run with the first block's backward");
        // The gradients they read now cross the blocks below theirs.
        assert!(later.chain.delta(1) > plain.chain.delta(1));

        let (graph, _) = layers_with_updates(false);
        let order = graph.topological_schedule();
        assert!(deferrable_updates(&graph, &order).is_none(), "SGD's update holds what it reads");
        assert!(ChainView::views(&graph, &order).iter().all(|v| !v.deferred_updates));
    }

    #[test]
    fn a_backward_node_reading_only_arguments_joins_its_readers_stage() {
        use remat_graph::{GraphBuilder, NodeSpec};
        // Two linear layers; the backward of the first reads a transposed weight that depends
        // on the argument alone. It must run with the first layer's backward, not with the loss.
        let mut b = GraphBuilder::new();
        let x = b.add(NodeSpec::argument("x", 64), &[]);
        let w = b.add(NodeSpec::argument("w", 64), &[]);
        let h1 = b.add(NodeSpec::op("h1", 64, 1.0), &[x, w]);
        let h2 = b.add(NodeSpec::op("h2", 64, 1.0), &[h1, w]);
        let loss = b.add(NodeSpec::op("loss", 4, 1.0), &[h2]);
        let wt = b.add(NodeSpec::op("wt", 64, 1.0).backward(true), &[w]);
        let g2 = b.add(NodeSpec::op("g2", 64, 1.0).backward(true), &[loss, h2]);
        let g1 = b.add(NodeSpec::op("g1", 64, 1.0).backward(true).output(), &[g2, wt, h1]);
        let graph = b.finish().unwrap();
        let order = graph.topological_schedule();
        let view = ChainView::of(&graph, &order);
        let stage_of = |v: NodeId| view.backward.iter().position(|b| b.contains(&v)).unwrap();
        assert_eq!(stage_of(wt), stage_of(g1), "wt runs with its reader");
        assert!(stage_of(wt) < view.backward.len() - 1, "not with the loss");
    }

    /// Six layers that all read one 8-byte key computed at the start (dropout's RNG key):
    /// the key spans every layer, so without small values crossing cuts the step is one stage.
    fn layers_reading_one_key() -> Graph {
        layers_with_rng_rounds(0)
    }

    /// [`layers_reading_one_key`] with each layer's mask made by `rounds` 4-byte values in a
    /// row from the key (an unrolled PRNG's words: many small values, each read once, next).
    fn layers_with_rng_rounds(rounds: usize) -> Graph {
        use remat_graph::{GraphBuilder, NodeSpec};
        let mut b = GraphBuilder::new();
        let x = b.add(NodeSpec::argument("x", 1024), &[]);
        let seed = b.add(NodeSpec::argument("seed", 8), &[]);
        let key = b.add(NodeSpec::op("key", 8, 1.0), &[seed]);
        let mut h = vec![x];
        for i in 1..=6 {
            let prev = *h.last().unwrap();
            let mut mask = key;
            for r in 0..rounds {
                mask = b.add(NodeSpec::op(format!("round{i}_{r}"), 4, 1.0), &[mask]);
            }
            h.push(b.add(NodeSpec::op(format!("h{i}"), 1024, 100.0), &[prev, mask]));
        }
        let loss = b.add(NodeSpec::op("loss", 4, 1.0), &[h[6]]);
        let mut g = loss;
        for i in (1..=6).rev() {
            let spec = NodeSpec::op(format!("g{i}"), 1024, 100.0).backward(true);
            g = b.add(if i == 1 { spec.output() } else { spec }, &[g, h[i], key]);
        }
        b.finish().unwrap()
    }

    #[test]
    fn a_long_edge_crosses_cuts_before_short_lived_smaller_values() {
        // 48 4-byte words hold more than the small values' share of the peak; taken smallest
        // first they used it all and left the key to merge the layers (JAX's dropout unrolled).
        let graph = layers_with_rng_rounds(8);
        let order = graph.topological_schedule();
        let peak = simulate(&graph, &order).unwrap().peak_bytes;
        assert!(48 * 4 > peak / SMALL_VALUES_SHARE, "the words alone exceed the share");
        let views = ChainView::views(&graph, &order);
        assert_eq!(views.len(), 2, "the finer view differs");
        assert!(views[0].chain.len() <= 2, "the key merges the layers: {} stages", views[0].chain.len());
        assert!(views[1].chain.len() >= 6, "a stage per layer: {} stages", views[1].chain.len());
    }

    #[test]
    fn a_small_value_read_by_every_layer_gets_a_view_of_its_own() {
        let graph = layers_reading_one_key();
        let order = graph.topological_schedule();
        let strict = ChainView::of(&graph, &order);
        let views = ChainView::views(&graph, &order);
        assert_eq!(views.len(), 2, "the finer view differs");
        assert_eq!(views[0].forward, strict.forward, "the strict view comes first");
        assert!(strict.chain.len() <= 2, "the key merges the layers: {} stages", strict.chain.len());
        assert!(views[1].chain.len() >= 6, "a stage per layer: {} stages", views[1].chain.len());
        // The finer view plans below the input order's peak, where the strict one cannot.
        let baseline = simulate(&graph, &order).unwrap().peak_bytes;
        let options = crate::PlannerOptions::default();
        let mut reached = 0;
        for percent in [90, 80, 70, 60, 50] {
            let budget = baseline * percent / 100;
            let request = PlanRequest { graph: &graph, order: &order, budget: Some(budget), options: &options };
            let (schedule, details) = ChainRemat.plan_detailed(&request).unwrap();
            if details.facts::<ChainStats>().is_none() {
                continue;
            }
            let peak = simulate(&graph, &schedule).unwrap().peak_bytes;
            assert!(peak <= budget, "{percent}%: {peak} > {budget}");
            let strict_plan = ChainRemat::plan_at(&strict, &graph, budget, None, None, Deadline::NONE);
            assert!(strict_plan.is_none(), "{percent}%: the strict view alone has a plan");
            reached += 1;
        }
        assert!(reached >= 2, "the finer view plans at 2 of the budgets at least ({reached})");
    }

    #[test]
    fn chain_plans_are_valid_and_fit_the_budget() {
        let graph = FeedForward::mlp(12).generate();
        let order = graph.topological_schedule();
        let baseline = simulate(&graph, &order).unwrap().peak_bytes;
        let view = ChainView::of(&graph, &order);
        assert!(view.chain.len() >= 6, "the MLP has a cut per layer: {} stages", view.chain.len());
        let options = crate::PlannerOptions::default();
        let mut planned = 0;
        for percent in [100, 80, 60, 50] {
            let budget = baseline * percent / 100;
            let request = PlanRequest { graph: &graph, order: &order, budget: Some(budget), options: &options };
            let (schedule, details) = ChainRemat.plan_detailed(&request).unwrap();
            let sim = simulate(&graph, &schedule).unwrap();
            if details.facts::<ChainStats>().is_some() {
                assert_eq!(details.stop, StopReason::Completed);
                assert!(sim.peak_bytes <= budget, "{percent}%: {} > {budget}", sim.peak_bytes);
                planned += 1;
            } else {
                assert!(
                    matches!(details.stop, StopReason::Fallback { to: "none", .. }),
                    "{percent}%: {:?}",
                    details.stop
                );
            }
        }
        assert!(planned >= 3, "the DP plans the MLP at 100, 80 and 60 % at least ({planned} of 4)");
    }

    #[test]
    fn offloading_replaces_recomputation_within_the_budget() {
        let graph = FeedForward::mlp(12).generate();
        let order = graph.topological_schedule();
        let baseline = simulate(&graph, &order).unwrap().peak_bytes;
        let remat_only = crate::PlannerOptions::default();
        let mut offload = remat_only.clone();
        // β = 0.4 bytes per cost unit: a 64 KiB activation moves in about the time of a layer.
        offload.chain.bandwidth = Some(0.4 * offload.chain.compute_rate);
        let budget = baseline * 60 / 100;
        let plan = |options: &crate::PlannerOptions| {
            let request = PlanRequest { graph: &graph, order: &order, budget: Some(budget), options };
            ChainRemat.plan_detailed(&request).unwrap()
        };
        let (remat_schedule, remat) = plan(&remat_only);
        assert!(remat.transfers.is_empty());
        let (schedule, details) = plan(&offload);
        assert!(!details.transfers.is_empty(), "at β = 0.4 the DP offloads");
        let with = simulate_with_transfers(&graph, &schedule, &details.transfers).unwrap();
        let without = simulate(&graph, &remat_schedule).unwrap();
        assert!(with.peak_bytes <= budget && without.peak_bytes <= budget);
        assert!(with.host_peak_bytes > 0 && with.offloaded_bytes >= with.host_peak_bytes);
        assert!(with.recomputations < without.recomputations, "{} vs {}", with.recomputations, without.recomputations);
        let stats = details.facts::<ChainStats>().unwrap();
        let (makespan, moved) = stats.offload.unwrap();
        assert!(makespan < stats.remat_makespan);
        assert_eq!(moved, with.offloaded_bytes);
    }
}

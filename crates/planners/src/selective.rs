//! Selective recomputation: one rule for the whole step, keep what is expensive per byte and
//! recompute the rest once. The forward runs as written; every forward value whose cost per
//! byte is at most a threshold θ is dropped after its last forward reader and recomputed once,
//! just in time, by the first backward node that needs it (with what it needs that was dropped
//! too). This is the rule of selective activation recomputation (Korthikanti et al., "Reducing
//! Activation Recomputation in Large Transformer Models", MLSys 2023, §4.2: recompute the parts
//! of a layer that hold much memory for little work) and of `jax.checkpoint`'s `dots_saveable`
//! policy (save the matmuls' and convolutions' results, recompute the elementwise work), taken
//! across the whole step rather than per layer: a block's output, which a per-block plan always
//! keeps, is dropped too where it is cheap, and recomputed from the kept values around it.
//!
//! On a ResNet-50-like step at 60 % of its baseline, θ at the elementwise ops' cost per byte
//! gives +9.3 % where the block plans give +10.3 % (dtr) and +12.2 % (the menus' DP): batch
//! norms, ReLUs and residual sums recomputed, convolutions kept (docs/bench/README.md,
//! "Selective recomputation").
//!
//! Two refinements reach lower budgets. **Checkpoints**: in a ResNet each block output is the
//! next block's residual, so the first backward node of a stage rebuilds the whole chain of its
//! block outputs at once, and they wait there for their own blocks' backward; keeping every
//! block output (a cut of the forward) that follows a given number of recomputed bytes since
//! the last kept value bounds what is rebuilt at once, as the segments of Chen et al.'s √n
//! checkpoints ("Training Deep Nets with Sublinear Memory Cost", 2016) bound it for full
//! recomputation. **A prefix recomputed whole**: every droppable value of the first layers,
//! convolutions too, dropped and recomputed (with the same checkpoints) — the early layers'
//! activations wait longest, through the whole backward, and in a CNN they are the largest;
//! Megatron-LM's `block` recompute method does the same for its first layers. Together they
//! take the plan on ResNet-18's layout at 50 % from +22.7 % (the block plans) to +18.7 %.
//!
//! [`SelectivePlans`] walks every distinct cost per byte among the forward values (at most
//! [`MAX_THRESHOLDS`] of them, spread over the sorted values) and measures each plan with the
//! memory model; then, for as many thresholds as [`WORK_CAP`] allows, each of [`PREFIXES`]
//! prefixes at each of [`SPACINGS`] checkpoint spacings. A budget takes the cheapest plan that
//! fits. The hierarchical planner offers it beside its block plans, and polishing then keeps
//! back what the budget leaves room for.

use crate::chain::planner::ChainView;
use crate::hierarchical::just_in_time;
use crate::Deadline;
use remat_graph::{simulate, Graph, NodeId, Schedule};
use std::collections::HashSet;

/// The most thresholds tried (evenly spread over the sorted distinct costs per byte).
pub const MAX_THRESHOLDS: usize = 32;

/// Checkpoint spacings tried per threshold besides none: the recomputed bytes between kept
/// block outputs, as the threshold's whole recomputed bytes shifted right by 1..=this, and 0
/// (every block output kept).
pub const SPACINGS: u32 = 6;

/// Prefixes of the forward tried recomputed whole, besides none: those ending at the block
/// outputs nearest each k/`PREFIXES` of the droppable bytes.
pub const PREFIXES: usize = 8;

/// The plans measured, at most, where a step's schedule has n nodes: this over n (each plan is
/// one simulation over about n nodes), and never fewer than [`MIN_PLANS`].
pub const WORK_CAP: usize = 40_000_000;

/// See [`WORK_CAP`].
pub const MIN_PLANS: usize = 64;

/// Which forward values a selective plan recomputes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    /// θ: forward values of at most this cost per byte are recomputed.
    pub threshold: f64,
    /// With checkpoints: a block output that θ would recompute is kept instead once this many
    /// bytes of recomputed values precede it since the last kept one. `None`: no checkpoints.
    pub spacing: Option<u64>,
    /// The forward nodes, from the first, whose values are all recomputed whatever their cost
    /// (checkpointed as above): the early layers, whose activations wait longest.
    pub prefix: usize,
}

impl Shape {
    /// Whether the value at forward position `i`, of `ratio` cost per byte, goes (checkpoints
    /// aside).
    fn drops(&self, i: usize, ratio: f64) -> bool {
        i < self.prefix || ratio <= self.threshold
    }
}

/// One selective plan: its shape and what the memory model measures of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// What it recomputes.
    pub shape: Shape,
    /// The plan's peak bytes.
    pub peak: u64,
    /// The plan's cost.
    pub cost: f64,
}

/// What a report says of a selective plan: its threshold, how many block outputs it keeps as
/// checkpoints, and how many forward nodes it recomputes whole.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    /// θ: forward values of at most this cost per byte are recomputed.
    pub threshold: f64,
    /// Block outputs kept although θ would recompute them.
    pub checkpoints: usize,
    /// The forward nodes, from the first, whose values are recomputed whatever their cost.
    pub prefix_nodes: usize,
}

/// At most `n` of `sorted`, evenly spread from the first to the last; all when they are few.
fn spread(sorted: &[f64], n: usize) -> Vec<f64> {
    match (sorted.len(), n) {
        (len, _) if len <= n => sorted.to_vec(),
        (_, 0) => Vec::new(),
        (len, 1) => vec![sorted[len - 1]],
        (len, n) => (0..n).map(|i| sorted[i * (len - 1) / (n - 1)]).collect(),
    }
}

/// A step's selective plans, one per shape tried, measured (the schedules are rebuilt on
/// demand: on 10^5 nodes keeping them all would take tens of megabytes).
#[derive(Clone, Debug)]
pub struct SelectivePlans {
    /// Forward nodes, in program order.
    forward: Vec<NodeId>,
    /// The other nodes, in program order.
    backward: Vec<NodeId>,
    /// Per node index: whether it is a block output (a cut of the forward), a checkpoint
    /// candidate.
    cut: Vec<bool>,
    /// Per node index: the cost per byte of the storage it would free (a view: its source's);
    /// `None` where it is never dropped.
    ratio: Vec<Option<f64>>,
    /// The plans, by rising threshold.
    pub plans: Vec<Measured>,
}

impl SelectivePlans {
    /// The forward part of `order` ([`ChainView::forward_part`]) and each threshold's plan,
    /// measured, without checkpoints and with checkpoints among `cuts` (the block outputs) at
    /// each spacing; plans not reached by `deadline` are left out.
    pub fn of(graph: &Graph, order: &[NodeId], cuts: &[NodeId], deadline: Deadline) -> SelectivePlans {
        let part = ChainView::forward_part(graph, order);
        let backward: Vec<NodeId> = order.iter().copied().filter(|v| !part.contains[v.index()]).collect();
        // Storage an impure node writes in place cannot be recomputed once it has run.
        let written: HashSet<NodeId> =
            graph.ids().filter(|&v| !graph.node(v).pure).map(|v| graph.storage_root(v)).collect();
        let own_ratio = |root: NodeId| {
            let node = graph.node(root);
            let droppable = part.contains[root.index()]
                && node.pure
                && !node.output
                && !node.argument
                && node.bytes > 0
                && !written.contains(&root);
            droppable.then(|| node.cost / node.bytes as f64)
        };
        let mut ratio = vec![None; graph.len()];
        for &v in &part.nodes {
            let root = graph.storage_root(v);
            // A view goes with its source (re-made from the recomputed one); an impure view
            // or an output never goes.
            let node = graph.node(v);
            if node.pure && !node.output {
                ratio[v.index()] = own_ratio(root);
            }
        }
        let mut distinct: Vec<f64> = part.nodes.iter().filter_map(|v| ratio[v.index()]).collect();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup();
        let thresholds = spread(&distinct, MAX_THRESHOLDS);
        let mut cut = vec![false; graph.len()];
        for &c in cuts {
            // A view's storage is its source's: keeping it would keep the source alive anyway.
            cut[c.index()] = graph.node(c).view_of.is_none();
        }
        let mut selective = SelectivePlans { forward: part.nodes, backward, cut, ratio, plans: Vec::new() };
        let prefixes = selective.prefixes(graph);
        // Every threshold's plain plan first; then, for as many thresholds as the work cap
        // allows (spread over them), each prefix at each spacing.
        let variants_per_threshold = prefixes.len() * (SPACINGS as usize + 2);
        let plan_cap = (WORK_CAP / order.len().max(1)).max(MIN_PLANS);
        let spare = plan_cap.saturating_sub(thresholds.len()) / variants_per_threshold;
        let varied: Vec<f64> = spread(&thresholds, spare);
        let plain = thresholds.iter().map(|&threshold| (threshold, &prefixes[..1], false));
        let shapes = plain.chain(varied.iter().map(|&threshold| (threshold, &prefixes[..], true)));
        let highest = thresholds.last().copied();
        'shapes: for (threshold, prefixes, vary) in shapes {
            // At the highest threshold every droppable value goes anyway.
            let prefixes = if Some(threshold) == highest { &prefixes[..1] } else { prefixes };
            for &prefix in prefixes {
                let shape = |spacing| Shape { threshold, spacing, prefix };
                let spacings: Vec<Option<u64>> = if vary {
                    let recomputed_bytes: u64 =
                        selective.recomputed(graph, &shape(None)).iter().map(|&v| graph.node(v).bytes).sum();
                    // The plain plan was measured above.
                    let plain = (prefix > 0).then_some(None);
                    plain
                        .into_iter()
                        .chain((1..=SPACINGS).map(|shift| Some(recomputed_bytes >> shift)))
                        .chain([Some(0)])
                        .collect()
                } else {
                    vec![None]
                };
                // Spacings that keep the same block outputs give the same plan: measured once.
                let mut kept_before: Option<Vec<NodeId>> = None;
                for spacing in spacings {
                    if deadline.expired() {
                        break 'shapes;
                    }
                    let shape = shape(spacing);
                    let recompute = selective.recomputed(graph, &shape);
                    if spacing.is_some() {
                        let kept: Vec<NodeId> = selective.kept_cuts(&shape, &recompute);
                        if kept.is_empty() || kept_before.as_ref() == Some(&kept) {
                            continue;
                        }
                        kept_before = Some(kept);
                    }
                    let schedule = selective.schedule_recomputing(graph, &recompute);
                    match simulate(graph, &schedule) {
                        Ok(sim) => selective.plans.push(Measured { shape, peak: sim.peak_bytes, cost: sim.cost }),
                        Err(e) => {
                            debug_assert!(false, "a selective schedule is invalid: {e}");
                            tracing::warn!("a selective schedule is invalid: {e}");
                        }
                    }
                }
            }
        }
        tracing::debug!(plans = ?selective.plans, "selective recomputation");
        selective
    }

    /// The prefixes of the forward tried recomputed whole: none, and those ending at the block
    /// outputs where the droppable bytes seen first reach each k/[`PREFIXES`] of all of them.
    fn prefixes(&self, graph: &Graph) -> Vec<usize> {
        let bytes = |v: &NodeId| if self.ratio[v.index()].is_some() { graph.node(*v).bytes } else { 0 };
        let droppable: u64 = self.forward.iter().map(bytes).sum();
        let mut prefixes = vec![0usize];
        let mut seen = 0u64;
        for (i, v) in self.forward.iter().enumerate() {
            seen += bytes(v);
            let part = (seen * PREFIXES as u64).checked_div(droppable).unwrap_or(0) as usize;
            if self.cut[v.index()] && part >= prefixes.len() && part < PREFIXES {
                prefixes.push(i + 1);
            }
        }
        prefixes
    }

    /// The forward values `shape` recomputes, in program order: in its prefix every droppable
    /// one, after it those of at most its threshold per byte, less the block outputs kept as
    /// checkpoints at its spacing: walking the forward, a block output is kept once the bytes
    /// recomputed since the last kept value reach the spacing. A block output kept for its own
    /// cost per byte restarts the count too: what the backward rebuilds at once is the run of
    /// recomputed values between two kept ones.
    fn recomputed(&self, graph: &Graph, shape: &Shape) -> Vec<NodeId> {
        let mut recompute = Vec::new();
        let mut since = 0u64;
        for (i, &v) in self.forward.iter().enumerate() {
            let Some(ratio) = self.ratio[v.index()] else { continue };
            let cheap = shape.drops(i, ratio);
            if self.cut[v.index()] {
                if !cheap || shape.spacing.is_some_and(|s| since >= s) {
                    since = 0;
                    continue;
                }
            } else if !cheap {
                continue;
            }
            since += graph.node(v).bytes;
            recompute.push(v);
        }
        recompute
    }

    /// The block outputs that `shape` without checkpoints recomputes but `recompute` keeps.
    fn kept_cuts(&self, shape: &Shape, recompute: &[NodeId]) -> Vec<NodeId> {
        let recomputed: HashSet<NodeId> = recompute.iter().copied().collect();
        self.forward
            .iter()
            .enumerate()
            .filter(|&(i, v)| self.cut[v.index()] && self.ratio[v.index()].is_some_and(|r| shape.drops(i, r)))
            .map(|(_, &v)| v)
            .filter(|v| !recomputed.contains(v))
            .collect()
    }

    /// The plan `measured`: the forward in program order, then the backward with the values its
    /// shape recomputes ([`Self::recomputed`]) recomputed just in time.
    pub fn schedule(&self, graph: &Graph, measured: &Measured) -> Schedule {
        self.schedule_recomputing(graph, &self.recomputed(graph, &measured.shape))
    }

    /// The rule of the plan `measured`.
    pub fn rule(&self, graph: &Graph, measured: &Measured) -> Rule {
        let recompute = self.recomputed(graph, &measured.shape);
        Rule {
            threshold: measured.shape.threshold,
            checkpoints: self.kept_cuts(&measured.shape, &recompute).len(),
            prefix_nodes: measured.shape.prefix,
        }
    }

    fn schedule_recomputing(&self, graph: &Graph, recompute: &[NodeId]) -> Schedule {
        let mut schedule = self.forward.clone();
        just_in_time(graph, recompute, &self.backward, &mut schedule);
        schedule
    }

    /// The cheapest plan within `budget` (the lower threshold on ties), if any recomputes
    /// something.
    pub fn cheapest_within(&self, budget: u64) -> Option<Measured> {
        self.plans
            .iter()
            .filter(|m| m.peak <= budget)
            .min_by(|a, b| a.cost.total_cmp(&b.cost).then(a.shape.threshold.total_cmp(&b.shape.threshold)))
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_graph::{GraphBuilder, NodeSpec};

    /// Residual blocks as a ResNet's: conv → bn → relu → conv → bn, plus the block's input, →
    /// relu; then the gradients and updates. Convolutions cost 9 per byte, the rest 1.
    fn residual_step(blocks: usize) -> (Graph, Vec<NodeId>) {
        let mut g = GraphBuilder::new();
        let mut h = g.add(NodeSpec::argument("x", 100), &[]);
        // Per convolution, in forward order: its name, weight, input and result.
        let mut convolutions = Vec::new();
        for b in 0..blocks {
            let block_input = h;
            for half in ["a", "b"] {
                let w = g.add(NodeSpec::argument(format!("w{b}{half}"), 10), &[]);
                let conv = g.add(NodeSpec::op(format!("conv{b}{half}"), 100, 900.0), &[h, w]);
                let bn = g.add(NodeSpec::op(format!("bn{b}{half}"), 100, 100.0), &[conv]);
                convolutions.push((format!("{b}{half}"), w, h, conv));
                h = if half == "a" {
                    g.add(NodeSpec::op(format!("relu{b}a"), 100, 100.0), &[bn])
                } else {
                    let add = g.add(NodeSpec::op(format!("add{b}"), 100, 100.0), &[bn, block_input]);
                    g.add(NodeSpec::op(format!("relu{b}"), 100, 100.0), &[add])
                };
            }
        }
        let loss = g.add(NodeSpec::op("loss", 4, 100.0).output(), &[h]);
        let mut grad = g.add(NodeSpec::op("dloss", 100, 100.0).backward(true), &[loss, h]);
        for (name, w, input, conv) in convolutions.into_iter().rev() {
            let dbn = g.add(NodeSpec::op(format!("dbn{name}"), 100, 100.0).backward(true), &[grad, conv]);
            g.add(NodeSpec::op(format!("w{name}_new"), 10, 900.0).backward(true).output(), &[w, dbn, input]);
            let dconv = g.add(NodeSpec::op(format!("dconv{name}"), 100, 900.0).backward(true), &[dbn, w]);
            // The mask of the ReLU that made the convolution's input, read from that input.
            grad = g.add(NodeSpec::op(format!("drelu{name}"), 100, 100.0).backward(true), &[dconv, input]);
        }
        let graph = g.finish().expect("a DAG");
        let order = graph.ids().filter(|&v| !graph.node(v).argument).collect();
        (graph, order)
    }

    #[test]
    fn the_elementwise_threshold_keeps_the_convolutions_and_recomputes_the_rest_once() {
        let (graph, order) = residual_step(6);
        let baseline = simulate(&graph, &order).unwrap();
        let plans = SelectivePlans::of(&graph, &order, &[], Deadline::NONE);
        // Costs per byte: 1 (bn, add, relu) and 9 (conv).
        let thresholds: Vec<f64> = plans.plans.iter().map(|m| m.shape.threshold).collect();
        assert_eq!(thresholds, vec![1.0, 9.0]);
        let cheap = plans.plans[0];
        assert!(cheap.peak < baseline.peak_bytes, "{cheap:?} against {}", baseline.peak_bytes);
        let schedule = plans.schedule(&graph, &cheap);
        let runs = |name: &str| schedule.iter().filter(|&&v| graph.node(v).name == name).count();
        for b in 0..6 {
            for name in [format!("conv{b}a"), format!("conv{b}b")] {
                assert_eq!(runs(&name), 1, "{name} is kept");
            }
            for name in [format!("relu{b}a"), format!("bn{b}a")] {
                assert_eq!(runs(&name), 2, "{name} is recomputed once");
            }
        }
        // What the measured cost says: the forward once more, less the convolutions.
        let recomputed: f64 = graph.ids().filter(|&v| runs(&graph.node(v).name) == 2).map(|v| graph.node(v).cost).sum();
        assert_eq!(cheap.cost, baseline.cost + recomputed);
        assert_eq!(plans.cheapest_within(cheap.peak), Some(cheap));
        assert!(plans.cheapest_within(cheap.peak - 1).is_none_or(|m| m.peak < cheap.peak));
    }

    #[test]
    fn impure_values_and_outputs_are_never_recomputed() {
        let mut g = GraphBuilder::new();
        let a = g.add(NodeSpec::op("key", 8, 1.0).impure(), &[]);
        let b = g.add(NodeSpec::op("noise", 100, 1.0), &[a]);
        let out = g.add(NodeSpec::op("stat", 100, 1.0).output(), &[b]);
        let loss = g.add(NodeSpec::op("loss", 4, 1.0).output(), &[b]);
        let grad = g.add(NodeSpec::op("dnoise", 100, 1.0).backward(true), &[loss, b, a, out]);
        g.add(NodeSpec::op("update", 100, 1.0).backward(true).output(), &[grad]);
        let graph = g.finish().expect("a DAG");
        let order: Vec<NodeId> = graph.ids().collect();
        let plans = SelectivePlans::of(&graph, &order, &[], Deadline::NONE);
        assert_eq!(plans.plans.len(), 1, "noise alone can go: {:?}", plans.plans);
        let schedule = plans.schedule(&graph, &plans.plans[0]);
        let runs = |v: NodeId| schedule.iter().filter(|&&s| s == v).count();
        assert_eq!((runs(a), runs(b), runs(out)), (1, 2, 1));
    }

    /// The residual step's block outputs, as the hierarchical planner hands them over.
    fn block_outputs(graph: &Graph, order: &[NodeId]) -> Vec<NodeId> {
        ChainView::of(graph, order).cut_nodes()
    }

    #[test]
    fn checkpoints_bound_the_chain_of_block_outputs_the_backward_rebuilds_at_once() {
        let (graph, order) = residual_step(8);
        let cuts = block_outputs(&graph, &order);
        assert!(cuts.len() >= 7, "{} block outputs", cuts.len());
        let plans = SelectivePlans::of(&graph, &order, &cuts, Deadline::NONE);
        let at_one = |m: &&Measured| m.shape.threshold == 1.0 && m.shape.prefix == 0;
        let plain = *plans.plans.iter().filter(at_one).find(|m| m.shape.spacing.is_none()).expect("the plain plan");
        // Each block output is the next one's residual: without checkpoints, the first
        // backward node rebuilds them all and they wait for their own blocks' backward.
        let checkpointed: Vec<&Measured> =
            plans.plans.iter().filter(at_one).filter(|m| m.shape.spacing.is_some()).collect();
        assert!(!checkpointed.is_empty());
        assert!(
            checkpointed.iter().any(|m| m.peak < plain.peak),
            "no checkpoint spacing lowers {plain:?}: {checkpointed:?}"
        );
        // Spacing 0 keeps every block output: each runs once, and the inner ReLUs (read by the
        // backward) twice.
        let every = checkpointed.iter().find(|m| m.shape.spacing == Some(0)).expect("spacing 0");
        // The cuts cheap per byte (ReLUs; a convolution that is a cut is kept anyway).
        let cheap_cuts = cuts.iter().filter(|&&c| graph.node(c).cost <= graph.node(c).bytes as f64).count();
        assert!(cheap_cuts >= 8, "{:?}", cuts.iter().map(|&c| &graph.node(c).name).collect::<Vec<_>>());
        assert_eq!(plans.rule(&graph, every).checkpoints, cheap_cuts);
        let schedule = plans.schedule(&graph, every);
        let runs = |name: &str| schedule.iter().filter(|&&v| graph.node(v).name == name).count();
        // (Block 0 reads the step's argument: its every value is a cut.)
        for b in 1..8 {
            assert_eq!(runs(&format!("relu{b}a")), 2, "relu{b}a is recomputed");
        }
        for &c in &cuts {
            assert_eq!(schedule.iter().filter(|&&v| v == c).count(), 1, "{} is kept", graph.node(c).name);
        }
    }

    #[test]
    fn a_prefix_recomputed_whole_reaches_below_keeping_every_convolution() {
        let (graph, order) = residual_step(8);
        let cuts = block_outputs(&graph, &order);
        let plans = SelectivePlans::of(&graph, &order, &cuts, Deadline::NONE);
        // Every plan that keeps all convolutions (threshold 1, no prefix) peaks above this.
        let keeping_convolutions = plans
            .plans
            .iter()
            .filter(|m| m.shape.threshold == 1.0 && m.shape.prefix == 0)
            .map(|m| m.peak)
            .min()
            .expect("plans at threshold 1");
        let below: Vec<&Measured> = plans
            .plans
            .iter()
            .filter(|m| m.shape.threshold == 1.0 && m.shape.prefix > 0 && m.peak < keeping_convolutions)
            .collect();
        let cheapest = below.iter().min_by(|a, b| a.cost.total_cmp(&b.cost)).expect("a prefix plan below them");
        // Recomputing everything would cost the convolutions again too; the prefix plan only
        // the early ones.
        let everything =
            plans.plans.iter().filter(|m| m.shape.threshold == 9.0).map(|m| m.cost).fold(f64::INFINITY, f64::min);
        assert!(cheapest.cost < everything, "{cheapest:?} against {everything}");
        let schedule = plans.schedule(&graph, cheapest);
        let runs = |name: &str| schedule.iter().filter(|&&v| graph.node(v).name == name).count();
        assert_eq!(runs("conv0a"), 2, "the first block's convolution is recomputed");
        assert_eq!(runs("conv7b"), 1, "the last block's convolution is kept");
        assert_eq!(plans.rule(&graph, cheapest).prefix_nodes, cheapest.shape.prefix);
    }

    #[test]
    fn thresholds_are_spread_evenly() {
        let sorted: Vec<f64> = (0..10).map(f64::from).collect();
        assert_eq!(spread(&sorted, 4), vec![0.0, 3.0, 6.0, 9.0]);
        assert_eq!(spread(&sorted, 1), vec![9.0]);
        assert!(spread(&sorted, 0).is_empty());
        assert_eq!(spread(&sorted[..3], 4), sorted[..3].to_vec());
    }

    /// Every plan on generated training steps of every family (random layered steps, ResNets
    /// of random stages, DenseNets, transformers): a valid schedule whose simulation is what
    /// was measured, never below the lower bound; a budget's pick fits it.
    #[test]
    fn every_plan_on_generated_steps_is_valid_and_measured_as_recorded() {
        use remat_graph::random::SplitMix64;
        use remat_graph::training::{Architecture, ConvNet, RandomLayered, Transformer};
        let mut rng = SplitMix64::new(7);
        let mut steps: Vec<Graph> = Vec::new();
        for seed in 0..6 {
            steps.push(RandomLayered { seed, ..RandomLayered::new(3 + 2 * seed as usize) }.generate());
            let stages: Vec<usize> = (0..1 + rng.below(4)).map(|_| 1 + rng.below(3) as usize).collect();
            steps.push(ConvNet::new(Architecture::ResNet, &stages).generate());
        }
        steps.push(ConvNet::new(Architecture::DenseNet, &[2, 3]).generate());
        steps.push(Transformer::new(4).generate());
        let (mut plans_checked, mut varied) = (0, 0);
        for graph in &steps {
            let order = graph.topological_schedule();
            let plans = SelectivePlans::of(graph, &order, &block_outputs(graph, &order), Deadline::NONE);
            let bound = remat_graph::lower_bound(graph);
            for m in &plans.plans {
                let sim = simulate(graph, &plans.schedule(graph, m)).expect("a valid schedule");
                assert_eq!((sim.peak_bytes, sim.cost), (m.peak, m.cost), "{m:?}");
                assert!(m.peak >= bound);
                let pick = plans.cheapest_within(m.peak).expect("this plan fits at least");
                assert!(pick.peak <= m.peak && pick.cost <= m.cost, "{pick:?} against {m:?}");
                plans_checked += 1;
                varied += usize::from(m.shape.spacing.is_some() || m.shape.prefix > 0);
            }
        }
        assert!(plans_checked >= 300 && varied >= 200, "{plans_checked} plans, {varied} with checkpoints or a prefix");
    }
}

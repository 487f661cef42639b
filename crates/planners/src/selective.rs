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
//! [`SelectivePlans`] walks every distinct cost per byte among the forward values (at most
//! [`MAX_THRESHOLDS`] of them, spread over the sorted values) and measures each plan with the
//! memory model; a budget takes the cheapest plan that fits. The hierarchical planner offers
//! it beside its block plans, and polishing then keeps back what the budget leaves room for.

use crate::chain::planner::ChainView;
use crate::hierarchical::just_in_time;
use crate::Deadline;
use remat_graph::{simulate, Graph, NodeId, Schedule};
use std::collections::HashSet;

/// The most thresholds tried (evenly spread over the sorted distinct costs per byte).
pub const MAX_THRESHOLDS: usize = 32;

/// One selective plan: its threshold and what the memory model measures of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// θ: forward values of at most this cost per byte are recomputed.
    pub threshold: f64,
    /// The plan's peak bytes.
    pub peak: u64,
    /// The plan's cost.
    pub cost: f64,
}

/// A step's selective plans, one per threshold, measured (the schedules are rebuilt on demand:
/// on 10^5 nodes keeping them all would take tens of megabytes).
#[derive(Clone, Debug)]
pub struct SelectivePlans {
    /// Forward nodes, in program order.
    forward: Vec<NodeId>,
    /// The other nodes, in program order.
    backward: Vec<NodeId>,
    /// Per node index: the cost per byte of the storage it would free (a view: its source's);
    /// `None` where it is never dropped.
    ratio: Vec<Option<f64>>,
    /// The plans, by rising threshold.
    pub plans: Vec<Measured>,
}

impl SelectivePlans {
    /// The forward part of `order` ([`ChainView::forward_part`]) and each threshold's plan,
    /// measured; thresholds not reached by `deadline` are left out.
    pub fn of(graph: &Graph, order: &[NodeId], deadline: Deadline) -> SelectivePlans {
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
        let thresholds: Vec<f64> = if distinct.len() > MAX_THRESHOLDS {
            let n = distinct.len();
            (0..MAX_THRESHOLDS).map(|i| distinct[i * (n - 1) / (MAX_THRESHOLDS - 1)]).collect()
        } else {
            distinct
        };
        let mut selective = SelectivePlans { forward: part.nodes, backward, ratio, plans: Vec::new() };
        for threshold in thresholds {
            if deadline.expired() {
                break;
            }
            let schedule = selective.schedule(graph, threshold);
            match simulate(graph, &schedule) {
                Ok(sim) => selective.plans.push(Measured { threshold, peak: sim.peak_bytes, cost: sim.cost }),
                Err(e) => {
                    debug_assert!(false, "a selective schedule is invalid: {e}");
                    tracing::warn!("a selective schedule is invalid: {e}");
                }
            }
        }
        tracing::debug!(plans = ?selective.plans, "selective recomputation");
        selective
    }

    /// The plan at `threshold`: the forward in program order, then the backward with every
    /// forward value of at most that cost per byte recomputed just in time.
    pub fn schedule(&self, graph: &Graph, threshold: f64) -> Schedule {
        let recompute: Vec<NodeId> =
            self.forward.iter().copied().filter(|v| self.ratio[v.index()].is_some_and(|r| r <= threshold)).collect();
        let mut schedule = self.forward.clone();
        just_in_time(graph, &recompute, &self.backward, &mut schedule);
        schedule
    }

    /// The cheapest plan within `budget` (the lower threshold on ties), if any recomputes
    /// something.
    pub fn cheapest_within(&self, budget: u64) -> Option<Measured> {
        self.plans
            .iter()
            .filter(|m| m.peak <= budget)
            .min_by(|a, b| a.cost.total_cmp(&b.cost).then(a.threshold.total_cmp(&b.threshold)))
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
        let plans = SelectivePlans::of(&graph, &order, Deadline::NONE);
        // Costs per byte: 1 (bn, add, relu) and 9 (conv).
        let thresholds: Vec<f64> = plans.plans.iter().map(|m| m.threshold).collect();
        assert_eq!(thresholds, vec![1.0, 9.0]);
        let cheap = plans.plans[0];
        assert!(cheap.peak < baseline.peak_bytes, "{cheap:?} against {}", baseline.peak_bytes);
        let schedule = plans.schedule(&graph, cheap.threshold);
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
        let plans = SelectivePlans::of(&graph, &order, Deadline::NONE);
        assert_eq!(plans.plans.len(), 1, "noise alone can go: {:?}", plans.plans);
        let schedule = plans.schedule(&graph, plans.plans[0].threshold);
        let runs = |v: NodeId| schedule.iter().filter(|&&s| s == v).count();
        assert_eq!((runs(a), runs(b), runs(out)), (1, 2, 1));
    }
}

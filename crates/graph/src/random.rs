//! Seeded random DAGs shaped like training steps, for property tests and benchmarks.
//!
//! Deterministic: the same seed and shape give the same graph on every platform (SplitMix64).

use crate::graph::{Graph, GraphBuilder, NodeId, NodeSpec};

pub use remat_rng::SplitMix64;

/// Shape of a random DAG.
#[derive(Clone, Copy, Debug)]
pub struct RandomDag {
    /// Number of op nodes.
    pub ops: usize,
    /// Number of argument nodes.
    pub arguments: usize,
    /// Percent of ops that are views of their first input.
    pub view_percent: u64,
    /// Percent of ops that are impure.
    pub impure_percent: u64,
    /// Percent of ops that are outputs (sinks are outputs too).
    pub output_percent: u64,
    /// Percent of ops that may write into an input's buffer ([`crate::Node::reuses`]; they take
    /// that input's bytes). 0 draws nothing extra, so other seeds' graphs are unchanged.
    pub reuse_percent: u64,
    /// Percent of ops that may compute their pure, computed, non-view inputs themselves
    /// ([`crate::Node::fuses`]). 0 draws nothing extra, so other seeds' graphs are unchanged.
    pub fuse_percent: u64,
}

impl Default for RandomDag {
    fn default() -> Self {
        RandomDag {
            ops: 20,
            arguments: 2,
            view_percent: 10,
            impure_percent: 5,
            output_percent: 10,
            reuse_percent: 0,
            fuse_percent: 0,
        }
    }
}

impl RandomDag {
    /// Builds the graph for `seed`. Ids follow a topological order, arguments first.
    pub fn generate(&self, seed: u64) -> Graph {
        let mut rng = SplitMix64::new(seed);
        let mut g = GraphBuilder::new();
        let mut ids: Vec<NodeId> = Vec::new();
        for a in 0..self.arguments {
            ids.push(g.add(NodeSpec::argument(format!("arg{a}"), 1 + rng.below(64)), &[]));
        }
        let mut used = vec![false; self.arguments + self.ops];
        // Bytes of each node owning its buffer (0 for arguments and views: never reused).
        let mut own_bytes: Vec<u64> = vec![0; self.arguments];
        // Whether a later op may fuse each node (pure ops that own their memory).
        let mut fusable_input: Vec<bool> = vec![false; self.arguments];
        for i in 0..self.ops {
            let mut preds = Vec::new();
            if !ids.is_empty() {
                let fan_in = 1 + rng.below(3);
                for _ in 0..fan_in {
                    // Mostly recent nodes (chains), sometimes far back (skip connections).
                    let back = if rng.chance(70) { 1 + rng.below(3) } else { 1 + rng.below(ids.len() as u64) };
                    let p = ids[ids.len() - (back as usize).min(ids.len())];
                    preds.push(p);
                }
            }
            let bytes = if rng.chance(10) { 0 } else { 1 + rng.below(100) };
            let mut spec = NodeSpec::op(format!("op{i}"), bytes, (1 + rng.below(10)) as f64);
            if !preds.is_empty() && rng.chance(self.view_percent) {
                // A view reads only its source (MLIR views' other operands are index scalars).
                preds.truncate(1);
                spec = spec.view_of(preds[0]);
            } else if rng.chance(self.impure_percent) {
                spec = spec.impure();
            }
            if rng.chance(self.output_percent) {
                spec = spec.output();
            }
            let mut owned = if preds.is_empty() || spec_is_view(&spec) { 0 } else { bytes };
            if self.reuse_percent > 0 && !spec_is_view(&spec) && rng.chance(self.reuse_percent) {
                if let Some(&input) = preds.iter().find(|p| own_bytes[p.index()] > 0) {
                    let reused = own_bytes[input.index()];
                    spec = spec.with_bytes(reused).reusing(input);
                    owned = reused;
                }
            }
            if self.fuse_percent > 0 && !spec_is_view(&spec) && rng.chance(self.fuse_percent) {
                let fusable: Vec<NodeId> =
                    preds.iter().copied().filter(|&p| fusable_input[p.index()]).fold(Vec::new(), |mut unique, p| {
                        if !unique.contains(&p) {
                            unique.push(p);
                        }
                        unique
                    });
                spec = spec.fusing(&fusable);
            }
            fusable_input.push(!spec_is_view(&spec) && spec_is_pure(&spec));
            for p in &preds {
                used[p.index()] = true;
            }
            own_bytes.push(owned);
            ids.push(g.add(spec, &preds));
        }
        for (index, &id) in ids.iter().enumerate().skip(self.arguments) {
            if !used[index] {
                g.node_mut(id).output = true;
            }
        }
        g.finish().expect("edges point backwards, so the graph is a DAG")
    }
}

fn spec_is_view(spec: &NodeSpec) -> bool {
    spec.view_source().is_some()
}

fn spec_is_pure(spec: &NodeSpec) -> bool {
    spec.is_pure()
}

/// Shape of a random layered DAG with long edges: the synthetic benchmark class of
/// Gagrani et al. (*Neural Topological Ordering for Computation Graphs*, NeurIPS 2022, App. A)
/// that Moccasin (Bartan et al., ICML 2023, §5) plans, written from that description.
///
/// Nodes sit in layers of about `width`; each reads one node of the layer before it and up to
/// two more, each of which is, with `long_edge_percent` chance, a node of any earlier layer (a
/// long edge: it keeps an early value live across much of the schedule), else one of the two
/// layers before. Sizes and costs vary by two orders of magnitude. Unlike [`RandomDag`] it is a
/// plain computation graph, not a training step: no views, impure ops or buffer reuse.
#[derive(Clone, Copy, Debug)]
pub struct RandomLayeredDag {
    /// Number of op nodes.
    pub ops: usize,
    /// Mean nodes per layer.
    pub width: usize,
    /// Percent of extra inputs that come from any earlier layer.
    pub long_edge_percent: u64,
}

impl RandomLayeredDag {
    /// `ops` nodes, 10 per layer, 20 % long edges.
    pub fn new(ops: usize) -> Self {
        RandomLayeredDag { ops, width: 10, long_edge_percent: 20 }
    }

    /// Builds the graph for `seed`: one argument, then the ops layer by layer (ids follow a
    /// topological order). Every node outside the last layer has a reader (one that drew none
    /// becomes an extra input of a node in the next layer), so the outputs are the last layer.
    pub fn generate(&self, seed: u64) -> Graph {
        let mut rng = SplitMix64::new(seed);
        let width = self.width.max(1) as u64;
        // Layers of node indices; index 0 is the argument.
        let mut layers: Vec<Vec<usize>> = vec![vec![0]];
        let mut preds: Vec<Vec<usize>> = vec![Vec::new()];
        while preds.len() <= self.ops {
            let size = (1 + width / 2 + rng.below(width)).min((self.ops + 1 - preds.len()) as u64) as usize;
            let mut layer = Vec::with_capacity(size);
            for _ in 0..size {
                let last = &layers[layers.len() - 1];
                let mut inputs = vec![last[rng.below(last.len() as u64) as usize]];
                for _ in 0..rng.below(3) {
                    let from = if rng.chance(self.long_edge_percent) {
                        rng.below(layers.len() as u64) as usize
                    } else {
                        layers.len() - 1 - (rng.below(2) as usize).min(layers.len() - 1)
                    };
                    let p = layers[from][rng.below(layers[from].len() as u64) as usize];
                    if !inputs.contains(&p) {
                        inputs.push(p);
                    }
                }
                layer.push(preds.len());
                preds.push(inputs);
            }
            let previous = &layers[layers.len() - 1];
            let unread: Vec<usize> =
                previous.iter().copied().filter(|&p| !layer.iter().any(|&n| preds[n].contains(&p))).collect();
            for unread in unread {
                let reader = layer[rng.below(layer.len() as u64) as usize];
                preds[reader].push(unread);
            }
            layers.push(layer);
        }
        let last: Vec<usize> = layers.last().cloned().unwrap_or_default();
        let mut g = GraphBuilder::new();
        g.add(NodeSpec::argument("x", 1 + rng.below(100)), &[]);
        for (index, inputs) in preds.iter().enumerate().skip(1) {
            let bytes = 1 + rng.below(100);
            let cost = (1 + rng.below(10)) as f64;
            let ids: Vec<NodeId> = inputs.iter().map(|&p| NodeId(p as u32)).collect();
            let spec = NodeSpec::op(format!("n{}", index - 1), bytes, cost).with_output(last.contains(&index));
            g.add(spec, &ids);
        }
        g.finish().expect("edges point to earlier layers, so the graph is a DAG")
    }
}

/// A random valid schedule of `g`: a random topological order in which each pure input whose
/// own inputs are computed is recomputed right before its reader with probability
/// `recompute_percent` %. For property tests of anything that must hold for every schedule.
pub fn random_schedule(g: &Graph, seed: u64, recompute_percent: u64) -> Vec<NodeId> {
    let mut rng = SplitMix64::new(seed);
    let mut indegree: Vec<usize> =
        g.ids().map(|id| g.preds(id).iter().filter(|p| !g.node(**p).argument).count()).collect();
    let mut ready: Vec<NodeId> = g.ids().filter(|&id| !g.node(id).argument && indegree[id.index()] == 0).collect();
    let mut order = Vec::new();
    while !ready.is_empty() {
        let pick = ready.swap_remove(rng.below(ready.len() as u64) as usize);
        order.push(pick);
        for &s in g.succs(pick) {
            indegree[s.index()] -= 1;
            if indegree[s.index()] == 0 {
                ready.push(s);
            }
        }
    }
    let mut schedule = Vec::new();
    let mut computed = vec![false; g.len()];
    for &step in &order {
        for &p in g.preds(step) {
            let pure_with_computed_inputs = g.node(p).pure
                && !g.node(p).argument
                && g.preds(p).iter().all(|q| g.node(*q).argument || computed[q.index()]);
            if pure_with_computed_inputs && rng.chance(recompute_percent) {
                schedule.push(p);
            }
        }
        schedule.push(step);
        computed[step.index()] = true;
    }
    schedule
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layered_dag_is_seeded_and_has_long_edges() {
        let shape = RandomLayeredDag::new(1000);
        let g = shape.generate(3);
        assert_eq!(g.op_count(), 1000);
        assert_eq!(format!("{:?}", shape.generate(3).nodes()), format!("{:?}", g.nodes()), "seeded");
        assert_ne!(format!("{:?}", shape.generate(4).nodes()), format!("{:?}", g.nodes()));
        // Ids follow the layers, so an edge's id span measures how far back it reaches: with 20 %
        // long edges some reach back across most of the graph.
        let longest = g.ids().flat_map(|n| g.preds(n).iter().map(move |p| n.index() - p.index())).max().unwrap();
        assert!(longest > 500, "longest edge spans {longest} ids");
        let none = RandomLayeredDag { long_edge_percent: 0, ..shape }.generate(3);
        let longest = none.ids().flat_map(|n| none.preds(n).iter().map(move |p| n.index() - p.index())).max().unwrap();
        assert!(longest < 60, "without long edges an edge spans {longest} ids");
    }
}

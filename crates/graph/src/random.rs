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
}

impl Default for RandomDag {
    fn default() -> Self {
        RandomDag { ops: 20, arguments: 2, view_percent: 10, impure_percent: 5, output_percent: 10, reuse_percent: 0 }
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

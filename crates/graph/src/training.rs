//! Generated training steps: a feed-forward network of any depth with its loss, backward pass
//! and SGD update, as the graph a training step's MLIR would import to. Benchmarks use it to
//! measure how a strategy's peak grows with depth and how planning time grows with size.

use crate::{Graph, GraphBuilder, NodeId, NodeSpec};

/// A feed-forward training step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FeedForward {
    /// Number of layers.
    pub depth: usize,
    /// Bytes of each activation (a batch of hidden vectors).
    pub activation_bytes: u64,
    /// Bytes of each layer's weight matrix.
    pub weight_bytes: u64,
    /// Add a residual connection around every layer after the first (ResNet-style).
    pub residual: bool,
}

impl FeedForward {
    /// A plain MLP step of `depth` layers (64 KiB activations, 16 KiB weights).
    pub fn mlp(depth: usize) -> Self {
        FeedForward { depth, activation_bytes: 64 << 10, weight_bytes: 16 << 10, residual: false }
    }

    /// A residual network step of `depth` layers.
    pub fn residual(depth: usize) -> Self {
        FeedForward { residual: true, ..Self::mlp(depth) }
    }

    /// The step's graph. Per layer `i`: forward `z = matmul(W_i, h)`, `h' = relu(z)` (plus
    /// `add(h', h)` when residual); then `loss` and its gradient; backward per layer in
    /// reverse: `dz = relu_grad(dh, z)`, `dh_prev = matmul(W_iᵀ, dz)` (plus the residual
    /// branch's `add`), and the update `W_i' = sgd(W_i, dz, h)`, an output. Costs are
    /// proportional to bytes (a matmul costs twice an elementwise op).
    pub fn generate(&self) -> Graph {
        let mut g = GraphBuilder::new();
        let (a, w) = (self.activation_bytes, self.weight_bytes);
        let elementwise = a as f64;
        let matmul = 2.0 * (a + w) as f64;
        let x = g.add(NodeSpec::argument("x", a), &[]);
        let weights: Vec<NodeId> = (0..self.depth).map(|i| g.add(NodeSpec::argument(format!("w{i}"), w), &[])).collect();
        let mut inputs = Vec::with_capacity(self.depth);
        let mut pre_activations = Vec::with_capacity(self.depth);
        let mut h = x;
        for (i, &weight) in weights.iter().enumerate() {
            inputs.push(h);
            let z = g.add(NodeSpec::op(format!("z{i}"), a, matmul), &[weight, h]);
            let mut out = g.add(NodeSpec::op(format!("h{i}"), a, elementwise), &[z]);
            if self.residual && i > 0 {
                out = g.add(NodeSpec::op(format!("r{i}"), a, elementwise), &[out, h]);
            }
            pre_activations.push(z);
            h = out;
        }
        let loss = g.add(NodeSpec::op("loss", 4, elementwise).output(), &[h]);
        let mut dh = g.add(NodeSpec::op("dloss", a, elementwise).backward(true), &[loss, h]);
        for i in (0..self.depth).rev() {
            let dz = g.add(NodeSpec::op(format!("dz{i}"), a, elementwise).backward(true), &[dh, pre_activations[i]]);
            g.add(NodeSpec::op(format!("w{i}_new"), w, matmul).backward(true).output(), &[weights[i], dz, inputs[i]]);
            if i > 0 {
                let back = g.add(NodeSpec::op(format!("dh{i}"), a, matmul).backward(true), &[weights[i], dz]);
                dh = if self.residual { g.add(NodeSpec::op(format!("dr{i}"), a, elementwise).backward(true), &[back, dh]) } else { back };
            }
        }
        g.finish().expect("edges point backwards, so the graph is a DAG")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate;

    #[test]
    fn the_no_remat_peak_grows_linearly_with_depth() {
        let peak = |depth| {
            let g = FeedForward::mlp(depth).generate();
            simulate(&g, &g.topological_schedule()).unwrap().peak_bytes
        };
        let (p10, p20, p40) = (peak(10), peak(20), peak(40));
        assert_eq!(p40 - p20, 2 * (p20 - p10), "every layer keeps the same activations alive");
    }

    #[test]
    fn sizes_match_the_layer_structure() {
        let plain = FeedForward::mlp(8).generate();
        assert_eq!(plain.op_count(), 8 * 2 + 2 + 8 * 2 + 7);
        let residual = FeedForward::residual(8).generate();
        assert_eq!(residual.op_count(), plain.op_count() + 7 * 2);
        assert_eq!(residual.outputs().count(), 9);
    }
}

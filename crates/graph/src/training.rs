//! Generated training steps: a feed-forward network of any depth with its loss, backward pass
//! and SGD update, as the graph a training step's MLIR would import to. Benchmarks use it to
//! measure how a strategy's peak grows with depth and how planning time grows with size.

use crate::{Graph, GraphBuilder, NodeId, NodeSpec};

/// The linear feed-forward network of Kirisame et al. (DTR), App. A.1: `t_1 … t_N` with
/// `t_i = f_i(t_{i−1})`, then `t̂_N = f̂_N(t_{N−1})`, `t̂_i = f̂_i(t_{i−1}, t̂_{i+1})` and
/// `t̂_1 = f̂_1(t̂_2)`, the output; unit sizes and costs. The input `t_0` is left out, as there
/// (resident, outside the budget). `n ≥ 2`.
pub fn linear_network(n: usize) -> Graph {
    assert!(n >= 2, "the network needs at least two layers");
    let mut g = GraphBuilder::new();
    let mut forward: Vec<NodeId> = Vec::with_capacity(n);
    for i in 1..=n {
        let preds: Vec<NodeId> = forward.last().copied().into_iter().collect();
        forward.push(g.add(NodeSpec::op(format!("t{i}"), 1, 1.0), &preds));
    }
    let mut grad = g.add(NodeSpec::op(format!("dt{n}"), 1, 1.0).backward(true), &[forward[n - 2]]);
    for i in (2..n).rev() {
        grad = g.add(NodeSpec::op(format!("dt{i}"), 1, 1.0).backward(true), &[forward[i - 2], grad]);
    }
    g.add(NodeSpec::op("dt1", 1, 1.0).backward(true).output(), &[grad]);
    g.finish().expect("a chain and its gradients form a DAG")
}

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
        let weights: Vec<NodeId> =
            (0..self.depth).map(|i| g.add(NodeSpec::argument(format!("w{i}"), w), &[])).collect();
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
                dh = if self.residual {
                    g.add(NodeSpec::op(format!("dr{i}"), a, elementwise).backward(true), &[back, dh])
                } else {
                    back
                };
            }
        }
        g.finish().expect("edges point backwards, so the graph is a DAG")
    }
}

/// The shape of a generated convolutional network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Architecture {
    /// VGG: stages of `conv → relu` layers, each stage ending in a pool. A chain.
    Vgg,
    /// ResNet: basic blocks `relu(x + bn(conv(relu(bn(conv(x))))))`; the first block of a
    /// stage takes its shortcut through a strided convolution.
    ResNet,
    /// DenseNet: dense blocks whose every layer `conv(relu(bn(·)))` reads the concatenation
    /// of the block input and all earlier layers' outputs, joined by transitions
    /// `pool(conv(relu(bn(·))))`.
    DenseNet,
}

/// A generated CNN training step: forward (marked `backward: false`), a scalar loss, the
/// backward pass and an SGD update per convolution, shaped like the networks of Feng &
/// Huang's Table 1.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvNet {
    /// The family.
    pub architecture: Architecture,
    /// Layers (VGG), blocks (ResNet) or dense layers (DenseNet) per stage.
    pub stages: Vec<usize>,
    /// Bytes of a first-stage activation; each of the first four stages halves it (a quarter
    /// of the pixels, twice the channels).
    pub activation_bytes: u64,
}

impl ConvNet {
    /// A network of the family with these stages and 1 MiB first-stage activations.
    pub fn new(architecture: Architecture, stages: &[usize]) -> Self {
        ConvNet { architecture, stages: stages.to_vec(), activation_bytes: 1 << 20 }
    }
    /// VGG-16's layout: 2, 2, 3 and 3 + 3 convolutions per stage.
    pub fn vgg16() -> Self {
        Self::new(Architecture::Vgg, &[2, 2, 3, 6])
    }
    /// ResNet-34's layout: 3, 4, 6, 3 basic blocks.
    pub fn resnet34() -> Self {
        Self::new(Architecture::ResNet, &[3, 4, 6, 3])
    }
    /// DenseNet-121's layout: 6, 12, 24, 16 dense layers.
    pub fn densenet121() -> Self {
        Self::new(Architecture::DenseNet, &[6, 12, 24, 16])
    }

    /// The networks of Feng & Huang's Table 1 by name (`vgg11` … `densenet201`), with basic
    /// residual blocks throughout and VGG's last two stages folded into one.
    pub fn named(name: &str) -> Option<Self> {
        let (architecture, stages): (Architecture, &[usize]) = match name {
            "vgg11" => (Architecture::Vgg, &[1, 1, 2, 4]),
            "vgg13" => (Architecture::Vgg, &[2, 2, 2, 4]),
            "vgg16" => (Architecture::Vgg, &[2, 2, 3, 6]),
            "vgg19" => (Architecture::Vgg, &[2, 2, 4, 8]),
            "resnet18" => (Architecture::ResNet, &[2, 2, 2, 2]),
            "resnet34" | "resnet50" => (Architecture::ResNet, &[3, 4, 6, 3]),
            "resnet101" => (Architecture::ResNet, &[3, 4, 23, 3]),
            "resnet152" => (Architecture::ResNet, &[3, 8, 36, 3]),
            "densenet121" => (Architecture::DenseNet, &[6, 12, 24, 16]),
            "densenet169" => (Architecture::DenseNet, &[6, 12, 32, 32]),
            "densenet201" => (Architecture::DenseNet, &[6, 12, 48, 32]),
            _ => return None,
        };
        Some(Self::new(architecture, stages))
    }

    /// The step's graph.
    pub fn generate(&self) -> Graph {
        let mut net = Autodiff::default();
        let x = net.g.add(NodeSpec::argument("x", self.activation_bytes), &[]);
        let mut h = net.conv("stem", x, self.activation_bytes);
        for (stage, &count) in self.stages.iter().enumerate() {
            let a = self.activation_bytes >> stage.min(4);
            match self.architecture {
                Architecture::Vgg => {
                    for layer in 0..count {
                        let c = net.conv(&format!("conv{stage}_{layer}"), h, a);
                        h = net.unary(&format!("relu{stage}_{layer}"), Op::Relu, c, a);
                    }
                    h = net.unary(&format!("pool{stage}"), Op::Pool, h, a / 2);
                }
                Architecture::ResNet => {
                    for block in 0..count {
                        let name = format!("{stage}_{block}");
                        let shortcut = if block == 0 && stage > 0 { net.conv(&format!("down{name}"), h, a) } else { h };
                        let c1 = net.conv(&format!("conv{name}a"), h, a);
                        let b1 = net.unary(&format!("bn{name}a"), Op::Norm, c1, a);
                        let r1 = net.unary(&format!("relu{name}a"), Op::Relu, b1, a);
                        let c2 = net.conv(&format!("conv{name}b"), r1, a);
                        let b2 = net.unary(&format!("bn{name}b"), Op::Norm, c2, a);
                        let sum = net.add(&format!("add{name}"), b2, shortcut, a);
                        h = net.unary(&format!("relu{name}"), Op::Relu, sum, a);
                    }
                }
                Architecture::DenseNet => {
                    // The block input and each layer's output are a quarter of a stage
                    // activation; a concatenation owns the sum of its inputs.
                    let growth = (a / 4).max(1);
                    let mut features = vec![(h, growth)];
                    for layer in 0..count {
                        let name = format!("{stage}_{layer}");
                        let input = net.concat(&format!("cat{name}"), &features);
                        let bytes = features.iter().map(|f| f.1).sum();
                        let b = net.unary(&format!("bn{name}"), Op::Norm, input, bytes);
                        let r = net.unary(&format!("relu{name}"), Op::Relu, b, bytes);
                        features.push((net.conv(&format!("conv{name}"), r, growth), growth));
                    }
                    let out = net.concat(&format!("out{stage}"), &features);
                    let bytes = features.iter().map(|f| f.1).sum();
                    let b = net.unary(&format!("bn_t{stage}"), Op::Norm, out, bytes);
                    let r = net.unary(&format!("relu_t{stage}"), Op::Relu, b, bytes);
                    let c = net.conv(&format!("conv_t{stage}"), r, growth * 2);
                    h = net.unary(&format!("pool_t{stage}"), Op::Pool, c, growth);
                }
            }
        }
        let logits = net.conv("fc", h, 4096);
        net.finish(logits)
    }
}

/// A generated transformer-like training step (pre-norm decoder layers): per layer
/// `h += proj(softmax(q·kᵀ)·v)` over `q, k, v = linear(norm(h))`, then
/// `h += linear(gelu(linear(norm(h))))` with a 4× wide hidden activation; an embedding, a
/// head, the loss, the backward pass and an update per weight. Attention scores are as large
/// as an activation (sequence length ≈ model width). Weighted ops cost like the conv nets'.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transformer {
    /// Number of layers.
    pub layers: usize,
    /// Bytes of one activation (a sequence of hidden vectors).
    pub activation_bytes: u64,
}

impl Transformer {
    /// A step of `layers` layers with 256 KiB activations.
    pub fn new(layers: usize) -> Self {
        Transformer { layers, activation_bytes: 256 << 10 }
    }

    /// The step's graph.
    pub fn generate(&self) -> Graph {
        let mut net = Autodiff::default();
        let a = self.activation_bytes;
        let x = net.g.add(NodeSpec::argument("x", a), &[]);
        let mut h = net.conv("embed", x, a);
        for l in 0..self.layers {
            let n = net.unary(&format!("ln{l}a"), Op::Norm, h, a);
            let q = net.conv(&format!("q{l}"), n, a);
            let k = net.conv(&format!("k{l}"), n, a);
            let v = net.conv(&format!("v{l}"), n, a);
            let scores = net.matmul(&format!("scores{l}"), q, k, a);
            let p = net.unary(&format!("softmax{l}"), Op::Softmax, scores, a);
            let context = net.matmul(&format!("context{l}"), p, v, a);
            let o = net.conv(&format!("proj{l}"), context, a);
            let h1 = net.add(&format!("res{l}a"), h, o, a);
            let n2 = net.unary(&format!("ln{l}b"), Op::Norm, h1, a);
            let f1 = net.conv(&format!("ffn{l}a"), n2, 4 * a);
            let g = net.unary(&format!("gelu{l}"), Op::Norm, f1, 4 * a);
            let f2 = net.conv(&format!("ffn{l}b"), g, a);
            h = net.add(&format!("res{l}b"), h1, f2, a);
        }
        let logits = net.conv("head", h, a);
        net.finish(logits)
    }
}

/// A random layered training step: `layers` layers of `width` values; value `j` of a layer
/// reads value `j` of the layer before and, half the time, a random value of one of the two
/// layers before (then it is an `add` or a `matmul`; otherwise a weighted op, a relu or a
/// norm). Activations are ½, 1 or 2 × `activation_bytes`. The last layer is summed into the
/// logits. Deterministic in `seed` (SplitMix64).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomLayered {
    /// Number of layers.
    pub layers: usize,
    /// Values per layer.
    pub width: usize,
    /// The middle activation size.
    pub activation_bytes: u64,
    /// The generator's seed.
    pub seed: u64,
}

impl RandomLayered {
    /// `layers` layers of 8 values of about 64 KiB, seed 0.
    pub fn new(layers: usize) -> Self {
        RandomLayered { layers, width: 8, activation_bytes: 64 << 10, seed: 0 }
    }

    /// The step's graph.
    pub fn generate(&self) -> Graph {
        let mut rng = crate::random::SplitMix64::new(self.seed);
        let mut net = Autodiff::default();
        let x = net.g.add(NodeSpec::argument("x", self.activation_bytes), &[]);
        let first: Vec<NodeId> =
            (0..self.width).map(|j| net.conv(&format!("in{j}"), x, self.activation_bytes)).collect();
        let mut layers = vec![first];
        for l in 1..self.layers {
            let mut layer = Vec::with_capacity(self.width);
            for j in 0..self.width {
                let name = format!("l{l}_{j}");
                let bytes = self.activation_bytes * (1 + rng.below(4)) / 2;
                let prev = layers[l - 1][j];
                let value = if rng.chance(50) {
                    let from = &layers[l - 1 - (rng.below(2) as usize).min(l - 1)];
                    let other = from[rng.below(from.len() as u64) as usize];
                    if rng.chance(60) {
                        net.add(&name, prev, other, bytes)
                    } else {
                        net.matmul(&name, prev, other, bytes)
                    }
                } else {
                    match rng.below(4) {
                        0 | 1 => net.conv(&name, prev, bytes),
                        2 => net.unary(&name, Op::Relu, prev, bytes),
                        _ => net.unary(&name, Op::Norm, prev, bytes),
                    }
                };
                layer.push(value);
            }
            layers.push(layer);
        }
        let last = layers.last().expect("at least the first layer");
        let mut sum = last[0];
        for (j, &v) in last.iter().enumerate().skip(1) {
            sum = net.add(&format!("sum{j}"), sum, v, self.activation_bytes);
        }
        let logits = net.conv("head", sum, self.activation_bytes);
        net.finish(logits)
    }
}

/// Forward ops of the generated networks, by what their gradient reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// Reads its input and weight: `dx = convᵀ(dy, w)`, `w' = w − η·corr(x, dy)`.
    Conv {
        weight: NodeId,
    },
    /// `dx = dy · (y > 0)`: reads its output.
    Relu,
    /// Batch norm and pooling read their input.
    Norm,
    Pool,
    /// `dx = dy` for both inputs: reads nothing (Feng & Huang's assumption 2 holds).
    Add,
    /// `dx_i = dy[slice i]`: views of the gradient.
    Concat,
    /// Softmax reads its output: `dx = y ⊙ (dy − Σ dy ⊙ y)`.
    Softmax,
    /// A product of two activations (attention): each input's gradient reads the other.
    MatMul,
}

/// A forward pass recorded for reverse-mode differentiation.
#[derive(Default)]
struct Autodiff {
    g: GraphBuilder,
    /// (op, inputs, output, bytes) in forward order.
    tape: Vec<(Op, Vec<NodeId>, NodeId, u64)>,
}

impl Autodiff {
    fn record(&mut self, name: &str, op: Op, inputs: &[NodeId], bytes: u64, cost: f64) -> NodeId {
        let mut preds = inputs.to_vec();
        if let Op::Conv { weight } = op {
            preds.push(weight);
        }
        let out = self.g.add(NodeSpec::op(name, bytes, cost), &preds);
        self.tape.push((op, inputs.to_vec(), out, bytes));
        out
    }
    fn conv(&mut self, name: &str, x: NodeId, bytes: u64) -> NodeId {
        let weight = self.g.add(NodeSpec::argument(format!("{name}.w"), (bytes / 16).max(64)), &[]);
        self.record(name, Op::Conv { weight }, &[x], bytes, 9.0 * bytes as f64)
    }
    fn unary(&mut self, name: &str, op: Op, x: NodeId, bytes: u64) -> NodeId {
        self.record(name, op, &[x], bytes, bytes as f64)
    }
    fn matmul(&mut self, name: &str, a: NodeId, b: NodeId, bytes: u64) -> NodeId {
        self.record(name, Op::MatMul, &[a, b], bytes, 2.0 * bytes as f64)
    }
    fn add(&mut self, name: &str, a: NodeId, b: NodeId, bytes: u64) -> NodeId {
        self.record(name, Op::Add, &[a, b], bytes, bytes as f64)
    }
    fn concat(&mut self, name: &str, parts: &[(NodeId, u64)]) -> NodeId {
        if parts.len() == 1 {
            return parts[0].0;
        }
        let inputs: Vec<NodeId> = parts.iter().map(|p| p.0).collect();
        let bytes = parts.iter().map(|p| p.1).sum::<u64>();
        self.record(name, Op::Concat, &inputs, bytes, bytes as f64)
    }

    /// Adds the loss, the backward pass (gradients summed where a value has several uses)
    /// and the updates.
    fn finish(mut self, logits: NodeId) -> Graph {
        let loss = self.g.add(NodeSpec::op("loss", 4, 1.0).output(), &[logits]);
        let bytes_of =
            |tape: &[(Op, Vec<NodeId>, NodeId, u64)], v: NodeId| tape.iter().find(|t| t.2 == v).map_or(0, |t| t.3);
        let mut grads: std::collections::HashMap<NodeId, Vec<NodeId>> = std::collections::HashMap::new();
        let seed = self.g.add(NodeSpec::op("dloss", bytes_of(&self.tape, logits), 1.0).backward(true), &[loss, logits]);
        grads.insert(logits, vec![seed]);
        let tape = std::mem::take(&mut self.tape);
        for (i, (op, inputs, out, bytes)) in tape.iter().enumerate().rev() {
            let Some(parts) = grads.remove(out) else { continue };
            let name = self.g.node_mut(*out).name.clone();
            let dy = if parts.len() == 1 {
                parts[0]
            } else {
                self.g.add(
                    NodeSpec::op(format!("d{name}.sum"), *bytes, (*bytes * parts.len() as u64) as f64).backward(true),
                    &parts,
                )
            };
            let mut contribute = |g: &mut GraphBuilder, x: NodeId, reads: &[NodeId], view: bool| {
                if tape[..i].iter().all(|t| t.2 != x) {
                    return; // the network input: no gradient needed
                }
                let bytes = bytes_of(&tape, x);
                let mut spec =
                    NodeSpec::op(format!("d{name}/{}", g.node_mut(x).name), if view { 0 } else { bytes }, bytes as f64)
                        .backward(true);
                if view {
                    spec = spec.view_of(reads[0]);
                }
                let d = g.add(spec, reads);
                grads.entry(x).or_default().push(d);
            };
            match *op {
                Op::Conv { weight } => {
                    let wb = self.g.node_mut(weight).bytes;
                    self.g.add(
                        NodeSpec::op(format!("{name}.w_new"), wb, 9.0 * *bytes as f64).backward(true).output(),
                        &[weight, dy, inputs[0]],
                    );
                    contribute(&mut self.g, inputs[0], &[dy, weight], false);
                }
                Op::Relu | Op::Softmax => contribute(&mut self.g, inputs[0], &[dy, *out], false),
                Op::MatMul => {
                    contribute(&mut self.g, inputs[0], &[dy, inputs[1]], false);
                    contribute(&mut self.g, inputs[1], &[dy, inputs[0]], false);
                }
                Op::Norm | Op::Pool => contribute(&mut self.g, inputs[0], &[dy, inputs[0]], false),
                Op::Add => {
                    for &x in inputs {
                        grads.entry(x).or_default().push(dy);
                    }
                }
                Op::Concat => {
                    for &x in inputs {
                        contribute(&mut self.g, x, &[dy], true);
                    }
                }
            }
        }
        self.g.finish().expect("edges point backwards, so the graph is a DAG")
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

    #[test]
    fn transformers_and_random_layered_steps_are_training_steps() {
        let t = Transformer::new(3).generate();
        let r = RandomLayered::new(12).generate();
        for g in [&t, &r] {
            let forward = g.nodes().iter().filter(|n| !n.argument && !n.backward).count();
            let backward = g.nodes().iter().filter(|n| n.backward).count();
            assert!(backward >= forward, "every forward op but the loss has a gradient or an update");
            simulate(g, &g.topological_schedule()).unwrap();
        }
        // Six weighted ops per layer plus the embedding and the head, each updated.
        assert_eq!(t.outputs().count(), 3 * 6 + 2 + 1);
        assert_eq!(
            Transformer::new(6).generate().op_count() - Transformer::new(5).generate().op_count(),
            t.op_count() - Transformer::new(2).generate().op_count()
        );
        let debug = |g: &Graph| format!("{g:?}");
        assert_eq!(debug(&RandomLayered::new(12).generate()), debug(&r), "seeded");
        assert_ne!(debug(&RandomLayered { seed: 1, ..RandomLayered::new(12) }.generate()), debug(&r));
    }

    #[test]
    fn conv_nets_have_a_forward_pass_a_loss_and_an_update_per_convolution() {
        for net in [ConvNet::vgg16(), ConvNet::resnet34(), ConvNet::densenet121()] {
            let g = net.generate();
            let convs = g.nodes().iter().filter(|n| n.name.ends_with(".w_new")).count();
            assert!(g.outputs().count() == convs + 1, "{net:?}");
            assert!(g.nodes().iter().any(|n| n.name == "loss" && !n.backward));
            let forward = g.nodes().iter().filter(|n| !n.argument && !n.backward).count();
            assert!(forward > 10, "{net:?}: {forward}");
            simulate(&g, &g.topological_schedule()).unwrap();
        }
    }
}

//! Which elementwise producers to fuse into their consumers, decided with the memory model.
//!
//! The MLIR bridge lists the pairs that *can* be fused (`remat_mlir::fusion_candidates`: the
//! consumer would compute each producer element once, inside its own loop) and applies the
//! pairs chosen here; the driver repeats rounds until nothing is chosen.
//!
//! Fusing producer `P` into consumer `C` has two memory effects, read off the input order
//! (the program that runs without recomputation):
//!
//! * `P`'s result is no longer read by `C`: when `C` was its only reader, `P` is not
//!   materialized at all; when `C` was its last reader, `P` (cloned into `C`) dies at its
//!   previous reader instead — rematerialization at the use site, at no memory cost;
//! * `P`'s inputs are read by `C` now: an input that died before `C` lives on until `C`.
//!
//! [`FusionMode::Auto`] fuses a pair only when the input order never holds more bytes at any
//! step, and the proven lower bound does not rise:
//!
//! 1. the inputs whose lives are extended have at most `P`'s bytes, and each is extended only
//!    over steps where `P` no longer lives (for a clone: they all die at or after `P`'s previous
//!    reader), so what is added at a step never exceeds what is removed there;
//! 2. the fused node's own footprint (its result and the memory behind all its inputs, which
//!    every schedule holds while it runs) stays within the graph's lower bound.
//!
//! Upstream's greedy fusion has neither rule, and keeps a multi-use producer's result as an
//! extra result of the fused op; on a transformer step it raises the no-remat peak and the
//! lower bound (see docs/bench). [`FusionMode::Elementwise`] fuses every pair (producers with
//! other users cloned), for comparison.
//!
//! Both rules read the model without buffer reuse ([`remat_graph::Node::reuses`]: an
//! elementwise op writing into an input that dies there). Reuse and fusion save the same
//! transient buffers two ways, and fusion saves more (it removes the buffer for every
//! schedule, reuse only where the input happens to die); reuse then applies to whatever the
//! fused program leaves.
//!
//! Within a round a node is a producer or a consumer, never both (one level of a chain per
//! round), and each pair is judged on the lives as the pairs chosen before it leave them (the
//! consumer reads the producer's inputs, which live on to it; the producer lives to its
//! previous reader or not at all). So the rules hold for every prefix of the chosen sequence,
//! and a producer's clones into several readers, last reader first, fuse in one round (they
//! took one round each before: 64 rounds on a 12-block transformer, now 7). The driver applies
//! the pairs in order and stops at the first it cannot apply, then imports the fused function
//! for the next round. Cost: a few passes of O(pairs · inputs) per round after one O(n)
//! liveness pass.

use remat_graph::{lower_bound, Graph, NodeId};

/// How much fusion runs before planning (`--fusion`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FusionMode {
    /// None: the graph is the input's own ops.
    None,
    /// Every fusable pair, whatever it does to memory.
    Elementwise,
    /// The pairs that never raise the input order's memory at any step or the lower bound.
    #[default]
    Auto,
}

impl FusionMode {
    /// Every mode, in `--help` order.
    pub const ALL: [FusionMode; 3] = [FusionMode::None, FusionMode::Elementwise, FusionMode::Auto];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            FusionMode::None => "none",
            FusionMode::Elementwise => "elementwise",
            FusionMode::Auto => "auto",
        }
    }
}

/// The pairs (producer, consumer) of `candidates` to fuse in this round, in the order to apply
/// them. Each pair is judged on the graph as the pairs chosen before it leave it (a
/// [`Round`]), so a producer's clones into several readers fuse in one round; the order
/// matters, and the driver applies a prefix of it at most.
pub fn choose_fusions(
    graph: &Graph,
    order: &[NodeId],
    candidates: &[(NodeId, NodeId)],
    mode: FusionMode,
) -> Vec<(NodeId, NodeId)> {
    if mode == FusionMode::None {
        return Vec::new();
    }
    let mut round = Round::new(graph, order);
    let mut chosen = Vec::new();
    let mut taken = vec![false; candidates.len()];
    // Passes over the candidates until one chooses nothing: a pair refused early (a clone into
    // a reader that was not yet the last) may qualify once later pairs are in.
    loop {
        let before = chosen.len();
        for (i, &(p, c)) in candidates.iter().enumerate() {
            if !taken[i] && round.try_fuse(p, c, mode) {
                taken[i] = true;
                chosen.push((p, c));
            }
        }
        if chosen.len() == before {
            return chosen;
        }
    }
}

/// The graph as the pairs chosen so far in a round leave it: each node's inputs and readers
/// (a fused consumer reads its producer's inputs), which nodes are no longer materialized,
/// and where each storage root's life ends. Positions stay the input order's: a fused
/// consumer runs where the consumer ran.
struct Round<'g> {
    graph: &'g Graph,
    /// Each node's step in the input order.
    position: Vec<usize>,
    /// The last step at which each storage root is resident (its own or a view's reader, or the
    /// end for outputs).
    end: Vec<usize>,
    /// The inputs and readers of each node, once fusions changed them (else the graph's).
    preds: Vec<Option<Vec<NodeId>>>,
    succs: Vec<Option<Vec<NodeId>>>,
    /// Fused into all its readers: no longer materialized.
    gone: Vec<bool>,
    /// Held against a fused node's footprint.
    bound: u64,
    /// Fused into a reader this round (it may be into more), or took in a producer.
    produced: Vec<bool>,
    consumed: Vec<bool>,
}

impl<'g> Round<'g> {
    fn new(graph: &'g Graph, order: &[NodeId]) -> Self {
        let mut position = vec![usize::MAX; graph.len()];
        for (i, &n) in order.iter().enumerate() {
            position[n.index()] = i;
        }
        let last = order.len().saturating_sub(1);
        let mut end = position.clone();
        for &n in order {
            for &p in graph.preds(n) {
                let root = graph.storage_root(p);
                end[root.index()] = end[root.index()].max(position[n.index()]);
            }
        }
        for o in graph.outputs() {
            end[graph.storage_root(o).index()] = last;
        }
        // The footprint rule is held against the bound without buffer reuse (`Node::reuses`):
        // what a node's inputs and result take when it cannot write in place.
        let mut bound = lower_bound(graph);
        for n in graph.ids().filter(|&n| !graph.node(n).argument) {
            let mut roots = vec![graph.storage_root(n)];
            for &p in graph.preds(n) {
                let r = graph.storage_root(p);
                if !roots.contains(&r) {
                    roots.push(r);
                }
            }
            let footprint: u64 = roots.iter().map(|&r| graph.node(r)).filter(|n| !n.argument).map(|n| n.bytes).sum();
            bound = bound.max(footprint);
        }
        let n = graph.len();
        Round {
            graph,
            position,
            end,
            preds: vec![None; n],
            succs: vec![None; n],
            gone: vec![false; n],
            bound,
            produced: vec![false; n],
            consumed: vec![false; n],
        }
    }

    fn bytes(&self, root: NodeId) -> u64 {
        let node = self.graph.node(root);
        if node.argument {
            0
        } else {
            node.bytes
        }
    }

    fn preds(&self, n: NodeId) -> &[NodeId] {
        self.preds[n.index()].as_deref().unwrap_or(self.graph.preds(n))
    }

    fn succs(&self, n: NodeId) -> &[NodeId] {
        self.succs[n.index()].as_deref().unwrap_or(self.graph.succs(n))
    }

    /// The storage roots of `node`'s inputs that hold memory.
    fn input_roots(&self, node: NodeId) -> Vec<NodeId> {
        let mut roots: Vec<NodeId> = Vec::new();
        for &p in self.preds(node) {
            let root = self.graph.storage_root(p);
            if self.bytes(root) > 0 && !roots.contains(&root) {
                roots.push(root);
            }
        }
        roots
    }

    /// Fuses `producer` into `consumer` when `mode` allows it here, and records it.
    fn try_fuse(&mut self, producer: NodeId, consumer: NodeId, mode: FusionMode) -> bool {
        if self.gone[producer.index()] || self.gone[consumer.index()] || !self.preds(consumer).contains(&producer) {
            return false;
        }
        // One level of a chain per round: fusing whole chains at once, judged link by link,
        // fused less and held more on a 12-block transformer than fusing level by level.
        if self.consumed[producer.index()] || self.produced[consumer.index()] {
            return false;
        }
        let previous_reader = match mode {
            FusionMode::None => return false,
            FusionMode::Elementwise => None,
            FusionMode::Auto => match self.safe(producer, consumer) {
                Some(previous) => previous,
                None => return false,
            },
        };
        self.fuse(producer, consumer, previous_reader);
        self.produced[producer.index()] = true;
        self.consumed[consumer.index()] = true;
        true
    }

    /// Whether fusing is safe by the module docs' two rules: `Some(where the producer's life
    /// ends afterwards)` (`None` inside: it is not made at all), else `None`.
    fn safe(&self, producer: NodeId, consumer: NodeId) -> Option<Option<usize>> {
        let graph = self.graph;
        let p = graph.node(producer);
        if p.output || !p.pure || p.view_of.is_some() {
            return None;
        }
        let at = self.position[consumer.index()];
        // Where P's life ends once the consumer no longer reads it: nowhere (it is not made at
        // all) when the consumer was its only reader, else at its previous reader. A view of P,
        // or a reader after the consumer, keeps it.
        let mut others: Option<usize> = None;
        for &s in self.succs(producer) {
            if s == consumer {
                continue;
            }
            if graph.node(s).view_of.is_some() || self.position[s.index()] > at {
                return None;
            }
            others = Some(others.map_or(self.position[s.index()], |o: usize| o.max(self.position[s.index()])));
        }
        // Inputs whose lives grow: they would have died before the consumer.
        let current = self.input_roots(consumer);
        let mut extended = 0u64;
        for r in self.input_roots(producer) {
            if current.contains(&r) || self.end[r.index()] >= at {
                continue;
            }
            // A clone frees P only after its previous reader: an input dying before that would
            // be extended over steps where P still lives.
            if others.is_some_and(|previous| self.end[r.index()] < previous) {
                return None;
            }
            extended += self.bytes(r);
        }
        if extended > self.bytes(producer) {
            return None;
        }
        let mut fused: Vec<NodeId> = current.into_iter().filter(|&r| r != producer).collect();
        for r in self.input_roots(producer) {
            if !fused.contains(&r) {
                fused.push(r);
            }
        }
        let footprint: u64 = self.bytes(consumer) + fused.iter().map(|&r| self.bytes(r)).sum::<u64>();
        (footprint <= self.bound).then_some(others)
    }

    /// Records `producer` fused into `consumer`: the consumer reads the producer's inputs, whose
    /// lives reach the consumer; the producer lives to its previous reader, or not at all.
    fn fuse(&mut self, producer: NodeId, consumer: NodeId, previous_reader: Option<usize>) {
        let at = self.position[consumer.index()];
        let producer_inputs = self.preds(producer).to_vec();
        let mut consumer_inputs: Vec<NodeId> =
            self.preds(consumer).iter().copied().filter(|&q| q != producer).collect();
        for &q in &producer_inputs {
            if !consumer_inputs.contains(&q) {
                consumer_inputs.push(q);
            }
            let mut readers = self.succs(q).to_vec();
            if !readers.contains(&consumer) {
                readers.push(consumer);
            }
            self.succs[q.index()] = Some(readers);
            let root = self.graph.storage_root(q);
            self.end[root.index()] = self.end[root.index()].max(at);
        }
        self.preds[consumer.index()] = Some(consumer_inputs);
        let readers: Vec<NodeId> = self.succs(producer).iter().copied().filter(|&s| s != consumer).collect();
        if readers.is_empty() {
            // Not made at all: its inputs lose it as a reader.
            self.gone[producer.index()] = true;
            for &q in &producer_inputs {
                let rest: Vec<NodeId> = self.succs(q).iter().copied().filter(|&s| s != producer).collect();
                self.succs[q.index()] = Some(rest);
            }
        } else if let Some(previous) = previous_reader {
            self.end[producer.index()] = previous;
        }
        self.succs[producer.index()] = Some(readers);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_graph::{simulate, GraphBuilder, NodeSpec};

    /// x → a = f(x) → b = g(a) → c = h(b, x), each 100 bytes; `a` is read by `b` only.
    fn chain() -> (Graph, Vec<NodeId>, [NodeId; 4]) {
        let mut g = GraphBuilder::new();
        let x = g.add(NodeSpec::op("x", 100, 1.0), &[]);
        let a = g.add(NodeSpec::op("a", 100, 1.0), &[x]);
        let b = g.add(NodeSpec::op("b", 100, 1.0), &[a]);
        let c = g.add(NodeSpec::op("c", 100, 1.0).output(), &[b, x]);
        let g = g.finish().unwrap();
        let order = g.topological_schedule();
        (g, order, [x, a, b, c])
    }

    #[test]
    fn a_single_use_producer_whose_inputs_live_on_is_fused() {
        let (g, order, [_, a, b, c]) = chain();
        let pairs = [(a, b), (b, c)];
        // b may take in a (x lives on to c); b cannot also give itself to c in the same round.
        assert_eq!(choose_fusions(&g, &order, &pairs, FusionMode::Auto), vec![(a, b)]);
        assert_eq!(choose_fusions(&g, &order, &pairs, FusionMode::Elementwise), vec![(a, b)]);
        assert!(choose_fusions(&g, &order, &pairs, FusionMode::None).is_empty());
    }

    /// A binary producer whose two inputs both die at it: fused, both would live to the
    /// consumer, twice the producer's bytes.
    #[test]
    fn a_producer_whose_dying_inputs_outweigh_it_is_not_fused() {
        let mut g = GraphBuilder::new();
        let x = g.add(NodeSpec::op("x", 100, 1.0), &[]);
        let y = g.add(NodeSpec::op("y", 100, 1.0), &[]);
        let a = g.add(NodeSpec::op("a", 100, 1.0), &[x, y]);
        let filler = g.add(NodeSpec::op("filler", 300, 1.0), &[]);
        let b = g.add(NodeSpec::op("b", 100, 1.0).output(), &[a, filler]);
        let g = g.finish().unwrap();
        let order = g.topological_schedule();
        assert!(choose_fusions(&g, &order, &[(a, b)], FusionMode::Auto).is_empty());
        assert_eq!(choose_fusions(&g, &order, &[(a, b)], FusionMode::Elementwise), vec![(a, b)]);
    }

    /// A forward value read again by the backward: cloning it there frees it early when its
    /// input is kept for the backward anyway.
    #[test]
    fn a_residual_is_recomputed_at_its_last_reader_when_its_input_lives_on() {
        let mut g = GraphBuilder::new();
        let x = g.add(NodeSpec::op("x", 100, 1.0), &[]);
        let r = g.add(NodeSpec::op("r", 100, 1.0), &[x]); // tanh(x), say
        let f = g.add(NodeSpec::op("f", 100, 1.0), &[r]);
        let big = g.add(NodeSpec::op("big", 500, 1.0), &[f]);
        let grad = g.add(NodeSpec::op("grad", 100, 1.0).output(), &[big, r, x]);
        let g = g.finish().unwrap();
        let order = g.topological_schedule();
        let chosen = choose_fusions(&g, &order, &[(r, grad)], FusionMode::Auto);
        assert_eq!(chosen, vec![(r, grad)]);
        // Not the last reader: fusing into f would free nothing.
        assert!(choose_fusions(&g, &order, &[(r, f)], FusionMode::Auto).is_empty());
        // And if x died at r, keeping it for the backward would cost what r did, earlier.
        let mut h = GraphBuilder::new();
        let x = h.add(NodeSpec::op("x", 100, 1.0), &[]);
        let r = h.add(NodeSpec::op("r", 100, 1.0), &[x]);
        let f = h.add(NodeSpec::op("f", 100, 1.0), &[r]);
        let big = h.add(NodeSpec::op("big", 500, 1.0), &[f]);
        let grad = h.add(NodeSpec::op("grad", 100, 1.0).output(), &[big, r]);
        let h = h.finish().unwrap();
        let order = h.topological_schedule();
        assert!(choose_fusions(&h, &order, &[(r, grad)], FusionMode::Auto).is_empty());
        let _ = simulate(&h, &order).unwrap();
    }

    /// A residual read by the forward and by two backward readers: cloned into both backward
    /// readers in one round, the last first (before the last is in, the other is not the last
    /// reader, and fusing into it would free nothing).
    #[test]
    fn a_producer_is_cloned_into_several_readers_in_one_round() {
        let mut g = GraphBuilder::new();
        let x = g.add(NodeSpec::op("x", 100, 1.0), &[]);
        let r = g.add(NodeSpec::op("r", 100, 1.0), &[x]);
        let f = g.add(NodeSpec::op("f", 100, 1.0), &[r]);
        let big = g.add(NodeSpec::op("big", 500, 1.0), &[f]);
        let g1 = g.add(NodeSpec::op("g1", 100, 1.0), &[big, r, x]);
        let g2 = g.add(NodeSpec::op("g2", 100, 1.0).output(), &[g1, r, x]);
        let g = g.finish().unwrap();
        let order = g.topological_schedule();
        let candidates = [(r, g1), (r, g2)];
        assert_eq!(choose_fusions(&g, &order, &candidates, FusionMode::Auto), vec![(r, g2), (r, g1)]);
        // With f a candidate too, the second pass finds f the last reader left: r is then not
        // made at all (x lives on to g2 anyway).
        let candidates = [(r, f), (r, g1), (r, g2)];
        assert_eq!(choose_fusions(&g, &order, &candidates, FusionMode::Auto), vec![(r, g2), (r, g1), (r, f)]);
    }

    /// A consumer that took in a producer this round is not fused into its own reader until
    /// the next round (one level of a chain per round).
    #[test]
    fn one_level_of_a_chain_per_round() {
        let (g, order, [_, a, b, c]) = chain();
        assert_eq!(choose_fusions(&g, &order, &[(b, c), (a, b)], FusionMode::Auto), vec![(b, c)]);
    }

    #[test]
    fn outputs_and_impure_producers_are_never_fused() {
        let mut g = GraphBuilder::new();
        let x = g.add(NodeSpec::op("x", 100, 1.0), &[]);
        let a = g.add(NodeSpec::op("a", 100, 1.0).output(), &[x]);
        let b = g.add(NodeSpec::op("b", 100, 1.0).output(), &[a, x]);
        let g = g.finish().unwrap();
        let order = g.topological_schedule();
        assert!(choose_fusions(&g, &order, &[(a, b)], FusionMode::Auto).is_empty());
    }
}

//! The graph: nodes, their dependencies, and the facts the memory model needs about each.

use std::fmt;

/// Dense index of a node in its [`Graph`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The index as `usize`, for indexing per-node tables.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One node: an op of the step (with its folded init ops) or a pinned argument.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// Human-readable name (an SSA name, an op name, or the graph file's `name`).
    pub name: String,
    /// Bytes of the node's results. Views and constants own none.
    pub bytes: u64,
    /// Bytes the node holds beyond its results only while it runs, freed when it ends: one
    /// iteration's buffers of a loop kept whole. 0 for ordinary ops.
    pub workspace: u64,
    /// Estimated work of one execution.
    pub cost: f64,
    /// A function argument: resident for the whole step, never executed by a schedule.
    pub argument: bool,
    /// Must be resident at the end of the step.
    pub output: bool,
    /// May be executed more than once. Impure nodes execute exactly once.
    pub pure: bool,
    /// The node is a view of this predecessor: it owns no memory and keeps its source live.
    /// An impure view is an *in-place update*: it writes its result into its source's buffer
    /// (`tensor.insert_slice` into a destination nothing else reads), so it runs once and its
    /// source's storage cannot be recomputed once it has run.
    pub view_of: Option<NodeId>,
    /// An input whose buffer this node may take for its result when that input dies here
    /// (an elementwise op writing in place, XLA's buffer sharing): of the same bytes, not a
    /// view. Whether it does depends on the schedule; the memory model decides per step.
    pub reuses: Option<NodeId>,
    /// Inputs this elementwise op can compute itself, per element, instead of reading them
    /// (elementwise fusion): where the schedule recomputes such an input right before this
    /// node, for this node alone, the memory model may fuse the two steps, so the
    /// recomputed value is never materialized (see [`crate::Lifetimes::fused`]).
    pub fuses: Vec<NodeId>,
    /// Part of the backward pass (from graph JSON; informational).
    pub backward: bool,
    /// The op name (e.g. `linalg.matmul`) when the graph came from MLIR.
    pub op: Option<String>,
    /// Source location when the graph came from MLIR.
    pub location: Option<String>,
}

/// A node description for [`GraphBuilder::add`], with builder-style setters.
#[derive(Clone, Debug)]
pub struct NodeSpec(Node);

impl NodeSpec {
    /// A pure op node with the given result bytes and cost.
    pub fn op(name: impl Into<String>, bytes: u64, cost: f64) -> Self {
        NodeSpec(Node {
            name: name.into(),
            bytes,
            workspace: 0,
            cost,
            argument: false,
            output: false,
            pure: true,
            view_of: None,
            reuses: None,
            fuses: Vec::new(),
            backward: false,
            op: None,
            location: None,
        })
    }
    /// A pinned argument of the given size.
    pub fn argument(name: impl Into<String>, bytes: u64) -> Self {
        let mut spec = Self::op(name, bytes, 0.0);
        spec.0.argument = true;
        spec.0.pure = false;
        spec
    }
    /// Marks the node as an output.
    pub fn output(mut self) -> Self {
        self.0.output = true;
        self
    }
    /// Sets whether the node is an output.
    pub fn with_output(mut self, output: bool) -> Self {
        self.0.output = output;
        self
    }
    /// Marks the node impure (scheduled exactly once).
    pub fn impure(mut self) -> Self {
        self.0.pure = false;
        self
    }
    /// Makes the node a zero-byte view of `source`, which must also be a predecessor.
    pub fn view_of(mut self, source: NodeId) -> Self {
        self.0.view_of = Some(source);
        self.0.bytes = 0;
        self
    }
    /// Lets the node take `input`'s buffer for its result where `input` dies at it (see
    /// [`Node::reuses`]); `input` must be a predecessor of the same bytes.
    pub fn reusing(mut self, input: NodeId) -> Self {
        self.0.reuses = Some(input);
        self
    }
    /// Lets the node compute `inputs` itself where they are recomputed for it alone (see
    /// [`Node::fuses`]); each must be a predecessor that owns its memory.
    pub fn fusing(mut self, inputs: &[NodeId]) -> Self {
        self.0.fuses = inputs.to_vec();
        self
    }
    /// Sets the bytes the node holds only while it runs (see [`Node::workspace`]).
    pub fn with_workspace(mut self, workspace: u64) -> Self {
        self.0.workspace = workspace;
        self
    }
    /// Sets the node's result bytes.
    pub fn with_bytes(mut self, bytes: u64) -> Self {
        self.0.bytes = bytes;
        self
    }
    /// The source of a view spec.
    pub fn view_source(&self) -> Option<NodeId> {
        self.0.view_of
    }
    /// Whether the spec is pure (may be executed more than once).
    pub fn is_pure(&self) -> bool {
        self.0.pure
    }
    /// Marks the node as part of the backward pass.
    pub fn backward(mut self, backward: bool) -> Self {
        self.0.backward = backward;
        self
    }
    /// Records the op name and location the node came from.
    pub fn origin(mut self, op: impl Into<String>, location: Option<String>) -> Self {
        self.0.op = Some(op.into());
        self.0.location = location;
        self
    }
}

/// Why a graph could not be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum GraphError {
    /// A predecessor id does not name an existing node.
    #[error("node {node} ('{name}') depends on unknown node {pred}")]
    UnknownPredecessor {
        /// The dependent node.
        node: NodeId,
        /// Its name.
        name: String,
        /// The missing id.
        pred: NodeId,
    },
    /// The dependencies form a cycle.
    #[error("the graph has a cycle through node {node} ('{name}')")]
    Cycle {
        /// A node on the cycle.
        node: NodeId,
        /// Its name.
        name: String,
    },
    /// An argument was given predecessors.
    #[error("argument node {node} ('{name}') has predecessors")]
    ArgumentWithPredecessors {
        /// The argument.
        node: NodeId,
        /// Its name.
        name: String,
    },
    /// A view reads memory other than its source's.
    #[error("view node {node} ('{name}') reads node {input}, which holds memory; a view's inputs other than its source must own none (index operands)")]
    ViewReadsMemory {
        /// The view.
        node: NodeId,
        /// Its name.
        name: String,
        /// The offending input.
        input: NodeId,
    },
    /// A node reuses a buffer it cannot: not an input, a view, of other bytes, or itself a view.
    #[error("node {node} ('{name}') cannot reuse the buffer of node {input}: it must be an input of the same bytes that owns its memory")]
    InvalidReuse {
        /// The node.
        node: NodeId,
        /// Its name.
        name: String,
        /// The input named.
        input: NodeId,
    },
    /// A node claims to compute an input itself that it cannot: not an input, an argument,
    /// a view, impure, or the node is a view or an argument itself.
    #[error("node {node} ('{name}') cannot fuse node {input}: it must be a pure, computed input that owns its memory")]
    InvalidFusion {
        /// The node.
        node: NodeId,
        /// Its name.
        name: String,
        /// The input named.
        input: NodeId,
    },
    /// A view's source is not one of its predecessors.
    #[error("view node {node} ('{name}') is a view of {view_source}, which is not one of its inputs")]
    ViewSourceNotInput {
        /// The view.
        node: NodeId,
        /// Its name.
        name: String,
        /// The claimed source.
        view_source: NodeId,
    },
}

/// Builds a [`Graph`]; checks it is a DAG when finished.
#[derive(Default)]
pub struct GraphBuilder {
    nodes: Vec<Node>,
    preds: Vec<Vec<NodeId>>,
}

impl GraphBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a node with the given predecessors (duplicates are ignored) and returns its id.
    pub fn add(&mut self, spec: NodeSpec, preds: &[NodeId]) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        let mut unique: Vec<NodeId> = Vec::with_capacity(preds.len());
        for &p in preds {
            if !unique.contains(&p) {
                unique.push(p);
            }
        }
        self.nodes.push(spec.0);
        self.preds.push(unique);
        id
    }

    /// Number of nodes added so far.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }
    /// Whether no node was added.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
    /// Mutable access to a node added earlier (e.g. to mark it an output).
    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.nodes[id.index()]
    }
    /// Checks the graph and freezes it.
    pub fn finish(self) -> Result<Graph, GraphError> {
        let n = self.nodes.len();
        let mut succs = vec![Vec::new(); n];
        for (i, preds) in self.preds.iter().enumerate() {
            let node = NodeId(i as u32);
            for &p in preds {
                if p.index() >= n {
                    return Err(GraphError::UnknownPredecessor { node, name: self.nodes[i].name.clone(), pred: p });
                }
                succs[p.index()].push(node);
            }
            if self.nodes[i].argument && !preds.is_empty() {
                return Err(GraphError::ArgumentWithPredecessors { node, name: self.nodes[i].name.clone() });
            }
            if let Some(input) = self.nodes[i].reuses {
                let valid = preds.contains(&input)
                    && self.nodes[i].view_of.is_none()
                    && !self.nodes[i].argument
                    && self.nodes[input.index()].view_of.is_none()
                    && !self.nodes[input.index()].argument
                    && self.nodes[input.index()].bytes == self.nodes[i].bytes;
                if !valid {
                    return Err(GraphError::InvalidReuse { node, name: self.nodes[i].name.clone(), input });
                }
            }
            for &input in &self.nodes[i].fuses {
                if !fusion_is_valid(&self.nodes, preds, i, input) {
                    return Err(GraphError::InvalidFusion { node, name: self.nodes[i].name.clone(), input });
                }
            }
            if let Some(source) = self.nodes[i].view_of {
                if !preds.contains(&source) {
                    return Err(GraphError::ViewSourceNotInput {
                        node,
                        name: self.nodes[i].name.clone(),
                        view_source: source,
                    });
                }
                // Keeps the memory model simple and exact: re-making a view after its source
                // is recomputed never revives another buffer. In-place updates (impure views)
                // are never re-made, so they may read anything.
                let in_place_update = !self.nodes[i].pure;
                for &p in preds.iter().filter(|&&p| p != source && !in_place_update) {
                    let holds_memory = !self.nodes[p.index()].argument
                        && (self.nodes[p.index()].bytes > 0 || self.nodes[p.index()].view_of.is_some());
                    if holds_memory {
                        return Err(GraphError::ViewReadsMemory { node, name: self.nodes[i].name.clone(), input: p });
                    }
                }
            }
        }
        let mut dag = petgraph::graph::DiGraph::<(), ()>::with_capacity(n, 0);
        for _ in 0..n {
            dag.add_node(());
        }
        for (i, preds) in self.preds.iter().enumerate() {
            for &p in preds {
                dag.add_edge(petgraph::graph::NodeIndex::new(p.index()), petgraph::graph::NodeIndex::new(i), ());
            }
        }
        // petgraph's toposort is a DFS; we only use it to detect cycles, and compute our own
        // deterministic order (Kahn's algorithm, smallest id first) below.
        if let Err(cycle) = petgraph::algo::toposort(&dag, None) {
            let i = cycle.node_id().index();
            return Err(GraphError::Cycle { node: NodeId(i as u32), name: self.nodes[i].name.clone() });
        }
        let topo = kahn_order(&self.preds, &succs);
        Ok(Graph { nodes: self.nodes, preds: self.preds, succs, topo, peak_bound: std::sync::OnceLock::new() })
    }
}

/// Whether node `i` (inputs `preds`) may compute `input` itself: see [`Node::fuses`].
fn fusion_is_valid(nodes: &[Node], preds: &[NodeId], i: usize, input: NodeId) -> bool {
    let (node, producer) = (&nodes[i], nodes.get(input.index()));
    producer.is_some_and(|p| p.pure && !p.argument && p.view_of.is_none())
        && preds.contains(&input)
        && node.view_of.is_none()
        && !node.argument
}

fn kahn_order(preds: &[Vec<NodeId>], succs: &[Vec<NodeId>]) -> Vec<NodeId> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut indegree: Vec<usize> = preds.iter().map(Vec::len).collect();
    let mut ready: BinaryHeap<Reverse<u32>> =
        (0..preds.len()).filter(|&i| indegree[i] == 0).map(|i| Reverse(i as u32)).collect();
    let mut order = Vec::with_capacity(preds.len());
    while let Some(Reverse(i)) = ready.pop() {
        order.push(NodeId(i));
        for s in &succs[i as usize] {
            indegree[s.index()] -= 1;
            if indegree[s.index()] == 0 {
                ready.push(Reverse(s.0));
            }
        }
    }
    order
}

/// A computation graph: a DAG of [`Node`]s, frozen by [`GraphBuilder::finish`].
#[derive(Clone, Debug)]
pub struct Graph {
    nodes: Vec<Node>,
    preds: Vec<Vec<NodeId>>,
    succs: Vec<Vec<NodeId>>,
    topo: Vec<NodeId>,
    /// [`crate::peak_lower_bound`], computed on first use: reports, sweeps and diagnostics ask
    /// for it once per plan, and on large steps it takes a good part of a second.
    peak_bound: std::sync::OnceLock<u64>,
}

impl Graph {
    /// The memo behind [`crate::peak_lower_bound`].
    pub(crate) fn peak_bound_memo(&self) -> &std::sync::OnceLock<u64> {
        &self.peak_bound
    }
    /// Number of nodes, arguments included.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }
    /// Whether the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
    /// All node ids in index order.
    pub fn ids(&self) -> impl DoubleEndedIterator<Item = NodeId> + ExactSizeIterator + '_ {
        (0..self.nodes.len() as u32).map(NodeId)
    }
    /// The node with this id.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }
    /// All nodes in index order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }
    /// Direct inputs of `id`, without duplicates, in first-use order.
    pub fn preds(&self, id: NodeId) -> &[NodeId] {
        &self.preds[id.index()]
    }
    /// Direct users of `id`, in increasing id order.
    pub fn succs(&self, id: NodeId) -> &[NodeId] {
        &self.succs[id.index()]
    }

    /// The executable nodes (not arguments) in topological order: the no-remat schedule when
    /// the graph carries no better order of its own.
    pub fn topological_schedule(&self) -> Vec<NodeId> {
        self.topo.iter().copied().filter(|&n| !self.node(n).argument).collect()
    }
    /// The node whose memory `id` occupies: `id` itself, or the source at the end of its
    /// chain of views.
    pub fn storage_root(&self, mut id: NodeId) -> NodeId {
        while let Some(source) = self.node(id).view_of {
            id = source;
        }
        id
    }
    /// The storage behind `id`'s inputs: each input's [`Graph::storage_root`], once, in input
    /// order, arguments left out (they are never freed or recomputed).
    pub fn storage_inputs(&self, id: NodeId) -> Vec<NodeId> {
        let mut roots: Vec<NodeId> = Vec::new();
        for &p in self.preds(id) {
            let r = self.storage_root(p);
            if !self.node(r).argument && !roots.contains(&r) {
                roots.push(r);
            }
        }
        roots
    }

    /// Where `consumer` [fuses](Node::fuses) `producer`, recomputed right before it: the bytes
    /// of the producer's inputs that `consumer` does not read (the fused op may hold them one
    /// step longer), provided that even with all of them, and `consumer`'s own buffer where it
    /// could have taken a dying input's, the fused op holds no more than the producer's result
    /// did — so [`crate::Lifetimes::fused`] is certain to fuse such a recomputation. `None`
    /// otherwise.
    pub fn certain_fusion_growth(&self, consumer: NodeId, producer: NodeId) -> Option<u64> {
        let consumer_storage = self.storage_inputs(consumer);
        let grown: u64 = self
            .storage_inputs(producer)
            .iter()
            .filter(|r| !consumer_storage.contains(r))
            .map(|&r| self.node(r).bytes)
            .sum();
        let own_buffer = if self.node(consumer).reuses.is_some() { self.node(consumer).bytes } else { 0 };
        (grown + own_buffer <= self.node(producer).bytes).then_some(grown)
    }

    /// Ids of all output nodes.
    pub fn outputs(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.ids().filter(|&n| self.node(n).output)
    }
    /// Total bytes of the pinned arguments.
    pub fn argument_bytes(&self) -> u64 {
        self.nodes.iter().filter(|n| n.argument).map(|n| n.bytes).sum()
    }

    /// Lets `consumer` compute `producers` itself (see [`Node::fuses`]), replacing what it had;
    /// checked as [`GraphBuilder::finish`] checks it. For an importer that learns which pairs
    /// can be fused after the graph is built.
    pub fn set_fuses(&mut self, consumer: NodeId, producers: Vec<NodeId>) -> Result<(), GraphError> {
        let i = consumer.index();
        if let Some(&input) = producers.iter().find(|&&p| !self.can_fuse(consumer, p)) {
            return Err(GraphError::InvalidFusion { node: consumer, name: self.nodes[i].name.clone(), input });
        }
        self.nodes[i].fuses = producers;
        self.peak_bound = std::sync::OnceLock::new();
        Ok(())
    }
    /// Whether `consumer` may be said to compute `producer` itself ([`Node::fuses`]'s rules).
    pub fn can_fuse(&self, consumer: NodeId, producer: NodeId) -> bool {
        fusion_is_valid(&self.nodes, &self.preds[consumer.index()], consumer.index(), producer)
    }
    /// Whether any node may fuse an input (the memory model then looks for fused steps).
    pub fn has_fusions(&self) -> bool {
        self.nodes.iter().any(|n| !n.fuses.is_empty())
    }

    /// Number of executable (non-argument) nodes.
    pub fn op_count(&self) -> usize {
        self.nodes.iter().filter(|n| !n.argument).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_inputs_are_roots_once_without_arguments() {
        let mut g = GraphBuilder::new();
        let arg = g.add(NodeSpec::argument("w", 8), &[]);
        let x = g.add(NodeSpec::op("x", 16, 1.0), &[arg]);
        let view = g.add(NodeSpec::op("view", 0, 0.0).view_of(x), &[x]);
        let y = g.add(NodeSpec::op("y", 16, 1.0), &[arg]);
        let z = g.add(NodeSpec::op("z", 16, 1.0), &[view, arg, x, y]);
        let g = g.finish().unwrap();
        assert_eq!(g.storage_inputs(z), vec![x, y]);
        assert_eq!(g.storage_inputs(x), Vec::<NodeId>::new());
    }
}

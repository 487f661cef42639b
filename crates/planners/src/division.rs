//! Closed sets and the division tree of Feng & Huang, *Cutting down training memory by
//! re-forwarding* (seeds/002, §4.2), built in near-linear time.
//!
//! The input is a two-terminal DAG ([`TwoTerminalDag`]): vertices numbered topologically, the
//! source 0 and the sink `n − 1`, every vertex on a source–sink path. A **closed set**
//! `s_ij` (Definition 1) is a set of vertices with common ancestor `v_i` and common descendant
//! `v_j` whose vertices have edges only among themselves and to `v_i`, `v_j`; `[s_ij]` adds the
//! endpoints. The **division** of a closed set (Definition 8) is
//!
//! * type 1, *splittable* (Definitions 3–4): the segments between all its splitting vertices;
//! * type 2, *branched* (Definition 5): its branches, each not divisible into more branches;
//! * type 3, *non-branched* (Definition 6): its maximal split (Definition 7), the largest
//!   proper closed subsets, which partition its edges;
//!
//! and the **division tree** (Definition 9) has the whole graph at the root, each node's
//! division as its children, and single edges (closed sets with no vertex) as leaves.
//! Theorem 1: the tree is unique and complete — no closed set has its head in one member of a
//! division and its tail in another, so every closed set is a node or a union of consecutive
//! members of a type-1 node or of branches of a type-2 node.
//!
//! ## How it is built (not the paper's O(N⁴) Algorithms 2–4)
//!
//! Bottom-up, by reductions that each recognise one closed set whose members are already
//! contracted to single edges of a multigraph:
//!
//! * **series**: a vertex with one in-edge and one out-edge is a splitting vertex of the
//!   closed set formed by its two edges (Algorithm 2's test, answered by degree). Chains are
//!   flattened, so a type-1 node lists *all* its splitting vertices;
//! * **parallel**: two edges between the same pair are two branches (Algorithm 3's test);
//!   flattened likewise, so branches are never themselves branched;
//! * **rigid**: when neither applies, every remaining closed set with a vertex has at least
//!   three members, so it is of type 3 and the smallest ones have only edges as members — their
//!   maximal split (Algorithm 4) is their edge set. They are found with dominator trees: for a
//!   vertex `w`, the candidate is the set `D°(idom w) ∩ P°(ipdom w)` (strictly dominated by
//!   `w`'s immediate dominator and strictly post-dominated by its immediate post-dominator),
//!   grown from `w` by a search that stops as soon as it meets a vertex outside both; a search
//!   that completes has found a closed set. The smallest disjoint ones are contracted, and
//!   series/parallel reduction resumes.
//!
//! Series-parallel parts cost O(E log E) in all; each rigid round costs dominator trees plus
//! the searches. The property tests check the result against Definition 1 by brute force.

use std::collections::{BTreeSet, HashMap};

/// A DAG with one source (vertex 0) and one sink (vertex `n − 1`), vertices numbered
/// topologically (every edge goes from a smaller to a larger number).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwoTerminalDag {
    /// Number of vertices.
    pub vertices: usize,
    /// Edges `(from, to)` with `from < to`, no duplicates.
    pub edges: Vec<(u32, u32)>,
}

/// Why a [`TwoTerminalDag`] is malformed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DagError {
    /// Fewer than two vertices.
    #[error("a two-terminal DAG needs a source and a sink")]
    NoTerminals,
    /// An edge that does not go forward in the numbering.
    #[error("edge {0}->{1} is not forward in the numbering")]
    NotForward(u32, u32),
    /// An edge given twice.
    #[error("edge {0}->{1} appears twice")]
    DuplicateEdge(u32, u32),
    /// A vertex the source does not reach.
    #[error("vertex {0} is not reachable from the source")]
    Unreachable(usize),
    /// A vertex that does not reach the sink.
    #[error("vertex {0} does not reach the sink")]
    NoPathToSink(usize),
}

impl TwoTerminalDag {
    /// Checks the numbering, duplicates, and that every vertex lies on a source–sink path.
    pub fn validate(&self) -> Result<(), DagError> {
        let n = self.vertices;
        if n < 2 {
            return Err(DagError::NoTerminals);
        }
        let mut seen = std::collections::HashSet::new();
        let (mut has_in, mut has_out) = (vec![false; n], vec![false; n]);
        for &(u, w) in &self.edges {
            if u >= w || w as usize >= n {
                return Err(DagError::NotForward(u, w));
            }
            if !seen.insert((u, w)) {
                return Err(DagError::DuplicateEdge(u, w));
            }
            has_out[u as usize] = true;
            has_in[w as usize] = true;
        }
        // With a topological numbering, following in-edges backwards from any vertex ends at a
        // vertex without one, so if only the source lacks in-edges everything is reachable from
        // it; likewise for the sink. Together they put every vertex on a source–sink path.
        for v in 0..n {
            if v != 0 && !has_in[v] {
                return Err(DagError::Unreachable(v));
            }
            if v != n - 1 && !has_out[v] {
                return Err(DagError::NoPathToSink(v));
            }
        }
        Ok(())
    }
}

/// The type of a division-tree node (Definitions 4–6), or a leaf edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Division {
    /// A single edge `source → target`: a closed set with no vertex.
    Edge,
    /// Type 1: the children are consecutive segments, `splits[i]` joins child `i` and `i + 1`.
    Series {
        /// All splitting vertices, from source to target.
        splits: Vec<u32>,
    },
    /// Type 2: the children are the branches between the same endpoints.
    Parallel,
    /// Type 3: the children are the maximal split; `inner` are its members' endpoints other
    /// than the node's own (sorted).
    Rigid {
        /// The members' endpoints inside the closed set.
        inner: Vec<u32>,
    },
}

/// One node of the division tree: the closed set `[s_source,target]` and its division.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClosedSet {
    /// The common ancestor `v_i`.
    pub source: u32,
    /// The common descendant `v_j`.
    pub target: u32,
    /// The node's type.
    pub division: Division,
    /// The members of its division (indices into [`DivisionTree::nodes`]); empty for edges.
    pub children: Vec<usize>,
}

/// The division tree (Definition 9). Children precede their parents in `nodes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DivisionTree {
    /// Every node, children before parents.
    pub nodes: Vec<ClosedSet>,
    /// The whole graph.
    pub root: usize,
}

impl DivisionTree {
    /// Builds the division tree of `dag` (which must pass [`TwoTerminalDag::validate`]).
    pub fn build(dag: &TwoTerminalDag) -> DivisionTree {
        debug_assert_eq!(dag.validate(), Ok(()));
        let mut reducer = Reducer::new(dag);
        reducer.reduce();
        reducer.into_tree()
    }

    /// The vertices strictly inside node `id` (its closed set `s_ij`), in no particular order.
    pub fn interior(&self, id: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let mut stack = vec![id];
        while let Some(x) = stack.pop() {
            let node = &self.nodes[x];
            match &node.division {
                Division::Series { splits } => out.extend_from_slice(splits),
                Division::Rigid { inner } => out.extend_from_slice(inner),
                Division::Edge | Division::Parallel => {}
            }
            stack.extend_from_slice(&node.children);
        }
        out
    }

    /// The leaf edges under node `id`.
    pub fn edges(&self, id: usize) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        let mut stack = vec![id];
        while let Some(x) = stack.pop() {
            let node = &self.nodes[x];
            if node.division == Division::Edge {
                out.push((node.source, node.target));
            }
            stack.extend_from_slice(&node.children);
        }
        out
    }
}

const NONE: u32 = u32::MAX;

/// The reduction state: a multigraph whose edges each stand for a built tree node.
struct Reducer {
    n: usize,
    /// Live edges per vertex, by edge id (ordered, so every run reduces in the same order).
    ins: Vec<BTreeSet<u32>>,
    outs: Vec<BTreeSet<u32>>,
    /// `(from, to, tree node)` per edge id; `from == NONE` once removed.
    edges: Vec<(u32, u32, usize)>,
    /// The live edge between a pair of vertices.
    by_pair: HashMap<(u32, u32), u32>,
    alive: Vec<bool>,
    nodes: Vec<ClosedSet>,
    worklist: Vec<u32>,
}

impl Reducer {
    fn new(dag: &TwoTerminalDag) -> Reducer {
        let n = dag.vertices;
        let mut r = Reducer {
            n,
            ins: vec![BTreeSet::new(); n],
            outs: vec![BTreeSet::new(); n],
            edges: Vec::with_capacity(dag.edges.len()),
            by_pair: HashMap::with_capacity(dag.edges.len()),
            alive: vec![true; n],
            nodes: Vec::with_capacity(2 * dag.edges.len()),
            worklist: (1..n.saturating_sub(1) as u32).rev().collect(),
        };
        for &(u, w) in &dag.edges {
            let leaf = r.push_node(u, w, Division::Edge, Vec::new());
            r.add_edge(u, w, leaf);
        }
        r
    }

    fn push_node(&mut self, source: u32, target: u32, division: Division, children: Vec<usize>) -> usize {
        self.nodes.push(ClosedSet { source, target, division, children });
        self.nodes.len() - 1
    }

    /// Adds an edge for tree node `node`, merging it into a parallel node when the pair is
    /// already joined (Definition 5: the two are branches of one closed set).
    fn add_edge(&mut self, u: u32, w: u32, node: usize) {
        if let Some(&e) = self.by_pair.get(&(u, w)) {
            let existing = self.edges[e as usize].2;
            let mut children = self.branches(existing);
            children.extend(self.branches(node));
            let merged = self.push_node(u, w, Division::Parallel, children);
            self.edges[e as usize].2 = merged;
            // Both endpoints lost a degree: either may now be a splitting vertex.
            self.worklist.push(u);
            self.worklist.push(w);
            return;
        }
        let e = self.edges.len() as u32;
        self.edges.push((u, w, node));
        self.by_pair.insert((u, w), e);
        self.outs[u as usize].insert(e);
        self.ins[w as usize].insert(e);
    }

    fn remove_edge(&mut self, e: u32) -> (u32, u32, usize) {
        let (u, w, node) = self.edges[e as usize];
        self.outs[u as usize].remove(&e);
        self.ins[w as usize].remove(&e);
        self.by_pair.remove(&(u, w));
        self.edges[e as usize].0 = NONE;
        (u, w, node)
    }

    /// A node's branches for a parallel merge: its own children when it is already parallel
    /// (taken: the merged node supersedes it, so chains of merges stay linear).
    fn branches(&mut self, node: usize) -> Vec<usize> {
        match self.nodes[node].division {
            Division::Parallel => std::mem::take(&mut self.nodes[node].children),
            _ => vec![node],
        }
    }

    /// A node's segments and splitting vertices for a series merge (taken likewise).
    fn segments(&mut self, node: usize) -> (Vec<usize>, Vec<u32>) {
        let ClosedSet { division, children, .. } = &mut self.nodes[node];
        match division {
            Division::Series { splits } => (std::mem::take(children), std::mem::take(splits)),
            _ => (vec![node], Vec::new()),
        }
    }

    fn reduce(&mut self) {
        loop {
            while let Some(v) = self.worklist.pop() {
                self.try_series(v);
            }
            let live = (0..self.n).filter(|&v| self.alive[v]).count();
            if live <= 2 {
                break;
            }
            if !self.contract_rigid() {
                // Cannot happen on a valid two-terminal DAG (the whole graph is a closed set
                // and is found from any vertex whose dominators are the terminals); keep a
                // valid tree rather than loop.
                debug_assert!(false, "no closed set found in a reduced graph");
                let all: Vec<u32> = (1..self.n as u32 - 1).filter(|&v| self.alive[v as usize]).collect();
                self.contract(0, self.n as u32 - 1, &all);
            }
        }
    }

    fn try_series(&mut self, v: u32) {
        let vi = v as usize;
        if !self.alive[vi] || vi == 0 || vi == self.n - 1 || self.ins[vi].len() != 1 || self.outs[vi].len() != 1 {
            return;
        }
        let a = *self.ins[vi].iter().next().unwrap();
        let b = *self.outs[vi].iter().next().unwrap();
        let (u, _, left) = self.remove_edge(a);
        let (_, w, right) = self.remove_edge(b);
        self.alive[vi] = false;
        let (mut children, mut splits) = self.segments(left);
        let (right_children, right_splits) = self.segments(right);
        splits.push(v);
        splits.extend(right_splits);
        children.extend(right_children);
        let node = self.push_node(u, w, Division::Series { splits }, children);
        self.add_edge(u, w, node);
        self.worklist.push(u);
        self.worklist.push(w);
    }

    /// One round of rigid contraction; false when no closed set was found.
    fn contract_rigid(&mut self) -> bool {
        let live: Vec<u32> = (0..self.n as u32).filter(|&v| self.alive[v as usize]).collect();
        let (sink, n) = (self.n as u32 - 1, self.n);
        // Immediate dominators (toward the source) and post-dominators (toward the sink).
        let live_edges = || self.edges.iter().filter(|e| e.0 != NONE).map(|&(u, w, _)| (u, w));
        let idom = immediate_dominators(n, live_edges(), 0);
        let ipdom = immediate_dominators(n, live_edges().map(|(u, w)| (w, u)), sink);
        let dom = EulerTour::new(&idom, &live, 0);
        let pdom = EulerTour::new(&ipdom, &live, sink);

        // Candidate closed sets, one search per (idom, ipdom) pair and component: a seed that
        // an earlier search for its pair reached lies in that search's component, which was
        // either found or is not closed.
        let mut visited = vec![0u32; n];
        let mut reached_for = vec![u32::MAX; n];
        let mut pair_ids: HashMap<(u32, u32), u32> = HashMap::new();
        let mut found: Vec<(u32, u32, Vec<u32>)> = Vec::new();
        let mut queue = Vec::new();
        for (search, &w) in live[1..live.len() - 1].iter().enumerate() {
            let (p, q) = (idom[w as usize], ipdom[w as usize]);
            let next = pair_ids.len() as u32;
            let pair = *pair_ids.entry((p, q)).or_insert(next);
            if reached_for[w as usize] == pair {
                continue;
            }
            let s = search as u32 + 1;
            visited[w as usize] = s;
            reached_for[w as usize] = pair;
            queue.clear();
            queue.push(w);
            let mut head = 0;
            let mut closed = true;
            'search: while head < queue.len() {
                let x = queue[head] as usize;
                head += 1;
                let neighbours = self.ins[x]
                    .iter()
                    .map(|&e| self.edges[e as usize].0)
                    .chain(self.outs[x].iter().map(|&e| self.edges[e as usize].1));
                for y in neighbours {
                    if y == p || y == q || visited[y as usize] == s {
                        continue;
                    }
                    if !(dom.strictly_below(y, p) && pdom.strictly_below(y, q)) {
                        closed = false;
                        break 'search;
                    }
                    visited[y as usize] = s;
                    reached_for[y as usize] = pair;
                    queue.push(y);
                }
            }
            if closed {
                let mut region = queue.clone();
                region.sort_unstable();
                found.push((p, q, region));
            }
        }
        if found.is_empty() {
            return false;
        }
        // The smallest first; a larger one overlapping a contracted one is not minimal.
        found.sort_by(|a, b| a.2.len().cmp(&b.2.len()).then((a.0, a.1).cmp(&(b.0, b.1))));
        let mut consumed = vec![false; n];
        for (p, q, region) in found {
            if consumed[p as usize] || consumed[q as usize] || region.iter().any(|&v| consumed[v as usize]) {
                continue;
            }
            for &v in &region {
                consumed[v as usize] = true;
            }
            self.contract(p, q, &region);
        }
        true
    }

    /// Contracts the closed set `[s_pq]` with vertices `region` into one rigid edge `p → q`.
    fn contract(&mut self, p: u32, q: u32, region: &[u32]) {
        let mut incident: BTreeSet<u32> = BTreeSet::new();
        for &v in region {
            incident.extend(self.ins[v as usize].iter().copied());
            incident.extend(self.outs[v as usize].iter().copied());
        }
        let mut children = Vec::with_capacity(incident.len());
        for e in incident {
            children.push(self.remove_edge(e).2);
        }
        for &v in region {
            self.alive[v as usize] = false;
        }
        let node = self.push_node(p, q, Division::Rigid { inner: region.to_vec() }, children);
        self.add_edge(p, q, node);
        self.worklist.push(p);
        self.worklist.push(q);
    }

    /// Keeps only the nodes reachable from the root (merges leave superseded ones behind),
    /// renumbered children-first.
    fn into_tree(self) -> DivisionTree {
        let root_edge = self.outs[0].iter().next().copied();
        let Some(root_edge) = root_edge else {
            return DivisionTree { nodes: Vec::new(), root: 0 };
        };
        let old_root = self.edges[root_edge as usize].2;
        let mut new_id = vec![usize::MAX; self.nodes.len()];
        let mut nodes = Vec::new();
        // Iterative post-order.
        let mut stack = vec![(old_root, false)];
        while let Some((x, expanded)) = stack.pop() {
            if expanded {
                let old = &self.nodes[x];
                let children = old.children.iter().map(|&c| new_id[c]).collect();
                new_id[x] = nodes.len();
                nodes.push(ClosedSet {
                    source: old.source,
                    target: old.target,
                    division: old.division.clone(),
                    children,
                });
            } else {
                stack.push((x, true));
                for &c in self.nodes[x].children.iter().rev() {
                    stack.push((c, false));
                }
            }
        }
        let root = nodes.len() - 1;
        DivisionTree { nodes, root }
    }
}

/// Immediate dominators of the directed graph on vertices `0..n` with `edges`, from `root`:
/// `parent[v]` is `v`'s immediate dominator, `parent[root] == root`, and vertices `root` does not
/// reach get `u32::MAX`. Post-dominators are the dominators of the reversed edges from the sink.
/// petgraph's Cooper–Harvey–Kennedy algorithm
/// ([`simple_fast`](petgraph::algo::dominators::simple_fast)), near-linear on DAGs.
pub(crate) fn immediate_dominators(n: usize, edges: impl IntoIterator<Item = (u32, u32)>, root: u32) -> Vec<u32> {
    use petgraph::graph::{DiGraph, NodeIndex};
    let mut graph = DiGraph::<(), (), u32>::with_capacity(n, n);
    for _ in 0..n {
        graph.add_node(());
    }
    for (u, w) in edges {
        graph.add_edge(NodeIndex::new(u as usize), NodeIndex::new(w as usize), ());
    }
    let dominators = petgraph::algo::dominators::simple_fast(&graph, NodeIndex::new(root as usize));
    (0..n)
        .map(|v| match dominators.immediate_dominator(NodeIndex::new(v)) {
            Some(d) => d.index() as u32,
            None if v == root as usize => root,
            None => u32::MAX,
        })
        .collect()
}

/// The nearest common ancestor of `a` and `b` in a dominator tree given by `parent`, where
/// `deeper(x, y)` says x lies below y in the numbering order.
pub(crate) fn meet(parent: &[u32], mut a: u32, mut b: u32, deeper: impl Fn(u32, u32) -> bool) -> u32 {
    while a != b {
        if deeper(a, b) {
            a = parent[a as usize];
        } else {
            b = parent[b as usize];
        }
    }
    a
}

/// Entry/exit times of a tree given by parent pointers, for O(1) ancestor tests.
struct EulerTour {
    enter: Vec<u32>,
    exit: Vec<u32>,
}

impl EulerTour {
    fn new(parent: &[u32], vertices: &[u32], root: u32) -> EulerTour {
        let n = parent.len();
        let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
        for &v in vertices {
            if v != root {
                children[parent[v as usize] as usize].push(v);
            }
        }
        let (mut enter, mut exit) = (vec![0; n], vec![0; n]);
        let mut clock = 0;
        let mut stack = vec![(root, 0usize)];
        enter[root as usize] = clock;
        while let Some((v, i)) = stack.pop() {
            if let Some(&c) = children[v as usize].get(i) {
                stack.push((v, i + 1));
                clock += 1;
                enter[c as usize] = clock;
                stack.push((c, 0));
            } else {
                exit[v as usize] = clock;
            }
        }
        EulerTour { enter, exit }
    }

    /// `x` is a proper descendant of `a`.
    fn strictly_below(&self, x: u32, a: u32) -> bool {
        let (x, a) = (x as usize, a as usize);
        self.enter[a] < self.enter[x] && self.exit[x] <= self.exit[a]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dag(vertices: usize, edges: &[(u32, u32)]) -> TwoTerminalDag {
        TwoTerminalDag { vertices, edges: edges.to_vec() }
    }

    #[test]
    fn a_chain_is_one_series_node() {
        let t = DivisionTree::build(&dag(4, &[(0, 1), (1, 2), (2, 3)]));
        let root = &t.nodes[t.root];
        assert_eq!(root.division, Division::Series { splits: vec![1, 2] });
        assert_eq!(root.children.len(), 3);
        assert!(root.children.iter().all(|&c| t.nodes[c].division == Division::Edge));
    }

    #[test]
    fn a_diamond_is_parallel_inside_series() {
        // 0 -> 1 -> {2, 3} -> 4 -> 5
        let t = DivisionTree::build(&dag(6, &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5)]));
        let root = &t.nodes[t.root];
        assert_eq!(root.division, Division::Series { splits: vec![1, 4] });
        let middle = &t.nodes[root.children[1]];
        assert_eq!((middle.source, middle.target, &middle.division), (1, 4, &Division::Parallel));
        assert_eq!(middle.children.len(), 2);
    }

    #[test]
    fn a_skip_edge_makes_a_branch() {
        // 0 -> 1 -> 2 -> 3 and 0 -> 3: two branches, one of them a chain.
        let t = DivisionTree::build(&dag(4, &[(0, 1), (1, 2), (2, 3), (0, 3)]));
        let root = &t.nodes[t.root];
        assert_eq!(root.division, Division::Parallel);
        let kinds: Vec<_> = root.children.iter().map(|&c| t.nodes[c].division.clone()).collect();
        assert!(kinds.contains(&Division::Edge));
        assert!(kinds.contains(&Division::Series { splits: vec![1, 2] }));
    }

    #[test]
    fn the_paper_figure_4c_is_rigid_with_five_members() {
        // Figure 4 (c): members [s12], [s13], [s23], [s24], [s34] between 1 and 4, written
        // here 0..3: edges 0->1, 0->2, 1->2, 1->3, 2->3.
        let t = DivisionTree::build(&dag(4, &[(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]));
        let root = &t.nodes[t.root];
        assert_eq!(root.division, Division::Rigid { inner: vec![1, 2] });
        assert_eq!(root.children.len(), 5);
    }

    #[test]
    fn a_rigid_block_inside_a_chain_is_found() {
        // 0 -> 1, then the Figure 4(c) block between 1 and 4, then 4 -> 5.
        let t = DivisionTree::build(&dag(6, &[(0, 1), (1, 2), (1, 3), (2, 3), (2, 4), (3, 4), (4, 5)]));
        let root = &t.nodes[t.root];
        assert_eq!(root.division, Division::Series { splits: vec![1, 4] });
        assert_eq!(t.nodes[root.children[1]].division, Division::Rigid { inner: vec![2, 3] });
        let mut interior = t.interior(t.root);
        interior.sort();
        assert_eq!(interior, vec![1, 2, 3, 4]);
        assert_eq!(t.edges(t.root).len(), 7);
    }
}

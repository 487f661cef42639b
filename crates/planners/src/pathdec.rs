//! Path decompositions of a computation graph's undirected skeleton, and the long spine
//! PWRemat needs (Kumar et al. 2019, §5 and supplementary §A.1–A.2).
//!
//! A path decomposition comes from a vertex ordering by vertex separation: the bag at position
//! `i` holds the `i`-th vertex and every earlier vertex with a neighbour at position `i` or
//! later, so each vertex's bags run from its own position to its last neighbour's. The width
//! is the vertex separation of the ordering; [`greedy_ordering`] keeps it small by always
//! placing the frontier vertex that leaves the fewest placed vertices with unplaced
//! neighbours.
//!
//! [`add_spine`] is Algorithm 2 (pathwidth-preserving spine addition, Theorem 8): it adds a
//! directed Hamiltonian path to the DAG and grows intervals so the decomposition stays valid,
//! at most doubling each bag (plus one). A graph that already has a Hamiltonian path (a unique
//! topological order, [`hamiltonian_path`]) skips it.

use crate::treedec::DecompositionError;
use crate::Deadline;
use remat_graph::{Graph, NodeId};

/// A path decomposition: bags in path order, each sorted.
#[derive(Clone, Debug, PartialEq)]
pub struct PathDecomposition {
    /// The bags, in path order.
    pub bags: Vec<Vec<NodeId>>,
}

/// The skeleton's neighbour lists (non-argument nodes only, sorted, no duplicates).
fn neighbours(graph: &Graph) -> Vec<Vec<u32>> {
    crate::treedec::skeleton(graph).into_iter().map(|set| set.into_iter().collect()).collect()
}

/// An ordering of the non-argument nodes with small vertex separation: starting from the first
/// node of `base` (and from the first unplaced one whenever a component is finished), place
/// the neighbour of a placed vertex that minimises the number of placed vertices that still
/// have unplaced neighbours (ties: fewer unplaced neighbours, then earlier in `base`).
pub fn greedy_ordering(graph: &Graph, base: &[NodeId]) -> Vec<NodeId> {
    greedy_ordering_until(graph, base, Deadline::NONE).expect("no deadline to pass")
}

/// [`greedy_ordering`], or `None` once `deadline` passes: each placement scans the frontier,
/// which on wide steps makes the ordering quadratic (minutes at 10^5 nodes).
pub fn greedy_ordering_until(graph: &Graph, base: &[NodeId], deadline: Deadline) -> Option<Vec<NodeId>> {
    let adjacency = neighbours(graph);
    let mut rank = vec![usize::MAX; graph.len()];
    for (i, n) in base.iter().enumerate() {
        rank[n.index()] = i;
    }
    let mut unplaced = adjacency.iter().map(Vec::len).collect::<Vec<_>>();
    let mut placed = vec![false; graph.len()];
    let mut frontier: std::collections::BTreeSet<(usize, u32)> = std::collections::BTreeSet::new();
    let mut ordering = Vec::with_capacity(base.len());
    let mut next_fresh = 0;
    while ordering.len() < base.len() {
        if deadline.expired() {
            return None;
        }
        let score = |v: u32| -> (i64, usize, usize) {
            let freed =
                adjacency[v as usize].iter().filter(|&&w| placed[w as usize] && unplaced[w as usize] == 1).count()
                    as i64;
            let stays = i64::from(unplaced[v as usize] > 0);
            (stays - freed, unplaced[v as usize], rank[v as usize])
        };
        let v = match frontier.iter().map(|&(_, v)| v).min_by_key(|&v| score(v)) {
            Some(v) => v,
            None => {
                while placed[base[next_fresh].index()] {
                    next_fresh += 1;
                }
                base[next_fresh].0
            }
        };
        frontier.remove(&(rank[v as usize], v));
        placed[v as usize] = true;
        ordering.push(NodeId(v));
        for &w in &adjacency[v as usize] {
            unplaced[w as usize] -= 1;
            if !placed[w as usize] {
                frontier.insert((rank[w as usize], w));
            }
        }
    }
    Some(ordering)
}

/// The width [`PathDecomposition::from_ordering`] would give `ordering`, without building its
/// bags: O(n + m) by counting interval ends, where the bags hold n × (width + 1) entries (a
/// step's input order keeps each weight from its forward use to its gradient: tens of
/// thousands of entries per bag on a 10^5-node step, gigabytes in all).
pub fn ordering_width(graph: &Graph, ordering: &[NodeId]) -> usize {
    let adjacency = neighbours(graph);
    let mut position = vec![usize::MAX; graph.len()];
    for (i, n) in ordering.iter().enumerate() {
        position[n.index()] = i;
    }
    // live[i]: nodes whose interval [own position, last neighbour's] covers position i.
    let mut delta = vec![0i64; ordering.len() + 1];
    for (i, &v) in ordering.iter().enumerate() {
        let last = adjacency[v.index()].iter().map(|&w| position[w as usize]).fold(i, usize::max);
        delta[i] += 1;
        delta[last + 1] -= 1;
    }
    let (mut live, mut widest) = (0i64, 0i64);
    for d in &delta[..ordering.len()] {
        live += d;
        widest = widest.max(live);
    }
    (widest as usize).saturating_sub(1)
}

impl PathDecomposition {
    /// The vertex-separation decomposition of `ordering` (every non-argument node once).
    pub fn from_ordering(graph: &Graph, ordering: &[NodeId]) -> Self {
        let adjacency = neighbours(graph);
        let mut position = vec![usize::MAX; graph.len()];
        for (i, n) in ordering.iter().enumerate() {
            position[n.index()] = i;
        }
        let mut bags: Vec<Vec<NodeId>> = vec![Vec::new(); ordering.len()];
        for (i, &v) in ordering.iter().enumerate() {
            let last = adjacency[v.index()].iter().map(|&w| position[w as usize]).fold(i, usize::max);
            for bag in &mut bags[i..=last] {
                bag.push(v);
            }
        }
        for bag in &mut bags {
            bag.sort();
        }
        PathDecomposition { bags }
    }

    /// Rebuilds the bags from each node's interval of bag positions.
    fn from_intervals(intervals: &[Option<(usize, usize)>], bag_count: usize) -> Self {
        let mut bags: Vec<Vec<NodeId>> = vec![Vec::new(); bag_count];
        for (v, interval) in intervals.iter().enumerate() {
            if let Some((l, r)) = *interval {
                for bag in &mut bags[l..=r] {
                    bag.push(NodeId(v as u32));
                }
            }
        }
        PathDecomposition { bags }
    }

    /// Width: the largest bag's size minus one (0 for no bags).
    pub fn width(&self) -> usize {
        self.bags.iter().map(Vec::len).max().unwrap_or(1).saturating_sub(1)
    }

    /// Number of bags.
    pub fn len(&self) -> usize {
        self.bags.len()
    }

    /// Whether there are no bags.
    pub fn is_empty(&self) -> bool {
        self.bags.is_empty()
    }

    /// Drops every bag contained in a neighbouring bag (the path analogue of Lemma 1: the
    /// neighbour covers its edges, and intervals stay contiguous), leaving at most n bags.
    pub fn compress(&mut self) {
        let subset = |a: &[NodeId], b: &[NodeId]| a.len() <= b.len() && a.iter().all(|x| b.binary_search(x).is_ok());
        let mut kept: Vec<Vec<NodeId>> = Vec::with_capacity(self.bags.len());
        for bag in std::mem::take(&mut self.bags) {
            if kept.last().is_some_and(|last| subset(&bag, last)) {
                continue;
            }
            while kept.last().is_some_and(|last| subset(last, &bag)) {
                kept.pop();
            }
            kept.push(bag);
        }
        self.bags = kept;
    }

    /// Each node's interval `[first, last]` of bag positions (`None`: in no bag).
    pub fn intervals(&self, graph_len: usize) -> Vec<Option<(usize, usize)>> {
        let mut intervals: Vec<Option<(usize, usize)>> = vec![None; graph_len];
        for (i, bag) in self.bags.iter().enumerate() {
            for v in bag {
                let slot = &mut intervals[v.index()];
                *slot = Some(slot.map_or((i, i), |(l, _)| (l, i)));
            }
        }
        intervals
    }

    /// Checks the properties of a path decomposition of `graph`'s skeleton plus `extra`
    /// edges: every non-argument node is in a bag, both ends of every edge share a bag, and the
    /// bags holding a node are consecutive.
    pub fn validate(&self, graph: &Graph, extra: &[(NodeId, NodeId)]) -> Result<(), DecompositionError> {
        let mut count = vec![0usize; graph.len()];
        for bag in &self.bags {
            if bag.windows(2).any(|w| w[0] >= w[1]) {
                return Err(DecompositionError::UnsortedBag);
            }
            for v in bag {
                count[v.index()] += 1;
            }
        }
        let intervals = self.intervals(graph.len());
        for v in graph.ids().filter(|&v| !graph.node(v).argument) {
            let Some((l, r)) = intervals[v.index()] else { return Err(DecompositionError::NodeInNoBag(v)) };
            if count[v.index()] != r - l + 1 {
                return Err(DecompositionError::BagsNotConnected(v));
            }
        }
        let overlap = |a: NodeId, b: NodeId| match (intervals[a.index()], intervals[b.index()]) {
            (Some((la, ra)), Some((lb, rb))) => la <= rb && lb <= ra,
            _ => false,
        };
        let edges = graph
            .ids()
            .filter(|&v| !graph.node(v).argument)
            .flat_map(|v| graph.preds(v).iter().filter(|&&p| !graph.node(p).argument).map(move |&p| (p, v)))
            .chain(extra.iter().copied());
        for (p, v) in edges {
            if !overlap(p, v) {
                return Err(DecompositionError::EdgeInNoBag(p, v));
            }
        }
        Ok(())
    }
}

/// Stretches `interval` just enough to include bag position `point`. Algorithm 2 only ever
/// stretches right, which assumes the path's end `x` starts at or before `point`; it need not
/// (in `a → b → c` with intervals [0,0], [0,1], [1,1], ProcessNode(a) ends at `c`, which
/// cannot reach `r_a = 0` by growing right), so we grow left in that case.
/// Returns whether it grew left.
fn reach(interval: &mut Option<(usize, usize)>, point: usize) -> bool {
    match interval.as_mut() {
        Some((l, r)) => {
            *r = (*r).max(point);
            let left = point < *l;
            *l = (*l).min(point);
            left
        }
        None => false,
    }
}

/// A directed Hamiltonian path through the non-argument nodes, and the edges added for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Spine {
    /// Every non-argument node once; consecutive nodes are joined by an edge of the graph or
    /// of `added`, and the order is topological for the graph plus `added`.
    pub order: Vec<NodeId>,
    /// Edges the spine needed that the graph lacks.
    pub added: Vec<(NodeId, NodeId)>,
    /// How many times an interval had to grow left ([`reach`]); when none did, Theorem 8's
    /// bound (bags at most 2·size + 1) holds.
    pub stretched_left: usize,
}

/// The graph's Hamiltonian path when it has one: a DAG has one exactly when its topological
/// order is unique, i.e. Kahn's algorithm always has a single ready node.
pub fn hamiltonian_path(graph: &Graph) -> Option<Vec<NodeId>> {
    let is_op = |n: NodeId| !graph.node(n).argument;
    let mut waiting: Vec<usize> = graph.ids().map(|n| graph.preds(n).iter().filter(|&&p| is_op(p)).count()).collect();
    let mut ready: Vec<NodeId> = graph.ids().filter(|&n| is_op(n) && waiting[n.index()] == 0).collect();
    let mut order = Vec::new();
    while let Some(n) = ready.pop() {
        if !ready.is_empty() {
            return None;
        }
        order.push(n);
        for &s in graph.succs(n) {
            waiting[s.index()] -= 1;
            if waiting[s.index()] == 0 {
                ready.push(s);
            }
        }
    }
    Some(order)
}

/// Algorithm 2, PathwidthPreservingSpineAddition: a virtual root `r` (in every bag) runs
/// ProcessNode, a depth-first walk that visits a node once all its in-neighbours are explored,
/// children by increasing right endpoint; after each child's path ends at `x`, `x`'s interval
/// is stretched right to meet the next child's left endpoint and the edge `x → next` is added
/// (after the last child, up to the parent's right endpoint; see [`reach`] for the one
/// deviation). Iterative, so deep graphs do not
/// exhaust the stack. Returns the spine; `decomposition` gets the stretched intervals.
pub fn add_spine(graph: &Graph, decomposition: &mut PathDecomposition) -> Spine {
    const ROOT: u32 = u32::MAX;
    let bag_count = decomposition.len();
    let mut intervals = decomposition.intervals(graph.len());
    let is_op = |n: u32| !graph.node(NodeId(n)).argument;
    let right = |intervals: &[Option<(usize, usize)>], v: u32| {
        if v == ROOT {
            bag_count.saturating_sub(1)
        } else {
            intervals[v as usize].map_or(0, |(_, r)| r)
        }
    };
    let mut waiting: Vec<usize> = graph.ids().map(|n| graph.preds(n).iter().filter(|p| is_op(p.0)).count()).collect();
    struct Frame {
        node: u32,
        children: Vec<u32>,
        next: usize,
        end: u32,
    }
    let ready_children = |intervals: &[Option<(usize, usize)>], mut children: Vec<u32>| {
        children.sort_by_key(|&v| (right(intervals, v), v));
        children.dedup();
        children
    };
    let sources: Vec<u32> = graph.ids().filter(|&n| is_op(n.0) && waiting[n.index()] == 0).map(|n| n.0).collect();
    let mut stack = vec![Frame { node: ROOT, children: ready_children(&intervals, sources), next: 0, end: ROOT }];
    let mut order = Vec::new();
    let mut added = Vec::new();
    let mut stretched_left = 0;
    while let Some(top) = stack.last_mut() {
        if top.next < top.children.len() {
            // ProcessNode(child): explore it; its ready out-neighbours are its children.
            let child = top.children[top.next];
            order.push(NodeId(child));
            let mut children = Vec::new();
            for &s in graph.succs(NodeId(child)) {
                waiting[s.index()] -= 1;
                if waiting[s.index()] == 0 {
                    children.push(s.0);
                }
            }
            let children = ready_children(&intervals, children);
            stack.push(Frame { node: child, children, next: 0, end: child });
            continue;
        }
        let done = stack.pop().expect("a frame");
        // The path ends at `end`; stretch it to include the right endpoint of `done.node`.
        let target = right(&intervals, done.node);
        if done.end != ROOT {
            stretched_left += usize::from(reach(&mut intervals[done.end as usize], target));
        }
        let Some(parent) = stack.last_mut() else { break };
        parent.end = done.end;
        parent.next += 1;
        if let Some(&next) = parent.children.get(parent.next) {
            let (left, right_end) = intervals[next as usize].unwrap_or((0, 0));
            let end_left = intervals[done.end as usize].map_or(0, |(l, _)| l);
            stretched_left += usize::from(reach(
                &mut intervals[done.end as usize],
                if end_left > right_end { right_end } else { left },
            ));
            if !graph.preds(NodeId(next)).contains(&NodeId(done.end)) {
                added.push((NodeId(done.end), NodeId(next)));
            }
        }
    }
    *decomposition = PathDecomposition::from_intervals(&intervals, bag_count);
    Spine { order, added, stretched_left }
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_graph::{GraphBuilder, NodeSpec};

    /// A training-step ladder: forward chain f0..f(n-1), backward chain b(n-1)..b0 reading fi.
    fn ladder(n: usize) -> Graph {
        training_ladder(n, false)
    }

    /// The ladder plus a weight gradient per layer (an output reading the backward value and
    /// the layer's input): no Hamiltonian path any more.
    fn ladder_with_weight_gradients(n: usize) -> Graph {
        training_ladder(n, true)
    }

    fn training_ladder(n: usize, weight_gradients: bool) -> Graph {
        let mut b = GraphBuilder::new();
        let x = b.add(NodeSpec::argument("x", 8), &[]);
        let mut forward = vec![];
        let mut prev = x;
        for i in 0..n {
            prev = b.add(NodeSpec::op(format!("f{i}"), 8, 1.0), &[prev]);
            forward.push(prev);
        }
        let mut grad = prev;
        for i in (0..n).rev() {
            grad = b.add(NodeSpec::op(format!("b{i}"), 8, 1.0), &[grad, forward[i]]);
            if weight_gradients {
                let input = if i == 0 { x } else { forward[i - 1] };
                let dw = b.add(NodeSpec::op(format!("dw{i}"), 8, 1.0), &[grad, input]);
                b.node_mut(dw).output = true;
            }
        }
        b.node_mut(grad).output = true;
        b.finish().unwrap()
    }

    #[test]
    fn ordering_width_is_the_built_decompositions_width() {
        let mut checked = 0;
        for seed in 0..200 {
            let graph =
                remat_graph::random::RandomDag { ops: 1 + (seed as usize % 40), ..Default::default() }.generate(seed);
            let base = graph.topological_schedule();
            for ordering in [base.clone(), greedy_ordering(&graph, &base)] {
                assert_eq!(
                    ordering_width(&graph, &ordering),
                    PathDecomposition::from_ordering(&graph, &ordering).width(),
                    "seed {seed}"
                );
                checked += 1;
            }
        }
        assert_eq!(checked, 400);
    }

    #[test]
    fn greedy_ordering_finds_the_ladders_small_width() {
        let graph = ladder(30);
        let base = graph.topological_schedule();
        let topological = PathDecomposition::from_ordering(&graph, &base);
        let greedy = PathDecomposition::from_ordering(&graph, &greedy_ordering(&graph, &base));
        topological.validate(&graph, &[]).unwrap();
        greedy.validate(&graph, &[]).unwrap();
        assert!(topological.width() >= 30, "the topological order keeps every forward value: {}", topological.width());
        assert!(greedy.width() <= 3, "a ladder has pathwidth 2: {}", greedy.width());
    }

    #[test]
    fn compression_keeps_validity_and_drops_contained_bags() {
        let graph = ladder(10);
        let mut pd = PathDecomposition::from_ordering(&graph, &graph.topological_schedule());
        let width = pd.width();
        pd.compress();
        pd.validate(&graph, &[]).unwrap();
        assert_eq!(pd.width(), width);
        assert!(pd
            .bags
            .windows(2)
            .all(|w| !w[0].iter().all(|v| w[1].contains(v)) && !w[1].iter().all(|v| w[0].contains(v))));
    }

    #[test]
    fn a_training_ladder_is_its_own_spine() {
        assert!(hamiltonian_path(&ladder(12)).is_some());
    }

    #[test]
    fn the_spine_is_a_hamiltonian_path_and_keeps_theorem_8s_bound() {
        let graph = ladder_with_weight_gradients(12);
        assert!(hamiltonian_path(&graph).is_none());
        let mut pd = PathDecomposition::from_ordering(&graph, &greedy_ordering(&graph, &graph.topological_schedule()));
        let before = pd.width() + 1;
        let spine = add_spine(&graph, &mut pd);
        pd.validate(&graph, &spine.added).unwrap();
        assert!(
            spine.stretched_left > 0 || pd.width() < 2 * before + 2,
            "bag size {} > 2·{} + 1",
            pd.width() + 1,
            before
        );
        assert_eq!(spine.order.len(), graph.op_count());
        for pair in spine.order.windows(2) {
            assert!(
                graph.preds(pair[1]).contains(&pair[0]) || spine.added.contains(&(pair[0], pair[1])),
                "{pair:?} not joined"
            );
        }
    }

    #[test]
    fn a_chain_is_its_own_spine() {
        let mut b = GraphBuilder::new();
        let mut prev = b.add(NodeSpec::op("a", 4, 1.0), &[]);
        for i in 0..5 {
            prev = b.add(NodeSpec::op(format!("c{i}"), 4, 1.0), &[prev]);
        }
        b.node_mut(prev).output = true;
        let graph = b.finish().unwrap();
        assert_eq!(hamiltonian_path(&graph).unwrap(), graph.topological_schedule());
    }
}

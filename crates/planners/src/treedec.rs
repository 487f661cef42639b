//! Tree decompositions of a computation graph's undirected skeleton (Kumar et al. 2019, §2.2),
//! and what TWRemat needs from them: Lemma 1 (at most n bags), Lemma 3 (a balanced separator
//! bag) and the memoized hierarchy of separators that Theorem 5's proof asks for.
//!
//! The skeleton has one vertex per non-argument node (arguments are resident throughout, so
//! their edges constrain nothing) and an undirected edge per dependency between two of them.
//! Decompositions come from elimination orderings: eliminating `v` makes its remaining
//! neighbours a clique and yields the bag `{v} ∪ N(v)`, whose parent is the bag of the
//! neighbour eliminated next. `MinFill` picks the vertex whose elimination adds the fewest
//! edges (the paper's choice, §4 (iii)); `MinDegree` the one with the fewest neighbours.

use crate::Deadline;
use remat_graph::{Graph, NodeId};
use std::collections::BTreeSet;

/// How the elimination ordering is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EliminationHeuristic {
    /// Fewest fill-in edges first (ties: fewest neighbours, then lowest id).
    MinFill,
    /// Fewest neighbours first (ties: lowest id).
    MinDegree,
}

impl EliminationHeuristic {
    /// Both heuristics, in the order they are tried.
    pub const ALL: [EliminationHeuristic; 2] = [EliminationHeuristic::MinFill, EliminationHeuristic::MinDegree];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            EliminationHeuristic::MinFill => "min-fill",
            EliminationHeuristic::MinDegree => "min-degree",
        }
    }
}

/// Why bags are not a tree (or path) decomposition of a graph: which of the properties fails.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecompositionError {
    /// The tree has the wrong number of edges for its bags.
    #[error("{bags} bags but {edges} tree edges")]
    NotATree {
        /// Bags.
        bags: usize,
        /// Tree edges.
        edges: usize,
    },
    /// The bags do not form one tree.
    #[error("the bags do not form a connected tree")]
    Disconnected,
    /// A bag is not sorted, or repeats a node.
    #[error("a bag is not sorted or repeats a node")]
    UnsortedBag,
    /// (i) A node is in no bag.
    #[error("(i) node {0} is in no bag")]
    NodeInNoBag(NodeId),
    /// (ii) An edge's ends share no bag.
    #[error("(ii) edge {0} -> {1} is in no bag")]
    EdgeInNoBag(NodeId, NodeId),
    /// (iii) The bags holding a node are not connected in the tree (not consecutive in a path).
    #[error("(iii) the bags holding node {0} are not connected")]
    BagsNotConnected(NodeId),
}

/// A tree decomposition: bags of graph nodes and the tree edges between bags.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeDecomposition {
    /// Each bag's nodes, sorted.
    pub bags: Vec<Vec<NodeId>>,
    /// Tree adjacency between bag indices.
    pub adjacency: Vec<Vec<usize>>,
}

/// The undirected skeleton: neighbours of every non-argument node.
pub(crate) fn skeleton(graph: &Graph) -> Vec<BTreeSet<u32>> {
    let mut adjacency = vec![BTreeSet::new(); graph.len()];
    for n in graph.ids().filter(|&n| !graph.node(n).argument) {
        for &p in graph.preds(n) {
            if !graph.node(p).argument && p != n {
                adjacency[n.index()].insert(p.0);
                adjacency[p.index()].insert(n.0);
            }
        }
    }
    adjacency
}

/// Edges a vertex's elimination would add: non-adjacent pairs among its neighbours, i.e.
/// C(d, 2) minus the edges among them. Those are counted with `rows` (bit rows of the
/// adjacency, on graphs up to [`DENSE_ROWS_LIMIT`] nodes: a popcount per neighbour), else by
/// marking the neighbours in `mark` (scratch, all `u32::MAX` outside this call) and walking
/// each neighbour's list: O(Σ deg) scans instead of O(d²) set lookups.
fn fill_in(adjacency: &[BTreeSet<u32>], rows: Option<&BitRows>, v: u32, mark: &mut [u32]) -> u64 {
    let neighbours = &adjacency[v as usize];
    let ends = match rows {
        Some(rows) => neighbours.iter().map(|&a| rows.common(v, a)).sum::<u64>(),
        None => {
            for &a in neighbours {
                mark[a as usize] = v;
            }
            let ends = neighbours
                .iter()
                .map(|&a| adjacency[a as usize].iter().filter(|&&b| mark[b as usize] == v).count() as u64)
                .sum();
            for &a in neighbours {
                mark[a as usize] = u32::MAX;
            }
            ends
        }
    };
    let d = neighbours.len() as u64;
    d * d.saturating_sub(1) / 2 - ends / 2
}

/// Graphs up to this many nodes keep bit rows of the adjacency during min-fill elimination
/// (n²/8 bytes: 32 MiB at the limit).
const DENSE_ROWS_LIMIT: usize = 1 << 14;

/// The adjacency as one bit row per vertex.
struct BitRows {
    words: usize,
    bits: Vec<u64>,
}

impl BitRows {
    fn new(adjacency: &[BTreeSet<u32>]) -> Self {
        let words = adjacency.len().div_ceil(64);
        let mut rows = BitRows { words, bits: vec![0; words * adjacency.len()] };
        for (v, neighbours) in adjacency.iter().enumerate() {
            for &a in neighbours {
                rows.set(v as u32, a, true);
            }
        }
        rows
    }
    fn row(&self, v: u32) -> &[u64] {
        &self.bits[v as usize * self.words..(v as usize + 1) * self.words]
    }
    fn set(&mut self, v: u32, a: u32, on: bool) {
        let word = &mut self.bits[v as usize * self.words + a as usize / 64];
        if on {
            *word |= 1 << (a % 64);
        } else {
            *word &= !(1 << (a % 64));
        }
    }
    /// |N(v) ∩ N(a)|.
    fn common(&self, v: u32, a: u32) -> u64 {
        self.row(v).iter().zip(self.row(a)).map(|(x, y)| (x & y).count_ones() as u64).sum()
    }
}

impl TreeDecomposition {
    /// Decomposes `graph`'s skeleton by eliminating its vertices in the order `heuristic`
    /// chooses. One bag per vertex (so at most n bags already); the forests of disconnected
    /// parts are chained into one tree (they share no vertex, so this keeps the properties).
    pub fn from_elimination(graph: &Graph, heuristic: EliminationHeuristic) -> Self {
        Self::from_elimination_until(graph, heuristic, Deadline::NONE).expect("no deadline to pass")
    }

    /// [`from_elimination`](Self::from_elimination), or `None` once `deadline` passes (min-fill
    /// on 10^5 vertices takes tens of seconds).
    pub fn from_elimination_until(graph: &Graph, heuristic: EliminationHeuristic, deadline: Deadline) -> Option<Self> {
        let mut adjacency = skeleton(graph);
        let vertices: Vec<u32> = graph.ids().filter(|&n| !graph.node(n).argument).map(|n| n.0).collect();
        let min_fill = heuristic == EliminationHeuristic::MinFill;
        let mut rows = (min_fill && graph.len() <= DENSE_ROWS_LIMIT).then(|| BitRows::new(&adjacency));
        let mut mark = vec![u32::MAX; graph.len()];
        let mut score = |adjacency: &[BTreeSet<u32>], rows: Option<&BitRows>, v: u32| -> (u64, u64) {
            let degree = adjacency[v as usize].len() as u64;
            match heuristic {
                EliminationHeuristic::MinFill => (fill_in(adjacency, rows, v, &mut mark), degree),
                EliminationHeuristic::MinDegree => (degree, 0),
            }
        };
        let mut current: Vec<(u64, u64)> = vec![(0, 0); graph.len()];
        let mut queue: BTreeSet<((u64, u64), u32)> = BTreeSet::new();
        for &v in &vertices {
            current[v as usize] = score(&adjacency, rows.as_ref(), v);
            queue.insert((current[v as usize], v));
        }
        let mut eliminated = vec![false; graph.len()];
        let mut position = vec![usize::MAX; graph.len()];
        let mut bag_neighbours: Vec<(u32, Vec<u32>)> = Vec::with_capacity(vertices.len());
        while let Some((_, v)) = queue.pop_first() {
            // Each elimination updates the scores of every touched vertex: the clock is cheap
            // beside it.
            if deadline.expired() {
                return None;
            }
            eliminated[v as usize] = true;
            position[v as usize] = bag_neighbours.len();
            let neighbours: Vec<u32> = adjacency[v as usize].iter().copied().collect();
            // Vertices whose score may change: v's neighbours (their neighbourhoods change)
            // and, under min-fill, the common neighbours of each new fill edge's ends (one
            // missing pair fewer).
            let mut touched: BTreeSet<u32> = neighbours.iter().copied().collect();
            for (i, &a) in neighbours.iter().enumerate() {
                adjacency[a as usize].remove(&v);
                if let Some(rows) = rows.as_mut() {
                    rows.set(a, v, false);
                }
                for &b in &neighbours[i + 1..] {
                    if adjacency[a as usize].insert(b) {
                        adjacency[b as usize].insert(a);
                        match rows.as_mut() {
                            Some(rows) => {
                                rows.set(a, b, true);
                                rows.set(b, a, true);
                                for (k, (x, y)) in rows.row(a).iter().zip(rows.row(b)).enumerate() {
                                    let mut common = x & y;
                                    while common != 0 {
                                        touched.insert((k * 64) as u32 + common.trailing_zeros());
                                        common &= common - 1;
                                    }
                                }
                            }
                            None if min_fill => {
                                touched.extend(adjacency[a as usize].iter().copied());
                                touched.extend(adjacency[b as usize].iter().copied());
                            }
                            None => {}
                        }
                    }
                }
            }
            adjacency[v as usize].clear();
            for w in touched {
                if eliminated[w as usize] {
                    continue;
                }
                let s = score(&adjacency, rows.as_ref(), w);
                if s != current[w as usize] {
                    queue.remove(&(current[w as usize], w));
                    current[w as usize] = s;
                    queue.insert((s, w));
                }
            }
            bag_neighbours.push((v, neighbours));
        }
        let mut bags = Vec::with_capacity(bag_neighbours.len());
        let mut adjacency_out = vec![Vec::new(); bag_neighbours.len()];
        let mut roots = Vec::new();
        for (i, (v, neighbours)) in bag_neighbours.iter().enumerate() {
            let mut bag: Vec<NodeId> = std::iter::once(*v).chain(neighbours.iter().copied()).map(NodeId).collect();
            bag.sort();
            bags.push(bag);
            match neighbours.iter().map(|&u| position[u as usize]).min() {
                Some(parent) => {
                    adjacency_out[i].push(parent);
                    adjacency_out[parent].push(i);
                }
                None => roots.push(i),
            }
        }
        for pair in roots.windows(2) {
            adjacency_out[pair[0]].push(pair[1]);
            adjacency_out[pair[1]].push(pair[0]);
        }
        Some(TreeDecomposition { bags, adjacency: adjacency_out })
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

    /// Lemma 1: merges every adjacent pair of bags in which one contains the other, in one
    /// pass over the tree edges (a pair that cannot merge never can later), tracking merged
    /// bags with union-find. Afterwards every non-root bag owns a vertex its parent lacks, so
    /// there are at most n bags.
    pub fn compress(&mut self) {
        let n = self.bags.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(parent: &mut [usize], mut x: usize) -> usize {
            while parent[x] != x {
                parent[x] = parent[parent[x]];
                x = parent[x];
            }
            x
        }
        let subset = |a: &[NodeId], b: &[NodeId]| a.len() <= b.len() && a.iter().all(|x| b.binary_search(x).is_ok());
        let edges: Vec<(usize, usize)> =
            (0..n).flat_map(|a| self.adjacency[a].iter().filter(move |&&b| a < b).map(move |&b| (a, b))).collect();
        for &(a, b) in &edges {
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            if ra == rb {
                continue;
            }
            if subset(&self.bags[ra], &self.bags[rb]) {
                parent[ra] = rb;
            } else if subset(&self.bags[rb], &self.bags[ra]) {
                parent[rb] = ra;
            }
        }
        let mut index = vec![usize::MAX; n];
        let mut bags = Vec::new();
        for (i, slot) in index.iter_mut().enumerate() {
            if find(&mut parent, i) == i {
                *slot = bags.len();
                bags.push(std::mem::take(&mut self.bags[i]));
            }
        }
        let mut adjacency: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); bags.len()];
        for &(a, b) in &edges {
            let (ra, rb) = (index[find(&mut parent, a)], index[find(&mut parent, b)]);
            if ra != rb {
                adjacency[ra].insert(rb);
                adjacency[rb].insert(ra);
            }
        }
        self.bags = bags;
        self.adjacency = adjacency.into_iter().map(|s| s.into_iter().collect()).collect();
    }

    /// Checks the three properties of a tree decomposition of `graph`'s skeleton, and that the
    /// bags form a tree: (i) every vertex is in a bag, (ii) both ends of every edge share a
    /// bag, (iii) the bags holding a vertex are connected.
    pub fn validate(&self, graph: &Graph) -> Result<(), DecompositionError> {
        let n = self.bags.len();
        let edges: usize = self.adjacency.iter().map(Vec::len).sum::<usize>() / 2;
        if n > 0 && edges != n - 1 {
            return Err(DecompositionError::NotATree { bags: n, edges });
        }
        if n > 0 {
            let mut seen = vec![false; n];
            let mut stack = vec![0];
            seen[0] = true;
            while let Some(b) = stack.pop() {
                for &c in &self.adjacency[b] {
                    if !std::mem::replace(&mut seen[c], true) {
                        stack.push(c);
                    }
                }
            }
            if seen.iter().any(|s| !s) {
                return Err(DecompositionError::Disconnected);
            }
        }
        let mut bags_of: Vec<Vec<usize>> = vec![Vec::new(); graph.len()];
        for (b, bag) in self.bags.iter().enumerate() {
            for v in bag {
                bags_of[v.index()].push(b);
            }
        }
        for v in graph.ids().filter(|&v| !graph.node(v).argument) {
            let holding = &bags_of[v.index()];
            if holding.is_empty() {
                return Err(DecompositionError::NodeInNoBag(v));
            }
            let inside = holding
                .iter()
                .map(|&b| self.adjacency[b].iter().filter(|c| holding.contains(c)).count())
                .sum::<usize>()
                / 2;
            if inside != holding.len() - 1 {
                return Err(DecompositionError::BagsNotConnected(v));
            }
            for &p in graph.preds(v) {
                if !graph.node(p).argument && !holding.iter().any(|&b| self.bags[b].binary_search(&p).is_ok()) {
                    return Err(DecompositionError::EdgeInNoBag(p, v));
                }
            }
        }
        Ok(())
    }
}

/// One level of the memoized separator hierarchy: a connected part of the decomposition
/// (after removing the separators above it), the balanced separator bag Lemma 3 picks in it,
/// and the parts that remain once that bag is removed.
#[derive(Clone, Debug)]
pub struct SeparatorLevel {
    /// Bags in this part.
    pub bags: usize,
    /// The separator's nodes that no separator above holds, in the graph's order.
    pub separator: Vec<NodeId>,
    /// The parts left after removing the separator bag.
    pub children: Vec<usize>,
    /// The level this part was split from.
    pub parent: Option<usize>,
}

/// Lemma 3 applied recursively, once: the hierarchy TWRemat walks. `home[v]` is the level
/// whose separator holds `v` first; `v` belongs to a level's nodes exactly when that level is
/// `home[v]` or one of its ancestors.
#[derive(Clone, Debug)]
pub struct SeparatorHierarchy {
    /// Levels; 0 is the whole decomposition.
    pub levels: Vec<SeparatorLevel>,
    /// The level whose separator first holds each node (`usize::MAX` for arguments).
    pub home: Vec<usize>,
}

impl SeparatorHierarchy {
    /// Builds the hierarchy; `rank[v]` orders each separator's nodes (the graph's order).
    pub fn new(td: &TreeDecomposition, graph_len: usize, rank: &[usize]) -> Self {
        let mut levels: Vec<SeparatorLevel> = Vec::new();
        let mut home = vec![usize::MAX; graph_len];
        if td.is_empty() {
            return SeparatorHierarchy { levels, home };
        }
        // Which part each bag is in right now (bags removed as separators get usize::MAX).
        let mut part = vec![0usize; td.len()];
        let mut stack: Vec<(Vec<usize>, Option<usize>)> = vec![((0..td.len()).collect(), None)];
        let mut size = vec![0usize; td.len()];
        while let Some((members, parent)) = stack.pop() {
            let id = levels.len();
            for &b in &members {
                part[b] = id;
            }
            let centre = balanced_separator(td, &members, &part, id, &mut size);
            let mut separator: Vec<NodeId> =
                td.bags[centre].iter().copied().filter(|v| home[v.index()] == usize::MAX).collect();
            for v in &separator {
                home[v.index()] = id;
            }
            separator.sort_by_key(|v| rank[v.index()]);
            part[centre] = usize::MAX;
            levels.push(SeparatorLevel { bags: members.len(), separator, children: Vec::new(), parent });
            if let Some(p) = parent {
                levels[p].children.push(id);
            }
            // Components of the part without the centre, pushed so they pop in a stable order.
            let mut components = Vec::new();
            for &start in &td.adjacency[centre] {
                if part[start] != id {
                    continue;
                }
                let mut component = vec![start];
                part[start] = usize::MAX - 1;
                let mut i = 0;
                while i < component.len() {
                    for &c in &td.adjacency[component[i]] {
                        if part[c] == id {
                            part[c] = usize::MAX - 1;
                            component.push(c);
                        }
                    }
                    i += 1;
                }
                components.push(component);
            }
            for component in components.into_iter().rev() {
                stack.push((component, Some(id)));
            }
        }
        SeparatorHierarchy { levels, home }
    }

    /// The child of `level` whose part holds `v`, or `None` if `v` is in `level`'s separator
    /// or outside its part.
    pub fn child_holding(&self, level: usize, v: NodeId) -> Option<usize> {
        let mut at = *self.home.get(v.index())?;
        if at == usize::MAX {
            return None;
        }
        while let Some(parent) = self.levels[at].parent {
            if parent == level {
                return Some(at);
            }
            at = parent;
        }
        None
    }

    /// Whether `v` is one of `level`'s nodes (its separator or a part below it).
    pub fn holds(&self, level: usize, v: NodeId) -> bool {
        let mut at = self.home[v.index()];
        if at == usize::MAX {
            return false;
        }
        loop {
            if at == level {
                return true;
            }
            match self.levels[at].parent {
                Some(p) => at = p,
                None => return false,
            }
        }
    }
}

/// Lemma 3 (Jordan's theorem on the bag tree): a bag of `members` (the bags with
/// `part[b] == id`) whose removal leaves components of at most half the bags.
fn balanced_separator(
    td: &TreeDecomposition,
    members: &[usize],
    part: &[usize],
    id: usize,
    size: &mut [usize],
) -> usize {
    let total = members.len();
    let root = members[0];
    // Iterative DFS for a parent order, then subtree sizes bottom-up.
    let mut order = vec![(root, usize::MAX)];
    let mut i = 0;
    while i < order.len() {
        let (b, from) = order[i];
        for &c in &td.adjacency[b] {
            if c != from && part[c] == id {
                order.push((c, b));
            }
        }
        i += 1;
    }
    for &(b, _) in &order {
        size[b] = 1;
    }
    for &(b, from) in order.iter().rev() {
        if from != usize::MAX {
            size[from] += size[b];
        }
    }
    for &(b, from) in &order {
        let largest_child =
            td.adjacency[b].iter().filter(|&&c| c != from && part[c] == id).map(|&c| size[c]).max().unwrap_or(0);
        if largest_child.max(total - size[b]) * 2 <= total {
            return b;
        }
    }
    root
}

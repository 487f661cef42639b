//! Maximum flow by Dinic's algorithm (blocking flows on BFS level graphs, with a current-arc
//! pointer per vertex), on `f64` capacities; infinite capacities are allowed where no path of
//! them joins the source to the sink.
//!
//! The flow it returns is feasible up to rounding, so its value never exceeds the minimum cut:
//! the bounds built on it (the peak's [`crate::peak_lower_bound`], the planners' recomputation
//! bound) use the value, not the cut, as the proven part. With integer capacities below 2^53
//! (bytes) there is no rounding at all.

/// A flow network being built and then solved; clone it to solve variants of one network.
#[derive(Clone, Debug)]
pub struct FlowNetwork {
    /// Per edge: head, residual capacity; edge `e ^ 1` is `e`'s reverse.
    head: Vec<u32>,
    residual: Vec<f64>,
    /// Per vertex: its edges, as a linked list through `next`.
    first: Vec<u32>,
    next: Vec<u32>,
}

const NONE: u32 = u32::MAX;

impl FlowNetwork {
    /// A network of `vertices` vertices and no edges.
    pub fn new(vertices: usize) -> Self {
        FlowNetwork { head: Vec::new(), residual: Vec::new(), first: vec![NONE; vertices], next: Vec::new() }
    }

    /// Adds an edge `from → to` of capacity `capacity` (`f64::INFINITY` allowed) and returns
    /// its index, for [`close_edge`](Self::close_edge).
    pub fn add_edge(&mut self, from: usize, to: usize, capacity: f64) -> usize {
        debug_assert!(capacity >= 0.0);
        let index = self.head.len();
        for (tail, head, cap) in [(from, to, capacity), (to, from, 0.0)] {
            let e = self.head.len() as u32;
            self.head.push(head as u32);
            self.residual.push(cap);
            self.next.push(self.first[tail]);
            self.first[tail] = e;
        }
        index
    }

    /// Sets the residual capacity of edge `edge` (an index from [`add_edge`](Self::add_edge))
    /// to zero: before any flow, as if it had been added with capacity 0.
    pub fn close_edge(&mut self, edge: usize) {
        self.residual[edge] = 0.0;
    }

    /// The number of edges, reverse edges included: the work of one breadth-first search.
    pub fn edge_slots(&self) -> usize {
        self.head.len()
    }

    /// Pushes a maximum flow from `source` to `sink` and returns its value. Residual capacities
    /// below `epsilon` count as saturated.
    pub fn max_flow(&mut self, source: usize, sink: usize, epsilon: f64) -> f64 {
        let mut work = u64::MAX;
        self.max_flow_within(source, sink, epsilon, &mut work).unwrap_or_else(|partial| partial)
    }

    /// [`max_flow`](Self::max_flow) within `work` visits (each edge a search or an augmenting
    /// path looks at, each step of a path pushed along, each vertex a phase resets), which it takes from
    /// `work`: `Ok(value)` when the flow is maximum, else `Err` with the value of the flow
    /// pushed so far (a feasible flow: at most the maximum). Counting visits rather than time
    /// keeps a bound built on it the same on every run and machine.
    pub fn max_flow_within(&mut self, source: usize, sink: usize, epsilon: f64, work: &mut u64) -> Result<f64, f64> {
        let n = self.first.len();
        let mut level = vec![u32::MAX; n];
        let mut current = vec![NONE; n];
        let mut queue = Vec::with_capacity(n);
        let mut total = 0.0;
        loop {
            level.fill(u32::MAX);
            level[source] = 0;
            queue.clear();
            queue.push(source as u32);
            let mut i = 0;
            // Each phase also resets the levels and the current arcs: a pass over the vertices.
            let mut visits = 2 * n as u64;
            while i < queue.len() {
                let v = queue[i] as usize;
                i += 1;
                let mut e = self.first[v];
                while e != NONE {
                    visits += 1;
                    let w = self.head[e as usize] as usize;
                    if self.residual[e as usize] > epsilon && level[w] == u32::MAX {
                        level[w] = level[v] + 1;
                        queue.push(w as u32);
                    }
                    e = self.next[e as usize];
                }
            }
            *work = work.checked_sub(visits).ok_or(total)?;
            if level[sink] == u32::MAX {
                return Ok(total);
            }
            current.copy_from_slice(&self.first);
            loop {
                let pushed =
                    self.augment(source, sink, f64::INFINITY, &level, &mut current, epsilon, work).ok_or(total)?;
                if pushed <= epsilon {
                    break;
                }
                total += pushed;
            }
        }
    }

    /// One augmenting path in the level graph, found iteratively (paths can be as long as the
    /// graph is deep), with at most `limit` pushed along it; `None` once `work` runs out.
    #[allow(clippy::too_many_arguments)]
    fn augment(
        &mut self,
        source: usize,
        sink: usize,
        limit: f64,
        level: &[u32],
        current: &mut [u32],
        epsilon: f64,
        work: &mut u64,
    ) -> Option<f64> {
        let mut path: Vec<u32> = Vec::new();
        let mut v = source;
        let mut visits = 0u64;
        loop {
            if v == sink {
                visits += path.len() as u64;
                *work = work.checked_sub(visits)?;
                let mut pushed = limit;
                for &e in &path {
                    pushed = pushed.min(self.residual[e as usize]);
                }
                for &e in &path {
                    self.residual[e as usize] -= pushed;
                    self.residual[(e ^ 1) as usize] += pushed;
                }
                return Some(pushed);
            }
            let mut advanced = false;
            while current[v] != NONE {
                visits += 1;
                let e = current[v] as usize;
                let w = self.head[e] as usize;
                if self.residual[e] > epsilon && level[w] == level[v] + 1 {
                    path.push(e as u32);
                    v = w;
                    advanced = true;
                    break;
                }
                current[v] = self.next[e];
            }
            if !advanced {
                // Dead end: retreat, and skip the edge that led here from now on.
                let Some(e) = path.pop() else {
                    *work = work.checked_sub(visits)?;
                    return Some(0.0);
                };
                let tail = self.head[(e ^ 1) as usize] as usize;
                current[tail] = self.next[e as usize];
                v = tail;
            }
        }
    }

    /// After [`max_flow`](Self::max_flow): the vertices still reachable from `source` in the
    /// residual network (the source side of a minimum cut).
    pub fn source_side(&self, source: usize, epsilon: f64) -> Vec<bool> {
        let mut seen = vec![false; self.first.len()];
        seen[source] = true;
        let mut stack = vec![source];
        while let Some(v) = stack.pop() {
            let mut e = self.first[v];
            while e != NONE {
                let w = self.head[e as usize] as usize;
                if self.residual[e as usize] > epsilon && !seen[w] {
                    seen[w] = true;
                    stack.push(w);
                }
                e = self.next[e as usize];
            }
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clrs_network() {
        let mut g = FlowNetwork::new(6);
        for (a, b, c) in [
            (0, 1, 16),
            (0, 2, 13),
            (1, 2, 10),
            (1, 3, 12),
            (2, 1, 4),
            (2, 4, 14),
            (3, 2, 9),
            (3, 5, 20),
            (4, 3, 7),
            (4, 5, 4),
        ] {
            g.add_edge(a, b, c as f64);
        }
        assert_eq!(g.max_flow(0, 5, 1e-12), 23.0);
        let side = g.source_side(0, 1e-12);
        assert!(side[0] && !side[5]);
    }

    #[test]
    fn infinite_edges_inside_are_fine() {
        let mut g = FlowNetwork::new(4);
        g.add_edge(0, 1, 5.0);
        g.add_edge(1, 2, f64::INFINITY);
        g.add_edge(2, 3, 3.0);
        g.add_edge(1, 3, 1.0);
        assert_eq!(g.max_flow(0, 3, 1e-12), 4.0);
    }

    /// Max flow = min cut on random small networks, the cut found by brute force.
    #[test]
    fn equals_the_brute_force_minimum_cut() {
        let mut rng = remat_rng::SplitMix64::new(7);
        let mut checked = 0;
        for _ in 0..200 {
            let n = 2 + rng.below(6) as usize;
            let mut edges = Vec::new();
            for a in 0..n {
                for b in 0..n {
                    if a != b && rng.below(3) == 0 {
                        edges.push((a, b, rng.below(10) as f64));
                    }
                }
            }
            let mut g = FlowNetwork::new(n);
            for &(a, b, c) in &edges {
                g.add_edge(a, b, c);
            }
            let flow = g.max_flow(0, n - 1, 1e-12);
            let mut best = f64::INFINITY;
            for mask in 0..(1u32 << n) {
                if mask & 1 == 0 || mask & (1 << (n - 1)) != 0 {
                    continue;
                }
                let cut: f64 =
                    edges.iter().filter(|&&(a, b, _)| mask & (1 << a) != 0 && mask & (1 << b) == 0).map(|e| e.2).sum();
                best = best.min(cut);
            }
            assert_eq!(flow, best);
            checked += 1;
        }
        assert_eq!(checked, 200);
    }

    /// Cut short, a flow is feasible (at most the maximum) and uses no more work than given;
    /// given enough, it is the maximum and says how much it took.
    #[test]
    fn a_flow_within_a_work_limit_stops_below_the_maximum() {
        let mut rng = remat_rng::SplitMix64::new(11);
        let (mut cut_short, mut finished) = (0, 0);
        for _ in 0..100 {
            let n = 4 + rng.below(12) as usize;
            let mut g = FlowNetwork::new(n);
            for a in 0..n {
                for b in 0..n {
                    if a != b && rng.below(3) == 0 {
                        g.add_edge(a, b, rng.below(10) as f64);
                    }
                }
            }
            let maximum = g.clone().max_flow(0, n - 1, 1e-12);
            let mut plenty = u64::MAX;
            assert_eq!(g.clone().max_flow_within(0, n - 1, 1e-12, &mut plenty), Ok(maximum));
            let needed = u64::MAX - plenty;
            assert!(needed > 0);
            let mut short = rng.below(needed);
            match g.clone().max_flow_within(0, n - 1, 1e-12, &mut short) {
                Err(partial) => {
                    assert!(partial <= maximum, "{partial} > {maximum}");
                    cut_short += 1;
                }
                Ok(flow) => panic!("{flow} within {short} of the {needed} visits it needs"),
            }
            let mut exact = needed;
            assert_eq!(g.clone().max_flow_within(0, n - 1, 1e-12, &mut exact), Ok(maximum));
            assert_eq!(exact, 0);
            finished += 1;
        }
        assert_eq!((cut_short, finished), (100, 100));
    }
}

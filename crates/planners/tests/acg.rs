//! Re-forwarding (Feng & Huang) checked against brute force: the LCG solver against every
//! subset of a chain, the division tree against Definition 1 read literally (Theorem 1:
//! unique and complete), and the ACG solver against every stored set of small DAGs.

use proptest::prelude::*;
use remat_graph::random::RandomDag;
use remat_graph::random::SplitMix64;
use remat_graph::simulate;
use remat_planners::acg::{lcg_optimum, ReforwardProblem, Solver};
use remat_planners::division::{Division, DivisionTree, TwoTerminalDag};
use remat_planners::step::ForwardPart;
use std::collections::BTreeSet;

/// Eqn. 1 for a chain with the endpoints and `inner` (a bit mask over positions 1..n-1) stored.
fn chain_objective(costs: &[u64], inner: u32) -> u64 {
    let n = costs.len();
    let (mut total, mut gap, mut largest) = (costs[0] + costs[n - 1], 0, 0);
    for (i, &c) in costs.iter().enumerate().take(n - 1).skip(1) {
        if inner >> (i - 1) & 1 == 1 {
            total += c;
            largest = largest.max(gap);
            gap = 0;
        } else {
            gap += c;
        }
    }
    total + largest.max(gap)
}

/// A random two-terminal DAG grown by series splits, parallel branches and a few extra edges
/// between ordered vertices (which make type-3 closed sets), numbered topologically.
fn series_parallel_like(seed: u64, grow: usize, extra_percent: u64) -> TwoTerminalDag {
    let mut rng = SplitMix64::new(seed);
    // Positions order the vertices; a new vertex sits strictly between its edge's ends.
    let mut position: Vec<f64> = vec![0.0, 1.0];
    let mut edges: Vec<(usize, usize)> = vec![(0, 1)];
    for _ in 0..grow {
        let e = rng.below(edges.len() as u64) as usize;
        let (u, w) = edges[e];
        let x = position.len();
        let t = 0.2 + 0.6 * (rng.below(1000) as f64 / 1000.0);
        position.push(position[u] + t * (position[w] - position[u]));
        if rng.chance(50) {
            edges[e] = (u, x); // series: u -> x -> w replaces u -> w
        } else {
            edges.push((u, x)); // parallel: a new branch u -> x -> w beside u -> w
        }
        edges.push((x, w));
        if rng.chance(extra_percent) {
            let a = rng.below(position.len() as u64) as usize;
            let b = rng.below(position.len() as u64) as usize;
            let (a, b) = if position[a] < position[b] { (a, b) } else { (b, a) };
            // Equal positions (the same split of the same edge twice) have no order to follow.
            if position[a] < position[b] && !edges.contains(&(a, b)) {
                edges.push((a, b));
            }
        }
    }
    let mut by_position: Vec<usize> = (0..position.len()).collect();
    by_position.sort_by(|&a, &b| position[a].partial_cmp(&position[b]).unwrap());
    let mut number = vec![0u32; position.len()];
    for (i, &v) in by_position.iter().enumerate() {
        number[v] = i as u32;
    }
    let mut edges: Vec<(u32, u32)> = edges.iter().map(|&(u, w)| (number[u], number[w])).collect();
    edges.sort_unstable();
    edges.dedup();
    TwoTerminalDag { vertices: position.len(), edges }
}

/// Every closed set of Definition 1, as its edge set: for each pair (i, j), any non-empty
/// union of the closed components of the vertices between them, with or without the edge
/// i -> j, and the edge alone.
fn closed_sets(dag: &TwoTerminalDag) -> Vec<BTreeSet<(u32, u32)>> {
    let n = dag.vertices;
    let mut reach = vec![vec![false; n]; n];
    for v in (0..n).rev() {
        reach[v][v] = true;
        for &(u, w) in dag.edges.iter().filter(|e| e.0 as usize == v) {
            let below = reach[w as usize].clone();
            for (r, b) in reach[u as usize].iter_mut().zip(below) {
                *r |= b;
            }
        }
    }
    let mut out = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            if !reach[i][j] {
                continue;
            }
            let between: Vec<usize> = (i + 1..j).filter(|&v| reach[i][v] && reach[v][j]).collect();
            let inside = |v: usize| between.contains(&v);
            // Components of the vertices between, through edges among them.
            let mut component = vec![usize::MAX; n];
            let mut components: Vec<Vec<usize>> = Vec::new();
            for &v in &between {
                if component[v] != usize::MAX {
                    continue;
                }
                let id = components.len();
                let mut stack = vec![v];
                component[v] = id;
                let mut members = Vec::new();
                while let Some(x) = stack.pop() {
                    members.push(x);
                    for &(a, b) in &dag.edges {
                        let (a, b) = (a as usize, b as usize);
                        for (p, q) in [(a, b), (b, a)] {
                            if p == x && inside(q) && component[q] == usize::MAX {
                                component[q] = id;
                                stack.push(q);
                            }
                        }
                    }
                }
                components.push(members);
            }
            let closed: Vec<BTreeSet<(u32, u32)>> = components
                .iter()
                .filter_map(|members| {
                    let mut edges = BTreeSet::new();
                    for &(a, b) in &dag.edges {
                        let (ia, ib) = (members.contains(&(a as usize)), members.contains(&(b as usize)));
                        if ia || ib {
                            let other = if ia { b as usize } else { a as usize };
                            if !(members.contains(&other) || other == i || other == j) {
                                return None;
                            }
                            edges.insert((a, b));
                        }
                    }
                    Some(edges)
                })
                .collect();
            let direct = dag.edges.contains(&(i as u32, j as u32));
            for mask in 1u32..(1 << closed.len()) {
                let mut set = BTreeSet::new();
                for (c, edges) in closed.iter().enumerate() {
                    if mask >> c & 1 == 1 {
                        set.extend(edges.iter().copied());
                    }
                }
                if direct {
                    let mut with = set.clone();
                    with.insert((i as u32, j as u32));
                    out.push(with);
                }
                out.push(set);
            }
            if direct {
                out.push(BTreeSet::from([(i as u32, j as u32)]));
            }
        }
    }
    out
}

/// The tree as a canonical string: branches and rigid members unordered, segments in order.
fn canonical(tree: &DivisionTree, id: usize, label: &dyn Fn(u32) -> u32) -> String {
    let node = &tree.nodes[id];
    let mut children: Vec<String> = node.children.iter().map(|&c| canonical(tree, c, label)).collect();
    let kind = match &node.division {
        Division::Edge => "E".to_string(),
        Division::Series { splits } => format!("S{:?}", splits.iter().map(|&v| label(v)).collect::<Vec<_>>()),
        Division::Parallel => {
            children.sort();
            "P".to_string()
        }
        Division::Rigid { inner } => {
            children.sort();
            let mut inner: Vec<u32> = inner.iter().map(|&v| label(v)).collect();
            inner.sort();
            format!("R{inner:?}")
        }
    };
    format!("{}{}->{}({})", kind, label(node.source), label(node.target), children.join(","))
}

/// The same DAG under a random topological renumbering, and the map back.
fn relabelled(dag: &TwoTerminalDag, seed: u64) -> (TwoTerminalDag, Vec<u32>) {
    let n = dag.vertices;
    let mut rng = SplitMix64::new(seed);
    let mut indegree = vec![0usize; n];
    for &(_, w) in &dag.edges {
        indegree[w as usize] += 1;
    }
    let mut ready: Vec<u32> = vec![0];
    let mut new_of = vec![0u32; n];
    let mut old_of = Vec::with_capacity(n);
    while !ready.is_empty() {
        let v = ready.swap_remove(rng.below(ready.len() as u64) as usize);
        new_of[v as usize] = old_of.len() as u32;
        old_of.push(v);
        for &(_, w) in dag.edges.iter().filter(|e| e.0 == v) {
            indegree[w as usize] -= 1;
            if indegree[w as usize] == 0 {
                ready.push(w);
            }
        }
    }
    let mut edges: Vec<(u32, u32)> = dag.edges.iter().map(|&(u, w)| (new_of[u as usize], new_of[w as usize])).collect();
    edges.sort_unstable();
    (TwoTerminalDag { vertices: n, edges }, old_of)
}

/// Eqn. 1 minimised over every stored set (bit mask over the inner vertices) whose
/// non-stored components each have one stored entry and one stored exit: the solution space
/// of Re-forwarding, enumerated.
fn brute_force_objective(dag: &TwoTerminalDag, cost: &[u64], forced: &[bool]) -> u64 {
    let n = dag.vertices;
    let inner = n - 2;
    let mut best = u64::MAX;
    'masks: for mask in 0u32..(1 << inner) {
        let stored = |v: usize| v == 0 || v == n - 1 || mask >> (v - 1) & 1 == 1;
        if (1..n - 1).any(|v| forced[v] && !stored(v)) {
            continue;
        }
        let mut total: u64 = (1..n - 1).filter(|&v| stored(v)).map(|v| cost[v]).sum();
        let mut component = vec![usize::MAX; n];
        let mut largest = 0;
        for start in 1..n - 1 {
            if stored(start) || component[start] != usize::MAX {
                continue;
            }
            let (mut entries, mut exits, mut bytes) = (BTreeSet::new(), BTreeSet::new(), 0);
            let mut stack = vec![start];
            component[start] = start;
            while let Some(x) = stack.pop() {
                bytes += cost[x];
                for &(a, b) in &dag.edges {
                    let (a, b) = (a as usize, b as usize);
                    if b == x {
                        if stored(a) {
                            entries.insert(a);
                        } else if component[a] == usize::MAX {
                            component[a] = start;
                            stack.push(a);
                        }
                    }
                    if a == x {
                        if stored(b) {
                            exits.insert(b);
                        } else if component[b] == usize::MAX {
                            component[b] = start;
                            stack.push(b);
                        }
                    }
                }
            }
            if entries.len() != 1 || exits.len() != 1 {
                continue 'masks;
            }
            largest = largest.max(bytes);
        }
        total += largest;
        best = best.min(total);
    }
    best
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Algorithm 1's objective (Eqn. 1) equals the best of all 2^(n-2) stored sets.
    #[test]
    fn lcg_solver_equals_brute_force(costs in prop::collection::vec(0u64..50, 1..=12)) {
        let (objective, stored) = lcg_optimum(&costs);
        let n = costs.len();
        let brute = if n == 1 { costs[0] } else { (0u32..1 << (n - 2)).map(|m| chain_objective(&costs, m)).min().unwrap() };
        prop_assert_eq!(objective, brute);
        if n >= 2 {
            prop_assert!(stored.contains(&0) && stored.contains(&(n - 1)));
            let mask = stored.iter().filter(|&&i| i > 0 && i < n - 1).fold(0u32, |m, &i| m | 1 << (i - 1));
            prop_assert_eq!(chain_objective(&costs, mask), objective, "the returned set achieves the objective");
        }
    }

    /// Theorem 1: every node is a closed set with a proper division, and every closed set of
    /// Definition 1 is a node, consecutive segments of a type-1 node, or branches of a type-2
    /// node — none has its head in one member of a division and its tail in another.
    #[test]
    fn division_trees_are_complete(seed in any::<u64>(), grow in 1usize..9, extra in 0u64..60) {
        let dag = series_parallel_like(seed, grow, extra);
        prop_assert_eq!(dag.validate(), Ok(()));
        let tree = DivisionTree::build(&dag);
        let edge_sets: Vec<BTreeSet<(u32, u32)>> = (0..tree.nodes.len()).map(|i| tree.edges(i).into_iter().collect()).collect();
        prop_assert_eq!(&edge_sets[tree.root], &dag.edges.iter().copied().collect::<BTreeSet<_>>());
        let all = closed_sets(&dag);
        for (id, node) in tree.nodes.iter().enumerate() {
            prop_assert!(all.contains(&edge_sets[id]), "node {} ({:?}) is not a closed set", id, node);
            let members = node.children.len();
            match node.division {
                Division::Edge => prop_assert_eq!(members, 0),
                Division::Series { ref splits } => prop_assert_eq!((members >= 2, splits.len()), (true, members - 1)),
                Division::Parallel => prop_assert!(members >= 2),
                // Lemma 7: a maximal split has more than two members.
                Division::Rigid { .. } => prop_assert!(members >= 3),
            }
        }
        for set in &all {
            // The smallest node holding the closed set.
            let holder = (0..tree.nodes.len()).filter(|&i| set.is_subset(&edge_sets[i])).min_by_key(|&i| edge_sets[i].len()).unwrap();
            if &edge_sets[holder] == set {
                continue;
            }
            let node = &tree.nodes[holder];
            let union = |range: &[usize]| range.iter().flat_map(|&c| edge_sets[c].iter().copied()).collect::<BTreeSet<_>>();
            let explained = match node.division {
                Division::Series { .. } => (0..node.children.len()).any(|a| (a + 1..=node.children.len()).any(|b| &union(&node.children[a..b]) == set)),
                Division::Parallel => node.children.iter().all(|&c| edge_sets[c].is_subset(set) || edge_sets[c].is_disjoint(set)),
                _ => false,
            };
            prop_assert!(explained, "closed set {:?} crosses the division of node {:?}", set, node);
        }
    }

    /// Theorem 1: the tree does not depend on how the vertices are numbered.
    #[test]
    fn division_trees_are_unique(seed in any::<u64>(), grow in 1usize..30, extra in 0u64..60, relabel in any::<u64>()) {
        let dag = series_parallel_like(seed, grow, extra);
        let (other, old_of) = relabelled(&dag, relabel);
        let a = DivisionTree::build(&dag);
        let b = DivisionTree::build(&other);
        prop_assert_eq!(canonical(&a, a.root, &|v| v), canonical(&b, b.root, &|v| old_of[v as usize]));
    }

    /// The ACG solver (Algorithm 5 over the division tree) reaches the least Eqn. 1 objective
    /// of any stored set whose segments are closed sets, forced vertices included.
    #[test]
    fn acg_solver_equals_brute_force(seed in any::<u64>(), grow in 1usize..10, extra in 0u64..60) {
        let dag = series_parallel_like(seed, grow, extra);
        let n = dag.vertices;
        prop_assume!(n - 2 <= 11);
        let mut rng = SplitMix64::new(seed ^ 0x5eed);
        let mut cost: Vec<u64> = (0..n).map(|_| rng.below(40)).collect();
        cost[0] = 0;
        cost[n - 1] = 0;
        let forced: Vec<bool> = (0..n).map(|v| v > 0 && v < n - 1 && rng.chance(10)).collect();
        let tree = DivisionTree::build(&dag);
        let solver = Solver::new(&tree, cost.clone(), forced.clone(), 0);
        let best = solver.sweep().best();
        prop_assert_eq!(best.objective, brute_force_objective(&dag, &cost, &forced));
        // The recorded plan stores the forced vertices and covers every other vertex once.
        let plan = solver.plan_at(best.max_term);
        for (v, &is_forced) in forced.iter().enumerate().take(n - 1).skip(1) {
            let covering = plan.segments.iter().filter(|s| s.contains(&(v as u32))).count();
            prop_assert!(if is_forced { plan.stored[v] } else { plan.stored[v] != (covering == 1) }, "vertex {}: {:?}", v, plan);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// On random training-step-like graphs: the recorded plan achieves the sweep's objective,
    /// stores what must be stored, and its re-forwarding schedule is valid (both assumptions).
    #[test]
    fn reforwarding_plans_keep_their_objective_and_schedule_validly(seed in any::<u64>(), ops in 1usize..60) {
        let g = RandomDag { ops, ..RandomDag::default() }.generate(seed);
        let order = g.topological_schedule();
        let forward = ForwardPart::of(&g, &order);
        prop_assume!(!forward.nodes.is_empty());
        let problem = ReforwardProblem::new(&g, &forward);
        for keep in [false, true] {
            let solver = problem.solver(keep);
            let best = solver.sweep().best();
            let plan = solver.plan_at(best.max_term);
            prop_assert!(problem.objective(&plan) <= best.objective);
            let schedule = problem.schedule(&g, &order, &plan);
            prop_assert!(simulate(&g, &schedule).is_ok(), "{:?}", simulate(&g, &schedule));
            let chen = problem.chen_sqrt_n();
            prop_assert!(simulate(&g, &problem.schedule(&g, &order, &chen)).is_ok());
        }
    }
}

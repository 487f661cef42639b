//! Properties every planner must have, on random DAGs.

use proptest::prelude::*;
use remat_graph::random::RandomDag;
use remat_graph::{lower_bound, simulate};
use remat_planners::dtr::{simulate_dtr, Dealloc, DtrOptions, Heuristic};
use remat_planners::pathdec::{add_spine, greedy_ordering, hamiltonian_path, PathDecomposition};
use remat_planners::pathwidth::SpinedDecomposition;
use remat_planners::polish::polish;
use remat_planners::treedec::{EliminationHeuristic, SeparatorHierarchy, TreeDecomposition};
use remat_planners::treewidth::tw_schedule;
use remat_planners::{Deadline, PlanRequest, Planner, PlannerOptions, STRATEGIES};

/// Every strategy that solves no MILP: the ILP and auto have their own, smaller property tests
/// in `ilp.rs`.
fn heuristics() -> impl Iterator<Item = &'static dyn Planner> {
    STRATEGIES.iter().copied().filter(|p| !p.solves_milp())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// No strategy's least-memory plan, polished toward the peak bound itself, peaks below
    /// it, with views, taken buffers and fused recomputations in the memory model (which the
    /// exhaustive check in remat-graph's tests leaves out).
    #[test]
    fn least_memory_plans_stay_above_the_peak_bound(seed in any::<u64>(), ops in 2usize..30, reuse in prop_oneof![Just(0u64), Just(50)], fuse in prop_oneof![Just(0u64), Just(60)]) {
        let g = RandomDag { ops, reuse_percent: reuse, fuse_percent: fuse, output_percent: 30, ..RandomDag::default() }.generate(seed);
        let order = g.topological_schedule();
        let bound = remat_graph::peak_lower_bound(&g);
        for planner in heuristics() {
            let raw = planner.plan(&PlanRequest { graph: &g, order: &order, budget: Some(bound), options: &PlannerOptions::default() }).unwrap();
            let peak = simulate(&g, &polish(&g, &raw, bound)).unwrap().peak_bytes;
            prop_assert!(peak >= bound, "{} plans {} below the peak bound {}", planner.name(), peak, bound);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]
    /// Every strategy returns a valid schedule; under a budget it either fits or the strategy
    /// could not do better than what it returned, which is never below the lower bound.
    #[test]
    fn plans_are_valid_and_fit_generous_budgets(seed in any::<u64>(), ops in 1usize..40, percent in 0u64..120) {
        let g = RandomDag { ops, ..RandomDag::default() }.generate(seed);
        let order = g.topological_schedule();
        let baseline = simulate(&g, &order).unwrap().peak_bytes;
        let budget = baseline * percent / 100;
        for planner in heuristics() {
            // What the driver does: plan, then polish toward the budget.
            let raw = planner.plan(&PlanRequest { graph: &g, order: &order, budget: Some(budget), options: &PlannerOptions::default() }).unwrap();
            prop_assert!(simulate(&g, &raw).is_ok(), "{} returned an invalid schedule", planner.name());
            let schedule = polish(&g, &raw, budget);
            let sim = simulate(&g, &schedule);
            prop_assert!(sim.is_ok(), "{} returned an invalid schedule: {:?}", planner.name(), sim);
            let sim = sim.unwrap();
            prop_assert!(sim.peak_bytes >= remat_graph::peak_lower_bound(&g), "{} plans below the peak bound", planner.name());
            if budget >= baseline {
                prop_assert!(sim.peak_bytes <= budget, "{} exceeded a budget the input order meets", planner.name());
            }
            // Below it, what a planner meets is a matter of how good it is:
            // `heuristics_meet_budgets_below_the_input_order` holds each to a floor.
        }
    }

    /// DTR (every heuristic, every deallocation policy) either runs out of memory or returns
    /// a valid schedule whose memory-model peak is within the budget it simulated and within
    /// what the simulation held resident (the module doc's argument, checked).
    #[test]
    fn dtr_schedules_fit_the_budget_they_simulated(seed in any::<u64>(), ops in 1usize..40, percent in 20u64..110) {
        let g = RandomDag { ops, ..RandomDag::default() }.generate(seed);
        let order = g.topological_schedule();
        let baseline = simulate(&g, &order).unwrap().peak_bytes;
        let budget = baseline * percent / 100;
        for heuristic in Heuristic::ALL {
            for dealloc in Dealloc::ALL {
                let options = DtrOptions { heuristic, dealloc, seed };
                // Room for every value at once: nothing is ever evicted, so every simulation runs.
                // (At the input order's own peak it need not: a banished storage stays until its
                // evicted dependents come back, and `ignore` keeps what the program drops.)
                let room: u64 = g.nodes().iter().filter(|n| !n.argument).map(|n| n.bytes).sum();
                prop_assert!(simulate_dtr(&g, &order, room.max(baseline), &options).is_ok(), "{heuristic:?}/{dealloc:?} failed with room for everything");
                // Out of memory is an answer (the deterministic test below counts how often);
                // a schedule must be valid and within the budget.
                let Ok((schedule, stats)) = simulate_dtr(&g, &order, budget, &options) else { continue };
                let sim = simulate(&g, &schedule);
                prop_assert!(sim.is_ok(), "{heuristic:?}/{dealloc:?}: invalid schedule {:?}", sim);
                let sim = sim.unwrap();
                prop_assert!(sim.peak_bytes <= stats.peak_resident && stats.peak_resident <= budget,
                    "{heuristic:?}/{dealloc:?}: model peak {} resident {} budget {budget}", sim.peak_bytes, stats.peak_resident);
                prop_assert_eq!(sim.recomputations, stats.rematerializations);
            }
        }
    }

    /// Both heuristics give valid tree decompositions (the three properties, one tree), and
    /// Lemma 1's compression keeps them valid with at most n bags and the same width.
    #[test]
    fn tree_decompositions_are_valid_and_lemma_1_bounds_their_size(seed in any::<u64>(), ops in 1usize..60) {
        let g = RandomDag { ops, ..RandomDag::default() }.generate(seed);
        let n = g.op_count();
        for heuristic in EliminationHeuristic::ALL {
            let mut td = TreeDecomposition::from_elimination(&g, heuristic);
            prop_assert_eq!(td.validate(&g), Ok(()));
            let width = td.width();
            td.compress();
            prop_assert_eq!(td.validate(&g), Ok(()));
            prop_assert!(td.len() <= n, "{} bags for {} nodes", td.len(), n);
            prop_assert_eq!(td.width(), width);
        }
    }

    /// TWRemat(k) is a valid schedule for every k, and k above the number of bags is the input
    /// order itself (NoRemat).
    #[test]
    fn tw_remat_schedules_are_valid_for_every_stop(seed in any::<u64>(), ops in 1usize..50, stop in 1usize..20) {
        let g = RandomDag { ops, ..RandomDag::default() }.generate(seed);
        let order = g.topological_schedule();
        let mut rank = vec![usize::MAX; g.len()];
        for (i, n) in order.iter().enumerate() {
            rank[n.index()] = i;
        }
        for heuristic in EliminationHeuristic::ALL {
            let mut td = TreeDecomposition::from_elimination(&g, heuristic);
            td.compress();
            let hierarchy = SeparatorHierarchy::new(&td, g.len(), &rank);
            let schedule = tw_schedule(&g, &hierarchy, &rank, &order, stop, usize::MAX, Deadline::NONE).unwrap();
            prop_assert!(simulate(&g, &schedule).is_ok(), "TWRemat({}) with {}: {:?}", stop, heuristic.name(), simulate(&g, &schedule));
            let everything = tw_schedule(&g, &hierarchy, &rank, &order, td.len() + 1, usize::MAX, Deadline::NONE).unwrap();
            prop_assert_eq!(&everything, &order);
            if !schedule.is_empty() {
                prop_assert!(tw_schedule(&g, &hierarchy, &rank, &order, stop, schedule.len() - 1, Deadline::NONE).is_none());
            }
        }
    }

        /// Polishing keeps a schedule valid, never adds cost, and never lifts the peak above its
    /// target when the schedule was within it — also where ops write into dying inputs'
    /// buffers, which extending an instance can cancel, and where recomputations fuse into
    /// their readers, which dropping one can undo.
    #[test]
    fn polishing_keeps_the_target_and_never_adds_cost(seed in any::<u64>(), ops in 1usize..40, percent in 30u64..130, reuse in prop_oneof![Just(0u64), Just(50)], fuse in prop_oneof![Just(0u64), Just(60)]) {
        let g = RandomDag { ops, reuse_percent: reuse, fuse_percent: fuse, ..RandomDag::default() }.generate(seed);
        let order = g.topological_schedule();
        let baseline = simulate(&g, &order).unwrap().peak_bytes;
        let budget = baseline * percent / 100;
        let raw_options = PlannerOptions { polish: false, ..PlannerOptions::default() };
        for planner in heuristics() {
            let raw = planner.plan(&PlanRequest { graph: &g, order: &order, budget: Some(budget), options: &raw_options }).unwrap();
            let before = simulate(&g, &raw).unwrap();
            for target in [budget, before.peak_bytes, before.peak_bytes.max(budget)] {
                let polished = polish(&g, &raw, target);
                let after = simulate(&g, &polished);
                prop_assert!(after.is_ok(), "{}: polishing broke the schedule: {:?}", planner.name(), after);
                let after = after.unwrap();
                prop_assert!(after.cost <= before.cost, "{}: cost {} -> {}", planner.name(), before.cost, after.cost);
                if before.peak_bytes <= target {
                    prop_assert!(after.peak_bytes <= target, "{}: peak {} -> {} over target {}", planner.name(), before.peak_bytes, after.peak_bytes, target);
                }
            }
        }
    }

    /// Vertex-separation path decompositions are valid before and after compression (which
    /// keeps the width and leaves at most n bags); Algorithm 2 adds a spine — a Hamiltonian
    /// path, topological for the graph plus the added edges — keeping the decomposition valid
    /// with bags at most 2·size + 1 (Theorem 8) whenever no interval had to grow left.
    #[test]
    fn path_decompositions_are_valid_and_spine_addition_keeps_theorem_8(seed in any::<u64>(), ops in 1usize..60) {
        let g = RandomDag { ops, ..RandomDag::default() }.generate(seed);
        let base = g.topological_schedule();
        for ordering in [greedy_ordering(&g, &base), base.clone()] {
            let mut pd = PathDecomposition::from_ordering(&g, &ordering);
            prop_assert_eq!(pd.validate(&g, &[]), Ok(()));
            let width = pd.width();
            pd.compress();
            prop_assert_eq!(pd.validate(&g, &[]), Ok(()));
            prop_assert_eq!(pd.width(), width);
            prop_assert!(pd.len() <= g.op_count());
            let size = pd.width() + 1;
            let spine = add_spine(&g, &mut pd);
            prop_assert_eq!(pd.validate(&g, &spine.added), Ok(()));
            // Theorem 8's bound, where its argument applies (see `pathdec::reach`).
            prop_assert!(spine.stretched_left > 0 || pd.width() < 2 * size + 2, "bag size {} from {}", pd.width() + 1, size);
            prop_assert_eq!(spine.order.len(), g.op_count());
            let mut position = vec![usize::MAX; g.len()];
            for (i, n) in spine.order.iter().enumerate() {
                position[n.index()] = i;
            }
            for pair in spine.order.windows(2) {
                prop_assert!(g.preds(pair[1]).contains(&pair[0]) || spine.added.contains(&(pair[0], pair[1])));
            }
            for n in spine.order.iter().copied() {
                prop_assert!(g.preds(n).iter().all(|p| g.node(*p).argument || position[p.index()] < position[n.index()]));
            }
            if hamiltonian_path(&g).is_some() {
                prop_assert!(spine.added.is_empty());
            }
        }
    }

    /// Lemmas 10 and 11 on long-spined graphs: with `c` a bag holding the last spine node,
    /// last(·) never rises moving away from `c`; and for c ≤ k ≤ ℓ (and mirrored), the nodes
    /// before last(X_ℓ) in X_k..X_ℓ, with pairs inside X_k and inside X_ℓ joined, have a long
    /// spine and the restricted bags form a path decomposition one narrower.
    #[test]
    fn long_spined_decompositions_keep_lemmas_10_and_11(seed in any::<u64>(), ops in 2usize..30) {
        let g = RandomDag { ops, view_percent: 0, ..RandomDag::default() }.generate(seed);
        let problem = SpinedDecomposition::new(&g, &g.topological_schedule());
        let n = problem.spine.order.len() as u32;
        let size = problem.width + 1;
        // G′ edges in spine indices: the graph's plus the spine's.
        let mut index = vec![u32::MAX; g.len()];
        for (i, v) in problem.spine.order.iter().enumerate() {
            index[v.index()] = i as u32;
        }
        let mut edges: Vec<(u32, u32)> = (1..n).map(|i| (i - 1, i)).collect();
        for v in problem.spine.order.iter().copied() {
            edges.extend(g.preds(v).iter().filter(|p| !g.node(**p).argument).map(|p| (index[p.index()], index[v.index()])));
        }
        for side in [false, true] {
            let mut bags = problem.bags.clone();
            if side {
                bags.reverse();
            }
            let last = |bag: &Vec<u32>| bag.last().copied();
            let c = bags.iter().position(|b| b.contains(&(n - 1))).expect("the last node is in a bag");
            for k in c..bags.len() {
                for l in k..bags.len() {
                    // Lemma 10.
                    prop_assert!(last(&bags[k]) >= last(&bags[l]), "last(X{}) < last(X{})", k, l);
                    // Lemma 11.
                    let Some(bound) = last(&bags[l]) else { continue };
                    let restricted: Vec<Vec<u32>> = bags[k..=l].iter().map(|b| b.iter().copied().filter(|&v| v < bound).collect()).collect();
                    let mut nodes: Vec<u32> = restricted.iter().flatten().copied().collect();
                    nodes.sort_unstable();
                    nodes.dedup();
                    for b in &restricted {
                        prop_assert!(b.len() < size, "a restricted bag keeps {} of {}", b.len(), size);
                    }
                    let together = |a: u32, b: u32, bag: &Vec<u32>| bag.contains(&a) && bag.contains(&b);
                    for pair in nodes.windows(2) {
                        let (a, b) = (pair[0], pair[1]);
                        prop_assert!(b == a + 1 || together(a, b, &bags[k]) || together(a, b, &bags[l]), "G'' has no spine edge {} -> {}", a, b);
                    }
                    let interval = |v: u32| {
                        let held: Vec<usize> = (0..restricted.len()).filter(|&i| restricted[i].contains(&v)).collect();
                        (held[0], held[held.len() - 1], held.len())
                    };
                    for &v in &nodes {
                        let (first, last_bag, count) = interval(v);
                        prop_assert_eq!(count, last_bag - first + 1, "node {} not in consecutive bags", v);
                    }
                    for &(a, b) in &edges {
                        if nodes.binary_search(&a).is_ok() && nodes.binary_search(&b).is_ok() {
                            prop_assert!(restricted.iter().any(|bag| bag.contains(&a) && bag.contains(&b)), "edge {} -> {} lost", a, b);
                        }
                    }
                }
            }
        }
    }

    /// PWRemat(k) is valid for `G′` (graph plus spine) for every k — every node's inputs,
    /// spine predecessor included, were computed before it — and computes every node; k above
    /// the number of bags computes each node exactly once.
    #[test]
    fn pw_remat_schedules_are_valid_for_every_stop(seed in any::<u64>(), ops in 1usize..40, stop in 1usize..12) {
        let g = RandomDag { ops, impure_percent: 0, ..RandomDag::default() }.generate(seed);
        let problem = SpinedDecomposition::new(&g, &g.topological_schedule());
        let schedule = problem.schedule(&g, stop, usize::MAX, Deadline::NONE).expect("no limit");
        let mut position = vec![usize::MAX; g.len()];
        for (i, v) in problem.spine.order.iter().enumerate() {
            position[v.index()] = i;
        }
        let mut computed = vec![false; g.len()];
        for &v in &schedule {
            let spine_pred = position[v.index()].checked_sub(1).map(|i| problem.spine.order[i]);
            for p in g.preds(v).iter().copied().filter(|p| !g.node(*p).argument).chain(spine_pred) {
                prop_assert!(computed[p.index()], "PWRemat({}) computes {} before its input {}", stop, v, p);
            }
            computed[v.index()] = true;
        }
        prop_assert_eq!(computed.iter().filter(|&&c| c).count(), g.op_count());
        prop_assert!(simulate(&g, &schedule).is_ok());
        let once = problem.schedule(&g, problem.bags.len() + 1, usize::MAX, Deadline::NONE).unwrap();
        prop_assert_eq!(once.len(), g.op_count());
    }
}

/// Below the input order's peak, each heuristic meets the budget on a share of seeded random
/// steps at 90 % of it — a planner that returned the input order would meet none. The floors are
/// about half of what each strategy met when this test was written (greedy 217, dtr 205,
/// treewidth 123, pathwidth 50, acg 42, chain 23 of the 273 steps whose lower bound allows
/// 90 %); chain and pathwidth are built for chains and narrow graphs, and meet fewer of these
/// random DAGs. A strategy not listed must meet at least one.
#[test]
fn heuristics_meet_budgets_below_the_input_order() {
    const FLOORS: &[(&str, usize)] =
        &[("none", 0), ("greedy", 100), ("dtr", 100), ("treewidth", 60), ("pathwidth", 25), ("acg", 20), ("chain", 10)];
    let mut eligible = 0;
    let mut met = vec![0usize; STRATEGIES.len()];
    for seed in 0..300u64 {
        let g = RandomDag { ops: 10 + (seed as usize % 30), ..RandomDag::default() }.generate(seed);
        let order = g.topological_schedule();
        let budget = simulate(&g, &order).unwrap().peak_bytes * 90 / 100;
        if budget < lower_bound(&g) {
            continue;
        }
        eligible += 1;
        for (i, planner) in STRATEGIES.iter().enumerate().filter(|(_, p)| !p.solves_milp()) {
            if remat_planners::plan_within_budget(*planner, &g, &order, Some(budget), &PlannerOptions::default())
                .is_ok()
            {
                met[i] += 1;
            }
        }
    }
    assert_eq!(eligible, 273, "the seeded steps are what the floors were measured on");
    for (planner, &count) in STRATEGIES.iter().zip(&met).filter(|(p, _)| !p.solves_milp()) {
        let floor = FLOORS.iter().find(|(name, _)| *name == planner.name()).map_or(1, |f| f.1);
        assert!(
            count >= floor,
            "{} met {count} of {eligible} budgets at 90 %, below its floor of {floor}",
            planner.name()
        );
    }
}

/// How often DTR runs at the input order's own peak, on seeded random steps: with eager
/// eviction (the paper's default) nearly always, so the schedule checks of
/// `dtr_schedules_fit_the_budget_they_simulated` run on most of its cases. Floors are below
/// what each combination met when this was written.
#[test]
fn dtr_runs_at_the_input_orders_peak_on_most_steps() {
    let mut met = vec![[0usize; 3]; Heuristic::ALL.len()];
    for seed in 0..200u64 {
        let g = RandomDag { ops: 1 + (seed as usize % 40), ..RandomDag::default() }.generate(seed);
        let order = g.topological_schedule();
        let baseline = simulate(&g, &order).unwrap().peak_bytes;
        for (h, &heuristic) in Heuristic::ALL.iter().enumerate() {
            for (d, &dealloc) in Dealloc::ALL.iter().enumerate() {
                met[h][d] +=
                    usize::from(simulate_dtr(&g, &order, baseline, &DtrOptions { heuristic, dealloc, seed }).is_ok());
            }
        }
    }
    // Met when written: eager 192–196, banish 200, ignore 143–166 of 200 for each heuristic.
    for (h, heuristic) in Heuristic::ALL.iter().enumerate() {
        for (d, (dealloc, floor)) in Dealloc::ALL.iter().zip([180, 190, 120]).enumerate() {
            assert!(
                met[h][d] >= floor,
                "{heuristic:?}/{dealloc:?} ran {} of 200 steps at the baseline's peak",
                met[h][d]
            );
        }
    }
}

//! Properties every planner must have, on random DAGs.

use proptest::prelude::*;
use remat_graph::random::RandomDag;
use remat_graph::{lower_bound, simulate};
use remat_planners::polish::polish;
use remat_planners::treedec::{EliminationHeuristic, SeparatorHierarchy, TreeDecomposition};
use remat_planners::treewidth::tw_schedule;
use remat_planners::{PlanRequest, PlannerOptions, STRATEGIES};

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
        for planner in STRATEGIES {
            // What the driver does: plan, then polish toward the budget.
            let raw = planner.plan(&PlanRequest { graph: &g, order: &order, budget: Some(budget), options: &PlannerOptions::default() }).unwrap();
            prop_assert!(simulate(&g, &raw).is_ok(), "{} returned an invalid schedule", planner.name());
            let schedule = polish(&g, &raw, budget);
            let sim = simulate(&g, &schedule);
            prop_assert!(sim.is_ok(), "{} returned an invalid schedule: {:?}", planner.name(), sim);
            let sim = sim.unwrap();
            prop_assert!(sim.peak_bytes >= lower_bound(&g));
            if budget >= baseline {
                prop_assert!(sim.peak_bytes <= budget, "{} exceeded a budget the input order meets", planner.name());
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
            let schedule = tw_schedule(&g, &hierarchy, &rank, &order, stop);
            prop_assert!(simulate(&g, &schedule).is_ok(), "TWRemat({}) with {}: {:?}", stop, heuristic.name(), simulate(&g, &schedule));
            let everything = tw_schedule(&g, &hierarchy, &rank, &order, td.len() + 1);
            prop_assert_eq!(&everything, &order);
        }
    }

    /// Polishing keeps a schedule valid, never adds cost, and never lifts the peak above its
    /// target when the schedule was within it.
    #[test]
    fn polishing_keeps_the_target_and_never_adds_cost(seed in any::<u64>(), ops in 1usize..40, percent in 30u64..130) {
        let g = RandomDag { ops, ..RandomDag::default() }.generate(seed);
        let order = g.topological_schedule();
        let baseline = simulate(&g, &order).unwrap().peak_bytes;
        let budget = baseline * percent / 100;
        let raw_options = PlannerOptions { polish: false, ..PlannerOptions::default() };
        for planner in STRATEGIES {
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
}


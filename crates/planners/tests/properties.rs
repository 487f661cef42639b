//! Properties every planner must have, on random DAGs.

use proptest::prelude::*;
use remat_graph::random::RandomDag;
use remat_graph::{lower_bound, simulate};
use remat_planners::{PlanRequest, STRATEGIES};

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
            let schedule = planner.plan(&PlanRequest { graph: &g, order: &order, budget: Some(budget) }).unwrap();
            let sim = simulate(&g, &schedule);
            prop_assert!(sim.is_ok(), "{} returned an invalid schedule: {:?}", planner.name(), sim);
            let sim = sim.unwrap();
            prop_assert!(sim.peak_bytes >= lower_bound(&g));
            if budget >= baseline {
                prop_assert!(sim.peak_bytes <= budget, "{} exceeded a budget the input order meets", planner.name());
            }
        }
    }
}

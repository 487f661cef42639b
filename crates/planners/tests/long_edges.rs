//! The heuristics on random layered DAGs with long edges (Gagrani et al.'s class, which
//! Moccasin benchmarks): their work stays bounded, and any "smallest budget X" a strategy
//! names in its infeasible diagnostic is a budget at which it succeeds.

use proptest::prelude::*;
use remat_graph::random::{RandomDag, RandomLayeredDag};
use remat_graph::{simulate, Graph};
use remat_planners::{plan_within_budget, strategy, PlanFailure, Planner, PlannerOptions, StopReason, STRATEGIES};

/// Every strategy that solves no MILP.
fn heuristics() -> impl Iterator<Item = &'static dyn Planner> {
    STRATEGIES.iter().copied().filter(|p| !p.solves_milp())
}

/// Plans `graph` with `planner` at `percent` of the input order's peak. The plan fits, or the
/// diagnostic names no smallest budget, or it names one at which the same strategy succeeds.
/// Returns whether the budget was met.
fn check_named_budget(
    planner: &dyn Planner,
    graph: &Graph,
    percent: u64,
    options: &PlannerOptions,
) -> Result<bool, TestCaseError> {
    let order = graph.topological_schedule();
    let budget = simulate(graph, &order).unwrap().peak_bytes * percent / 100;
    let name = planner.name();
    match plan_within_budget(planner, graph, &order, Some(budget), options) {
        Ok(plan) => {
            prop_assert!(plan.simulation.peak_bytes <= budget, "{name}: {} > {budget}", plan.simulation.peak_bytes);
            Ok(true)
        }
        Err(PlanFailure::Infeasible(infeasible)) => {
            if let Some(named) = infeasible.smallest_feasible {
                let again = plan_within_budget(planner, graph, &order, Some(named), options);
                prop_assert!(
                    again.is_ok(),
                    "{name} names {named} B as the smallest budget it meets, then fails it: {:?}",
                    again.err()
                );
            }
            Ok(false)
        }
        Err(PlanFailure::Invalid(e)) => Err(TestCaseError::fail(format!("{name}: {e}"))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Every heuristic, on layered DAGs with long edges.
    #[test]
    fn heuristics_name_budgets_they_meet_on_layered_dags(seed in any::<u64>(), ops in 20usize..120, percent in 40u64..100) {
        let g = RandomLayeredDag::new(ops).generate(seed);
        for planner in heuristics() {
            check_named_budget(planner, &g, percent, &PlannerOptions::default())?;
        }
    }

    /// `auto` too (it names the least of what its heuristics meet), on small training-step-like
    /// DAGs where its ILP answers quickly.
    #[test]
    fn auto_names_budgets_it_meets(seed in any::<u64>(), ops in 4usize..24, percent in 30u64..100) {
        let g = RandomDag { ops, ..RandomDag::default() }.generate(seed);
        let mut options = PlannerOptions::default();
        options.ilp.time_limit = 1.0;
        check_named_budget(strategy("auto").unwrap(), &g, percent, &options)?;
    }
}

/// On 1000-node layered DAGs every heuristic answers at 90…50 % (a plan, or the diagnostic
/// with the smallest budget it meets); greedy's and DTR's cascades stop at their work bounds
/// ([`StopReason::WorkLimit`]), which these graphs reach.
#[test]
fn cascades_stop_at_the_work_bound_on_1000_node_layered_dags() {
    let mut answers = 0;
    let mut work_limits = 0;
    for seed in 0..2 {
        let g = RandomLayeredDag::new(1000).generate(seed);
        let order = g.topological_schedule();
        let baseline = simulate(&g, &order).unwrap().peak_bytes;
        for name in ["greedy", "dtr", "treewidth"] {
            let planner = strategy(name).unwrap();
            for percent in [90, 70, 50] {
                let budget = baseline * percent / 100;
                let plan = remat_planners::measure_plan(planner, &g, &order, Some(budget), &PlannerOptions::default())
                    .unwrap_or_else(|e| panic!("{name} at {percent} %: {e}"));
                answers += 1;
                if plan.details.stop == StopReason::WorkLimit {
                    work_limits += 1;
                    assert_eq!(plan.schedule, order, "{name}: a plan stopped by its work bound is the input order");
                }
                // Bounded work: at most WORK_FACTOR (4 for greedy, 12 for DTR) times the steps.
                assert!(plan.simulation.step_bytes.len() <= 12 * order.len() + g.len(), "{name}");
            }
        }
    }
    assert_eq!(answers, 18);
    assert!(work_limits > 0, "no cascade reached a work bound: the test no longer exercises it");
}

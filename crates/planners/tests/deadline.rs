//! The deadline (`--time-limit`): every strategy checks it inside its own loops and, once it
//! has passed, hands back the best plan it has (a valid schedule) with a stop reason that says
//! so; the search for the smallest budget stops with it too.

use remat_graph::random::RandomLayeredDag;
use remat_graph::training::Transformer;
use remat_graph::{simulate, Graph};
use remat_planners::{
    measure_plan, plan_within_budget, Deadline, FallbackCause, PlanFailure, PlannerOptions, StopReason, STRATEGIES,
};

fn out_of_time(stop: StopReason) -> bool {
    matches!(stop, StopReason::TimeLimit { .. } | StopReason::Fallback { cause: FallbackCause::TimeLimit, .. })
}

fn graphs() -> Vec<(&'static str, Graph)> {
    vec![("transformer(3)", Transformer::new(3).generate()), ("layered(200)", RandomLayeredDag::new(200).generate(3))]
}

#[test]
fn every_strategy_stops_at_a_passed_deadline_with_a_valid_plan() {
    let passed = PlannerOptions { deadline: Deadline::passed(), ..PlannerOptions::default() };
    let mut checked = 0;
    for (name, graph) in graphs() {
        let order = graph.topological_schedule();
        let baseline = simulate(&graph, &order).unwrap().peak_bytes;
        for planner in STRATEGIES.iter().filter(|p| p.name() != "none") {
            for budget in [Some(baseline / 2), None] {
                // measure_plan simulates the schedule: an invalid one is an error.
                let plan = measure_plan(*planner, &graph, &order, budget, &passed)
                    .unwrap_or_else(|e| panic!("{name}, {} at {budget:?}: {e}", planner.name()));
                assert!(
                    out_of_time(plan.details.stop),
                    "{name}, {} at {budget:?} stopped with {:?}",
                    planner.name(),
                    plan.details.stop
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 2 * 2 * (STRATEGIES.len() - 1));
}

#[test]
fn without_a_passed_deadline_the_heuristics_run_to_their_end() {
    // The same graphs and strategies, with the default limit: no stop says time-limit (so the
    // test above is not passing for a reason other than the deadline).
    let options = PlannerOptions::default();
    let mut checked = 0;
    for (name, graph) in graphs() {
        let order = graph.topological_schedule();
        let baseline = simulate(&graph, &order).unwrap().peak_bytes;
        for planner in STRATEGIES.iter().filter(|p| !p.solves_milp()) {
            let plan = measure_plan(*planner, &graph, &order, Some(baseline / 2), &options).unwrap();
            assert!(!out_of_time(plan.details.stop), "{name}, {}: {:?}", planner.name(), plan.details.stop);
            checked += 1;
        }
    }
    assert_eq!(checked, 2 * STRATEGIES.iter().filter(|p| !p.solves_milp()).count());
}

#[test]
fn an_infeasible_budget_after_the_deadline_names_only_a_budget_that_was_met() {
    let graph = Transformer::new(3).generate();
    let order = graph.topological_schedule();
    let baseline = simulate(&graph, &order).unwrap().peak_bytes;
    let passed = PlannerOptions { deadline: Deadline::passed(), ..PlannerOptions::default() };
    let greedy = remat_planners::strategy("greedy").unwrap();
    match plan_within_budget(greedy, &graph, &order, Some(baseline / 4), &passed) {
        Err(PlanFailure::Infeasible(infeasible)) => {
            assert_eq!(infeasible.out_of_time, Some(passed.time_limit));
            // The bisection stopped at once: the only budget it checked is the baseline, which
            // the input order meets.
            assert_eq!(infeasible.smallest_feasible, Some(baseline));
            let message = infeasible.to_string();
            assert!(message.contains("time limit"), "{message}");
        }
        other => panic!("expected an infeasible budget, got {other:?}"),
    }
}

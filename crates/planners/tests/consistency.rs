//! Consistency of what remat-opt reports, on random steps, for every strategy that solves no
//! MILP (the ILP's answers depend on its solver's time): the peak a plan is reported with is
//! the peak an independent simulation of its schedule gives, and planning again gives the same
//! schedule and the same figures.

use proptest::prelude::*;
use remat_graph::random::RandomDag;
use remat_graph::{simulate, Graph, NodeId};
use remat_planners::{measure_given, measure_plan, PlanFailure, Planner, PlannerOptions, STRATEGIES};
use std::collections::BTreeSet;

fn heuristics() -> impl Iterator<Item = &'static dyn Planner> {
    STRATEGIES.iter().copied().filter(|p| !p.solves_milp())
}

/// Kumar et al. (2019) §2.1's memory of step `i`, straight from the definition (quadratic, no
/// shared code with the simulator): the sizes of `U_i = {u_i} ∪ in(u_i) ∪ ⋃_{j>i} {u' ∈ in(u_j)
/// | prev(u', j) ≤ i}`, over instances (the step that computed a value), plus the latest
/// instance of each output once computed. Arguments are resident throughout and not counted.
/// For graphs without views or buffer reuse, where that is the whole model.
fn peak_by_definition(graph: &Graph, schedule: &[NodeId]) -> u64 {
    let prev = |node: NodeId, j: usize| (0..j).rev().find(|&k| schedule[k] == node).expect("a valid schedule");
    let last: Vec<(NodeId, usize)> = graph
        .outputs()
        .filter(|&o| !graph.node(o).argument)
        .map(|o| (o, (0..schedule.len()).rev().find(|&k| schedule[k] == o).expect("outputs are computed")))
        .collect();
    let inputs = |j: usize| graph.preds(schedule[j]).iter().copied().filter(|&p| !graph.node(p).argument);
    (0..schedule.len())
        .map(|i| {
            let mut live: BTreeSet<usize> = BTreeSet::from([i]);
            live.extend(inputs(i).map(|p| prev(p, i)));
            for j in i + 1..schedule.len() {
                live.extend(inputs(j).map(|p| prev(p, j)).filter(|&k| k <= i));
            }
            live.extend(last.iter().filter(|&&(_, k)| k <= i).map(|&(_, k)| k));
            live.iter().map(|&k| graph.node(schedule[k]).bytes).sum::<u64>()
        })
        .max()
        .unwrap_or(0)
}

fn step(seed: u64, ops: usize) -> Graph {
    RandomDag { ops, view_percent: 0, reuse_percent: 0, ..RandomDag::default() }.generate(seed)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// The reported peak (the simulation `measure_plan` returns, which the report prints) is
    /// the definition's peak of the schedule handed out.
    #[test]
    fn the_reported_peak_is_the_schedules_peak_by_definition(seed in any::<u64>(), ops in 2usize..40, percent in 20u64..=100) {
        let graph = step(seed, ops);
        let order = graph.topological_schedule();
        prop_assert_eq!(simulate(&graph, &order).unwrap().peak_bytes, peak_by_definition(&graph, &order));
        let budget = simulate(&graph, &order).unwrap().peak_bytes * percent / 100;
        let mut planned = 0;
        for planner in heuristics() {
            let plan = measure_plan(planner, &graph, &order, Some(budget), &PlannerOptions::default()).unwrap();
            prop_assert!(plan.details.transfers.is_empty(), "no link bandwidth, no transfers");
            prop_assert_eq!(
                plan.simulation.peak_bytes,
                peak_by_definition(&graph, &plan.schedule),
                "{}: reported peak vs the schedule's", planner.name()
            );
            planned += 1;
        }
        prop_assert_eq!(planned, heuristics().count());
    }

    /// Planning the same request twice gives the same schedule, peak and cost, with a budget
    /// and without (DTR's random heuristic is seeded; nothing else draws).
    #[test]
    fn planning_again_gives_the_same_plan(seed in any::<u64>(), ops in 2usize..40, percent in 20u64..=100) {
        let graph = RandomDag { ops, ..RandomDag::default() }.generate(seed);
        let order = graph.topological_schedule();
        let budget = simulate(&graph, &order).unwrap().peak_bytes * percent / 100;
        for planner in heuristics() {
            for budget in [Some(budget), None] {
                let first = measure_plan(planner, &graph, &order, budget, &PlannerOptions::default()).unwrap();
                let again = measure_plan(planner, &graph, &order, budget, &PlannerOptions::default()).unwrap();
                prop_assert_eq!(&first.schedule, &again.schedule, "{} at {:?}", planner.name(), budget);
                prop_assert_eq!(first.simulation.peak_bytes, again.simulation.peak_bytes);
                prop_assert_eq!(first.simulation.cost.to_bits(), again.simulation.cost.to_bits());
                prop_assert_eq!(first.details.stop, again.details.stop);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// A plan saved as schedule JSON and given back (`--schedule`) measures exactly as it was
    /// planned; a budget under its peak is refused, naming that peak.
    #[test]
    fn a_saved_schedule_given_back_measures_as_planned(seed in any::<u64>(), ops in 2usize..40, percent in 30u64..=100) {
        let graph = step(seed, ops);
        let order = graph.topological_schedule();
        let budget = simulate(&graph, &order).unwrap().peak_bytes * percent / 100;
        let options = PlannerOptions::default();
        let mut given = 0;
        for planner in heuristics() {
            let Ok(plan) = measure_plan(planner, &graph, &order, Some(budget), &options) else { continue };
            let text = remat_graph::json::write_schedule("f", planner.name(), &plan.schedule, &plan.details.transfers);
            let saved = remat_graph::json::read_schedule(&text).unwrap();
            let again = measure_given(&graph, &order, saved.steps, saved.transfers, None).unwrap();
            prop_assert_eq!(&again.schedule, &plan.schedule);
            prop_assert_eq!(&again.simulation, &plan.simulation);
            let peak = plan.simulation.peak_bytes;
            if peak > 0 {
                let refused = measure_given(&graph, &order, plan.schedule.clone(), Vec::new(), Some(peak - 1));
                match refused {
                    Err(PlanFailure::Infeasible(e)) => prop_assert_eq!(e.smallest_feasible, Some(peak)),
                    other => prop_assert!(false, "{} under its peak: {:?}", planner.name(), other.map(|p| p.simulation.peak_bytes)),
                }
            }
            given += 1;
        }
        prop_assert!(given >= 3, "only {given} strategies planned");
    }
}

//! `--remat=auto`: run every other strategy within one time limit and keep the best plan.
//!
//! The strategies run in [`STRATEGIES`] order — the baseline and the heuristics first, the ILP
//! last — each measured as [`plan_within_budget`](crate::plan_within_budget) measures a plan
//! (simulated after polishing), through [`measure_plan`]. The time limit
//! ([`PlannerOptions::auto_time_limit`](crate::PlannerOptions::auto_time_limit), or the
//! request's own deadline if sooner) is shared: each strategy's [`Deadline`] is an equal share
//! of the time left for it and those after it, so one that is slow on a graph cannot starve the
//! rest (what it leaves unused goes to those after it; the ILP, last, gets all that remains).
//! One that runs into its deadline stops with its best plan so far; once the whole limit is
//! spent, the strategies after it are skipped with a note (the first, `none`, always runs, so
//! there is always a plan).
//!
//! The choice, over the strategies that produced a plan:
//! * with a budget, the cheapest plan within it (ties: the lower peak, then the earlier
//!   strategy); when none fits, the lowest peak (then the cheaper plan), which the caller
//!   reports as infeasible;
//! * without one, the lowest peak (ties: the cheaper plan, then the earlier strategy).
//!
//! Every strategy's result is a row of [`PlanDetails::comparison`] (a [`Candidate`], with why it
//! stopped, or why it has no plan), the chosen one marked; the chosen strategy's own facts (the
//! ILP's certificate, …) and stop reason are the plan's — except that a run the time limit cut
//! short stops with [`StopReason::TimeLimit`]. Apart from the seconds and which strategies the
//! time limit cut, the result is deterministic. Which plan is best is
//! [`compare_plans`](crate::compare_plans), the rule every part of remat-opt uses.

use crate::{
    compare_plans, measure_plan, strategy, Deadline, InvalidRequest, MeasuredPlan, PlanDetails, PlanError, PlanRequest,
    Planner, PlannerOptions, StopReason, STRATEGIES,
};
use remat_graph::{recompute_overhead, Graph, NodeId, Schedule};
use std::cmp::Ordering;
use std::time::Instant;

/// Default wall-clock seconds `--remat=auto` spends over all strategies.
pub const DEFAULT_TIME_LIMIT: f64 = 60.0;

/// One strategy's result in `--remat=auto`'s comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The strategy.
    pub strategy: &'static str,
    /// Simulated peak of its (polished) plan, when it produced one.
    pub peak_bytes: Option<u64>,
    /// Cost of its plan.
    pub cost: Option<f64>,
    /// Whether the plan is within the budget (always true without one).
    pub fits: bool,
    /// Seconds it took.
    pub seconds: f64,
    /// Whether it planned (and why it stopped), or why it has no plan.
    pub outcome: CandidateOutcome,
    /// The chosen one.
    pub chosen: bool,
}

/// What became of one strategy that `auto` (or a sweep) asked for a plan.
#[derive(Clone, Debug, PartialEq)]
pub enum CandidateOutcome {
    /// It planned, and stopped for this reason.
    Planned(StopReason),
    /// It did not run: the time limit of this many seconds was spent.
    Skipped {
        /// The time limit.
        time_limit: f64,
    },
    /// It gave no plan.
    Failed(PlanError),
}

impl Candidate {
    /// `cost / baseline_cost − 1` of its plan ([`recompute_overhead`]); `None` without a plan.
    pub fn recompute_overhead(&self, baseline_cost: f64) -> Option<f64> {
        self.cost.map(|cost| recompute_overhead(cost, baseline_cost))
    }

    /// Why it has no plan, in words (`None` when it has one).
    pub fn note(&self) -> Option<String> {
        match &self.outcome {
            CandidateOutcome::Planned(_) => None,
            CandidateOutcome::Skipped { time_limit } => {
                Some(format!("skipped: the time limit of {time_limit} s was spent"))
            }
            CandidateOutcome::Failed(e) => Some(e.to_string()),
        }
    }

    /// Why it stopped, when it planned.
    pub fn stop(&self) -> Option<StopReason> {
        match self.outcome {
            CandidateOutcome::Planned(stop) => Some(stop),
            _ => None,
        }
    }

    /// A row for a strategy without a plan.
    fn without_plan(strategy: &'static str, outcome: CandidateOutcome, seconds: f64) -> Self {
        Candidate { strategy, peak_bytes: None, cost: None, fits: false, seconds, outcome, chosen: false }
    }
}

/// Plans with one strategy and measures the plan (no search for the smallest feasible budget
/// when it does not fit): its row, and the plan when there is one.
pub(crate) fn candidate(
    planner: &dyn Planner,
    graph: &Graph,
    order: &[NodeId],
    budget: Option<u64>,
    options: &PlannerOptions,
) -> (Candidate, Option<MeasuredPlan>) {
    let started = Instant::now();
    let result = measure_plan(planner, graph, order, budget, options);
    let seconds = started.elapsed().as_secs_f64();
    match result {
        Ok(plan) => {
            let peak = plan.simulation.peak_bytes;
            let row = Candidate {
                strategy: planner.name(),
                peak_bytes: Some(peak),
                cost: Some(plan.simulation.cost),
                fits: budget.is_none_or(|b| peak <= b),
                seconds,
                outcome: CandidateOutcome::Planned(plan.details.stop),
                chosen: false,
            };
            (row, Some(plan))
        }
        Err(e) => (Candidate::without_plan(planner.name(), CandidateOutcome::Failed(e), seconds), None),
    }
}

/// `--remat=auto`.
pub struct AutoRemat;

impl Planner for AutoRemat {
    fn name(&self) -> &'static str {
        "auto"
    }
    fn solves_milp(&self) -> bool {
        true
    }
    fn summary(&self) -> &'static str {
        "the best plan of every other strategy within --auto-time-limit"
    }
    fn plan(&self, request: &PlanRequest<'_>) -> Result<Schedule, PlanError> {
        self.plan_detailed(request).map(|(schedule, _)| schedule)
    }
    fn plan_detailed(&self, request: &PlanRequest<'_>) -> Result<(Schedule, PlanDetails), PlanError> {
        request.order_positions()?;
        let limit = request.options.auto_time_limit;
        if !(limit.is_finite() && limit > 0.0) {
            return Err(InvalidRequest::TimeLimit { strategy: "auto", seconds: limit }.into());
        }
        // Every strategy stops at auto's limit (or the request's deadline, if sooner).
        let mut options = request.options.clone();
        options.deadline = options.deadline.min(Deadline::after(limit));
        let mut rows = Vec::new();
        let mut plans = Vec::new();
        let planners: Vec<&dyn Planner> = STRATEGIES.iter().copied().filter(|p| p.name() != self.name()).collect();
        for (index, &planner) in planners.iter().enumerate() {
            // The first strategy (the baseline) always runs, so there is always a plan.
            if options.deadline.expired() && !rows.is_empty() {
                let time_limit = if request.options.deadline.expired() { request.options.time_limit } else { limit };
                let skipped = CandidateOutcome::Skipped { time_limit };
                rows.push(Candidate::without_plan(planner.name(), skipped, 0.0));
                plans.push(None);
                continue;
            }
            let share = fair_share(&options, planners.len() - index);
            let (row, plan) = candidate(planner, request.graph, request.order, request.budget, &share);
            rows.push(row);
            plans.push(plan);
        }
        let best = rows
            .iter()
            .enumerate()
            .filter(|(_, row)| row.peak_bytes.is_some())
            .min_by(|(_, a), (_, b)| compare(a, b, request.budget))
            .map(|(i, _)| i);
        let Some(plan) = best.and_then(|i| plans[i].take()) else {
            let why = rows.iter().filter_map(|r| r.note().map(|n| (r.strategy, n))).collect();
            return Err(PlanError::NoStrategyPlanned(why));
        };
        if let Some(i) = best {
            rows[i].chosen = true;
        }
        let cut_short = rows.iter().any(|r| matches!(r.outcome, CandidateOutcome::Skipped { .. }));
        let stop = if cut_short { StopReason::TimeLimit { gap: None } } else { plan.details.stop };
        Ok((plan.schedule, PlanDetails { stop, comparison: rows, ..plan.details }))
    }
}

/// The options for one of the `left` strategies still to run: its deadline is an equal share
/// of the time left, so a strategy that is slow on this graph (TWRemat on a large one) cannot
/// starve the ones after it; what a strategy leaves unused goes to those after it, and the
/// last (the ILP) gets all that remains.
fn fair_share(options: &PlannerOptions, left: usize) -> PlannerOptions {
    let mut share = options.clone();
    if let Some(remaining) = options.deadline.remaining() {
        share.deadline = options.deadline.min(Deadline::after(remaining / left.max(1) as f64));
    }
    share
}

/// Orders two rows that have plans, better first ([`compare_plans`]); equal rows keep
/// [`STRATEGIES`] order because `min_by` returns the first of equal minima.
fn compare(a: &Candidate, b: &Candidate, budget: Option<u64>) -> Ordering {
    let key = |c: &Candidate| (c.peak_bytes.unwrap_or(u64::MAX), c.cost.unwrap_or(f64::INFINITY));
    compare_plans(key(a), key(b), budget)
}

/// The smallest budget `--remat=auto` is known to meet after no strategy met the budget: the
/// least of the smallest budgets each heuristic of `comparison` meets (found by bisection, see
/// [`crate::smallest_feasible_budget`]). The ILP is left out — a bisection would solve it
/// dozens of times; its own certificate, when auto chose it, is used before this.
pub(crate) fn smallest_feasible_budget(
    graph: &Graph,
    order: &[NodeId],
    options: &PlannerOptions,
    comparison: &[Candidate],
) -> Option<u64> {
    comparison
        .iter()
        .filter(|c| c.peak_bytes.is_some())
        .filter_map(|c| strategy(c.strategy))
        .filter(|planner| !planner.solves_milp())
        .filter_map(|planner| crate::smallest_feasible_budget(planner, graph, order, options))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_strategy_gets_an_equal_share_of_the_time_left() {
        let options = PlannerOptions { deadline: Deadline::after(80.0), ..PlannerOptions::default() };
        let share = fair_share(&options, 8).deadline.remaining().unwrap();
        assert!(share > 9.0 && share <= 10.0, "{share}");
        // The last strategy gets all that remains; without a deadline there is none to share.
        let last = fair_share(&options, 1).deadline.remaining().unwrap();
        assert!(last > 79.0 && last <= 80.0, "{last}");
        assert!(fair_share(&PlannerOptions::default(), 8).deadline.remaining().is_none());
    }

    use crate::{plan_within_budget, PlanFailure};
    use remat_graph::{simulate, GraphBuilder, NodeSpec};

    /// A forward chain of `n` equal nodes and a backward chain reading them in reverse (a
    /// training step in miniature).
    fn step(n: usize) -> Graph {
        let mut b = GraphBuilder::new();
        let x = b.add(NodeSpec::argument("x", 1024), &[]);
        let mut forward = vec![x];
        for i in 0..n {
            let previous = *forward.last().unwrap();
            forward.push(b.add(NodeSpec::op(format!("f{i}"), 1024, 1.0), &[previous]));
        }
        let mut grad = *forward.last().unwrap();
        for i in (1..n).rev() {
            grad = b.add(NodeSpec::op(format!("b{i}"), 1024, 1.0).with_output(i == 1), &[grad, forward[i]]);
        }
        b.finish().unwrap()
    }

    /// Default options with a short ILP time limit, so the tests stay quick on any graph.
    fn options() -> PlannerOptions {
        let mut options = PlannerOptions::default();
        options.ilp.time_limit = 1.0;
        options
    }

    fn rows(plan: &MeasuredPlan) -> Vec<(&'static str, bool, bool)> {
        plan.details.comparison.iter().map(|c| (c.strategy, c.fits, c.chosen)).collect()
    }

    #[test]
    fn without_a_budget_auto_keeps_the_lowest_peak() {
        let graph = step(12);
        let order = graph.topological_schedule();
        let plan = plan_within_budget(&AutoRemat, &graph, &order, None, &options()).unwrap();
        let comparison = &plan.details.comparison;
        let names: Vec<&str> = comparison.iter().map(|c| c.strategy).collect();
        let expected: Vec<&str> = STRATEGIES.iter().map(|p| p.name()).filter(|&n| n != "auto").collect();
        assert_eq!(names, expected, "every other strategy, in STRATEGIES order");
        assert_eq!(comparison.iter().filter(|c| c.chosen).count(), 1);
        let lowest = comparison.iter().filter_map(|c| c.peak_bytes).min().unwrap();
        let chosen = comparison.iter().find(|c| c.chosen).unwrap();
        assert_eq!(chosen.peak_bytes, Some(lowest));
        assert_eq!(plan.simulation.peak_bytes, lowest, "the chosen strategy's schedule is returned");
        assert!(lowest < simulate(&graph, &order).unwrap().peak_bytes);
    }

    #[test]
    fn with_a_budget_auto_keeps_the_cheapest_plan_that_fits() {
        let graph = step(12);
        let order = graph.topological_schedule();
        let baseline = simulate(&graph, &order).unwrap();
        // At the baseline peak nothing needs recomputing: the input order wins, first of the ties.
        let plan = plan_within_budget(&AutoRemat, &graph, &order, Some(baseline.peak_bytes), &options()).unwrap();
        assert_eq!(rows(&plan)[0], ("none", true, true));
        assert_eq!(plan.simulation.cost, baseline.cost);
        // Below it, none is a row that does not fit, and the cheapest fitting plan is chosen.
        let budget = baseline.peak_bytes * 6 / 10;
        let plan = plan_within_budget(&AutoRemat, &graph, &order, Some(budget), &options()).unwrap();
        assert_eq!(rows(&plan)[0], ("none", false, false));
        let fitting: Vec<f64> = plan.details.comparison.iter().filter(|c| c.fits).filter_map(|c| c.cost).collect();
        let chosen = plan.details.comparison.iter().find(|c| c.chosen).unwrap();
        assert!(chosen.fits && fitting.iter().all(|&c| chosen.cost.unwrap() <= c));
        assert!(plan.simulation.peak_bytes <= budget);
    }

    #[test]
    fn an_infeasible_budget_names_a_budget_auto_meets() {
        let graph = step(8);
        let order = graph.topological_schedule();
        let bound = remat_graph::lower_bound(&graph);
        match plan_within_budget(&AutoRemat, &graph, &order, Some(bound - 1), &options()) {
            Err(PlanFailure::Infeasible(e)) => {
                let smallest = e.smallest_feasible.expect("greedy meets the baseline peak");
                assert!(plan_within_budget(&AutoRemat, &graph, &order, Some(smallest), &options()).is_ok());
            }
            other => panic!("expected an infeasible budget, got {other:?}"),
        }
    }

    #[test]
    fn strategies_after_the_time_limit_are_skipped() {
        let graph = step(6);
        let order = graph.topological_schedule();
        let hurried = PlannerOptions { auto_time_limit: 1e-9, ..options() };
        let plan = plan_within_budget(&AutoRemat, &graph, &order, None, &hurried).unwrap();
        let comparison = &plan.details.comparison;
        assert!(comparison[0].peak_bytes.is_some(), "the first strategy always starts");
        assert!(comparison[1..]
            .iter()
            .all(|c| c.peak_bytes.is_none() && matches!(c.outcome, CandidateOutcome::Skipped { .. })));
        assert_eq!(plan.details.stop, StopReason::TimeLimit { gap: None }, "the time limit cut the run short");
        let bad = PlannerOptions { auto_time_limit: f64::NAN, ..options() };
        assert!(plan_within_budget(&AutoRemat, &graph, &order, None, &bad).is_err());
    }
}

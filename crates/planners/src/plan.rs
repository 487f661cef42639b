//! What a planner returns besides its schedule: why it stopped ([`StopReason`]), the facts only
//! its strategy has ([`StrategyFacts`]), and the typed errors of planning ([`PlanError`]); and
//! the one rule that says which of two plans is better ([`compare_plans`]).

use remat_graph::{ScheduleError, Transfer};
use std::any::Any;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// Why a planner stopped. Every plan carries one; the report shows it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum StopReason {
    /// The strategy ran to its end. A heuristic's plan: no claim of optimality.
    #[default]
    Completed,
    /// Proven optimal over the strategy's class of schedules.
    Optimal,
    /// Proven within `gap` (relative, of the plan's cost) of the best cost the class reaches,
    /// without proving optimality: a MIP gap the solver was asked to accept, or a rounded LP.
    Gap {
        /// `(cost − bound) / cost`.
        gap: f64,
    },
    /// A time limit stopped the search; `gap` is what was proven by then, when anything was.
    TimeLimit {
        /// `(cost − bound) / cost`, when a bound was proven.
        gap: Option<f64>,
    },
    /// A search stopped because no step of it lowered memory any further (the budget, if any,
    /// may be unmet).
    NoImprovement,
    /// The strategy's recomputation exceeded its work bound (a cascade of recomputations
    /// on long edges) before it met the budget; the plan is the input order.
    WorkLimit,
    /// The strategy's own method gave no plan, so another strategy's plan was returned.
    Fallback {
        /// The strategy whose plan this is.
        to: &'static str,
        /// Why the strategy's own method gave none.
        cause: FallbackCause,
    },
}

/// Why a strategy returned another's plan ([`StopReason::Fallback`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FallbackCause {
    /// The strategy's method finds no plan for this graph (at this budget, or at all).
    NoPlan,
    /// Its time limit ran out before it found a plan.
    TimeLimit,
    /// Its own plan missed the budget or cost more than the one returned (the ILP, whose
    /// class may not hold a heuristic's cheaper schedule, or whose time ran out first).
    Costlier,
}

impl StopReason {
    /// The name in the report's JSON (`stop.reason`): `completed`, `optimal`, `gap`,
    /// `time-limit`, `no-improvement`, `work-limit` or `fallback`.
    pub fn name(&self) -> &'static str {
        match self {
            StopReason::Completed => "completed",
            StopReason::Optimal => "optimal",
            StopReason::Gap { .. } => "gap",
            StopReason::TimeLimit { .. } => "time-limit",
            StopReason::NoImprovement => "no-improvement",
            StopReason::WorkLimit => "work-limit",
            StopReason::Fallback { .. } => "fallback",
        }
    }

    /// The proven relative gap, where there is one (0 for an optimal plan).
    pub fn gap(&self) -> Option<f64> {
        match *self {
            StopReason::Optimal => Some(0.0),
            StopReason::Gap { gap } => Some(gap),
            StopReason::TimeLimit { gap } => gap,
            _ => None,
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            StopReason::Completed => write!(f, "completed"),
            StopReason::Optimal => write!(f, "optimal"),
            StopReason::Gap { gap } => write!(f, "within {:.2}% of the proven bound", 100.0 * gap),
            StopReason::TimeLimit { gap: Some(gap) } => {
                write!(f, "time limit, within {:.2}% of the proven bound", 100.0 * gap)
            }
            StopReason::TimeLimit { gap: None } => write!(f, "time limit"),
            StopReason::NoImprovement => write!(f, "no improvement: nothing more to recompute"),
            StopReason::WorkLimit => write!(f, "work limit: recomputation cascaded past its bound"),
            StopReason::Fallback { to, cause: FallbackCause::NoPlan } => write!(f, "fallback to {to}'s plan (no plan)"),
            StopReason::Fallback { to, cause: FallbackCause::TimeLimit } => {
                write!(f, "fallback to {to}'s plan (no plan in the time limit)")
            }
            StopReason::Fallback { to, cause: FallbackCause::Costlier } => {
                write!(f, "fallback to {to}'s plan (cheaper than its own)")
            }
        }
    }
}

/// Facts only one strategy has (the ILP's certificate, DTR's simulation, the chain DP's
/// stages), carried by its plan and shown by the report without the report knowing the
/// strategy: a new strategy adds its own facts by implementing this trait in its own file.
pub trait StrategyFacts: fmt::Debug + Send + Sync + Any {
    /// The report's JSON field for these facts (`"ilp"`); one per strategy.
    fn key(&self) -> &'static str;
    /// The facts as a JSON object; `deterministic` leaves out wall-clock times.
    fn to_json(&self, deterministic: bool) -> serde_json::Value;
    /// The facts for the report table: one `(label, text)` per line.
    fn lines(&self, deterministic: bool) -> Vec<(String, String)>;
}

/// What a strategy proves, compares or moves besides its schedule.
#[derive(Clone, Debug, Default)]
pub struct PlanDetails {
    /// Why the strategy stopped.
    pub stop: StopReason,
    /// The strategy's own facts (at most one per key).
    pub facts: Vec<Arc<dyn StrategyFacts>>,
    /// `--remat=auto`'s comparison of every strategy it ran (empty for the others).
    pub comparison: Vec<crate::auto::Candidate>,
    /// Host round trips that belong to the schedule (offloads and prefetches, by step index;
    /// empty for every strategy but `chain` with `--bandwidth`). The schedule is measured with
    /// them ([`remat_graph::simulate_with_transfers`]) and is not polished, which would move
    /// its steps.
    pub transfers: Vec<Transfer>,
    /// The schedule polished, when the strategy polished it to choose it among its
    /// candidates ([`crate::cheapest_finished`]), so that it is not polished twice.
    pub polished: Option<Polished>,
}

/// A strategy's schedule as [`crate::finish`] polished it.
#[derive(Clone, Debug, PartialEq)]
pub struct Polished {
    /// The memory target it was polished to.
    pub target: u64,
    /// The polished schedule.
    pub schedule: remat_graph::Schedule,
    /// Whether the deadline cut the polishing short.
    pub cut: bool,
}

impl PlanDetails {
    /// Details that say only why the strategy stopped.
    pub fn stopped(stop: StopReason) -> Self {
        PlanDetails { stop, ..PlanDetails::default() }
    }

    /// `self` with `facts` added.
    pub fn with_facts(mut self, facts: impl StrategyFacts) -> Self {
        self.facts.push(Arc::new(facts));
        self
    }

    /// The facts of type `T`, if the plan has them.
    pub fn facts<T: StrategyFacts>(&self) -> Option<&T> {
        self.facts.iter().find_map(|f| (f.as_ref() as &dyn Any).downcast_ref::<T>())
    }
}

/// A malformed request.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InvalidRequest {
    /// The base order does not list every non-argument node exactly once.
    #[error("the base order must list every non-argument node once (node {0})")]
    OrderListing(remat_graph::NodeId),
    /// The base order is not a valid schedule.
    #[error(transparent)]
    Order(#[from] ScheduleError),
    /// A time limit that is not a positive number of seconds.
    #[error("{strategy}: the time limit must be a positive number of seconds, not {seconds}")]
    TimeLimit {
        /// The strategy whose limit it is.
        strategy: &'static str,
        /// The limit given.
        seconds: f64,
    },
    /// A sweep budget that is not a finite, non-negative percentage.
    #[error("invalid sweep budget {0}% (expected a finite, non-negative percentage)")]
    SweepPercent(f64),
}

/// Why a planner gave no plan.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// The request itself is malformed (e.g. `order` is not a valid schedule).
    #[error("invalid plan request: {0}")]
    InvalidRequest(#[from] InvalidRequest),
    /// A planner produced a schedule that breaks the memory model's rules: a bug.
    #[error("strategy '{strategy}' produced an invalid schedule: {error}")]
    InvalidSchedule {
        /// The strategy at fault.
        strategy: &'static str,
        /// What is wrong with its schedule.
        error: ScheduleError,
    },
    /// The solver failed (HiGHS's own message).
    #[error("{strategy}: {message}")]
    Solver {
        /// The strategy whose solver failed.
        strategy: &'static str,
        /// The solver's message.
        message: String,
    },
    /// The strategy found no plan, and says why.
    #[error("{strategy}: {why}")]
    NoPlan {
        /// The strategy.
        strategy: &'static str,
        /// Why it found none.
        why: NoPlanCause,
    },
    /// A schedule given to [`crate::measure_given`] is not a schedule of the graph.
    #[error("the given schedule is not a schedule of this function's graph: {0} (was it saved from this input, with the same --fusion and --unroll-limit?)")]
    InvalidGiven(ScheduleError),
    /// `auto`: none of the strategies it ran produced a plan.
    #[error("auto: no strategy produced a plan ({})", describe_failures(.0))]
    NoStrategyPlanned(Vec<(&'static str, String)>),
}

/// Why a strategy found no plan ([`PlanError::NoPlan`]).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum NoPlanCause {
    /// Its time limit ran out first.
    #[error("no plan within the budget was found in the time limit ({0:.0} s); raise --ilp-time-limit or use --ilp-method=lp-rounding")]
    TimeLimitWithinBudget(f64),
    /// Its time limit ran out before any schedule was found.
    #[error("no schedule found in the time limit ({0:.0} s)")]
    TimeLimit(f64),
    /// The LP relaxation has no solution at this budget.
    #[error("the LP relaxation is infeasible at this budget, so no rounding exists")]
    InfeasibleRelaxation,
    /// The LP relaxation was not solved in time.
    #[error("the LP relaxation was not solved in the time limit ({0:.0} s)")]
    RelaxationTimeLimit(f64),
    /// No rounding of the relaxation is a valid schedule.
    #[error("no rounding of the LP relaxation is a valid schedule")]
    NoValidRounding,
    /// The solver's assignment does not decode to a valid schedule (a bug).
    #[error("the solver's plan is not a valid schedule ({0})")]
    InvalidSolution(ScheduleError),
    /// The model would not fit in memory, so it was not built.
    #[error("its model would have up to {columns} variables, more than the {limit} this strategy builds (they would not fit in memory); use {alternative}")]
    ModelTooLarge {
        /// The variables the model would have (an upper bound).
        columns: usize,
        /// The most the method builds.
        limit: usize,
        /// What to use instead.
        alternative: &'static str,
    },
}

fn describe_failures(failures: &[(&'static str, String)]) -> String {
    failures.iter().map(|(strategy, why)| format!("{strategy}: {why}")).collect::<Vec<_>>().join("; ")
}

/// The one rule for which of two plans is better, given as `(peak bytes, cost)`: with a
/// budget, a plan within it beats one over it; of two within it the cheaper wins (then the
/// lower peak); of two over it the lower peak wins (then the cheaper). Without a budget, the
/// lower peak wins, then the cheaper. `Less` means `a` is better; callers keep the first of
/// equal plans. Every place that picks a plan uses it: a strategy's knob search, the ILP's warm
/// starts, `auto`, and the benchmarks.
pub fn compare_plans(a: (u64, f64), b: (u64, f64), budget: Option<u64>) -> Ordering {
    let by_peak = || a.0.cmp(&b.0).then(a.1.total_cmp(&b.1));
    match budget {
        Some(limit) => {
            let (fits_a, fits_b) = (a.0 <= limit, b.0 <= limit);
            fits_b.cmp(&fits_a).then_with(|| if fits_a { a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)) } else { by_peak() })
        }
        None => by_peak(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_within_the_budget_are_compared_by_cost_the_others_by_peak() {
        let budget = Some(100);
        assert_eq!(compare_plans((100, 5.0), (90, 6.0), budget), Ordering::Less, "cheaper within");
        assert_eq!(compare_plans((100, 5.0), (90, 5.0), budget), Ordering::Greater, "equal cost: lower peak");
        assert_eq!(compare_plans((101, 1.0), (100, 9.0), budget), Ordering::Greater, "within beats over");
        assert_eq!(compare_plans((120, 1.0), (110, 9.0), budget), Ordering::Greater, "over: lower peak");
        assert_eq!(compare_plans((110, 1.0), (110, 9.0), budget), Ordering::Less, "over, equal peak: cheaper");
        assert_eq!(compare_plans((90, 9.0), (100, 1.0), None), Ordering::Less, "no budget: lower peak");
        assert_eq!(compare_plans((90, 1.0), (90, 1.0), None), Ordering::Equal);
    }

    #[test]
    fn stop_reasons_name_themselves() {
        assert_eq!(
            StopReason::TimeLimit { gap: Some(0.031) }.to_string(),
            "time limit, within 3.10% of the proven bound"
        );
        assert_eq!(StopReason::Gap { gap: 0.0 }.gap(), Some(0.0));
        let fallback = StopReason::Fallback { to: "none", cause: FallbackCause::NoPlan };
        assert_eq!((fallback.name(), fallback.to_string().as_str()), ("fallback", "fallback to none's plan (no plan)"));
    }

    #[derive(Debug)]
    struct Facts(u32);
    impl StrategyFacts for Facts {
        fn key(&self) -> &'static str {
            "test"
        }
        fn to_json(&self, _: bool) -> serde_json::Value {
            serde_json::json!({ "n": self.0 })
        }
        fn lines(&self, _: bool) -> Vec<(String, String)> {
            vec![("test".into(), self.0.to_string())]
        }
    }

    #[test]
    fn facts_are_found_by_type() {
        let details = PlanDetails::stopped(StopReason::Optimal).with_facts(Facts(7));
        assert_eq!(details.facts::<Facts>().map(|f| f.0), Some(7));
        assert!(PlanDetails::default().facts::<Facts>().is_none());
    }
}

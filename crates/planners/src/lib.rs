//! Rematerialization planners. Each strategy is one module implementing [`Planner`]: it turns
//! a graph, the graph's own (no-remat) order and an optional budget into a [`Schedule`].
//!
//! Planners never see MLIR and never do I/O; they are measured with
//! [`remat_graph::simulate`], the one memory model every part of remat-opt shares.
//!
//! Adding a strategy: write `src/<name>.rs` with a type implementing [`Planner`] (its own report
//! facts, if any, implement [`StrategyFacts`] in the same file) and add one line to
//! [`STRATEGIES`]; ARCHITECTURE.md, "Adding a strategy", lists the rest, which is generated or
//! checked from that list.

#![deny(missing_docs)]

pub mod acg;
pub mod auto;
pub mod chain;
pub mod cost_bound;
pub mod deadline;
pub mod division;
pub mod dtr;
pub mod fusion;
pub mod greedy;
pub mod hierarchical;
pub mod ilp;
pub mod none;
pub mod pathdec;
pub mod pathwidth;
mod plan;
pub mod polish;
pub mod selective;
pub mod step;
pub mod sweep;
mod trade;
pub mod treedec;
pub mod treewidth;

pub use deadline::Deadline;
pub use plan::{
    compare_plans, FallbackCause, InvalidRequest, NoPlanCause, PlanDetails, PlanError, Polished, StopReason,
    StrategyFacts,
};
use remat_graph::{lower_bound, simulate, simulate_with_transfers, Graph, NodeId, Schedule};

/// Knobs of particular strategies, and of the polishing pass every plan goes through.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannerOptions {
    /// Polish every plan ([`polish::polish`]): drop recomputations the target does not need.
    pub polish: bool,
    /// TWRemat(k): stop the recursion in parts with fewer than k bags (`None`: choose k).
    pub tw_stop: Option<usize>,
    /// Elimination heuristic for tree decompositions (`None`: try each).
    pub td_heuristic: Option<treedec::EliminationHeuristic>,
    /// PWRemat(k): stop the recursion in decompositions with fewer than k bags (`None`:
    /// choose k).
    pub pw_stop: Option<usize>,
    /// The ILP's formulation, limits and warm start (`--remat=ilp`).
    pub ilp: ilp::IlpOptions,
    /// Wall-clock seconds `--remat=auto` may spend over all strategies.
    pub auto_time_limit: f64,
    /// DTR's heuristic, deallocation policy and seed (`--remat=dtr`).
    pub dtr: dtr::DtrOptions,
    /// The chain planner's bandwidth, compute rate and memory slots (`--remat=chain`).
    pub chain: chain::planner::ChainOptions,
    /// Wall-clock seconds one planning request may take (`--time-limit`): the deadline
    /// [`with_deadline`](PlannerOptions::with_deadline) sets when planning starts.
    pub time_limit: f64,
    /// When planning stops ([`deadline`]); none until a request starts.
    pub deadline: Deadline,
}

/// The default `--time-limit`, in seconds: every planner stops within a minute on steps of
/// 10^5 ops (docs/bench/README.md, "Time limits on steps of 10^5 nodes").
pub const DEFAULT_TIME_LIMIT: f64 = 50.0;

impl Default for PlannerOptions {
    fn default() -> Self {
        PlannerOptions {
            polish: true,
            tw_stop: None,
            td_heuristic: None,
            pw_stop: None,
            ilp: ilp::IlpOptions::default(),
            auto_time_limit: auto::DEFAULT_TIME_LIMIT,
            dtr: dtr::DtrOptions::default(),
            chain: chain::planner::ChainOptions::default(),
            time_limit: DEFAULT_TIME_LIMIT,
            deadline: Deadline::NONE,
        }
    }
}

/// What a planner is asked to do.
#[derive(Clone, Copy, Debug)]
pub struct PlanRequest<'g> {
    /// The graph to schedule.
    pub graph: &'g Graph,
    /// The graph's own order (every non-argument node once, topologically): the baseline.
    pub order: &'g [NodeId],
    /// Peak bytes the plan must not exceed; `None` asks for the least memory the strategy
    /// can reach.
    pub budget: Option<u64>,
    /// Strategy knobs.
    pub options: &'g PlannerOptions,
}

/// A rematerialization strategy.
pub trait Planner: Sync {
    /// The name used on the command line (`--remat=<name>`).
    fn name(&self) -> &'static str;
    /// One line for `--help`.
    fn summary(&self) -> &'static str;
    /// Whether the strategy solves MILPs (itself, or through a strategy it runs): slow beyond
    /// small graphs, so bisections for the smallest feasible budget and the property tests over
    /// every strategy leave it out.
    fn solves_milp(&self) -> bool {
        false
    }
    /// Plans a schedule. It must be valid for `request.graph`; it may exceed the budget when
    /// the strategy cannot meet it (the caller measures and reports that).
    fn plan(&self, request: &PlanRequest<'_>) -> Result<Schedule, PlanError>;
    /// Plans, with what the strategy proves or compares besides the schedule.
    fn plan_detailed(&self, request: &PlanRequest<'_>) -> Result<(Schedule, PlanDetails), PlanError> {
        Ok((self.plan(request)?, PlanDetails::default()))
    }
    /// [`smallest_feasible_budget`] found without replanning at every probe, for a strategy
    /// whose expensive part does not depend on the budget (it does that part once and bisects
    /// the rest); `None` (the default) bisects by replanning.
    fn smallest_feasible_budget_once(
        &self,
        _graph: &Graph,
        _order: &[NodeId],
        _options: &PlannerOptions,
    ) -> Option<Option<u64>> {
        None
    }
}

impl PlanRequest<'_> {
    /// The input order, stopped as a fallback: what a strategy hands back when its own method
    /// finds no plan (the caller measures it and reports the budget unmet).
    pub fn no_plan(&self) -> (Schedule, PlanDetails) {
        let cause = if self.options.deadline.expired() { FallbackCause::TimeLimit } else { FallbackCause::NoPlan };
        let stop = StopReason::Fallback { to: "none", cause };
        (self.order.to_vec(), PlanDetails::stopped(stop))
    }

    /// `stop`, or [`StopReason::TimeLimit`] when the deadline has passed (a search stopped
    /// early, its plan the best so far).
    pub fn stop_unless_out_of_time(&self, stop: StopReason) -> StopReason {
        if self.options.deadline.expired() {
            StopReason::TimeLimit { gap: None }
        } else {
            stop
        }
    }

    /// Each node's position in the base order (`usize::MAX` for arguments), after checking
    /// that the order is a valid schedule listing every non-argument node exactly once.
    pub fn order_positions(&self) -> Result<Vec<usize>, PlanError> {
        let graph = self.graph;
        let mut position = vec![usize::MAX; graph.len()];
        for (i, &n) in self.order.iter().enumerate() {
            if n.index() >= graph.len() || graph.node(n).argument || position[n.index()] != usize::MAX {
                return Err(InvalidRequest::OrderListing(n).into());
            }
            position[n.index()] = i;
        }
        remat_graph::validate(graph, self.order).map_err(InvalidRequest::from)?;
        Ok(position)
    }
}

/// Every strategy remat-opt knows, in `--help` order.
pub static STRATEGIES: &[&dyn Planner] = &[
    &none::NoRemat,
    &greedy::GreedyRemat,
    &treewidth::TwRemat,
    &pathwidth::PwRemat,
    &acg::AcgRemat,
    &dtr::DtrRemat,
    &chain::planner::ChainRemat,
    &hierarchical::HierarchicalRemat,
    &ilp::IlpRemat,
    &auto::AutoRemat,
];

/// Looks a strategy up by its command-line name.
pub fn strategy(name: &str) -> Option<&'static dyn Planner> {
    STRATEGIES.iter().copied().find(|p| p.name() == name)
}

/// The names of all strategies, comma-separated (for diagnostics).
pub fn strategy_names() -> String {
    STRATEGIES.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
}

/// The smallest budget (in bytes) under which `planner` returns a plan that fits, found by
/// bisection between the graph's lower bound and the baseline peak. Planners need not be
/// monotone in the budget; the returned budget has been checked to work. `None` when even
/// the baseline peak does not work for this planner.
pub fn smallest_feasible_budget(
    planner: &dyn Planner,
    graph: &Graph,
    order: &[NodeId],
    options: &PlannerOptions,
) -> Option<u64> {
    planner
        .smallest_feasible_budget_once(graph, order, options)
        .unwrap_or_else(|| bisect_by_replanning(planner, graph, order, options))
}

/// [`smallest_feasible_budget`] by replanning at every probe.
fn bisect_by_replanning(
    planner: &dyn Planner,
    graph: &Graph,
    order: &[NodeId],
    options: &PlannerOptions,
) -> Option<u64> {
    bisect_budget(graph, order, options.deadline, |budget: u64| -> Option<u64> {
        let request = PlanRequest { graph, order, budget: Some(budget), options };
        let peak = match planner.plan_detailed(&request) {
            Ok((schedule, details)) if !details.transfers.is_empty() => {
                simulate_with_transfers(graph, &schedule, &details.transfers).ok()?.peak_bytes
            }
            Ok((schedule, _)) => simulate(graph, &finish(graph, schedule, Some(budget), options)).ok()?.peak_bytes,
            Err(_) => return None,
        };
        (peak <= budget).then_some(peak)
    })
}

/// Graphs above this many nodes are bisected to 1/[`BISECTION_STEPS`] of the baseline peak,
/// smaller ones to the byte. Each probe plans the whole graph, and on steps of thousands of
/// nodes a probe that misses its budget costs up to a second (a heuristic works up to its
/// work bound first): 1/1024 is about ten probes instead of twenty-five on a 30 MB step, and
/// the diagnostic names the budget to 0.1 %.
const EXACT_BISECTION_NODES: usize = 2000;
const BISECTION_STEPS: u64 = 1024;

/// The smallest budget between the lower bound and the baseline peak that `fits` (which
/// gives the peak of the plan made under that budget when it fits), by bisection (to the byte,
/// or on large graphs to 1/[`BISECTION_STEPS`] of the baseline, see
/// [`EXACT_BISECTION_NODES`]); then, when the plan at the end of the bracket peaks lower than
/// its budget, that peak if it fits too (so a planner monotone in its budget is named
/// exactly). `None` when the baseline peak does not fit. Once `deadline` passes, the search
/// stops where it is: what it names then fits, but may not be the smallest.
pub(crate) fn bisect_budget(
    graph: &Graph,
    order: &[NodeId],
    deadline: Deadline,
    fits: impl Fn(u64) -> Option<u64>,
) -> Option<u64> {
    let baseline = simulate(graph, order).ok()?.peak_bytes;
    let mut peak_at_high = fits(baseline)?;
    let tolerance = if graph.len() > EXACT_BISECTION_NODES { (baseline / BISECTION_STEPS).max(1) } else { 1 };
    // Invariant: `high` fits; every budget below `low` is below the lower bound or was
    // bracketed out.
    let (mut low, mut high) = (lower_bound(graph).min(baseline), baseline);
    while high - low >= tolerance && !deadline.expired() {
        let mid = low + (high - low) / 2;
        match fits(mid) {
            Some(peak) => (high, peak_at_high) = (mid, peak),
            None => low = mid + 1,
        }
    }
    if peak_at_high < high && !deadline.expired() && fits(peak_at_high).is_some() {
        high = peak_at_high;
    }
    Some(high)
}

/// The polishing pass, when on, until the deadline: toward the budget, or the plan's own
/// peak without one.
pub(crate) fn finish(graph: &Graph, schedule: Schedule, budget: Option<u64>, options: &PlannerOptions) -> Schedule {
    finish_until(graph, schedule, budget, options).0
}

/// Of candidate plans within `budget`, each a schedule with its raw cost, the index of the
/// one cheapest once polished ([`best_finished`]), and that polished form:
/// how a strategy that plans from several views of a step (chain, hierarchical) ranks their
/// plans, since polishing can reverse their raw order (it takes more off one than another).
/// The winner's polished form goes into [`PlanDetails::polished`], so it is not polished
/// again (on 10^5 nodes a polish takes seconds).
pub(crate) fn cheapest_finished(
    graph: &Graph,
    budget: u64,
    options: &PlannerOptions,
    candidates: &[(&Schedule, f64)],
) -> Option<(usize, Option<Polished>)> {
    if !options.polish {
        let best = (0..candidates.len()).min_by(|&a, &b| candidates[a].1.total_cmp(&candidates[b].1).then(a.cmp(&b)));
        return best.map(|i| (i, None));
    }
    let finished = best_finished(graph, candidates.iter().map(|c| c.0).enumerate(), Some(budget), options).ok()??;
    let polished = Polished { target: budget, schedule: finished.schedule, cut: finished.cut };
    Some((finished.index, Some(polished)))
}

/// A candidate schedule once [`finish_until`] has polished it.
struct Finished {
    /// Its position among the candidates.
    index: usize,
    schedule: Schedule,
    /// Whether the deadline cut its polishing short.
    cut: bool,
}

/// The one rule for picking among a strategy's candidate schedules: each is polished toward
/// `budget` ([`finish_until`]), simulated and ranked by [`compare_plans`], ties going to the
/// lower index. Candidates are polished in the order given, and once the deadline passes no
/// further one is (the first always is), so callers list the likeliest winners first.
fn best_finished<'s>(
    graph: &Graph,
    candidates: impl IntoIterator<Item = (usize, &'s Schedule)>,
    budget: Option<u64>,
    options: &PlannerOptions,
) -> Result<Option<Finished>, remat_graph::ScheduleError> {
    let mut best: Option<((u64, f64), Finished)> = None;
    for (done, (index, raw)) in candidates.into_iter().enumerate() {
        if done > 0 && options.deadline.expired() {
            break;
        }
        let (schedule, cut) = finish_until(graph, raw.clone(), budget, options);
        let sim = simulate(graph, &schedule)?;
        let key = (sim.peak_bytes, sim.cost);
        let better = |(b, f): &((u64, f64), Finished)| match compare_plans(key, *b, budget) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Equal => index < f.index,
            std::cmp::Ordering::Greater => false,
        };
        if best.as_ref().is_none_or(better) {
            best = Some((key, Finished { index, schedule, cut }));
        }
    }
    Ok(best.map(|(_, finished)| finished))
}

/// [`finish`], and whether the deadline cut the polishing short.
fn finish_until(graph: &Graph, schedule: Schedule, budget: Option<u64>, options: &PlannerOptions) -> (Schedule, bool) {
    if !options.polish {
        return (schedule, false);
    }
    let target = match budget {
        Some(b) => b,
        None => match simulate(graph, &schedule) {
            Ok(s) => s.peak_bytes,
            Err(_) => return (schedule, false),
        },
    };
    polish::polish_until(graph, &schedule, target, options.deadline)
}

/// Picks one of a strategy's candidate schedules (one per knob setting): with a budget, the
/// cheapest after polishing among those within it (else the lowest peak); without one, the
/// lowest peak, then the cheapest after polishing. Returns the chosen raw schedule.
///
/// Polishing never lifts a peak above its target and only lowers cost, so only candidates
/// that can win are polished: without a budget those at the lowest raw peak (the target is
/// their own peak), with one those within it. That is what makes the k search affordable on
/// graphs of 10⁴ nodes.
pub(crate) fn choose_candidate(
    graph: &Graph,
    strategy: &'static str,
    candidates: Vec<Schedule>,
    budget: Option<u64>,
    options: &PlannerOptions,
) -> Result<Schedule, PlanError> {
    choose_measured(
        graph,
        strategy,
        &measure_candidates(graph, strategy, candidates, options.deadline)?,
        budget,
        options,
    )
}

/// A knob search's candidate schedules (one per knob setting), and whether the deadline cut
/// the search short.
#[derive(Clone, Debug, Default)]
pub(crate) struct Candidates {
    pub(crate) schedules: Vec<Schedule>,
    pub(crate) out_of_time: bool,
}

/// The plan of a strategy that picks among `candidates` ([`choose_candidate`]), stopped with
/// [`StopReason::TimeLimit`] when the deadline cut its search short, or the input order when
/// the search left no candidate.
pub(crate) fn plan_among(
    request: &PlanRequest<'_>,
    strategy: &'static str,
    candidates: Candidates,
) -> Result<(Schedule, PlanDetails), PlanError> {
    if candidates.schedules.is_empty() {
        let (order, mut details) = request.no_plan();
        if candidates.out_of_time {
            details.stop = StopReason::Fallback { to: "none", cause: FallbackCause::TimeLimit };
        }
        return Ok((order, details));
    }
    let schedule = choose_candidate(request.graph, strategy, candidates.schedules, request.budget, request.options)?;
    // The choice itself (measuring and polishing the candidates) also stops at the deadline.
    let stop = if candidates.out_of_time {
        StopReason::TimeLimit { gap: None }
    } else {
        request.stop_unless_out_of_time(StopReason::Completed)
    };
    Ok((schedule, PlanDetails::stopped(stop)))
}

/// A candidate measured: its raw peak and cost, and the schedule.
type Measured = (u64, f64, Schedule);

/// Each candidate with its raw peak and cost, in the order given; once `deadline` passes, only
/// those measured by then (at least one): a TWRemat(k) candidate can hold millions of steps,
/// and simulating a few dozen of them takes seconds. Shorter schedules (fewer recomputations)
/// are measured first, so what a cut leaves is the cheap end.
fn measure_candidates(
    graph: &Graph,
    strategy: &'static str,
    candidates: Vec<Schedule>,
    deadline: Deadline,
) -> Result<Vec<Measured>, PlanError> {
    let mut by_length: Vec<usize> = (0..candidates.len()).collect();
    by_length.sort_by_key(|&i| candidates[i].len());
    let mut pending: Vec<Option<Schedule>> = candidates.into_iter().map(Some).collect();
    let mut measured: Vec<Option<Measured>> = vec![None; pending.len()];
    for (done, i) in by_length.into_iter().enumerate() {
        if done > 0 && deadline.expired() {
            break;
        }
        let schedule = pending[i].take().expect("each candidate once");
        let sim = simulate(graph, &schedule).map_err(|error| PlanError::InvalidSchedule { strategy, error })?;
        measured[i] = Some((sim.peak_bytes, sim.cost, schedule));
    }
    Ok(measured.into_iter().flatten().collect())
}

/// [`choose_candidate`] over candidates already measured.
fn choose_measured(
    graph: &Graph,
    strategy: &'static str,
    measured: &[Measured],
    budget: Option<u64>,
    options: &PlannerOptions,
) -> Result<Schedule, PlanError> {
    let Some(lowest) = measured.iter().map(|m| m.0).min() else { return Ok(Vec::new()) };
    let mut contenders: Vec<(usize, &Measured)> = measured
        .iter()
        .enumerate()
        .filter(|(_, m)| match budget {
            Some(b) if lowest <= b => m.0 <= b,
            _ => m.0 == lowest,
        })
        .collect();
    // Polished cheapest raw cost first, so a deadline cuts the dear end; ties between
    // polished plans still go to the earlier candidate, as without a cut.
    contenders.sort_by(|a, b| a.1 .1.total_cmp(&b.1 .1).then(a.0.cmp(&b.0)));
    let invalid = |error| PlanError::InvalidSchedule { strategy, error };
    let finished =
        best_finished(graph, contenders.into_iter().map(|(i, m)| (i, &m.2)), budget, options).map_err(invalid)?;
    Ok(finished.map(|f| measured[f.index].2.clone()).unwrap_or_default())
}

/// [`smallest_feasible_budget`] for a strategy that picks among budget-independent
/// candidates (what `candidates` builds for a request) with [`choose_candidate`]: they are
/// built and simulated once, and only the choice (and its polishing) is bisected.
pub(crate) fn smallest_budget_among(
    graph: &Graph,
    order: &[NodeId],
    options: &PlannerOptions,
    strategy: &'static str,
    candidates: fn(&PlanRequest<'_>) -> Result<Candidates, PlanError>,
) -> Option<u64> {
    let request = PlanRequest { graph, order, budget: None, options };
    let measured = measure_candidates(graph, strategy, candidates(&request).ok()?.schedules, options.deadline).ok()?;
    bisect_budget(graph, order, options.deadline, |budget| {
        choose_measured(graph, strategy, &measured, Some(budget), options)
            .ok()
            .and_then(|raw| simulate(graph, &finish(graph, raw, Some(budget), options)).ok())
            .map(|s| s.peak_bytes)
            .filter(|&peak| peak <= budget)
    })
}

/// A plan measured against its budget.
#[derive(Clone, Debug)]
pub struct MeasuredPlan {
    /// The schedule (polished, unless polishing is off).
    pub schedule: Schedule,
    /// Its simulation.
    pub simulation: remat_graph::Simulation,
    /// The strategy's own schedule before polishing, measured (equal to `simulation` when
    /// polishing is off).
    pub raw: remat_graph::Simulation,
    /// The input order's simulation (the baseline).
    pub baseline: remat_graph::Simulation,
    /// The graph's proven lower bound on any schedule's peak.
    pub lower_bound: u64,
    /// Wall-clock seconds the planner took.
    pub plan_seconds: f64,
    /// What the strategy proved or compared (the ILP's certificate, auto's table).
    pub details: PlanDetails,
}

/// A budget the strategy could not meet.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct Infeasible {
    /// The strategy.
    pub strategy: &'static str,
    /// The budget asked for, in bytes.
    pub budget: u64,
    /// What the strategy's plan peaked at under that budget.
    pub achieved: u64,
    /// The proven lower bound for any schedule.
    pub lower_bound: u64,
    /// The smallest budget the strategy meets (bisection), if any.
    pub smallest_feasible: Option<u64>,
    /// The time limit (seconds) when it ran out before the search for the smallest budget
    /// ended: `smallest_feasible` is then a budget the strategy meets, not the smallest.
    pub out_of_time: Option<f64>,
    /// Set by callers that ran [`cost_bound`] on the budget and found it infeasible: the op at
    /// whose step no schedule fits.
    pub proven_infeasible_at: Option<String>,
}

impl Infeasible {
    fn describe(&self) -> String {
        use remat_graph::units::Bytes;
        if self.strategy == GIVEN {
            return format!(
                "the given schedule peaks at {}, over the budget of {}",
                Bytes(self.achieved),
                Bytes(self.budget)
            );
        }
        let mut s = if self.budget < self.lower_bound {
            format!(
                "budget {} is below {}, a lower bound on the peak of any schedule of this function",
                Bytes(self.budget),
                Bytes(self.lower_bound)
            )
        } else if let Some(op) = &self.proven_infeasible_at {
            format!(
                "no schedule of this function fits the budget of {}: at the step of '{op}', its operands, its \
                 result and the values the ops after it read, as far as recomputation cannot bring them back, \
                 need more",
                Bytes(self.budget)
            )
        } else {
            format!(
                "strategy '{}' cannot meet the budget of {}: its plan peaks at {}",
                self.strategy,
                Bytes(self.budget),
                Bytes(self.achieved)
            )
        };
        match (self.smallest_feasible, self.out_of_time) {
            (Some(b), None) => {
                s.push_str(&format!("; the smallest budget '{}' meets is {} ({b} bytes)", self.strategy, Bytes(b)))
            }
            (Some(b), Some(limit)) => s.push_str(&format!(
                "; the time limit of {limit} s ran out before the search for the smallest budget ended: '{}' meets {} ({b} bytes)",
                self.strategy,
                Bytes(b)
            )),
            (None, None) => s.push_str(&format!("; '{}' meets no budget up to the baseline peak", self.strategy)),
            (None, Some(limit)) => {
                s.push_str(&format!("; the time limit of {limit} s ran out before '{}' met any budget", self.strategy))
            }
        }
        s
    }
}

/// Why [`plan_within_budget`] failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PlanFailure {
    /// The request was malformed.
    #[error(transparent)]
    Invalid(#[from] PlanError),
    /// The budget cannot be met by this strategy.
    #[error(transparent)]
    Infeasible(#[from] Infeasible),
}

/// `planner`'s plan for `request`, finished as [`measure_plan`] finishes it: the strategy's own
/// polished form where it made one for this budget (hierarchical's winner may be one no
/// polishing of its raw plan reaches), else the raw plan polished. Host transfers are not
/// kept: for warm starts and other plans compared as schedules alone.
pub(crate) fn plan_finished(planner: &dyn Planner, request: &PlanRequest<'_>) -> Result<Schedule, PlanError> {
    let (raw, mut details) = planner.plan_detailed(request)?;
    let options = request.options;
    match details.polished.take().filter(|p| options.polish && Some(p.target) == request.budget) {
        Some(p) if details.transfers.is_empty() => Ok(p.schedule),
        _ => Ok(finish(request.graph, raw, request.budget, options)),
    }
}

/// Plans with `planner` and measures the plan (polished unless polishing is off) without
/// holding it to `budget`: the first half of [`plan_within_budget`], for callers that compare
/// strategies (`auto`, [`sweep`]) and want an infeasible plan's peak rather than a search for
/// the smallest budget the strategy meets.
pub fn measure_plan(
    planner: &dyn Planner,
    graph: &Graph,
    order: &[NodeId],
    budget: Option<u64>,
    options: &PlannerOptions,
) -> Result<MeasuredPlan, PlanError> {
    let options = &options.with_deadline();
    let baseline = simulate(graph, order).map_err(InvalidRequest::from)?;
    let started = std::time::Instant::now();
    let (raw_schedule, mut details) = planner.plan_detailed(&PlanRequest { graph, order, budget, options })?;
    let invalid = |error| PlanError::InvalidSchedule { strategy: planner.name(), error };
    let raw = simulate_with_transfers(graph, &raw_schedule, &details.transfers).map_err(invalid)?;
    let (schedule, polish_cut) = if !details.transfers.is_empty() {
        (raw_schedule, false)
    } else if let Some(p) = details.polished.take().filter(|p| options.polish && Some(p.target) == budget) {
        // The strategy polished it already, to the same target.
        (p.schedule, p.cut)
    } else {
        finish_until(graph, raw_schedule, budget, options)
    };
    let plan_seconds = started.elapsed().as_secs_f64();
    // A strategy that finished its own search but not the polishing stopped at the deadline too.
    if details.stop == StopReason::Completed && polish_cut {
        details.stop = StopReason::TimeLimit { gap: None };
    }
    let simulation = simulate_with_transfers(graph, &schedule, &details.transfers).map_err(invalid)?;
    let offloading = !details.transfers.is_empty() || options.chain.bandwidth.is_some();
    let bound = bound_for(graph, offloading);
    Ok(MeasuredPlan { schedule, simulation, raw, baseline, lower_bound: bound, plan_seconds, details })
}

/// The proven lower bound a plan is measured against: [`remat_graph::peak_lower_bound`], or
/// where schedules may offload (the plan does, or `--bandwidth` allows it), [`lower_bound`]: an
/// offloaded value comes back without a step, which the former's argument does not allow.
pub(crate) fn bound_for(graph: &Graph, offloading: bool) -> u64 {
    if offloading {
        lower_bound(graph)
    } else {
        remat_graph::peak_lower_bound(graph)
    }
}

/// The name plans applied by [`measure_given`] report as their strategy.
pub const GIVEN: &str = "given";

/// Measures a schedule made elsewhere (saved with `--emit=schedule-json` and given back with
/// `--schedule`) as a plan: nothing is planned or polished, so the rewritten function runs
/// exactly these steps and transfers. Over `budget` it is [`Infeasible`], naming its own peak
/// as the smallest budget it meets.
pub fn measure_given(
    graph: &Graph,
    order: &[NodeId],
    schedule: Schedule,
    transfers: Vec<remat_graph::Transfer>,
    budget: Option<u64>,
) -> Result<MeasuredPlan, PlanFailure> {
    let baseline = simulate(graph, order).map_err(InvalidRequest::from).map_err(PlanError::from)?;
    let simulation = simulate_with_transfers(graph, &schedule, &transfers).map_err(PlanError::InvalidGiven)?;
    let lower_bound = bound_for(graph, !transfers.is_empty());
    if let Some(budget) = budget.filter(|&b| simulation.peak_bytes > b) {
        let peak = simulation.peak_bytes;
        let infeasible = Infeasible {
            strategy: GIVEN,
            budget,
            achieved: peak,
            lower_bound,
            smallest_feasible: Some(peak),
            out_of_time: None,
            proven_infeasible_at: None,
        };
        return Err(infeasible.into());
    }
    let details = PlanDetails { transfers, ..PlanDetails::default() };
    Ok(MeasuredPlan {
        schedule,
        raw: simulation.clone(),
        simulation,
        baseline,
        lower_bound,
        plan_seconds: 0.0,
        details,
    })
}

/// The smallest budget to name in the infeasible diagnostic of `planner`, whose plan carried
/// `details`: one at which the strategy succeeds. The ILP's certificate knows the least peak
/// its class reaches, but a solve at exactly that budget can run out of time, so it is named
/// only when the ILP, asked again at it, meets it; `auto` names the least budget one of the
/// heuristics it compared meets (each checked by its bisection), any other strategy is
/// bisected.
fn named_smallest_budget(
    planner: &dyn Planner,
    graph: &Graph,
    order: &[NodeId],
    options: &PlannerOptions,
    details: &PlanDetails,
) -> Option<u64> {
    let certified = details.facts::<ilp::Certificate>().and_then(|c| c.smallest_feasible_budget).filter(|&budget| {
        let ilp = strategy("ilp").expect("the ilp is a strategy");
        measure_plan(ilp, graph, order, Some(budget), options).is_ok_and(|plan| plan.simulation.peak_bytes <= budget)
    });
    // An ILP that fell back to a heuristic's plan (its solver out of time, or its plan costlier) meets what that
    // heuristic meets: bisecting the ILP itself would run out of time at every probe.
    let fallen_back_to = details.facts::<ilp::Certificate>().and_then(|c| match c.status {
        ilp::SolveStatus::Fallback(to, _) => strategy(to),
        _ => None,
    });
    let searched = if !details.comparison.is_empty() {
        auto::smallest_feasible_budget(graph, order, options, &details.comparison)
    } else if certified.is_none() {
        smallest_feasible_budget(fallen_back_to.unwrap_or(planner), graph, order, options)
    } else {
        None
    };
    certified.into_iter().chain(searched).min()
}

/// Plans with `planner`, measures the result, and checks it against `budget`. When the budget
/// is not met, finds the smallest budget the strategy does meet ([`named_smallest_budget`]):
/// below `budget`, the plan made there is returned (it fits); otherwise it is named in the
/// [`Infeasible`] diagnostic.
pub fn plan_within_budget(
    planner: &dyn Planner,
    graph: &Graph,
    order: &[NodeId],
    budget: Option<u64>,
    options: &PlannerOptions,
) -> Result<MeasuredPlan, PlanFailure> {
    let options = &options.with_deadline();
    let plan = measure_plan(planner, graph, order, budget, options)?;
    if let Some(budget) = budget {
        if plan.simulation.peak_bytes > budget {
            let smallest_feasible = named_smallest_budget(planner, graph, order, options, &plan.details);
            // A heuristic need not be monotone in its budget: one that misses `budget` can
            // meet a smaller one, and its plan there is a plan within `budget`.
            if let Some(smaller) = smallest_feasible.filter(|&s| s < budget) {
                if let Ok(within) = measure_plan(planner, graph, order, Some(smaller), options) {
                    if within.simulation.peak_bytes <= budget {
                        return Ok(within);
                    }
                }
            }
            return Err(Infeasible {
                strategy: planner.name(),
                budget,
                achieved: plan.simulation.peak_bytes,
                lower_bound: plan.lower_bound,
                smallest_feasible,
                out_of_time: options.deadline.expired().then_some(options.time_limit),
                proven_infeasible_at: None,
            }
            .into());
        }
    }
    Ok(plan)
}

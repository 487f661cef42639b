//! `--remat=ilp`: optimal plans from the Checkmate MILP (Jain et al., MLSys 2020), solved
//! with HiGHS through good_lp.
//!
//! `formulation.rs` holds the stages, variables and rows (fixed: Checkmate's; free: the
//! order-free default), `model.rs` the program and the solver call, `rounding.rs` Checkmate's
//! LP relaxation with two-phase rounding (§5) for graphs too large for the MILP. This file
//! decides which to use, seeds the solver with the best heuristic plan, and certifies the
//! result: the MIP's proven gap, the LP relaxation's bound, and the smallest feasible budget.

mod formulation;
pub(crate) mod model;
mod rounding;

use crate::{
    compare_plans, finish, Deadline, FallbackCause, InvalidRequest, NoPlanCause, PlanDetails, PlanError, PlanRequest,
    Planner, StopReason, StrategyFacts,
};
use formulation::{Formulation, Goal, Problem, Stages};
use model::Outcome;
use remat_graph::{simulate, Graph, NodeId, Schedule};
use std::cell::Cell;
use std::time::Instant;

/// Which schedules the stages describe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageOrder {
    /// Checkmate's own: stage t ends with the first computation of node t of the input order.
    Fixed,
    /// Order-free: a stage is any increasing run of the input order.
    Free,
}

/// How the model is solved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SolveMethod {
    /// The MILP, to optimality or until the time limit.
    Milp,
    /// Checkmate's LP relaxation with two-phase rounding (threshold sweep and randomized).
    LpRounding,
    /// LP rounding, then the MILP of the same class for the time left, started from the
    /// rounded plan or a heuristic's, whichever the model prices lower.
    RoundThenMilp,
}

/// The ILP's knobs (`--ilp-*` flags).
#[derive(Clone, Debug, PartialEq)]
pub struct IlpOptions {
    /// Fixed (Checkmate) or order-free stages; `None` picks by graph size.
    pub order: Option<StageOrder>,
    /// Stages of the order-free formulation; `None`: enough for the input order and the warm start.
    pub stages: Option<usize>,
    /// MILP or LP rounding; `None` picks by graph size.
    pub method: Option<SolveMethod>,
    /// Solver wall-clock limit in seconds.
    pub time_limit: f64,
    /// Relative MIP gap at which the solver stops.
    pub mip_gap: f64,
    /// Seed the solver with the best heuristic plan.
    pub warm_start: bool,
    /// Seed of randomized rounding.
    pub seed: u64,
}

impl Default for IlpOptions {
    fn default() -> Self {
        IlpOptions {
            order: None,
            stages: None,
            method: None,
            time_limit: 60.0,
            mip_gap: 1e-4,
            warm_start: true,
            seed: 0,
        }
    }
}

/// How the solver ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SolveStatus {
    /// Proven optimal (within the MIP gap option).
    Optimal,
    /// Stopped at the time limit with a plan; `gap` says how far from optimal it may be.
    TimeLimit,
    /// A plan rounded from the LP relaxation; `lp_bound` bounds the optimum.
    Rounded,
    /// This heuristic's plan is returned, with the bound the solver did prove: the solver found
    /// no plan in its time limit (a plan it could not start from), or only one that missed the
    /// budget or cost more (a plan outside the class, or a rounding with no time to refine).
    Fallback(&'static str, FallbackCause),
}

impl SolveStatus {
    /// The report's name: `optimal`, `time-limit` (also for a fallback, as in schema 1) or
    /// `rounded`.
    pub fn name(self) -> &'static str {
        match self {
            SolveStatus::Optimal => "optimal",
            SolveStatus::TimeLimit | SolveStatus::Fallback(..) => "time-limit",
            SolveStatus::Rounded => "rounded",
        }
    }
}

/// What the ILP proved about its plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Certificate {
    /// The formulation, e.g. `order-free, 9 stages` or `checkmate (fixed order)`.
    pub formulation: String,
    /// The class of schedules the optimum is over.
    pub class: String,
    /// How the solve ended.
    pub status: SolveStatus,
    /// Cost of the solver's plan (before polishing).
    pub objective: f64,
    /// Proven lower bound on the cost of any schedule of the class within the budget.
    pub dual_bound: f64,
    /// Relative gap `(objective − dual_bound) / objective`.
    pub gap: f64,
    /// The LP relaxation's optimum: a lower bound on the cost at this budget within the class.
    pub lp_bound: Option<f64>,
    /// A lower bound on the cost of *every* schedule within the budget, the class's or not:
    /// the baseline plus the recomputation the anchor argument proves ([`crate::cost_bound`]).
    /// Where it is above `dual_bound`, `gap` is measured from it; it also gives a gap to a
    /// heuristic's plan returned from outside the class, which the class's bound cannot.
    pub anchor_bound: Option<f64>,
    /// When the budget is infeasible for the class (or none was given): the least peak the
    /// class reaches (proven when `status` is optimal).
    pub smallest_feasible_budget: Option<u64>,
    /// Variables and constraints of the model.
    pub size: (usize, usize),
    /// The heuristic whose plan seeded the solver, if any.
    pub warm_start: Option<&'static str>,
    /// Seconds in the solver.
    pub solve_seconds: f64,
}

impl Certificate {
    /// Records `bound` (every schedule's, [`Self::anchor_bound`]) and, for a plan `within`
    /// the budget, measures the gap from the higher of it and the class's bound; a fallback
    /// plan, which may lie outside the class, from `bound` alone. A plan over the budget, or
    /// the least-memory answer to an infeasible one, keeps its figures.
    fn raise_to_anchor_bound(&mut self, bound: f64, within: bool) {
        self.anchor_bound = Some(bound);
        if !within || self.smallest_feasible_budget.is_some() || self.objective <= 0.0 {
            return;
        }
        let fallback = matches!(self.status, SolveStatus::Fallback(..));
        let class = if fallback || !self.dual_bound.is_finite() { f64::NEG_INFINITY } else { self.dual_bound };
        let best = class.max(bound).min(self.objective);
        let gap = (self.objective - best) / self.objective;
        if !self.gap.is_finite() || gap < self.gap {
            self.gap = gap;
        }
    }

    /// Why the ILP stopped: optimal (gap 0), within the accepted MIP gap, at the time limit, a
    /// rounded LP (within its gap of the LP bound), or a heuristic's plan it fell back to.
    pub fn stop_reason(&self) -> StopReason {
        let gap = self.gap.is_finite().then_some(self.gap);
        match self.status {
            SolveStatus::Optimal if self.gap > 0.0 => StopReason::Gap { gap: self.gap },
            SolveStatus::Optimal => StopReason::Optimal,
            SolveStatus::TimeLimit => StopReason::TimeLimit { gap },
            SolveStatus::Rounded => StopReason::Gap { gap: self.gap },
            SolveStatus::Fallback(to, cause) => StopReason::Fallback { to, cause },
        }
    }
}

impl StrategyFacts for Certificate {
    fn key(&self) -> &'static str {
        "ilp"
    }

    fn to_json(&self, deterministic: bool) -> serde_json::Value {
        let mut ilp = serde_json::json!({
            "formulation": self.formulation,
            "class": self.class,
            "status": self.status.name(),
            "objective": self.objective,
            "dual_bound": self.dual_bound,
            "gap": self.gap,
            "lp_bound": self.lp_bound,
            "anchor_bound": self.anchor_bound,
            "smallest_feasible_budget": self.smallest_feasible_budget,
            "variables": self.size.0,
            "constraints": self.size.1,
            "warm_start": self.warm_start,
        });
        if !deterministic {
            ilp["solve_seconds"] = serde_json::json!(self.solve_seconds);
        }
        ilp
    }

    fn lines(&self, deterministic: bool) -> Vec<(String, String)> {
        use remat_graph::units::Bytes;
        let mut lines = vec![
            ("ilp".to_string(), format!("{}, {}", self.status.name(), self.formulation)),
            ("ilp class".to_string(), self.class.clone()),
        ];
        let lp = self.lp_bound.map(|b| format!("; LP bound {b:.4e}")).unwrap_or_default()
            + &self.anchor_bound.map(|b| format!("; anchor bound {b:.4e}")).unwrap_or_default();
        // Whether the gap is measured from the anchor bound rather than the class's.
        let from_anchor = self.anchor_bound.is_some_and(|anchor| {
            matches!(self.status, SolveStatus::Fallback(..)) || self.dual_bound.is_nan() || self.dual_bound < anchor
        });
        let proven = match (self.dual_bound.is_finite(), self.gap.is_finite()) {
            (_, true) if from_anchor => format!(
                "dual bound {:.4e} over the class, gap {:.2}% from the anchor bound",
                self.dual_bound,
                100.0 * self.gap
            ),
            (true, true) => format!("dual bound {:.4e}, gap {:.2}%", self.dual_bound, 100.0 * self.gap),
            // A heuristic's plan returned: the bound is the class's, the plan may lie outside it.
            (true, false) => {
                format!("dual bound {:.4e} over the class; no gap for a heuristic's plan", self.dual_bound)
            }
            _ => "no bound proven".to_string(),
        };
        lines.push(("ilp objective".into(), format!("{:.4e} ({proven}){lp}", self.objective)));
        if let Some(b) = self.smallest_feasible_budget {
            lines.push(("ilp least budget".into(), format!("{} ({b} bytes)", Bytes(b))));
        }
        let warm = self.warm_start.map(|w| format!("; warm start: {w}")).unwrap_or_default();
        lines.push(("ilp model".into(), format!("{} variables, {} constraints{warm}", self.size.0, self.size.1)));
        if !deterministic {
            lines.push(("ilp solved in".into(), format!("{:.3} s", self.solve_seconds)));
        }
        lines
    }
}

/// Up to this many nodes the default is the order-free MILP; above, Checkmate's fixed stages.
pub const FREE_ORDER_NODES: usize = 10;
/// Up to this many nodes the default is one node per fixed stage (Checkmate's own stages).
pub const ONE_NODE_STAGES: usize = 120;
/// Above [`ONE_NODE_STAGES`], fixed stages are blocks sized so there are at most this many.
pub const MAX_FIXED_STAGES: usize = 60;
/// Up to this many nodes the default method is the MILP; above, LP rounding.
pub const MILP_NODES: usize = 300;

/// LP rounding hands the time left to the MILP ([`Solve`]'s `refine`) only when at least
/// this many seconds remain.
pub const REFINE_MIN_SECONDS: f64 = 2.0;

/// How many times a heuristic plans again at a lower budget for its projection into the
/// fixed stages' class to fit the budget ([`Solve`]'s `in_class`).
pub const PROJECTION_REPLANS: usize = 4;

/// The most relaxations LP rounding solves for one plan ([`IlpRemat`]'s `round`).
pub const ROUNDING_SOLVES: usize = 6;
/// The first lower relaxation's budget is at least 1/this of the plan's budget below the
/// last (doubling with each further solve).
pub const MIN_ROUNDING_STEP: u64 = 100;

/// The strategies whose plans seed the solver, cheapest first after polishing.
pub const WARM_STARTS: &[&str] = &["none", "greedy", "treewidth", "pathwidth", "acg", "dtr", "chain", "hierarchical"];

/// `--remat=ilp`.
pub struct IlpRemat;

impl Planner for IlpRemat {
    fn name(&self) -> &'static str {
        "ilp"
    }
    fn solves_milp(&self) -> bool {
        true
    }
    fn summary(&self) -> &'static str {
        "optimal plan from the Checkmate MILP (HiGHS); order-free by default, --ilp-order=fixed for Checkmate's stages"
    }
    fn plan(&self, request: &PlanRequest<'_>) -> Result<Schedule, PlanError> {
        self.plan_detailed(request).map(|(s, _)| s)
    }
    fn plan_detailed(&self, request: &PlanRequest<'_>) -> Result<(Schedule, PlanDetails), PlanError> {
        request.order_positions()?;
        if request.order.is_empty() {
            return Ok((Vec::new(), PlanDetails::stopped(StopReason::Optimal)));
        }
        if let Some(certificate) = input_order_is_optimal(request) {
            return Ok((
                request.order.to_vec(),
                PlanDetails::stopped(certificate.stop_reason()).with_facts(certificate),
            ));
        }
        if let Some(why) = oversized(request) {
            return Err(PlanError::NoPlan { strategy: "ilp", why });
        }
        let (schedule, certificate) = Solve::new(request).run()?;
        Ok((schedule, PlanDetails::stopped(certificate.stop_reason()).with_facts(certificate)))
    }
}

/// Most variables of a model the exact MILP builds: HiGHS's branch and bound on more does not
/// finish on 2 cores in any useful time, and LP rounding is the method for those.
pub const MAX_MILP_COLUMNS: usize = 1_000_000;
/// Most variables of any model (the LP relaxation of LP rounding): Checkmate's model of a
/// 19k-op step (4.0 M variables, 7.7 M rows) took 9.9 GB, and HiGHS ran 25 s past its time
/// limit in presolve; at this bound about 4 GB, and such relaxations are not solved within
/// a minute on 2 cores anyway (the ILP then returns its best warm start).
pub const MAX_LP_COLUMNS: usize = 1_500_000;

/// Why the request's model would be too large to build, before anything is built: a bound on
/// its variables (R, S and U, each about stages × nodes, and the memory rows' helpers; 4 per
/// stage and node covers the 3.5 measured) over the method's limit.
fn oversized(request: &PlanRequest<'_>) -> Option<NoPlanCause> {
    let n = request.order.len();
    let options = &request.options.ilp;
    let order = options.order.unwrap_or(if n <= FREE_ORDER_NODES { StageOrder::Free } else { StageOrder::Fixed });
    let stages = match order {
        // At least the input order's single run per node; heuristics may need more.
        StageOrder::Free => options.stages.unwrap_or(n).max(1),
        StageOrder::Fixed => n.div_ceil(if n <= ONE_NODE_STAGES { 1 } else { n.div_ceil(MAX_FIXED_STAGES) }),
    };
    let columns = stages.saturating_mul(n).saturating_mul(4);
    let method = match order {
        StageOrder::Free => SolveMethod::Milp,
        StageOrder::Fixed => {
            options.method.unwrap_or(if n <= MILP_NODES { SolveMethod::Milp } else { SolveMethod::RoundThenMilp })
        }
    };
    let (limit, alternative) = match method {
        SolveMethod::Milp if order == StageOrder::Free => {
            (MAX_MILP_COLUMNS, "--ilp-order=fixed, --ilp-method=lp-rounding or --remat=hierarchical")
        }
        SolveMethod::Milp => (MAX_MILP_COLUMNS, "--ilp-method=lp-rounding or --remat=hierarchical"),
        SolveMethod::LpRounding | SolveMethod::RoundThenMilp => {
            (MAX_LP_COLUMNS, "--remat=hierarchical or --remat=auto")
        }
    };
    (columns > limit).then_some(NoPlanCause::ModelTooLarge { columns, limit, alternative })
}

/// The input order's certificate when it needs no solver: it fits the budget and computes each
/// node the outputs need exactly once, which every schedule must, so no schedule of any class
/// costs less (a budget at or above the input order's peak: Checkmate's relaxation of 76k
/// variables on a 350-node step would run out of time proving what this proves at once).
fn input_order_is_optimal(request: &PlanRequest<'_>) -> Option<Certificate> {
    let (graph, order) = (request.graph, request.order);
    let budget = request.budget?;
    let input_order = simulate(graph, order).ok()?;
    if input_order.peak_bytes > budget {
        return None;
    }
    // The nodes the outputs need: every schedule computes each at least once.
    let mut needed = vec![false; graph.len()];
    for o in graph.outputs() {
        needed[o.index()] = true;
    }
    for &n in order.iter().rev() {
        if needed[n.index()] {
            for &p in graph.preds(n) {
                needed[p.index()] = true;
            }
        }
    }
    let least: f64 = order.iter().filter(|n| needed[n.index()]).map(|&n| graph.node(n).cost).sum();
    // The input order computes something the outputs do not need: let the solver decide.
    if input_order.cost > least * (1.0 + 1e-12) {
        return None;
    }
    Some(Certificate {
        formulation: "none: the input order fits the budget".into(),
        class: "every schedule (each node the outputs need is computed at least once)".into(),
        status: SolveStatus::Optimal,
        objective: input_order.cost,
        dual_bound: least,
        gap: 0.0,
        lp_bound: Some(least),
        anchor_bound: None,
        smallest_feasible_budget: None,
        size: (0, 0),
        warm_start: None,
        solve_seconds: 0.0,
    })
}

/// A heuristic's polished plan, measured.
struct Heuristic {
    name: &'static str,
    schedule: Schedule,
    peak: u64,
    cost: f64,
}

impl Heuristic {
    /// The certificate of this plan returned in place of the solver's (it found none in its
    /// time limit), with what the solver did prove: `dual_bound` and `lp_bound` in cost units
    /// (NaN and `None` when nothing).
    fn fallback_certificate(
        &self,
        f: &Formulation<'_>,
        dual_bound: f64,
        gap: f64,
        lp_bound: Option<f64>,
        solve_seconds: f64,
    ) -> Certificate {
        Certificate {
            formulation: String::new(),
            class: String::new(),
            status: SolveStatus::Fallback(self.name, FallbackCause::TimeLimit),
            objective: self.cost,
            dual_bound,
            gap,
            lp_bound,
            anchor_bound: None,
            smallest_feasible_budget: None,
            size: (f.model.columns.len(), f.model.rows.len()),
            warm_start: Some(self.name),
            solve_seconds,
        }
    }
}

/// A warm start: whose plan, and its assignment; `None` where no plan is in the class.
type Start = Option<(&'static str, Vec<f64>)>;

/// The stages' order for a problem of `n` nodes: `--ilp-order`, else by size.
fn stage_order_for(n: usize, options: &IlpOptions) -> StageOrder {
    options.order.unwrap_or(if n <= FREE_ORDER_NODES { StageOrder::Free } else { StageOrder::Fixed })
}

/// Each node of `schedule` once, where it is first computed: a topological order.
fn first_computations(graph: &Graph, schedule: &[NodeId]) -> Vec<NodeId> {
    let mut seen = vec![false; graph.len()];
    schedule.iter().copied().filter(|v| !std::mem::replace(&mut seen[v.index()], true)).collect()
}

/// Number of increasing runs of the input order in `schedule`: the stages the order-free
/// formulation needs for it.
pub fn increasing_runs(graph: &Graph, order: &[NodeId], schedule: &[NodeId]) -> usize {
    let mut position = vec![usize::MAX; graph.len()];
    for (i, &v) in order.iter().enumerate() {
        position[v.index()] = i;
    }
    let mut runs = usize::from(!schedule.is_empty());
    for w in schedule.windows(2) {
        if position[w[1].index()] <= position[w[0].index()] {
            runs += 1;
        }
    }
    runs
}

/// One `--remat=ilp` run: the problem, its deadline, and the heuristics seeding it.
struct Solve<'r> {
    request: &'r PlanRequest<'r>,
    problem: Problem,
    deadline: Instant,
    started: Instant,
    heuristics: Vec<Heuristic>,
    verbose: bool,
    /// The heuristic in whose order of first computations `problem`'s fixed stages are, where
    /// not the input order's; `input_problem` then keeps the input order's, for LP rounding.
    stage_order: Option<&'static str>,
    input_problem: Option<Problem>,
    /// Whose order the returned plan's class follows (`stage_order`, or `None` where LP
    /// rounding's plan in the input order's class stands).
    class_order: Cell<Option<&'static str>>,
    /// Seconds the last LP relaxation took HiGHS (0 before one is solved): a MILP solved after
    /// it keeps half that back from HiGHS's limit (see [`Self::solve`]).
    last_relaxation: Cell<f64>,
}

impl<'r> Solve<'r> {
    fn new(request: &'r PlanRequest<'r>) -> Self {
        let started = Instant::now();
        let options = &request.options.ilp;
        // Its own limit, within the request's deadline (`--time-limit`, or auto's).
        let own = started + std::time::Duration::from_secs_f64(options.time_limit.max(0.0));
        let deadline = request.options.deadline.instant().map_or(own, |d| d.min(own));
        let mut problem = Problem::new(request.graph, request.order);
        let mut heuristics = Vec::new();
        if options.warm_start {
            for name in WARM_STARTS {
                let Some(planner) = crate::strategy(name) else { continue };
                let request = PlanRequest { options: request.options, ..*request };
                let Ok(schedule) = crate::plan_finished(planner, &request) else { continue };
                if let Ok(sim) = simulate(request.graph, &schedule) {
                    heuristics.push(Heuristic { name, schedule, peak: sim.peak_bytes, cost: sim.cost });
                }
            }
        }
        // Best first (a stable sort keeps WARM_STARTS order among equals).
        heuristics.sort_by(|a, b| compare_plans((a.peak, a.cost), (b.peak, b.cost), request.budget));
        // Checkmate's stages follow a topological order, any one: the MILP's follow the order in
        // which the best heuristic plan within the budget first computes each node, so that
        // plan, projected, is in the class (the input order would leave out the chain view's
        // and hierarchical's plans). LP rounding keeps the input order: its relaxation there
        // rounds better (JAX's scanned RNN at 70 %: +19.9 % against +188 % in greedy's order).
        // Order-free stages are over every order already.
        let (mut stage_order, mut input_problem) = (None, None);
        let fixed = stage_order_for(problem.len(), options) == StageOrder::Fixed;
        let within = |h: &&Heuristic| fixed && request.budget.is_some_and(|b| h.peak <= b);
        if let Some(h) = heuristics.first().filter(within) {
            let firsts = first_computations(request.graph, &h.schedule);
            if firsts.len() == request.order.len() && firsts != request.order {
                tracing::info!("ilp: the MILP's stages in the order of {}'s first computations", h.name);
                input_problem = Some(std::mem::replace(&mut problem, Problem::new(request.graph, &firsts)));
                stage_order = Some(h.name);
            }
        }
        let verbose = tracing::enabled!(target: "remat_planners::ilp", tracing::Level::DEBUG)
            || std::env::var_os("REMAT_HIGHS_LOG").is_some();
        let class_order = Cell::new(stage_order);
        Solve {
            request,
            problem,
            deadline,
            started,
            heuristics,
            verbose,
            stage_order,
            input_problem,
            class_order,
            last_relaxation: Cell::new(0.0),
        }
    }

    /// The solver's time limit in seconds: `--ilp-time-limit`, or less within the request's
    /// deadline.
    fn time_limit(&self) -> f64 {
        self.deadline.saturating_duration_since(self.started).as_secs_f64()
    }

    fn remaining(&self) -> f64 {
        self.deadline.saturating_duration_since(Instant::now()).as_secs_f64()
    }

    /// The problem in the input order (LP rounding's).
    fn input_problem(&self) -> &Problem {
        self.input_problem.as_ref().unwrap_or(&self.problem)
    }

    fn stages(&self) -> Stages {
        let n = self.problem.len();
        let options = &self.request.options.ilp;
        match stage_order_for(n, options) {
            StageOrder::Free => {
                // Enough stages for the input order and every heuristic plan, so that the
                // class contains each of them.
                let runs = self
                    .heuristics
                    .iter()
                    .map(|h| increasing_runs(self.request.graph, self.request.order, &h.schedule))
                    .max()
                    .unwrap_or(1);
                Stages::free(n, options.stages.unwrap_or(n.max(runs)))
            }
            StageOrder::Fixed => {
                let block = if n <= ONE_NODE_STAGES { 1 } else { n.div_ceil(MAX_FIXED_STAGES) };
                Stages::fixed(n, block)
            }
        }
    }

    fn describe(&self, stages: &Stages) -> (String, String) {
        let view_rule = "never recompute a view's source while an older view of it is live";
        match stages.order {
            StageOrder::Free => (
                format!("order-free, {} stages", stages.len()),
                format!("schedules of at most {} increasing runs of the input order (every schedule when that covers its run count) that {view_rule}", stages.len()),
            ),
            StageOrder::Fixed => {
                let block = stages.blocks.first().map_or(1, |b| b.1 - b.0);
                let formulation = if block == 1 { "checkmate, fixed order".to_string() } else { format!("checkmate, fixed order, {block}-node stages") };
                let recompute = if block == 1 { "" } else { " before the block's first computations" };
                let order = match self.class_order.get() {
                    Some(name) => format!("the order of {name}'s plan's first computations"),
                    None => "the input order".to_string(),
                };
                let formulation = match self.class_order.get() {
                    Some(name) => format!("{formulation}, in {name}'s order"),
                    None => formulation,
                };
                (
                    formulation,
                    format!("schedules whose first computations follow {order} in {block}-node stages, each recomputing earlier nodes at most once, in that order{recompute}, and that {view_rule}"),
                )
            }
        }
    }

    /// A heuristic's plan as an assignment of `formulation`: the plan itself where it is in
    /// the class, else its projection into the class ([`Formulation::project`]). A projection
    /// holds recomputed values from their stage's start, so it may peak over the budget; the
    /// heuristic then plans again at a budget lowered by the overshoot (proportionally), at
    /// most [`PROJECTION_REPLANS`] times, until its projection fits.
    fn in_class(&self, formulation: &Formulation<'_>, h: &Heuristic) -> Option<Vec<f64>> {
        let graph = self.request.graph;
        if let Some(x) = formulation.assignment(graph, &h.schedule) {
            return Some(x);
        }
        let mut schedule = h.schedule.clone();
        let mut plan_budget = self.request.budget;
        for replan in 0..=PROJECTION_REPLANS {
            let projected = formulation.project(&schedule)?;
            if let Some(x) = formulation.assignment(graph, &projected) {
                return Some(x);
            }
            let peak = simulate(graph, &projected).ok()?.peak_bytes;
            let (Goal::Cost { budget }, Some(planned)) = (formulation.goal, plan_budget) else { return None };
            tracing::debug!(
                heuristic = h.name,
                replan,
                planned,
                projected_peak = peak,
                budget,
                "ilp: a projected plan over the budget"
            );
            if peak <= budget || replan == PROJECTION_REPLANS || self.remaining() < REFINE_MIN_SECONDS {
                return None;
            }
            let lower = (planned as u128 * budget as u128 / peak as u128) as u64;
            plan_budget = Some(lower.min(planned.saturating_sub(1)));
            let planner = crate::strategy(h.name)?;
            let request = PlanRequest { budget: plan_budget, ..*self.request };
            let replanned = crate::plan_finished(planner, &request).ok()?;
            // A plan that does not depend on the budget (the input order) stays over it.
            if replanned == schedule {
                return None;
            }
            schedule = replanned;
        }
        None
    }

    /// The best heuristic plan the formulation can start from, as its canonical assignment.
    fn warm_start(&self, formulation: &Formulation<'_>) -> Option<(&'static str, Vec<f64>)> {
        // Each heuristic's plan, or where it is not in the class, its projection into it; the
        // one the model prices lowest.
        let heuristic = self
            .heuristics
            .iter()
            .filter_map(|h| Some((h.name, self.in_class(formulation, h)?)))
            .min_by(|a, b| formulation.model.objective(&a.1).total_cmp(&formulation.model.objective(&b.1)));
        // The order-free class contains Checkmate's, whose MILP is far smaller and solves fast:
        // its optimum is a better start than any heuristic it beats.
        if formulation.stages.order != StageOrder::Free || !self.request.options.ilp.warm_start {
            return heuristic;
        }
        let fixed = Formulation::build(&self.problem, Stages::fixed(self.problem.len(), 1), formulation.goal);
        let initial = self.heuristics.iter().find_map(|h| fixed.assignment(self.request.graph, &h.schedule));
        let solved = fixed
            .model
            .solve(
                false,
                self.remaining() / 4.0,
                self.request.options.ilp.mip_gap,
                initial.as_deref(),
                self.verbose,
                None,
            )
            .ok()?;
        let checkmate = match solved.outcome {
            Outcome::Optimal | Outcome::TimeLimit => {
                formulation.assignment(self.request.graph, &fixed.schedule(&solved.values))
            }
            _ => None,
        };
        match (heuristic, checkmate) {
            (Some(h), Some(c)) => Some(if formulation.model.objective(&c) < formulation.model.objective(&h.1) {
                ("checkmate", c)
            } else {
                h
            }),
            (h, c) => h.or(c.map(|c| ("checkmate", c))),
        }
    }

    fn solve(
        &self,
        formulation: &Formulation<'_>,
        relax: bool,
        initial: Option<&[f64]>,
    ) -> Result<model::Solved, PlanError> {
        let options = &self.request.options.ilp;
        tracing::info!(
            "ilp: {} {} variables, {} rows, {:.1} s left",
            if relax { "LP relaxation," } else { "MILP," },
            formulation.model.columns.len(),
            formulation.model.rows.len(),
            self.remaining()
        );
        // HiGHS reads its clock between the LPs of its cut loop, not within one, so a MILP
        // overran its limit by up to half an LP of the same model (2.6 s past 26.2 s on a
        // 364-node ResNet, its LPs 5–10 s): that much is kept back where an LP was timed.
        let reserve = if relax { 0.0 } else { self.last_relaxation.get() / 2.0 };
        let solved = formulation
            .model
            .solve(relax, self.remaining() - reserve, options.mip_gap, initial, self.verbose, None)
            .map_err(|e| PlanError::Solver { strategy: "ilp", message: e.to_string() })?;
        if relax && solved.outcome != Outcome::NoSolution {
            self.last_relaxation.set(solved.seconds);
        }
        Ok(solved)
    }

    fn run(self) -> Result<(Schedule, Certificate), PlanError> {
        // Fast (a few min cuts per anchor) and independent of the class: first, so that its
        // time is within the limit.
        let anchor_bound = self.request.budget.and_then(|budget| self.anchor_bound(budget));
        if let Some(proven) = self.warm_start_meets(anchor_bound) {
            return Ok(proven);
        }
        let stages = self.stages();
        let n = self.problem.len();
        let method = self.request.options.ilp.method.unwrap_or(if n <= MILP_NODES {
            SolveMethod::Milp
        } else {
            SolveMethod::RoundThenMilp
        });
        let method = if stages.order == StageOrder::Free { SolveMethod::Milp } else { method };
        let described = stages.clone();
        let result = match (method, self.request.budget) {
            (SolveMethod::RoundThenMilp, Some(budget)) => {
                let (rounded, raw) = self.round(stages.clone(), Some(budget))?;
                self.refine(stages, budget, rounded, raw)
            }
            (SolveMethod::LpRounding | SolveMethod::RoundThenMilp, budget) => {
                self.round(stages, budget).map(|(rounded, _)| rounded)
            }
            (SolveMethod::Milp, Some(budget)) => self.within_budget(stages, budget),
            (SolveMethod::Milp, None) => self.least_memory_then_cost(stages),
        }?;
        let (mut schedule, mut certificate) = result;
        if let Some(budget) = self.request.budget {
            if let Some(h) = self.better_heuristic(&schedule, budget) {
                tracing::info!(
                    "ilp: {}'s plan (cost {}) is better than the ILP's (cost {})",
                    h.name,
                    h.cost,
                    certificate.objective
                );
                schedule = h.schedule.clone();
                certificate = Certificate {
                    status: SolveStatus::Fallback(h.name, FallbackCause::Costlier),
                    objective: h.cost,
                    // The class's bound stands; a gap would compare it with a plan that may
                    // lie outside the class.
                    gap: f64::NAN,
                    smallest_feasible_budget: None,
                    warm_start: Some(h.name),
                    ..certificate
                };
            }
        }
        // After solving: the class is in whose order the returned plan's formulation was.
        let (formulation_name, class) = self.describe(&described);
        certificate.formulation = formulation_name;
        certificate.class = class;
        if let (Some(bound), Some(budget)) = (anchor_bound, self.request.budget) {
            let within = simulate(self.request.graph, &schedule).is_ok_and(|s| s.peak_bytes <= budget);
            certificate.raise_to_anchor_bound(bound, within);
        }
        certificate.solve_seconds = self.started.elapsed().as_secs_f64();
        tracing::info!("ilp: {:?}, cost {}, gap {:.4}", certificate.status, certificate.objective, certificate.gap);
        Ok((schedule, certificate))
    }

    /// The cheapest warm start within the budget with its certificate, where its cost is within
    /// the accepted MIP gap of `anchor_bound` (every schedule's): no class can do better, so
    /// the solver is not started.
    fn warm_start_meets(&self, anchor_bound: Option<f64>) -> Option<(Schedule, Certificate)> {
        let (bound, budget) = (anchor_bound?, self.request.budget?);
        let best = self.heuristics.iter().filter(|h| h.peak <= budget).min_by(|a, b| a.cost.total_cmp(&b.cost))?;
        // Within the bound's own rounding margin the plan is the optimum.
        let gap = ((best.cost - bound) / best.cost).max(0.0);
        let gap = if gap <= 1e-9 { 0.0 } else { gap };
        if !(best.cost > 0.0 && gap <= self.request.options.ilp.mip_gap) {
            return None;
        }
        tracing::info!("ilp: {}'s plan (cost {}) meets the anchor bound {bound:.4e}: no solve", best.name, best.cost);
        let certificate = Certificate {
            formulation: format!("none: {}'s plan meets the anchor bound", best.name),
            class: "every schedule (the anchor argument's bound)".into(),
            status: SolveStatus::Optimal,
            objective: best.cost,
            dual_bound: bound,
            gap,
            lp_bound: None,
            anchor_bound: Some(bound),
            smallest_feasible_budget: None,
            size: (0, 0),
            warm_start: Some(best.name),
            solve_seconds: self.started.elapsed().as_secs_f64(),
        };
        Some((best.schedule.clone(), certificate))
    }

    /// The least cost of every schedule within `budget` by the anchor argument: the input
    /// order's cost (each node runs at least once) plus the recomputation it proves. `None`
    /// where it proves the budget infeasible (the solver's own least-memory answer stands).
    fn anchor_bound(&self, budget: u64) -> Option<f64> {
        let graph = self.request.graph;
        let baseline = simulate(graph, self.request.order).ok()?.cost;
        let bound = crate::cost_bound::recompute_lower_bound(
            graph,
            self.request.order,
            budget,
            Deadline::after(self.remaining()),
        );
        tracing::info!("ilp: the anchor argument proves {:.4e} of recomputation ({:?})", bound.cost, bound.status);
        (bound.status == crate::cost_bound::BoundStatus::Proven).then_some(baseline + bound.cost)
    }

    /// The warm starts' plan to return in place of the solver's `schedule`, where one is
    /// better at `budget` ([`compare_plans`]: within it, then cheaper). They were planned and
    /// finished before the solve, so the ILP never answers worse than what it started from.
    fn better_heuristic(&self, schedule: &[NodeId], budget: u64) -> Option<&Heuristic> {
        let own = simulate(self.request.graph, schedule).ok().map(|s| (s.peak_bytes, s.cost));
        let best =
            self.heuristics.iter().min_by(|a, b| compare_plans((a.peak, a.cost), (b.peak, b.cost), Some(budget)))?;
        let better = own.is_none_or(|own| compare_plans((best.peak, best.cost), own, Some(budget)).is_lt());
        better.then_some(best)
    }

    fn certificate(
        &self,
        f: &Formulation<'_>,
        solved: &model::Solved,
        warm: Option<&'static str>,
        lp_bound: Option<f64>,
    ) -> Certificate {
        let scale = self.problem.cost_scale;
        let objective = solved.objective * scale;
        let dual_bound = solved.dual_bound * scale;
        let gap = if objective > 0.0 { ((objective - dual_bound) / objective).max(0.0) } else { 0.0 };
        Certificate {
            formulation: String::new(),
            class: String::new(),
            status: if solved.outcome == Outcome::Optimal { SolveStatus::Optimal } else { SolveStatus::TimeLimit },
            objective,
            dual_bound,
            gap,
            lp_bound: lp_bound.map(|b| b * scale),
            anchor_bound: None,
            smallest_feasible_budget: None,
            size: (f.model.columns.len(), f.model.rows.len()),
            warm_start: warm,
            solve_seconds: 0.0,
        }
    }

    fn extract(&self, f: &Formulation<'_>, values: &[f64]) -> Result<Schedule, PlanError> {
        let schedule = f.schedule(values);
        remat_graph::validate(self.request.graph, &schedule)
            .map_err(|e| PlanError::NoPlan { strategy: "ilp", why: NoPlanCause::InvalidSolution(e) })?;
        Ok(schedule)
    }

    /// The cheapest plan within `budget`; when there is none, the least-memory plan, which
    /// names the smallest feasible budget.
    fn within_budget(&self, stages: Stages, budget: u64) -> Result<(Schedule, Certificate), PlanError> {
        let (f, warm, _) = self.cheaper_start(&stages, budget, &[]);
        // Below the proven lower bound nothing fits: go straight to the least peak.
        let below_bound = budget < remat_graph::peak_lower_bound(self.request.graph);
        let lp = if below_bound { None } else { Some(self.solve(&f, true, None)?) };
        if let Some(lp) = lp.filter(|lp| lp.outcome != Outcome::Infeasible) {
            let solved = self.solve(&f, false, warm.as_ref().map(|w| w.1.as_slice()))?;
            match solved.outcome {
                Outcome::Optimal | Outcome::TimeLimit => {
                    let schedule = self.extract(&f, &solved.values)?;
                    let lp_bound = (lp.outcome == Outcome::Optimal).then_some(lp.objective);
                    return Ok((schedule, self.certificate(&f, &solved, warm.map(|w| w.0), lp_bound)));
                }
                Outcome::NoSolution => return self.best_heuristic(&f, budget, &solved, lp.objective),
                Outcome::Infeasible => {}
            }
        }
        // Infeasible in the class: the least peak the class reaches is the smallest budget.
        // (`least_memory` solves in `problem`'s stage order.)
        self.class_order.set(self.stage_order);
        let (schedule, mut certificate) = self.least_memory(stages)?;
        certificate.lp_bound = None;
        Ok((schedule, certificate))
    }

    /// The MILP's formulation at `budget`, in the best heuristic plan's stage order or, where
    /// the stages were reordered, in the input order's if its warm start is cheaper (the
    /// reordered plan's projection may overshoot the budget while the input order's class
    /// holds another heuristic's plan); the input order's where neither has a start. `plans`
    /// (LP rounding's, in the input order) are starts there too. Returns the start and whose
    /// order the stages follow, also recorded for the report (`class_order`).
    fn cheaper_start(
        &self,
        stages: &Stages,
        budget: u64,
        plans: &[&Schedule],
    ) -> (Formulation<'_>, Start, Option<&'static str>) {
        let graph = self.request.graph;
        let cost = |f: &Formulation<'_>, w: &Start| {
            w.as_ref().map_or(f64::INFINITY, |w| f.model.objective(&w.1) * f.problem.cost_scale)
        };
        let input = Formulation::build(self.input_problem(), stages.clone(), Goal::Cost { budget });
        let input_warm = plans
            .iter()
            .map(|plan| input.assignment(graph, plan).map(|x| ("rounding", x)))
            .chain([self.warm_start(&input)])
            .min_by(|a, b| cost(&input, a).total_cmp(&cost(&input, b)))
            .flatten();
        let chosen = match self.input_problem.is_some() {
            true => {
                let reordered = Formulation::build(&self.problem, stages.clone(), Goal::Cost { budget });
                let warm = self.warm_start(&reordered);
                if cost(&reordered, &warm) < cost(&input, &input_warm) {
                    (reordered, warm, self.stage_order)
                } else {
                    (input, input_warm, None)
                }
            }
            false => (input, input_warm, None),
        };
        self.class_order.set(chosen.2);
        chosen
    }

    /// When the solver found no plan in its time limit and none of the heuristic plans was
    /// in its class to start from: the cheapest heuristic plan within the budget (or, when none
    /// is, the lowest, which the caller reports over the budget), said so in the certificate,
    /// with the bound the solver did prove.
    fn best_heuristic(
        &self,
        f: &Formulation<'_>,
        budget: u64,
        solved: &model::Solved,
        lp_objective: f64,
    ) -> Result<(Schedule, Certificate), PlanError> {
        // Sorted best first under the budget: the first is within it when any is.
        let Some(h) = self.heuristics.first() else {
            let why = NoPlanCause::TimeLimitWithinBudget(self.time_limit());
            return Err(PlanError::NoPlan { strategy: "ilp", why });
        };
        let scale = self.problem.cost_scale;
        let bound =
            if solved.dual_bound.is_finite() { solved.dual_bound.max(lp_objective) } else { lp_objective } * scale;
        let gap = if h.peak > budget {
            f64::NAN
        } else if h.cost > 0.0 {
            ((h.cost - bound) / h.cost).max(0.0)
        } else {
            0.0
        };
        let certificate = h.fallback_certificate(f, bound, gap, Some(lp_objective * scale), 0.0);
        tracing::warn!(
            "ilp: the solver found no plan in its time limit; returning {}'s plan, within {:.1} % of the proven bound",
            h.name,
            certificate.gap * 100.0
        );
        Ok((h.schedule.clone(), certificate))
    }

    /// The least-memory plan (cost ignored); its peak is the smallest feasible budget.
    fn least_memory(&self, stages: Stages) -> Result<(Schedule, Certificate), PlanError> {
        let f = Formulation::build(&self.problem, stages, Goal::Memory);
        let warm = self.warm_start(&f);
        let solved = self.solve(&f, false, warm.as_ref().map(|w| w.1.as_slice()))?;
        if !matches!(solved.outcome, Outcome::Optimal | Outcome::TimeLimit) {
            // Out of time with no schedule: the lowest heuristic plan, nothing proven.
            let lowest = self.heuristics.iter().min_by(|a, b| compare_plans((a.peak, a.cost), (b.peak, b.cost), None));
            let Some(h) = lowest else {
                let why = NoPlanCause::TimeLimit(self.time_limit());
                return Err(PlanError::NoPlan { strategy: "ilp", why });
            };
            tracing::warn!("ilp: the solver found no schedule in its time limit; returning {}'s plan", h.name);
            return Ok((h.schedule.clone(), h.fallback_certificate(&f, f64::NAN, f64::NAN, None, solved.seconds)));
        }
        let schedule = self.extract(&f, &solved.values)?;
        let measured = simulate(self.request.graph, &schedule).map_err(InvalidRequest::from)?;
        let peak = measured.peak_bytes;
        let mut certificate = self.certificate(&f, &solved, warm.map(|w| w.0), None);
        // The memory program's objective is the peak (in units), not a cost.
        certificate.objective = measured.cost;
        certificate.dual_bound = f64::NAN;
        certificate.gap = if solved.outcome == Outcome::Optimal {
            0.0
        } else {
            (solved.objective - solved.dual_bound).max(0.0) / solved.objective.max(1e-9)
        };
        certificate.smallest_feasible_budget = Some(peak);
        Ok((schedule, certificate))
    }

    /// Without a budget: the least peak the class reaches, then the cheapest plan at it.
    fn least_memory_then_cost(&self, stages: Stages) -> Result<(Schedule, Certificate), PlanError> {
        let (first, memory) = self.least_memory(stages.clone())?;
        let peak = memory.smallest_feasible_budget.unwrap_or(u64::MAX);
        let f = Formulation::build(&self.problem, stages, Goal::Cost { budget: peak });
        let seed = f.assignment(self.request.graph, &first);
        let lp = self.solve(&f, true, None)?;
        let solved = self.solve(&f, false, seed.as_deref())?;
        if !matches!(solved.outcome, Outcome::Optimal | Outcome::TimeLimit) {
            return Ok((first, memory));
        }
        let schedule = self.extract(&f, &solved.values)?;
        let lp_bound = (lp.outcome == Outcome::Optimal).then_some(lp.objective);
        let mut certificate = self.certificate(&f, &solved, memory.warm_start, lp_bound);
        if memory.status != SolveStatus::Optimal {
            certificate.status = SolveStatus::TimeLimit;
        }
        certificate.smallest_feasible_budget = Some(peak);
        Ok((schedule, certificate))
    }

    /// When the LP relaxation itself was not solved in the time limit (Checkmate's model of a
    /// step of thousands of nodes has millions of variables): the best heuristic plan, the one
    /// the solver would have started from, said so in the certificate, with nothing proven.
    fn unsolved_relaxation(
        &self,
        f: &Formulation<'_>,
        lp: &model::Solved,
    ) -> Result<(Schedule, Certificate), PlanError> {
        let Some(h) = self.heuristics.first() else {
            let why = NoPlanCause::RelaxationTimeLimit(self.time_limit());
            return Err(PlanError::NoPlan { strategy: "ilp", why });
        };
        tracing::warn!(
            "ilp: the LP relaxation was not solved in its time limit ({:.0} s); returning {}'s plan, with no bound proven",
            self.time_limit(),
            h.name
        );
        Ok((h.schedule.clone(), h.fallback_certificate(f, f64::NAN, f64::NAN, None, lp.seconds)))
    }

    /// After LP rounding, the time left goes to the MILP of the same class, started from the
    /// rounded plan (or a heuristic's, whichever the model prices lower): branch and bound
    /// improves on the rounding and raises the bound, so the gap reported closes as far as the
    /// time allows. The better of the two plans is returned, with the higher of the two bounds
    /// (the relaxation's bound holds for this class only where no fused recomputation is
    /// offered: the rounding's relaxation offers none, so it would not bound a fused optimum).
    fn refine(
        &self,
        stages: Stages,
        budget: u64,
        rounded: (Schedule, Certificate),
        raw: Option<Schedule>,
    ) -> Result<(Schedule, Certificate), PlanError> {
        let (schedule, mut certificate) = rounded;
        // No rounding (the relaxation was not solved in time): nothing to refine.
        let Some(raw) = raw.filter(|_| self.remaining() >= REFINE_MIN_SECONDS) else {
            return Ok((schedule, certificate));
        };
        // The MILP in the input order's class, from the rounded plan (or a heuristic's), and,
        // where the stages were put in a heuristic's order, in that class from its plan: the
        // one whose start the model prices lower runs.
        let graph = self.request.graph;
        let (f, warm, order) = self.cheaper_start(&stages, budget, &[&schedule, &raw]);
        // A model the exact MILP would not take (`oversized`'s limit for it): the rounding stands.
        if f.model.columns.len() > MAX_MILP_COLUMNS {
            self.class_order.set(None);
            return Ok((schedule, certificate));
        }
        let solved = self.solve(&f, false, warm.as_ref().map(|w| w.1.as_slice()))?;
        // The rounding's bound is of the input order's class, and of a relaxation offering no
        // fused recomputation.
        let same_class = order.is_none() && f.problem.fusions.iter().all(Vec::is_empty);
        let rounding_bound = if same_class { certificate.dual_bound } else { f64::NEG_INFINITY };
        let scale = f.problem.cost_scale;
        let bound = if solved.dual_bound.is_finite() {
            (solved.dual_bound * scale).max(rounding_bound)
        } else {
            rounding_bound
        };
        let gap_of = |cost: f64| if cost > 0.0 { ((cost - bound) / cost).max(0.0) } else { 0.0 };
        if matches!(solved.outcome, Outcome::Optimal | Outcome::TimeLimit) {
            let milp = finish(graph, self.extract(&f, &solved.values)?, Some(budget), self.request.options);
            let sim = simulate(graph, &milp).map_err(InvalidRequest::from)?;
            let previous = simulate(graph, &schedule).map_err(InvalidRequest::from)?;
            if compare_plans((sim.peak_bytes, sim.cost), (previous.peak_bytes, previous.cost), Some(budget)).is_le() {
                let mut refined = self.certificate(&f, &solved, warm.map(|w| w.0), None);
                // Already in cost units, and of the input order's class only.
                refined.lp_bound = if order.is_none() { certificate.lp_bound } else { None };
                // The plan as polished, which may cost less than the solver's incumbent.
                refined.objective = sim.cost;
                refined.dual_bound = bound.min(refined.objective);
                refined.gap = gap_of(refined.objective);
                return Ok((milp, refined));
            }
        }
        self.class_order.set(None);
        if order.is_some() {
            // A bound of another class: the rounded plan keeps its own.
            return Ok((schedule, certificate));
        }
        if bound.is_finite() && bound > certificate.dual_bound {
            certificate.dual_bound = bound.min(certificate.objective);
            certificate.gap = gap_of(certificate.objective);
        }
        Ok((schedule, certificate))
    }

    /// Checkmate's LP relaxation with two-phase rounding (Jain et al., §5). A rounded plan
    /// may exceed the budget the LP was solved at (rounding keeps more than the relaxation
    /// paid for), so when no candidate fits, the relaxation is solved again at a lower budget —
    /// scaled by how far the least-peak candidate overshot, and lower by at least
    /// 1/[`MIN_ROUNDING_STEP`] of the budget, doubled at each solve — while the time limit
    /// leaves room for another solve, at most [`ROUNDING_SOLVES`] solves in all. Candidates are
    /// measured finished (polished unless `--no-polish`), as the plan will be. The bound
    /// reported is the first relaxation's, the only one solved at the budget itself.
    ///
    /// Also returns the best candidate's schedule as rounded, before polishing: it is in the
    /// class, so [`Self::refine`] can start the MILP from it (`None` where the relaxation was
    /// not solved and a heuristic's plan stands in).
    fn round(
        &self,
        stages: Stages,
        budget: Option<u64>,
    ) -> Result<((Schedule, Certificate), Option<Schedule>), PlanError> {
        let stages = if stages.order == StageOrder::Fixed { stages } else { Stages::fixed(self.problem.len(), 1) };
        self.class_order.set(None);
        let problem = self.input_problem();
        // Rounding reads only what the relaxation keeps; fused recomputations would let it
        // keep less than a rounded plan can do without, so its relaxation has none.
        let unfused = problem.without_fusions();
        let target = budget.unwrap_or_else(|| self.heuristics.iter().map(|h| h.peak).min().unwrap_or(u64::MAX));
        let graph = self.request.graph;
        let floor = remat_graph::lower_bound(graph);
        let mut lp_budget = target;
        // The first relaxation's bound and model size.
        let mut first: Option<(f64, (usize, usize))> = None;
        let mut best: Option<(u64, f64, Schedule, Schedule)> = None;
        for solve in 0..ROUNDING_SOLVES {
            let f = Formulation::build(&unfused, stages.clone(), Goal::Cost { budget: lp_budget });
            let lp = match self.solve(&f, true, None) {
                Ok(lp) => lp,
                Err(e) if solve == 0 => return Err(e),
                Err(_) => break,
            };
            let candidates = match (lp.outcome, solve) {
                (Outcome::Optimal, _) => rounding::candidates(&f, &lp.values, self.request.options.ilp.seed),
                (Outcome::Infeasible, 0) => {
                    return Err(PlanError::NoPlan { strategy: "ilp", why: NoPlanCause::InfeasibleRelaxation })
                }
                (Outcome::TimeLimit | Outcome::NoSolution, 0) => {
                    return self.unsolved_relaxation(&f, &lp).map(|plan| (plan, None))
                }
                // A lower budget the relaxation cannot meet, or out of time: keep what we have.
                _ => break,
            };
            if solve == 0 {
                first = Some((lp.objective * problem.cost_scale, (f.model.columns.len(), f.model.rows.len())));
            }
            for raw in candidates {
                let schedule = finish(graph, raw.clone(), Some(target), self.request.options);
                let Ok(sim) = simulate(graph, &schedule) else { continue };
                let better = |b: &(u64, f64, Schedule, Schedule)| {
                    compare_plans((sim.peak_bytes, sim.cost), (b.0, b.1), Some(target)).is_lt()
                };
                if best.as_ref().is_none_or(better) {
                    best = Some((sim.peak_bytes, sim.cost, schedule, raw));
                }
            }
            let Some(&(peak, ..)) = best.as_ref() else { break };
            if peak <= target || self.remaining() < 1.5 * lp.seconds {
                break;
            }
            // The overshoot often stays where it is while the relaxation's budget falls a little
            // (rounding keeps the same values), so the least step doubles with each solve.
            let scaled = (lp_budget as f64 * target as f64 / peak as f64) as u64;
            let step = (target / MIN_ROUNDING_STEP).max(1) << solve;
            let next = scaled.min(lp_budget.saturating_sub(step));
            if next < floor {
                break;
            }
            tracing::debug!(lp_budget, peak, next, "ilp: no rounding fits; the relaxation again at a lower budget");
            lp_budget = next;
        }
        let Some((_, cost, schedule, raw)) = best else {
            return Err(PlanError::NoPlan { strategy: "ilp", why: NoPlanCause::NoValidRounding });
        };
        let (lp_bound, size) = first.expect("a candidate implies the first relaxation was solved");
        let certificate = Certificate {
            formulation: String::new(),
            class: String::new(),
            status: SolveStatus::Rounded,
            objective: cost,
            dual_bound: lp_bound,
            gap: if cost > 0.0 { ((cost - lp_bound) / cost).max(0.0) } else { 0.0 },
            lp_bound: Some(lp_bound),
            anchor_bound: None,
            smallest_feasible_budget: None,
            size,
            warm_start: None,
            solve_seconds: self.started.elapsed().as_secs_f64(),
        };
        Ok(((schedule, certificate), Some(raw)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use remat_graph::training::Transformer;

    #[test]
    fn a_model_too_large_for_memory_is_refused_before_it_is_built() {
        // 4 × 60 stages × ~9.3k ops: above MAX_LP_COLUMNS, so nothing is built or solved.
        let graph = Transformer::new(250).generate();
        let order = graph.topological_schedule();
        let budget = simulate(&graph, &order).unwrap().peak_bytes / 2;
        let options = crate::PlannerOptions::default();
        let request = PlanRequest { graph: &graph, order: &order, budget: Some(budget), options: &options };
        match IlpRemat.plan_detailed(&request) {
            Err(PlanError::NoPlan { why: NoPlanCause::ModelTooLarge { columns, limit, alternative }, .. }) => {
                assert!(columns > limit && limit == MAX_LP_COLUMNS, "{columns} {limit}");
                assert!(alternative.contains("hierarchical"));
            }
            other => panic!("expected the model to be refused, got {:?}", other.map(|(s, _)| s.len())),
        }
        // The same graph at a budget its input order meets needs no model at all.
        let generous = PlanRequest { budget: Some(budget * 2), ..request };
        let (schedule, details) = IlpRemat.plan_detailed(&generous).unwrap();
        assert_eq!(schedule, order);
        assert_eq!(details.stop, StopReason::Optimal);
    }
}

//! Rematerialization planners. Each strategy is one module implementing [`Planner`]: it turns
//! a graph, the graph's own (no-remat) order and an optional budget into a [`Schedule`].
//!
//! Planners never see MLIR and never do I/O; they are measured with
//! [`remat_graph::simulate`], the one memory model every part of remat-opt shares.
//!
//! Adding a strategy: write `src/<name>.rs` with a type implementing [`Planner`] and add one
//! line to [`STRATEGIES`].

#![deny(missing_docs)]

pub mod greedy;
pub mod none;

use remat_graph::{lower_bound, simulate, Graph, NodeId, Schedule};

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
}

/// Why a planner could not produce a schedule.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanError {
    /// The request itself is malformed (e.g. `order` is not a valid schedule).
    #[error("invalid plan request: {0}")]
    InvalidRequest(String),
}

/// A rematerialization strategy.
pub trait Planner: Sync {
    /// The name used on the command line (`--remat=<name>`).
    fn name(&self) -> &'static str;
    /// One line for `--help`.
    fn summary(&self) -> &'static str;
    /// Plans a schedule. It must be valid for `request.graph`; it may exceed the budget when
    /// the strategy cannot meet it (the caller measures and reports that).
    fn plan(&self, request: &PlanRequest<'_>) -> Result<Schedule, PlanError>;
}

/// Every strategy remat-opt knows, in `--help` order.
pub static STRATEGIES: &[&dyn Planner] = &[&none::NoRemat, &greedy::GreedyRemat];

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
pub fn smallest_feasible_budget(planner: &dyn Planner, graph: &Graph, order: &[NodeId]) -> Option<u64> {
    let fits = |budget: u64| -> bool {
        let request = PlanRequest { graph, order, budget: Some(budget) };
        match planner.plan(&request) {
            Ok(schedule) => simulate(graph, &schedule).map(|s| s.peak_bytes <= budget).unwrap_or(false),
            Err(_) => false,
        }
    };
    let baseline = simulate(graph, order).ok()?.peak_bytes;
    if !fits(baseline) {
        return None;
    }
    // Invariant: `high` fits; every budget below `low` is below the lower bound.
    let (mut low, mut high) = (lower_bound(graph).min(baseline), baseline);
    while low < high {
        let mid = low + (high - low) / 2;
        if fits(mid) {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    Some(high)
}

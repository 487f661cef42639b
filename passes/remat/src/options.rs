//! The pass's options, declared once: used by the `remat-opt` flags, the Rust API and the
//! textual pipeline `remat{strategy=… budget=… function=… cost-model=… unroll-limit=…}`.

use remat_graph::units::{parse_budget, Budget};
use remat_mlir::{CostModel, ImportOptions, DEFAULT_UNROLL_LIMIT};

/// Options of the remat pass.
#[derive(Clone, Debug, PartialEq)]
pub struct RematOptions {
    /// Strategy name (see `remat_planners::STRATEGIES`).
    pub strategy: String,
    /// Peak budget; `None` asks for the least memory the strategy reaches.
    pub budget: Option<Budget>,
    /// Function to plan when running on a module; `None` picks the public one.
    pub function: Option<String>,
    /// Cost model.
    pub cost_model: CostModel,
    /// Loops with a static trip count up to this are unrolled before planning (0: none).
    pub unroll_limit: usize,
}

impl Default for RematOptions {
    fn default() -> Self {
        RematOptions { strategy: "greedy".into(), budget: None, function: None, cost_model: CostModel::Estimate, unroll_limit: DEFAULT_UNROLL_LIMIT }
    }
}

impl RematOptions {
    /// Builds options from their textual forms, checking each (an empty `unroll_limit` is the
    /// default).
    pub fn from_strings(strategy: &str, budget: &str, function: &str, cost_model: &str, unroll_limit: &str) -> Result<Self, String> {
        if remat_planners::strategy(strategy).is_none() {
            return Err(format!("unknown strategy '{strategy}' (available: {})", remat_planners::strategy_names()));
        }
        let budget = if budget.trim().is_empty() { None } else { Some(parse_budget(budget)?) };
        Ok(RematOptions {
            strategy: strategy.to_string(),
            budget,
            function: (!function.is_empty()).then(|| function.to_string()),
            cost_model: parse_cost_model(cost_model)?,
            unroll_limit: if unroll_limit.trim().is_empty() {
                DEFAULT_UNROLL_LIMIT
            } else {
                unroll_limit.trim().parse().map_err(|_| format!("invalid unroll limit '{unroll_limit}' (expected a number of iterations)"))?
            },
        })
    }

    /// What the importer needs of these options.
    pub fn import_options(&self) -> ImportOptions {
        ImportOptions { cost_model: self.cost_model, unroll_limit: self.unroll_limit }
    }
}

/// Parses `estimate` or `unit`.
pub fn parse_cost_model(text: &str) -> Result<CostModel, String> {
    match text {
        "estimate" => Ok(CostModel::Estimate),
        "unit" => Ok(CostModel::Unit),
        other => Err(format!("unknown cost model '{other}' (available: estimate, unit)")),
    }
}

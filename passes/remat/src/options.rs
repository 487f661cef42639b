//! The pass's options, declared once: used by the `remat-opt` flags, the Rust API and the
//! textual pipeline `remat{strategy=… budget=… function=… cost-model=…}`.

use remat_graph::units::{parse_budget, Budget};
use remat_mlir::CostModel;

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
}

impl Default for RematOptions {
    fn default() -> Self {
        RematOptions { strategy: "greedy".into(), budget: None, function: None, cost_model: CostModel::Estimate }
    }
}

impl RematOptions {
    /// Builds options from their textual forms, checking each.
    pub fn from_strings(strategy: &str, budget: &str, function: &str, cost_model: &str) -> Result<Self, String> {
        if remat_planners::strategy(strategy).is_none() {
            return Err(format!("unknown strategy '{strategy}' (available: {})", remat_planners::strategy_names()));
        }
        let budget = if budget.trim().is_empty() { None } else { Some(parse_budget(budget)?) };
        Ok(RematOptions {
            strategy: strategy.to_string(),
            budget,
            function: (!function.is_empty()).then(|| function.to_string()),
            cost_model: parse_cost_model(cost_model)?,
        })
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

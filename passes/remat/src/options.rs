//! The pass's options, declared once: used by the `remat-opt` flags, the Rust API and the
//! textual pipeline `remat{strategy=… budget=… function=… cost-model=… unroll-limit=…
//! tw-stop=… td-heuristic=… pw-stop=… polish=…}`. [`RematOptions::set`] parses every one of them by
//! its pipeline name; the command line and the C++ registration shim both go through it.

use remat_graph::units::{parse_budget, Budget};
use remat_mlir::{CostModel, ImportOptions, DEFAULT_UNROLL_LIMIT};
use remat_planners::treedec::EliminationHeuristic;
use remat_planners::PlannerOptions;

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
    /// Strategy knobs and polishing.
    pub planner: PlannerOptions,
}

impl Default for RematOptions {
    fn default() -> Self {
        RematOptions { strategy: "greedy".into(), budget: None, function: None, cost_model: CostModel::Estimate, unroll_limit: DEFAULT_UNROLL_LIMIT, planner: PlannerOptions::default() }
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
            unroll_limit: DEFAULT_UNROLL_LIMIT,
            planner: PlannerOptions::default(),
        })
        .and_then(|mut o| o.set("unroll-limit", unroll_limit).map(|_| o))
    }

    /// Sets one option from its pipeline name and textual value; an empty value keeps the
    /// default. The one place options are parsed.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let value = value.trim();
        let number = |what: &str| value.parse::<usize>().map_err(|_| format!("invalid {name} '{value}' (expected {what})"));
        match name {
            "strategy" => {
                if remat_planners::strategy(value).is_none() {
                    return Err(format!("unknown strategy '{value}' (available: {})", remat_planners::strategy_names()));
                }
                self.strategy = value.to_string();
            }
            "budget" => self.budget = if value.is_empty() { None } else { Some(parse_budget(value)?) },
            "function" => self.function = (!value.is_empty()).then(|| value.to_string()),
            "cost-model" => self.cost_model = parse_cost_model(value)?,
            "unroll-limit" => self.unroll_limit = if value.is_empty() { DEFAULT_UNROLL_LIMIT } else { number("a number of iterations")? },
            "tw-stop" => {
                self.planner.tw_stop = if value.is_empty() {
                    None
                } else {
                    Some(number("a number of bags, at least 1")?.max(1))
                }
            }
            "pw-stop" => {
                self.planner.pw_stop = if value.is_empty() {
                    None
                } else {
                    Some(number("a number of bags, at least 1")?.max(1))
                }
            }
            "td-heuristic" => {
                self.planner.td_heuristic = if value.is_empty() { None } else { Some(EliminationHeuristic::parse(value)?) }
            }
            "polish" => {
                self.planner.polish = match value {
                    "" | "true" | "1" | "on" => true,
                    "false" | "0" | "off" => false,
                    _ => return Err(format!("invalid polish '{value}' (expected true or false)")),
                }
            }
            other => return Err(format!("unknown option '{other}'")),
        }
        Ok(())
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

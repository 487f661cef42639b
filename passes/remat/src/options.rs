//! The pass's options, declared once: used by the `remat-opt` flags, the Rust API and the
//! textual pipeline `remat{strategy=… budget=… function=… cost-model=… unroll-limit=…
//! tw-stop=… td-heuristic=… pw-stop=… polish=… ilp-order=… ilp-stages=… ilp-method=…
//! ilp-time-limit=… ilp-gap=… ilp-warm-start=… ilp-seed=… auto-time-limit=…
//! dtr-heuristic=… dtr-dealloc=… dtr-seed=… bandwidth=… compute-rate=… mem-slots=…}`.
//! [`RematOptions::set`] parses every one of them by its pipeline name; the command line and
//! the C++ registration shim both go through it.

use remat_graph::units::{parse_budget, Budget};
use remat_mlir::{CostModel, ImportOptions, DEFAULT_UNROLL_LIMIT};
use remat_planners::chain::planner::ChainOptions;
use remat_planners::dtr::{Dealloc, DtrOptions, Heuristic};
use remat_planners::ilp::{IlpOptions, SolveMethod, StageOrder};
use remat_planners::treedec::EliminationHeuristic;
use remat_planners::{auto, PlannerOptions};

/// Version of the pass options (docs/pass-options.md). Options are only added within a
/// version; renaming or removing one, or changing what a value means, increments it.
pub const PASS_OPTIONS_VERSION: u32 = 1;

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
        RematOptions {
            strategy: "greedy".into(),
            budget: None,
            function: None,
            cost_model: CostModel::Estimate,
            unroll_limit: DEFAULT_UNROLL_LIMIT,
            planner: PlannerOptions::default(),
        }
    }
}

impl RematOptions {
    /// Builds options from their textual forms, checking each (an empty `unroll_limit` is the
    /// default).
    pub fn from_strings(
        strategy: &str,
        budget: &str,
        function: &str,
        cost_model: &str,
        unroll_limit: &str,
    ) -> Result<Self, String> {
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
        let number =
            |what: &str| value.parse::<usize>().map_err(|_| format!("invalid {name} '{value}' (expected {what})"));
        match name {
            "strategy" => {
                if remat_planners::strategy(value).is_none() {
                    return Err(format!(
                        "unknown strategy '{value}' (available: {})",
                        remat_planners::strategy_names()
                    ));
                }
                self.strategy = value.to_string();
            }
            "budget" => self.budget = if value.is_empty() { None } else { Some(parse_budget(value)?) },
            "function" => self.function = (!value.is_empty()).then(|| value.to_string()),
            "cost-model" => self.cost_model = parse_cost_model(value)?,
            "unroll-limit" => {
                self.unroll_limit =
                    if value.is_empty() { DEFAULT_UNROLL_LIMIT } else { number("a number of iterations")? }
            }
            "tw-stop" => {
                self.planner.tw_stop =
                    if value.is_empty() { None } else { Some(number("a number of bags, at least 1")?.max(1)) }
            }
            "pw-stop" => {
                self.planner.pw_stop =
                    if value.is_empty() { None } else { Some(number("a number of bags, at least 1")?.max(1)) }
            }
            "td-heuristic" => {
                self.planner.td_heuristic =
                    if value.is_empty() { None } else { Some(EliminationHeuristic::parse(value)?) }
            }
            "polish" => self.planner.polish = parse_bool(name, value, true)?,
            "ilp-order" => {
                self.planner.ilp.order = match value {
                    "" => None,
                    "fixed" => Some(StageOrder::Fixed),
                    "free" => Some(StageOrder::Free),
                    _ => return Err(format!("invalid ilp-order '{value}' (expected fixed or free)")),
                }
            }
            "ilp-stages" => {
                self.planner.ilp.stages =
                    if value.is_empty() { None } else { Some(number("a number of stages, at least 1")?.max(1)) }
            }
            "ilp-method" => {
                self.planner.ilp.method = match value {
                    "" => None,
                    "milp" => Some(SolveMethod::Milp),
                    "lp-rounding" => Some(SolveMethod::LpRounding),
                    _ => return Err(format!("invalid ilp-method '{value}' (expected milp or lp-rounding)")),
                }
            }
            "ilp-time-limit" => {
                self.planner.ilp.time_limit = parse_seconds(name, value, IlpOptions::default().time_limit)?
            }
            "ilp-gap" => {
                self.planner.ilp.mip_gap = if value.is_empty() {
                    IlpOptions::default().mip_gap
                } else {
                    match value.parse::<f64>() {
                        Ok(gap) if gap.is_finite() && gap >= 0.0 => gap,
                        _ => {
                            return Err(format!(
                                "invalid ilp-gap '{value}' (expected a relative gap such as 0.01, at least 0)"
                            ))
                        }
                    }
                }
            }
            "ilp-warm-start" => {
                self.planner.ilp.warm_start = parse_bool(name, value, IlpOptions::default().warm_start)?
            }
            "ilp-seed" => {
                self.planner.ilp.seed = if value.is_empty() {
                    IlpOptions::default().seed
                } else {
                    value
                        .parse::<u64>()
                        .map_err(|_| format!("invalid ilp-seed '{value}' (expected a non-negative integer)"))?
                }
            }
            "auto-time-limit" => self.planner.auto_time_limit = parse_seconds(name, value, auto::DEFAULT_TIME_LIMIT)?,
            "dtr-heuristic" => {
                self.planner.dtr.heuristic = if value.is_empty() {
                    DtrOptions::default().heuristic
                } else {
                    Heuristic::from_name(value).ok_or_else(|| {
                        format!("invalid dtr-heuristic '{value}' (expected one of {})", Heuristic::names())
                    })?
                }
            }
            "dtr-dealloc" => {
                self.planner.dtr.dealloc = if value.is_empty() {
                    DtrOptions::default().dealloc
                } else {
                    Dealloc::from_name(value)
                        .ok_or_else(|| format!("invalid dtr-dealloc '{value}' (expected eager, banish or ignore)"))?
                }
            }
            "bandwidth" => {
                self.planner.chain.bandwidth = if value.is_empty() {
                    None
                } else {
                    let number = value.strip_suffix("GB/s").unwrap_or(value).trim();
                    match number.parse::<f64>() {
                        Ok(gbs) if gbs.is_finite() && gbs >= 0.0 => Some(gbs * 1e9),
                        _ => return Err(format!("invalid bandwidth '{value}' (expected GB/s, such as 16 or 16GB/s)")),
                    }
                }
            }
            "compute-rate" => {
                self.planner.chain.compute_rate = if value.is_empty() {
                    ChainOptions::default().compute_rate
                } else {
                    match value.parse::<f64>() {
                        Ok(rate) if rate.is_finite() && rate > 0.0 => rate,
                        _ => {
                            return Err(format!(
                                "invalid compute-rate '{value}' (expected cost units per second, such as 1e13)"
                            ))
                        }
                    }
                }
            }
            "mem-slots" => {
                self.planner.chain.mem_slots =
                    if value.is_empty() { None } else { Some(number("a number of memory slots, at least 1")?.max(1)) }
            }
            "dtr-seed" => {
                self.planner.dtr.seed = if value.is_empty() {
                    DtrOptions::default().seed
                } else {
                    value
                        .parse::<u64>()
                        .map_err(|_| format!("invalid dtr-seed '{value}' (expected a non-negative integer)"))?
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

/// Parses a boolean option (`true`/`false`, `1`/`0`, `on`/`off`); empty is `default`.
fn parse_bool(name: &str, value: &str, default: bool) -> Result<bool, String> {
    match value {
        "" => Ok(default),
        "true" | "1" | "on" => Ok(true),
        "false" | "0" | "off" => Ok(false),
        _ => Err(format!("invalid {name} '{value}' (expected true or false)")),
    }
}

/// Parses a positive, finite number of seconds; empty is `default`.
fn parse_seconds(name: &str, value: &str, default: f64) -> Result<f64, String> {
    if value.is_empty() {
        return Ok(default);
    }
    match value.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 => Ok(seconds),
        _ => Err(format!("invalid {name} '{value}' (expected a positive number of seconds)")),
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

//! The pass's options as Rust values, parsed in one place ([`RematOptions::set`]) from their
//! declaration in [`OPTIONS`](crate::OPTIONS) (option_table.rs): the `remat-opt` flags, the Rust
//! API, the textual pipeline `remat{strategy=… budget=…}` and the C API all go through it.

use crate::option_table::{expected, OptionKind, OptionSpec, OPTIONS};
use remat_graph::units::{parse_budget, Budget, BudgetError};
use remat_mlir::{CostModel, ImportOptions, MergeRecomputation, DEFAULT_UNROLL_LIMIT, DEFAULT_UNROLL_MAX_OPS};
use remat_planners::dtr::{Dealloc, Heuristic};
use remat_planners::fusion::FusionMode;
use remat_planners::ilp::{SolveMethod, StageOrder};
use remat_planners::treedec::EliminationHeuristic;
use remat_planners::PlannerOptions;

/// Version of the pass options (docs/pass-options.md). Options are only added within a
/// version; renaming or removing one, or changing what a value means (a default included),
/// increments it.
pub const PASS_OPTIONS_VERSION: u32 = 2;

/// A bad option name or value.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum OptionError {
    /// No option has this name.
    #[error("unknown option '{0}'")]
    UnknownOption(String),
    /// A strategy, cost model, … that does not exist.
    #[error("unknown {what} '{value}' (available: {available})")]
    Unknown {
        /// What was named (`strategy`).
        what: &'static str,
        /// The value given.
        value: String,
        /// The names there are, comma-separated.
        available: String,
    },
    /// A budget that does not parse.
    #[error(transparent)]
    Budget(#[from] BudgetError),
    /// Any other option's value is not of its kind.
    #[error("invalid {name} '{value}' (expected {expected})")]
    InvalidValue {
        /// The option.
        name: &'static str,
        /// The value given.
        value: String,
        /// What its values look like.
        expected: String,
    },
}

/// Options of the remat pass.
#[derive(Clone, Debug, PartialEq)]
pub struct RematOptions {
    /// Strategy name (see `remat_planners::STRATEGIES`).
    pub strategy: String,
    /// Peak budget; `None` asks for the least memory the strategy reaches.
    pub budget: Option<Budget>,
    /// Function to plan when running on a module; `None` picks the public one.
    pub function: Option<String>,
    /// A saved schedule (schedule JSON) to apply instead of planning.
    pub schedule: Option<String>,
    /// Cost model.
    pub cost_model: CostModel,
    /// Loops with a static trip count up to this are unrolled before planning (0: none).
    pub unroll_limit: usize,
    /// Loops are unrolled only if, all unrolled, they add at most this many ops.
    pub unroll_max_ops: usize,
    /// Elementwise fusion before planning.
    pub fusion: FusionMode,
    /// Which recomputation the input already does is merged before planning (`checkpoints`).
    pub merge_recomputation: MergeRecomputation,
    /// Whether scans kept whole get a rolled plan of their residuals (`scan-residuals`).
    pub plan_scan_residuals: bool,
    /// Strategy knobs and polishing.
    pub planner: PlannerOptions,
    /// Prove a lower bound on the recomputation the budget forces (`remat_planners::cost_bound`).
    pub certify: bool,
}

impl Default for RematOptions {
    /// Every option at its declared default.
    fn default() -> Self {
        let mut options = RematOptions {
            strategy: String::new(),
            budget: None,
            function: None,
            schedule: None,
            cost_model: CostModel::Estimate,
            unroll_limit: DEFAULT_UNROLL_LIMIT,
            unroll_max_ops: DEFAULT_UNROLL_MAX_OPS,
            fusion: FusionMode::default(),
            merge_recomputation: MergeRecomputation::default(),
            plan_scan_residuals: true,
            planner: PlannerOptions::default(),
            certify: false,
        };
        for spec in OPTIONS {
            if let Err(e) = options.set(spec.name, "") {
                unreachable!("the default of option '{}' does not parse: {e}", spec.name);
            }
        }
        options
    }
}

impl RematOptions {
    /// Options with `(name, value)` pairs applied over the defaults, in order.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self, OptionError> {
        let mut options = RematOptions::default();
        for (name, value) in pairs {
            options.set(name, value)?;
        }
        Ok(options)
    }

    /// Sets one option from its pipeline name and textual value; an empty value is the
    /// option's default. The one place options are parsed.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), OptionError> {
        let spec = spec(name).ok_or_else(|| OptionError::UnknownOption(name.to_string()))?;
        let value = value.trim();
        let value = if value.is_empty() { spec.default } else { value };
        let parsed = Parsed { spec, value };
        let planner = &mut self.planner;
        match spec.name {
            "strategy" => {
                if remat_planners::strategy(value).is_none() {
                    return Err(unknown_strategy(value));
                }
                self.strategy = value.to_string();
            }
            "budget" => self.budget = if value.is_empty() { None } else { Some(parse_budget(value)?) },
            "function" => self.function = (!value.is_empty()).then(|| value.to_string()),
            "schedule" => self.schedule = (!value.is_empty()).then(|| value.to_string()),
            "cost-model" => {
                self.cost_model = match parsed.choice()? {
                    Some("unit") => CostModel::Unit,
                    _ => CostModel::Estimate,
                }
            }
            "unroll-limit" => self.unroll_limit = parsed.count()?.unwrap_or(DEFAULT_UNROLL_LIMIT),
            "unroll-max-ops" => self.unroll_max_ops = parsed.count()?.unwrap_or(DEFAULT_UNROLL_MAX_OPS),
            "fusion" => {
                let word = parsed.choice()?.expect("fusion has a default");
                self.fusion = FusionMode::ALL.into_iter().find(|m| m.name() == word).expect("declared choices");
            }
            "checkpoints" => {
                self.merge_recomputation = match parsed.choice()? {
                    Some("keep") => MergeRecomputation::Keep,
                    Some("merge-all") => MergeRecomputation::All,
                    _ => MergeRecomputation::BehindBarriers,
                }
            }
            "scan-residuals" => self.plan_scan_residuals = parsed.choice()? != Some("keep"),
            "time-limit" => planner.time_limit = parsed.real()?,
            "tw-stop" => planner.tw_stop = parsed.count()?,
            "pw-stop" => planner.pw_stop = parsed.count()?,
            "td-heuristic" => {
                planner.td_heuristic = parsed.choice()?.map(|word| {
                    EliminationHeuristic::ALL.into_iter().find(|h| h.name() == word).expect("declared choices")
                })
            }
            "polish" => planner.polish = parsed.boolean()?,
            "certify" => self.certify = parsed.boolean()?,
            "ilp-order" => {
                planner.ilp.order = parsed.choice()?.map(|word| match word {
                    "fixed" => StageOrder::Fixed,
                    _ => StageOrder::Free,
                })
            }
            "ilp-stages" => planner.ilp.stages = parsed.count()?,
            "ilp-method" => {
                planner.ilp.method = parsed.choice()?.map(|word| match word {
                    "milp" => SolveMethod::Milp,
                    "lp-rounding" => SolveMethod::LpRounding,
                    _ => SolveMethod::RoundThenMilp,
                })
            }
            "ilp-time-limit" => planner.ilp.time_limit = parsed.real()?,
            "ilp-gap" => planner.ilp.mip_gap = parsed.real()?,
            "ilp-warm-start" => planner.ilp.warm_start = parsed.boolean()?,
            "ilp-seed" => planner.ilp.seed = parsed.seed()?,
            "auto-time-limit" => planner.auto_time_limit = parsed.real()?,
            "dtr-heuristic" => {
                planner.dtr.heuristic =
                    parsed.choice()?.and_then(Heuristic::from_name).expect("dtr-heuristic has a default")
            }
            "dtr-dealloc" => {
                planner.dtr.dealloc = parsed.choice()?.and_then(Dealloc::from_name).expect("dtr-dealloc has a default")
            }
            "dtr-seed" => planner.dtr.seed = parsed.seed()?,
            "bandwidth" => {
                let gbs = Parsed { value: value.strip_suffix("GB/s").unwrap_or(value).trim(), ..parsed };
                planner.chain.bandwidth = if value.is_empty() { None } else { Some(gbs.real()? * 1e9) };
            }
            "compute-rate" => planner.chain.compute_rate = parsed.real()?,
            "mem-slots" => planner.chain.mem_slots = parsed.count()?,
            other => unreachable!("option '{other}' is declared but not parsed"),
        }
        Ok(())
    }

    /// What the importer needs of these options. Buffer reuse goes with fusion: `fusion=none`
    /// imports the input's own ops as they always were.
    pub fn import_options(&self) -> ImportOptions {
        ImportOptions {
            cost_model: self.cost_model,
            unroll_limit: self.unroll_limit,
            unroll_max_ops: self.unroll_max_ops,
            buffer_reuse: self.fusion != FusionMode::None,
            merge_recomputation: self.merge_recomputation,
        }
    }
}

/// The declaration of the option named `name`.
pub fn spec(name: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|spec| spec.name == name)
}

/// A value about to be parsed as its option's kind.
#[derive(Clone, Copy)]
struct Parsed<'a> {
    spec: &'static OptionSpec,
    value: &'a str,
}

impl Parsed<'_> {
    fn invalid(&self) -> OptionError {
        OptionError::InvalidValue {
            name: self.spec.name,
            value: self.value.to_string(),
            expected: expected(&self.spec.kind),
        }
    }

    /// A count, raised to its minimum; `None` for an empty value.
    fn count(&self) -> Result<Option<usize>, OptionError> {
        let OptionKind::Count { min, .. } = self.spec.kind else { unreachable!("{} is not a count", self.spec.name) };
        if self.value.is_empty() {
            return Ok(None);
        }
        self.value.parse::<usize>().map(|n| Some(n.max(min))).map_err(|_| self.invalid())
    }

    /// One of the declared words; `None` for an empty value.
    fn choice(&self) -> Result<Option<&'static str>, OptionError> {
        let OptionKind::Choice { words, noun } = self.spec.kind else {
            unreachable!("{} is not a choice", self.spec.name)
        };
        match words.iter().find(|&&w| w == self.value) {
            Some(word) => Ok(Some(word)),
            None if self.value.is_empty() => Ok(None),
            None => Err(match noun {
                Some(what) => OptionError::Unknown { what, value: self.value.to_string(), available: words.join(", ") },
                None => self.invalid(),
            }),
        }
    }

    fn boolean(&self) -> Result<bool, OptionError> {
        match self.value {
            "true" | "1" | "on" => Ok(true),
            "false" | "0" | "off" => Ok(false),
            _ => Err(self.invalid()),
        }
    }

    fn seed(&self) -> Result<u64, OptionError> {
        self.value.parse::<u64>().map_err(|_| self.invalid())
    }

    /// Seconds (positive) or a real number as the kind says; always finite.
    fn real(&self) -> Result<f64, OptionError> {
        let positive = match self.spec.kind {
            OptionKind::Seconds => true,
            OptionKind::Real { positive, .. } => positive,
            _ => unreachable!("{} is not a number", self.spec.name),
        };
        match self.value.parse::<f64>() {
            Ok(x) if x.is_finite() && (x > 0.0 || (!positive && x >= 0.0)) => Ok(x),
            _ => Err(self.invalid()),
        }
    }
}

/// The error for a strategy that does not exist.
pub fn unknown_strategy(name: &str) -> OptionError {
    OptionError::Unknown { what: "strategy", value: name.to_string(), available: remat_planners::strategy_names() }
}

/// The option table of docs/pass-options.md, rendered from [`OPTIONS`].
pub fn options_markdown() -> String {
    let words = |words: Vec<&str>| words.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(", ");
    let mut table =
        String::from("| option | remat-opt | value | default | strategies | meaning |\n|---|---|---|---|---|---|\n");
    for spec in OPTIONS {
        let flag = match spec.flag {
            crate::option_table::Flag::Value(flag) => format!("`--{flag}`"),
            crate::option_table::Flag::Switch { flag, value } => format!("`--{flag}` (`{}={value}`)", spec.name),
        };
        let value = match spec.kind {
            // Not listed here, so that a new strategy changes only its own files: `remat-opt
            // --help` lists them, each with its summary.
            OptionKind::Strategy => "a strategy (`remat-opt --help` lists them)".to_string(),
            OptionKind::Choice { words: choices, .. } => words(choices.to_vec()),
            kind => expected(&kind),
        };
        let default =
            if spec.default.is_empty() { format!("empty: {}", spec.automatic) } else { format!("`{}`", spec.default) };
        let strategies = if spec.strategies.is_empty() { "all".to_string() } else { words(spec.strategies.to_vec()) };
        table.push_str(&format!("| `{}` | {flag} | {value} | {default} | {strategies} | {} |\n", spec.name, spec.help));
    }
    table
}

#[cfg(test)]
mod tests {
    /// This crate's directory as cargo gives it to the running test, not as it was when the test
    /// was compiled: a build cache reused from a checkout elsewhere (CI's fresh clone) keeps test
    /// binaries whose compile-time path no longer exists.
    fn manifest_dir() -> String {
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string())
    }

    use super::*;
    use crate::option_table::Flag;
    use remat_planners::chain::planner::ChainOptions;
    use remat_planners::dtr::DtrOptions;
    use remat_planners::ilp::IlpOptions;

    #[test]
    fn every_declared_option_parses_its_default() {
        for spec in OPTIONS {
            let mut options = RematOptions::default();
            options.set(spec.name, spec.default).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            assert_eq!(options, RematOptions::default(), "{}: its default is the default", spec.name);
        }
        assert!(matches!(RematOptions::default().set("colour", "blue"), Err(OptionError::UnknownOption(_))));
    }

    /// One default everywhere: the declared defaults are the planners' and the importer's.
    #[test]
    fn declared_defaults_are_the_libraries_defaults() {
        let options = RematOptions::default();
        assert_eq!(options.planner, PlannerOptions::default());
        assert_eq!(options.planner.ilp, IlpOptions::default());
        assert_eq!(options.planner.dtr, DtrOptions::default());
        assert_eq!(options.planner.chain, ChainOptions::default());
        assert_eq!(options.import_options(), ImportOptions { buffer_reuse: true, ..ImportOptions::default() });
        assert_eq!(options.strategy, "none");
        assert_eq!(options.budget, None);
    }

    /// Every choice the table declares is one the planners know, and the other way round.
    #[test]
    fn declared_choices_are_the_planners_names() {
        let choices = |name: &str| match spec(name).unwrap().kind {
            OptionKind::Choice { words, .. } => words.to_vec(),
            _ => panic!("{name} is not a choice"),
        };
        assert_eq!(choices("td-heuristic"), EliminationHeuristic::ALL.map(|h| h.name()).to_vec());
        assert_eq!(choices("dtr-heuristic"), Heuristic::ALL.map(|h| h.name()).to_vec());
        assert_eq!(choices("dtr-dealloc"), Dealloc::ALL.map(|d| d.name()).to_vec());
        assert_eq!(choices("fusion"), FusionMode::ALL.map(|m| m.name()).to_vec());
        for spec in OPTIONS {
            for &strategy in spec.strategies {
                assert!(remat_planners::strategy(strategy).is_some(), "{}: unknown strategy {strategy}", spec.name);
            }
        }
    }

    /// docs/pass-options.md shows the table as declared; `UPDATE_EXPECT=1` rewrites it.
    #[test]
    fn the_documented_options_are_the_declared_ones() {
        const BEGIN: &str = "<!-- options: generated from passes/remat/src/option_table.rs -->\n";
        const END: &str = "<!-- end of options -->";
        let path = std::path::Path::new(&manifest_dir()).join("../../docs/pass-options.md");
        let doc = std::fs::read_to_string(&path).expect("docs/pass-options.md");
        let start = doc.find(BEGIN).expect("the doc marks where the options begin") + BEGIN.len();
        let end = doc[start..].find(END).expect("and where they end") + start;
        let generated = options_markdown();
        if doc[start..end] != generated {
            if std::env::var_os("UPDATE_EXPECT").is_some() {
                std::fs::write(&path, format!("{}{generated}{}", &doc[..start], &doc[end..])).unwrap();
            } else {
                panic!(
                    "docs/pass-options.md differs from the option table; run `UPDATE_EXPECT=1 cargo test -p remat-pass` \
                     to rewrite it:\n{generated}"
                );
            }
        }
    }

    #[test]
    fn names_and_flags_are_unique() {
        let mut names: Vec<&str> = OPTIONS.iter().map(|s| s.name).collect();
        let mut flags: Vec<&str> = OPTIONS
            .iter()
            .map(|s| match s.flag {
                Flag::Value(f) | Flag::Switch { flag: f, .. } => f,
            })
            .collect();
        names.sort();
        flags.sort();
        let count = OPTIONS.len();
        names.dedup();
        flags.dedup();
        assert_eq!((names.len(), flags.len()), (count, count));
    }

    #[test]
    fn bad_values_name_the_option_and_what_it_expects() {
        let mut options = RematOptions::default();
        let error =
            |options: &mut RematOptions, name: &str, value: &str| options.set(name, value).unwrap_err().to_string();
        assert_eq!(
            error(&mut options, "ilp-order", "sideways"),
            "invalid ilp-order 'sideways' (expected fixed or free)"
        );
        assert_eq!(
            error(&mut options, "tw-stop", "many"),
            "invalid tw-stop 'many' (expected a number of bags, at least 1)"
        );
        assert_eq!(
            error(&mut options, "dtr-heuristic", "best"),
            "invalid dtr-heuristic 'best' (expected one of dtr, dtr-eq, dtr-local, lru, size, msps, random, estar)"
        );
        assert_eq!(
            error(&mut options, "strategy", "magic"),
            format!("unknown strategy 'magic' (available: {})", remat_planners::strategy_names())
        );
        assert_eq!(
            error(&mut options, "bandwidth", "fast"),
            "invalid bandwidth 'fast' (expected GB/s, such as 16 or 16GB/s)"
        );
        // Counts are raised to their minimum; the bandwidth takes a unit.
        options.set("tw-stop", "0").unwrap();
        options.set("bandwidth", "16GB/s").unwrap();
        assert_eq!((options.planner.tw_stop, options.planner.chain.bandwidth), (Some(1), Some(16e9)));
        assert_eq!(options, RematOptions::from_pairs([("tw-stop", "1"), ("bandwidth", "16")]).unwrap());
    }
}

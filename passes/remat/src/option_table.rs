// The remat pass's options, declared once. Everything else is derived from this table:
//
// * the C++ shim's MLIR options (`build.rs` writes them into `remat_options.inc`), so textual
//   pipelines, `remat-mlir-opt --help` and the C API see these names, help and defaults;
// * remat-opt's flags (`tools/remat-opt` builds its clap arguments from [`OPTIONS`]);
// * the option table of docs/pass-options.md (a test fails when it differs; run
//   `UPDATE_EXPECT=1 cargo test -p remat-pass` to rewrite it);
// * [`crate::RematOptions::default`], which applies every default below.
//
// Values are parsed in one place, `RematOptions::set` (options.rs), by the option's kind.
//
// Plain data and free functions only: `build.rs` `include!`s this file, so it may not
// use anything from the crate (hence `//` comments and no inner attributes).

/// How an option's value is written and checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionKind {
    /// A strategy of `remat_planners::STRATEGIES`.
    Strategy,
    /// A budget: bytes, a size with a unit, or a percentage of the input order's peak.
    Budget,
    /// Any text (a symbol name).
    Text,
    /// One of these words. With a noun, a wrong word is an "unknown NOUN 'word' (available: …)";
    /// without, an "invalid OPTION 'word' (expected …)".
    Choice { words: &'static [&'static str], noun: Option<&'static str> },
    /// A whole number, at least `min` (smaller values are raised to it); the noun says what
    /// it counts (`bags`: "a number of bags").
    Count { min: usize, noun: &'static str },
    /// A positive, finite number of seconds.
    Seconds,
    /// A non-negative integer (a seed).
    Seed,
    /// `true` or `false` (also `1`/`0`, `on`/`off`).
    Bool,
    /// A finite real number; `expected` describes the accepted ones for diagnostics.
    Real { positive: bool, expected: &'static str },
}

/// How remat-opt spells an option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flag {
    /// `--<flag>=VALUE`.
    Value(&'static str),
    /// `--<flag>` without a value sets the option to `value` (`--no-polish`: `polish=false`).
    Switch { flag: &'static str, value: &'static str },
}

/// One option of the `remat` pass.
#[derive(Clone, Copy, Debug)]
pub struct OptionSpec {
    /// Its name in a pipeline (`remat{name=value}`) and in the C API's options string.
    pub name: &'static str,
    /// Its remat-opt flag.
    pub flag: Flag,
    /// What its value is.
    pub kind: OptionKind,
    /// The placeholder for the value in `--help` (`SECONDS`).
    pub value_name: &'static str,
    /// The default, as text; empty when the default is decided by the strategy or the graph
    /// (then `automatic` says how).
    pub default: &'static str,
    /// What happens without a value, when `default` is empty.
    pub automatic: &'static str,
    /// One line: what the option does.
    pub help: &'static str,
    /// The strategies that read it (empty: every strategy).
    pub strategies: &'static [&'static str],
}

/// Every option of the `remat` pass, in `--help` order.
pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "strategy",
        flag: Flag::Value("remat"),
        kind: OptionKind::Strategy,
        value_name: "STRATEGY",
        default: "none",
        automatic: "",
        help: "The planner; none keeps the input order",
        strategies: &[],
    },
    OptionSpec {
        name: "budget",
        flag: Flag::Value("budget"),
        kind: OptionKind::Budget,
        value_name: "BYTES|N%",
        default: "",
        automatic: "the least memory the strategy reaches",
        help: "Peak memory budget: bytes, with KiB/MiB/GiB (or KB/MB/GB), or N% of the input order's peak; \
               an infeasible one fails with the smallest budget that works",
        strategies: &[],
    },
    OptionSpec {
        name: "function",
        flag: Flag::Value("function"),
        kind: OptionKind::Text,
        value_name: "NAME",
        default: "",
        automatic: "the module's one public function (`main` among several)",
        help: "The function to plan when the pass runs on a module",
        strategies: &[],
    },
    OptionSpec {
        name: "schedule",
        flag: Flag::Value("schedule"),
        kind: OptionKind::Text,
        value_name: "FILE",
        default: "",
        automatic: "the strategy plans",
        help: "Apply a schedule saved by --emit=schedule-json (from the same input, with the same fusion and \
               unroll options) instead of planning: it is checked against the function's graph, measured, held \
               to the budget and rewritten step for step; it takes no strategy",
        strategies: &[],
    },
    OptionSpec {
        name: "cost-model",
        flag: Flag::Value("cost-model"),
        kind: OptionKind::Choice { words: &["estimate", "unit"], noun: Some("cost model") },
        value_name: "MODEL",
        default: "estimate",
        automatic: "",
        help: "Cost of an op: estimate (FLOPs from its semantics) or unit (1 per op)",
        strategies: &[],
    },
    OptionSpec {
        name: "fusion",
        flag: Flag::Value("fusion"),
        kind: OptionKind::Choice { words: &["none", "elementwise", "auto"], noun: None },
        value_name: "MODE",
        default: "auto",
        automatic: "",
        help: "Fuse elementwise linalg.generic producers into their consumers before planning: auto where \
               it never raises the no-remat peak or the lower bound, elementwise wherever it can, none not at all",
        strategies: &[],
    },
    OptionSpec {
        name: "checkpoints",
        flag: Flag::Value("checkpoints"),
        kind: OptionKind::Choice { words: &["replan", "merge-all", "keep"], noun: None },
        value_name: "MODE",
        default: "replan",
        automatic: "",
        help: "Recomputation the input already does: replan merges jax.checkpoint's (behind optimization barriers) \
               into the ops it repeats, so the planner decides what to keep and recompute; merge-all merges every \
               duplicated side-effect-free op, barriers or not (jax.checkpoint with prevent_cse=False, as scanned \
               layers use it); keep plans the step as written",
        strategies: &[],
    },
    OptionSpec {
        name: "unroll-limit",
        flag: Flag::Value("unroll-limit"),
        kind: OptionKind::Count { min: 0, noun: "iterations" },
        value_name: "N",
        default: "1024",
        automatic: "",
        help: "Unroll stablehlo.while loops with a static trip count up to N before planning, so the plan \
               sees every iteration's ops (0: keep every loop whole)",
        strategies: &[],
    },
    OptionSpec {
        name: "unroll-max-ops",
        flag: Flag::Value("unroll-max-ops"),
        kind: OptionKind::Count { min: 0, noun: "ops" },
        value_name: "N",
        default: "20000",
        automatic: "",
        help: "Unroll the loops only if, all unrolled, they add at most N ops (counted in their bodies as written, \
               a call as one); past that every loop stays whole and a scan is planned rolled (see scan-residuals)",
        strategies: &[],
    },
    OptionSpec {
        name: "scan-residuals",
        flag: Flag::Value("scan-residuals"),
        kind: OptionKind::Choice { words: &["plan", "keep"], noun: None },
        value_name: "MODE",
        default: "plan",
        automatic: "",
        help: "Scans kept whole (above --unroll-limit) under a budget: plan chooses which residuals every layer saves \
               for the backward loop and which it recomputes there (as a jax.checkpoint policy does, for all layers \
               alike), before the strategy plans the rest; keep leaves the scans as written",
        strategies: &[],
    },
    OptionSpec {
        name: "time-limit",
        flag: Flag::Value("time-limit"),
        kind: OptionKind::Seconds,
        value_name: "SECONDS",
        default: "50",
        automatic: "",
        help: "Wall-clock limit of planning a function, the search for the smallest budget included (remat-opt \
               counts it from reading the input): every strategy stops at it with its best plan so far (stop \
               reason time-limit), or the input order",
        strategies: &[],
    },
    OptionSpec {
        name: "tw-stop",
        flag: Flag::Value("tw-stop"),
        kind: OptionKind::Count { min: 1, noun: "bags" },
        value_name: "K",
        default: "",
        automatic: "the best k: the cheapest within the budget, or the least memory without one",
        help: "TWRemat(k): stop the recursion in parts with fewer than k bags",
        strategies: &["treewidth"],
    },
    OptionSpec {
        name: "td-heuristic",
        flag: Flag::Value("td-heuristic"),
        kind: OptionKind::Choice { words: &["min-fill", "min-degree"], noun: Some("tree-decomposition heuristic") },
        value_name: "HEURISTIC",
        default: "",
        automatic: "both",
        help: "Elimination ordering of the tree decomposition",
        strategies: &["treewidth"],
    },
    OptionSpec {
        name: "pw-stop",
        flag: Flag::Value("pw-stop"),
        kind: OptionKind::Count { min: 1, noun: "bags" },
        value_name: "K",
        default: "",
        automatic: "the best k",
        help: "PWRemat(k): stop the recursion in decompositions with fewer than k bags",
        strategies: &["pathwidth"],
    },
    OptionSpec {
        name: "polish",
        flag: Flag::Switch { flag: "no-polish", value: "false" },
        kind: OptionKind::Bool,
        value_name: "BOOL",
        default: "true",
        automatic: "",
        help: "Polish the plan: drop recomputations the target peak does not need",
        strategies: &[],
    },
    OptionSpec {
        name: "certify",
        flag: Flag::Switch { flag: "certify", value: "true" },
        kind: OptionKind::Bool,
        value_name: "BOOL",
        default: "false",
        automatic: "",
        help: "Prove a lower bound on the recomputation any schedule within the budget needs (min-cut \
               closures at the fullest steps, within --time-limit), and report the plan's gap to it",
        strategies: &[],
    },
    OptionSpec {
        name: "ilp-order",
        flag: Flag::Value("ilp-order"),
        kind: OptionKind::Choice { words: &["fixed", "free"], noun: None },
        value_name: "fixed|free",
        default: "",
        automatic: "by graph size",
        help: "The ILP's stages: fixed (Checkmate's, in the input order) or free (order-free)",
        strategies: &["ilp", "auto"],
    },
    OptionSpec {
        name: "ilp-stages",
        flag: Flag::Value("ilp-stages"),
        kind: OptionKind::Count { min: 1, noun: "stages" },
        value_name: "N",
        default: "",
        automatic: "enough for the input order and the warm start",
        help: "Stages of the order-free ILP",
        strategies: &["ilp", "auto"],
    },
    OptionSpec {
        name: "ilp-method",
        flag: Flag::Value("ilp-method"),
        kind: OptionKind::Choice { words: &["milp", "lp-rounding", "round-then-milp"], noun: None },
        value_name: "milp|lp-rounding|round-then-milp",
        default: "",
        automatic: "by graph size",
        help: "How the ILP is solved: exact MILP, LP relaxation and randomized rounding, or rounding and then the MILP from the rounded plan for the time left",
        strategies: &["ilp", "auto"],
    },
    OptionSpec {
        name: "ilp-time-limit",
        flag: Flag::Value("ilp-time-limit"),
        kind: OptionKind::Seconds,
        value_name: "SECONDS",
        default: "60",
        automatic: "",
        help: "Wall-clock limit of the ILP solver (HiGHS)",
        strategies: &["ilp", "auto"],
    },
    OptionSpec {
        name: "ilp-gap",
        flag: Flag::Value("ilp-gap"),
        kind: OptionKind::Real { positive: false, expected: "a relative gap such as 0.01, at least 0" },
        value_name: "REL",
        default: "0.0001",
        automatic: "",
        help: "Relative MIP gap at which the ILP solver stops",
        strategies: &["ilp", "auto"],
    },
    OptionSpec {
        name: "ilp-warm-start",
        flag: Flag::Value("ilp-warm-start"),
        kind: OptionKind::Bool,
        value_name: "true|false",
        default: "true",
        automatic: "",
        help: "Seed the ILP solver with the best heuristic plan",
        strategies: &["ilp", "auto"],
    },
    OptionSpec {
        name: "ilp-seed",
        flag: Flag::Value("ilp-seed"),
        kind: OptionKind::Seed,
        value_name: "N",
        default: "0",
        automatic: "",
        help: "Seed of the ILP's randomized rounding",
        strategies: &["ilp", "auto"],
    },
    OptionSpec {
        name: "auto-time-limit",
        flag: Flag::Value("auto-time-limit"),
        kind: OptionKind::Seconds,
        value_name: "SECONDS",
        default: "60",
        automatic: "",
        help: "Wall-clock time strategy auto spends over all strategies; the ILP, run last, gets what remains",
        strategies: &["auto"],
    },
    OptionSpec {
        name: "dtr-heuristic",
        flag: Flag::Value("dtr-heuristic"),
        kind: OptionKind::Choice {
            words: &["dtr", "dtr-eq", "dtr-local", "lru", "size", "msps", "random", "estar"],
            noun: None,
        },
        value_name: "HEURISTIC",
        default: "dtr-eq",
        automatic: "",
        help: "DTR's eviction heuristic",
        strategies: &["dtr", "auto"],
    },
    OptionSpec {
        name: "dtr-dealloc",
        flag: Flag::Value("dtr-dealloc"),
        kind: OptionKind::Choice { words: &["eager", "banish", "ignore"], noun: None },
        value_name: "eager|banish|ignore",
        default: "eager",
        automatic: "",
        help: "What DTR does when the program drops a value: evict it, free it for good, or nothing",
        strategies: &["dtr", "auto"],
    },
    OptionSpec {
        name: "dtr-seed",
        flag: Flag::Value("dtr-seed"),
        kind: OptionKind::Seed,
        value_name: "N",
        default: "0",
        automatic: "",
        help: "Seed of DTR's random heuristic",
        strategies: &["dtr", "auto"],
    },
    OptionSpec {
        name: "bandwidth",
        flag: Flag::Value("bandwidth"),
        kind: OptionKind::Real { positive: false, expected: "GB/s, such as 16 or 16GB/s" },
        value_name: "GB/s",
        default: "",
        automatic: "no offloading",
        help: "Host link bandwidth in GB/s for the chain strategy's offloading plan",
        strategies: &["chain", "auto"],
    },
    OptionSpec {
        name: "compute-rate",
        flag: Flag::Value("compute-rate"),
        kind: OptionKind::Real { positive: true, expected: "cost units per second, such as 1e13" },
        value_name: "UNITS/s",
        default: "1e13",
        automatic: "",
        help: "Cost units per second, turning costs into time for bandwidth",
        strategies: &["chain", "auto"],
    },
    OptionSpec {
        name: "mem-slots",
        flag: Flag::Value("mem-slots"),
        kind: OptionKind::Count { min: 1, noun: "memory slots" },
        value_name: "N",
        default: "",
        automatic: "exact when small, else 50",
        help: "Memory discretization of the chain DP",
        strategies: &["chain", "auto"],
    },
];

/// What `--help`, `mlir-opt --help` and the C++ option say about `spec`: its help and its
/// default (`[default: 60]`, or how it is chosen).
pub fn described(spec: &OptionSpec) -> String {
    let default = if spec.default.is_empty() { spec.automatic } else { spec.default };
    let mut text = format!("{} [default: {default}]", spec.help);
    if !spec.strategies.is_empty() {
        text.push_str(&format!(" ({})", spec.strategies.join(", ")));
    }
    text
}

/// What a diagnostic says a value of `kind` should be ("fixed or free", "a number of bags,
/// at least 1").
pub fn expected(kind: &OptionKind) -> String {
    match kind {
        OptionKind::Strategy => "a strategy".into(),
        OptionKind::Budget => "bytes, a size such as 6GiB or 512KiB, or a percentage such as 60%".into(),
        OptionKind::Text => "a name".into(),
        OptionKind::Choice { words, .. } if words.len() > 3 => format!("one of {}", words.join(", ")),
        OptionKind::Choice { words, .. } => match words.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        },
        OptionKind::Count { min: 0, noun } => format!("a number of {noun}"),
        OptionKind::Count { min, noun } => format!("a number of {noun}, at least {min}"),
        OptionKind::Seconds => "a positive number of seconds".into(),
        OptionKind::Seed => "a non-negative integer".into(),
        OptionKind::Bool => "true or false".into(),
        OptionKind::Real { expected, .. } => expected.to_string(),
    }
}

//! The remat pass: import a function (remat-mlir), plan it with a strategy (remat-planners),
//! and rewrite it to the plan. One implementation, three ways in:
//!
//! * [`run_on_function`] — from Rust, with a report back;
//! * [`create_remat_pass`] — a melior [`Pass`] to add to your own `PassManager`;
//! * [`register_remat_pass`] — registers `remat` in MLIR's pass registry so textual
//!   pipelines can name it: `builtin.module(func.func(remat{strategy=greedy budget=60%}))`;
//! * [`create_remat_pass_from_options`], [`parse_pipeline_options`] and [`plan_operation`] —
//!   for the C API (passes/capi): the pipeline's option syntax, and planning without rewriting.

mod fusion;
pub mod option_table;
mod options;
mod report;
mod scans;

pub use fusion::{fuse, FusionSummary};
pub use option_table::{OptionKind, OptionSpec, OPTIONS};
pub use options::{options_markdown, spec, unknown_strategy, OptionError, RematOptions, PASS_OPTIONS_VERSION};
pub use report::{Report, REPORT_SCHEMA_VERSION};
pub use scans::ScanResidualFacts;

use melior::ir::OperationRef;
use melior::pass::{create_external, ExternalPass, Pass, RunExternalPass};
use melior::ContextRef;
use remat_mlir::{apply_plan, emit_error, ir, ImportedFunction, MlirError};
use remat_planners::{plan_within_budget, MeasuredPlan, PlanFailure};

/// Why the pass, or planning through it, failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RematError {
    /// A bad option name or value.
    #[error(transparent)]
    Option(#[from] OptionError),
    /// MLIR rejected an options string (`remat{…}` syntax) before any value was read.
    #[error("{0}")]
    OptionSyntax(String),
    /// The function's own order is not a valid schedule of its graph.
    #[error(transparent)]
    InvalidGraph(#[from] remat_graph::ScheduleError),
    /// The planner failed or cannot meet the budget.
    #[error(transparent)]
    Plan(#[from] PlanFailure),
    /// A schedule given with `--schedule` cannot be read or is for another function.
    #[error("{0}")]
    Schedule(String),
    /// Importing or rewriting the IR failed.
    #[error(transparent)]
    Mlir(#[from] MlirError),
    /// A bug: a panic caught before it reached C or C++.
    #[error("internal error in the remat pass (panic while {0})")]
    Panic(&'static str),
}

/// A function planned (not yet rewritten): the graph, the plan, and its report.
pub struct PlannedFunction {
    /// The imported function.
    pub imported: ImportedFunction,
    /// The measured plan.
    pub plan: MeasuredPlan,
    /// Its report.
    pub report: Report,
}

/// Plans a graph under `options`: resolves the budget against the graph's own order, plans,
/// measures, and reports. `function` names the report. No MLIR involved.
pub fn plan_graph(
    function: &str,
    graph: &remat_graph::Graph,
    order: &[remat_graph::NodeId],
    options: &RematOptions,
) -> Result<(MeasuredPlan, Report), RematError> {
    if let Some(path) = &options.schedule {
        return given_plan(function, graph, order, path, options);
    }
    let planner = remat_planners::strategy(&options.strategy).ok_or_else(|| unknown_strategy(&options.strategy))?;
    let baseline_peak = remat_graph::simulate(graph, order)?.peak_bytes;
    let budget = options.budget.map(|b| b.resolve(baseline_peak));
    let plan = match plan_within_budget(planner, graph, order, budget, &options.planner) {
        Err(remat_planners::PlanFailure::Infeasible(mut infeasible)) if options.certify => {
            // Whether any schedule at all fits: the certificate may prove that none does.
            let bound = certificate(graph, order, infeasible.budget, options);
            if bound.status == remat_planners::cost_bound::BoundStatus::Infeasible {
                infeasible.proven_infeasible_at = bound.anchor.map(|(_, name)| name);
            }
            return Err(remat_planners::PlanFailure::Infeasible(infeasible).into());
        }
        result => result?,
    };
    let mut report = Report::new(function, planner.name(), graph, budget, &plan);
    report.cost_bound = certify(graph, order, budget, &plan, options);
    Ok((plan, report))
}

/// With the `certify` option: a proven lower bound on the recomputation any schedule within the
/// budget needs (at the plan's own peak without one). Plans with host transfers are not
/// recompute-only, and are not certified.
fn certify(
    graph: &remat_graph::Graph,
    order: &[remat_graph::NodeId],
    budget: Option<u64>,
    plan: &MeasuredPlan,
    options: &RematOptions,
) -> Option<remat_planners::cost_bound::CostBound> {
    if !options.certify || !plan.details.transfers.is_empty() {
        return None;
    }
    Some(certificate(graph, order, budget.unwrap_or(plan.simulation.peak_bytes), options))
}

/// The certificate at `budget` bytes, its search within the planning time limit.
fn certificate(
    graph: &remat_graph::Graph,
    order: &[remat_graph::NodeId],
    budget: u64,
    options: &RematOptions,
) -> remat_planners::cost_bound::CostBound {
    let deadline = remat_planners::Deadline::after(options.planner.time_limit);
    remat_planners::cost_bound::recompute_lower_bound(graph, order, budget, deadline)
}

/// Reads the schedule JSON `path` for the `schedule` option, which takes no strategy.
/// remat-opt calls it before importing its input, so a bad file fails at once.
pub fn read_given_schedule(path: &str, options: &RematOptions) -> Result<remat_graph::json::SavedSchedule, RematError> {
    let fail = |message: String| RematError::Schedule(message);
    if options.strategy != "none" {
        return Err(fail(format!(
            "--schedule applies a saved plan; it cannot be combined with strategy '{}'",
            options.strategy
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read schedule '{path}': {e}")))?;
    remat_graph::json::read_schedule(&text).map_err(|e| match e.line_col {
        Some((line, col)) => fail(format!("{path}:{line}:{col}: {}", e.message)),
        None => fail(format!("{path}: {}", e.message)),
    })
}

/// The plan `--schedule` names: read, checked against the graph, and measured
/// ([`remat_planners::measure_given`]).
fn given_plan(
    function: &str,
    graph: &remat_graph::Graph,
    order: &[remat_graph::NodeId],
    path: &str,
    options: &RematOptions,
) -> Result<(MeasuredPlan, Report), RematError> {
    let saved = read_given_schedule(path, options)?;
    if saved.function != function {
        return Err(RematError::Schedule(format!(
            "schedule '{path}' is for function '{}', not '{function}'",
            saved.function
        )));
    }
    let baseline_peak = remat_graph::simulate(graph, order)?.peak_bytes;
    let budget = options.budget.map(|b| b.resolve(baseline_peak));
    let plan = remat_planners::measure_given(graph, order, saved.steps, saved.transfers, budget)?;
    let mut report = Report::new(function, remat_planners::GIVEN, graph, budget, &plan);
    report.cost_bound = certify(graph, order, budget, &plan, options);
    Ok((plan, report))
}

/// Fuses (as `options.fusion` says) and plans an imported function. Fusion changes the IR; the
/// plan does not yet (see `apply_plan`).
pub fn plan_function(imported: ImportedFunction, options: &RematOptions) -> Result<PlannedFunction, RematError> {
    let (imported, fusion) = fuse(imported, options)?;
    let (imported, scans, options) = scans::plan_scan_residuals(imported, options)?;
    let (plan, mut report) = plan_graph(&imported.name, &imported.graph, &imported.order, &options)?;
    scans::report_scan_residuals(&mut report, scans);
    report.fusion = fusion;
    report.normalized = imported.normalized;
    Ok(PlannedFunction { imported, plan, report })
}

/// Imports, plans and rewrites one function; returns its report. `func` is a `func.func`, or
/// a module (then `options.function` or the public function is planned).
///
/// # Safety
/// `op` must be a live operation, not concurrently modified.
pub unsafe fn run_on_operation(op: mlir_sys::MlirOperation, options: &RematOptions) -> Result<Report, MlirError> {
    let imported = unsafe { remat_mlir::import_operation(op, options.function.as_deref(), &options.import_options())? };
    for warning in &imported.warnings {
        tracing::warn!("{}", warning.message);
    }
    let location = imported.location();
    let planned = plan_function(imported, options)
        .map_err(|e| MlirError { location: location.clone(), message: e.to_string() })?;
    apply_plan(&planned.imported, &planned.plan.schedule, &planned.plan.details.transfers)
        .map_err(|e| MlirError { location, message: e.to_string() })?;
    Ok(planned.report)
}

/// Plans `op` (a `func.func` or a module) like [`run_on_operation`] but leaves it unchanged:
/// the importer's normalization (inlining private calls, untying shared ops) works on a copy
/// (of the enclosing module, for a function in one, so that its calls resolve).
///
/// # Safety
/// `op` must be a live operation, not concurrently modified.
pub unsafe fn plan_operation(op: mlir_sys::MlirOperation, options: &RematOptions) -> Result<Report, MlirError> {
    use mlir_sys::*;
    let parent = unsafe { mlirOperationGetParentOperation(op) };
    let mut options = options.clone();
    let copy =
        if ir::op_name(op) != "builtin.module" && !parent.ptr.is_null() && ir::op_name(parent) == "builtin.module" {
            if let Some(symbol) = ir::string_attribute(op, "sym_name") {
                options.function = Some(symbol);
            }
            unsafe { mlirOperationClone(parent) }
        } else {
            unsafe { mlirOperationClone(op) }
        };
    let planned = unsafe { remat_mlir::import_operation(copy, options.function.as_deref(), &options.import_options()) }
        .and_then(|imported| {
            let location = imported.location();
            plan_function(imported, &options)
                .map(|planned| planned.report)
                .map_err(|e| MlirError { location, message: e.to_string() })
        });
    unsafe { mlirOperationDestroy(copy) };
    planned
}

/// Imports, plans and rewrites `func` (a `func.func` or a module).
pub fn run_on_function(op: OperationRef<'_, '_>, options: &RematOptions) -> Result<Report, MlirError> {
    unsafe { run_on_operation(op.to_raw(), options) }
}

/// Serializes the pass's runs. A pass manager may run it on several functions at once, and
/// importing a function reads the private functions it calls (to inline them): two runs must
/// not touch one callee together.
static PASS_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Whether the pass leaves `op` alone: a private `func.func` in a module. Private functions are
/// the helpers a step calls (JAX exports are full of them); importing the public function
/// inlines them, and planning one on its own would also change what the others inline,
/// depending on which ran first.
///
/// # Safety
/// `op` must be a live operation.
unsafe fn skipped_by_pass(op: mlir_sys::MlirOperation) -> bool {
    let parent = unsafe { mlir_sys::mlirOperationGetParentOperation(op) };
    ir::op_name(op) == "func.func"
        && !parent.ptr.is_null()
        && ir::op_name(parent) == "builtin.module"
        && ir::string_attribute(op, "sym_visibility").as_deref() == Some("private")
}

#[derive(Clone)]
struct RematExternalPass {
    options: RematOptions,
}

impl<'c> RunExternalPass<'c> for RematExternalPass {
    fn initialize(&mut self, _context: ContextRef<'c>) {}
    fn run(&mut self, operation: OperationRef<'c, '_>, pass: ExternalPass<'_>) {
        if unsafe { skipped_by_pass(operation.to_raw()) } {
            return;
        }
        let _serial = PASS_LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Err(e) = run_on_function(operation, &self.options) {
            emit_error(operation.to_raw(), &e);
            pass.signal_failure();
        }
    }
}

/// The remat pass as a melior [`Pass`], to add to a `PassManager` (on `func.func`, or on
/// the module).
pub fn create_remat_pass(options: RematOptions) -> Pass {
    // MLIR type ids are addresses of 8-byte-aligned statics.
    static PASS_ID: u64 = 0;
    create_external(
        RematExternalPass { options },
        melior::ir::r#type::TypeId::create(&PASS_ID),
        "remat",
        "remat",
        "Plan rematerialization and rewrite the function to the plan",
        "",
        &[],
    )
}

type OptionsCallback = unsafe extern "C" fn(
    *const mlir_sys::MlirStringRef,
    *const mlir_sys::MlirStringRef,
    isize,
    *mut std::ffi::c_void,
) -> bool;

unsafe extern "C" {
    fn rematSetPassCallbacks(
        run: unsafe extern "C" fn(
            mlir_sys::MlirOperation,
            *const mlir_sys::MlirStringRef,
            *const mlir_sys::MlirStringRef,
            isize,
        ) -> bool,
        check: unsafe extern "C" fn(
            *const mlir_sys::MlirStringRef,
            *const mlir_sys::MlirStringRef,
            isize,
            mlir_sys::MlirStringCallback,
            *mut std::ffi::c_void,
        ) -> bool,
    );
    fn rematRegisterPass();
    fn rematCreatePassFromOptions(
        options: mlir_sys::MlirStringRef,
        error: mlir_sys::MlirStringCallback,
        user_data: *mut std::ffi::c_void,
    ) -> mlir_sys::MlirPass;
    fn rematWithParsedOptions(
        options: mlir_sys::MlirStringRef,
        error: mlir_sys::MlirStringCallback,
        error_data: *mut std::ffi::c_void,
        consume: OptionsCallback,
        consume_data: *mut std::ffi::c_void,
    ) -> bool;
}

/// The options the shim passes as (name, value) pairs, parsed by [`RematOptions::set`] over the
/// defaults.
///
/// # Safety
/// `names` and `values` point to `count` valid string refs each.
unsafe fn options_of(
    names: *const mlir_sys::MlirStringRef,
    values: *const mlir_sys::MlirStringRef,
    count: isize,
) -> Result<RematOptions, OptionError> {
    let (names, values) = unsafe {
        (std::slice::from_raw_parts(names, count as usize), std::slice::from_raw_parts(values, count as usize))
    };
    let mut options = RematOptions::default();
    for (name, value) in names.iter().zip(values) {
        options.set(&ir::string_ref_to_string(*name), &ir::string_ref_to_string(*value))?;
    }
    Ok(options)
}

unsafe extern "C" fn check_options_callback(
    names: *const mlir_sys::MlirStringRef,
    values: *const mlir_sys::MlirStringRef,
    count: isize,
    error: mlir_sys::MlirStringCallback,
    user_data: *mut std::ffi::c_void,
) -> bool {
    match std::panic::catch_unwind(|| unsafe { options_of(names, values, count) }) {
        Ok(Ok(_)) => true,
        Ok(Err(e)) => {
            if let Some(error) = error {
                unsafe { error(ir::string_ref(&e.to_string()), user_data) };
            }
            false
        }
        Err(_) => false,
    }
}

unsafe extern "C" fn registered_pass_callback(
    op: mlir_sys::MlirOperation,
    names: *const mlir_sys::MlirStringRef,
    values: *const mlir_sys::MlirStringRef,
    count: isize,
) -> bool {
    if unsafe { skipped_by_pass(op) } {
        return true;
    }
    let _serial = PASS_LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    // Never unwind into C++.
    let result = std::panic::catch_unwind(|| {
        let options = unsafe { options_of(names, values, count) }
            .map_err(|e| MlirError { location: None, message: e.to_string() })?;
        unsafe { run_on_operation(op, &options) }
    });
    match result {
        Ok(Ok(report)) => {
            tracing::info!(function = %report.function, peak = report.plan_peak_bytes, "remat pass");
            true
        }
        Ok(Err(e)) => {
            emit_error(op, &e);
            false
        }
        Err(_) => {
            emit_error(op, &MlirError { location: None, message: RematError::Panic("running").to_string() });
            false
        }
    }
}

fn install_callbacks() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| unsafe { rematSetPassCallbacks(registered_pass_callback, check_options_callback) });
}

/// Registers the `remat` pass (with every option of [`OPTIONS`], by its pipeline name:
/// `strategy`, `budget`, `function`, `cost-model`, `ilp-time-limit`, …) in
/// MLIR's global pass registry, so textual pipelines can use it. Bad option values fail when
/// the pipeline is parsed. Idempotent.
pub fn register_remat_pass() {
    install_callbacks();
    unsafe { rematRegisterPass() }
}

unsafe extern "C" fn append_message(message: mlir_sys::MlirStringRef, user_data: *mut std::ffi::c_void) {
    unsafe { (*(user_data as *mut String)).push_str(&ir::string_ref_to_string(message)) };
}

/// A `remat` pass configured by `options` in the pipeline's syntax (`strategy=treewidth
/// budget=60%`, no braces), as a raw MLIR pass the caller owns (adding it to a pass manager
/// hands it over). The same pass a textual pipeline makes, so it needs no registration.
pub fn create_remat_pass_from_options(options: &str) -> Result<mlir_sys::MlirPass, RematError> {
    install_callbacks();
    let mut message = String::new();
    let pass = unsafe {
        rematCreatePassFromOptions(
            ir::string_ref(options),
            Some(append_message),
            &mut message as *mut String as *mut std::ffi::c_void,
        )
    };
    if pass.ptr.is_null() {
        Err(RematError::OptionSyntax(message))
    } else {
        Ok(pass)
    }
}

/// Parses `options` in the pipeline's syntax (`strategy=treewidth budget=60%`), exactly as the
/// registered pass does.
pub fn parse_pipeline_options(options: &str) -> Result<RematOptions, RematError> {
    unsafe extern "C" fn keep(
        names: *const mlir_sys::MlirStringRef,
        values: *const mlir_sys::MlirStringRef,
        count: isize,
        data: *mut std::ffi::c_void,
    ) -> bool {
        let slot = unsafe { &mut *(data as *mut Option<Result<RematOptions, RematError>>) };
        let parsed = std::panic::catch_unwind(|| unsafe { options_of(names, values, count) })
            .map_err(|_| RematError::Panic("parsing the options"))
            .and_then(|r| r.map_err(RematError::from));
        let ok = parsed.is_ok();
        *slot = Some(parsed);
        ok
    }
    install_callbacks();
    let mut message = String::new();
    let mut parsed: Option<Result<RematOptions, RematError>> = None;
    let ok = unsafe {
        rematWithParsedOptions(
            ir::string_ref(options),
            Some(append_message),
            &mut message as *mut String as *mut std::ffi::c_void,
            keep,
            &mut parsed as *mut Option<Result<RematOptions, RematError>> as *mut std::ffi::c_void,
        )
    };
    match (ok, parsed) {
        (true, Some(Ok(options))) => Ok(options),
        (_, Some(Err(e))) => Err(e),
        _ => Err(RematError::OptionSyntax(message)),
    }
}

//! The remat pass: import a function (remat-mlir), plan it with a strategy (remat-planners),
//! and rewrite it to the plan. One implementation, three ways in:
//!
//! * [`run_on_function`] — from Rust, with a report back;
//! * [`create_remat_pass`] — a melior [`Pass`] to add to your own `PassManager`;
//! * [`register_remat_pass`] — registers `remat` in MLIR's pass registry so textual
//!   pipelines can name it: `builtin.module(func.func(remat{strategy=greedy budget=60%}))`.

mod options;
mod report;

pub use options::{parse_cost_model, RematOptions};
pub use report::Report;

use melior::pass::{create_external, ExternalPass, Pass, RunExternalPass};
use melior::ir::OperationRef;
use melior::ContextRef;
use remat_mlir::{apply_plan, emit_error, ImportedFunction, MlirError};
use remat_planners::{plan_within_budget, MeasuredPlan};

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
pub fn plan_graph(function: &str, graph: &remat_graph::Graph, order: &[remat_graph::NodeId], options: &RematOptions) -> Result<(MeasuredPlan, Report), String> {
    let planner = remat_planners::strategy(&options.strategy)
        .ok_or_else(|| format!("unknown strategy '{}' (available: {})", options.strategy, remat_planners::strategy_names()))?;
    let baseline_peak = remat_graph::simulate(graph, order).map_err(|e| e.to_string())?.peak_bytes;
    let budget = options.budget.map(|b| b.resolve(baseline_peak));
    let plan = plan_within_budget(planner, graph, order, budget, &options.planner).map_err(|e| e.to_string())?;
    let report = Report::new(function, planner.name(), graph, budget, &plan);
    Ok((plan, report))
}

/// Plans an imported function under `options` (no IR is changed).
pub fn plan_function(imported: ImportedFunction, options: &RematOptions) -> Result<PlannedFunction, String> {
    let (plan, report) = plan_graph(&imported.name, &imported.graph, &imported.order, options)?;
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
    let planned = plan_function(imported, options).map_err(|message| MlirError { location: location.clone(), message })?;
    apply_plan(&planned.imported, &planned.plan.schedule, &planned.plan.details.transfers).map_err(|e| MlirError { location, message: e.to_string() })?;
    Ok(planned.report)
}

/// Imports, plans and rewrites `func` (a `func.func` or a module).
pub fn run_on_function(op: OperationRef<'_, '_>, options: &RematOptions) -> Result<Report, MlirError> {
    unsafe { run_on_operation(op.to_raw(), options) }
}

#[derive(Clone)]
struct RematExternalPass {
    options: RematOptions,
}

impl<'c> RunExternalPass<'c> for RematExternalPass {
    fn initialize(&mut self, _context: ContextRef<'c>) {}
    fn run(&mut self, operation: OperationRef<'c, '_>, pass: ExternalPass<'_>) {
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

unsafe extern "C" {
    fn rematRegisterPass(
        callback: unsafe extern "C" fn(mlir_sys::MlirOperation, *const mlir_sys::MlirStringRef, *const mlir_sys::MlirStringRef, isize) -> bool,
    );
}

fn string_of(s: mlir_sys::MlirStringRef) -> String {
    if s.data.is_null() {
        return String::new();
    }
    String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(s.data as *const u8, s.length) }).into_owned()
}

unsafe extern "C" fn registered_pass_callback(
    op: mlir_sys::MlirOperation,
    names: *const mlir_sys::MlirStringRef,
    values: *const mlir_sys::MlirStringRef,
    count: isize,
) -> bool {
    let (names, values) = unsafe { (std::slice::from_raw_parts(names, count as usize), std::slice::from_raw_parts(values, count as usize)) };
    let mut options = RematOptions::default();
    for (name, value) in names.iter().zip(values) {
        if let Err(message) = options.set(&string_of(*name), &string_of(*value)) {
            emit_error(op, &MlirError { location: None, message });
            return false;
        }
    }
    // Never unwind into C++.
    let result = std::panic::catch_unwind(|| unsafe { run_on_operation(op, &options) });
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
            emit_error(op, &MlirError { location: None, message: "internal error in the remat pass (panic)".into() });
            false
        }
    }
}

/// Registers the `remat` pass (with every option [`RematOptions::set`] knows, by its pipeline
/// name: `strategy`, `budget`, `function`, `cost-model`, `ilp-time-limit`, …) in
/// MLIR's global pass registry, so textual pipelines can use it. Idempotent.
pub fn register_remat_pass() {
    unsafe { rematRegisterPass(registered_pass_callback) }
}

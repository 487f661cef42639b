//! The melior bridge: MLIR module → [`remat_graph::Graph`] and [`remat_graph::Schedule`] →
//! rewritten module.
//!
//! This crate decides nothing about what to recompute (that is `remat-planners`); it only
//! translates. Inputs: linalg-on-tensors or StableHLO (generic op form; unregistered dialects
//! are allowed, so MLIR 22 parses StableHLO without the dialect).

pub mod crash;
mod fuse;
mod import;
pub mod ir;
mod kept_loop;
mod ops;
mod rewrite;
pub mod rolled;
#[cfg(test)]
mod testing;
mod unroll;
mod unstack;

pub use fuse::{apply_fusions, fusion_candidates, FusionPair};
pub use import::{
    ImportOptions, ImportedFunction, MergeRecomputation, Normalization, DEFAULT_UNROLL_LIMIT, DEFAULT_UNROLL_MAX_OPS,
};
pub use kept_loop::{is_carried_view, writes_in_place, MAX_COUNTED_TRIPS};
pub use rewrite::{apply_plan, apply_schedule, RewriteStats, HOST_MEMORY_SPACE, RECOMPUTE_ATTRIBUTE};
pub use unroll::static_trip_count;

use melior::{
    dialect::DialectRegistry,
    ir::{operation::OperationLike, Module},
    utility::register_all_dialects,
    Context,
};
use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

/// How node costs are estimated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CostModel {
    /// FLOP-like estimates from op semantics (docs/memory-model.md, "Cost").
    #[default]
    Estimate,
    /// Every node costs 1 (the papers' experiments).
    Unit,
}

unsafe extern "C" {
    /// `cpp/parse.cpp`: parses a module whose locations name `source_name`.
    fn rematParseModule(
        context: mlir_sys::MlirContext,
        text: mlir_sys::MlirStringRef,
        source_name: mlir_sys::MlirStringRef,
    ) -> mlir_sys::MlirModule;
}

/// A diagnostic: a message and, where one exists, the `file:line:col` it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MlirError {
    /// `file:line:col` (or MLIR's printed location when it is not a file location).
    pub location: Option<String>,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for MlirError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(loc) => write!(f, "{loc}: error: {}", self.message),
            None => write!(f, "error: {}", self.message),
        }
    }
}

impl std::error::Error for MlirError {}

/// An MLIR context with every upstream dialect registered and loaded, unregistered dialects
/// allowed (StableHLO), and a handler that collects diagnostics instead of printing them.
pub struct RematContext {
    context: Context,
    diagnostics: Rc<RefCell<Vec<MlirError>>>,
}

impl Default for RematContext {
    fn default() -> Self {
        Self::new()
    }
}

/// The deepest nesting of brackets (`(`, `[`, `{`, `<`) [`RematContext::parse`] hands to MLIR's
/// parser. It recurses once per level (attributes, types, regions), and on MLIR 22 a few
/// thousand levels overflow an 8 MiB stack — `mlir-opt` itself dies by SIGSEGV, remat-opt
/// aborted — where real steps nest a dozen levels at most (a rank-8 dense constant in a region
/// of a region).
pub const MAX_NESTING: usize = 256;

/// The line and column (1-based) where `text`'s brackets first nest deeper than
/// [`MAX_NESTING`], outside string literals and `//` comments; `->` is an arrow, not a
/// closing bracket. A `>` of a comparison (`>=` in an integer set) closes a level that was
/// never opened: depth never goes below zero, so that only undercounts.
fn too_deep(text: &str) -> Option<(usize, usize)> {
    let (mut depth, mut line, mut column) = (0usize, 1usize, 0usize);
    let mut chars = text.chars().peekable();
    let mut previous = '\0';
    while let Some(c) = chars.next() {
        column += 1;
        match c {
            '\n' => (line, column) = (line + 1, 0),
            '"' => {
                // A string literal, with backslash escapes.
                while let Some(s) = chars.next() {
                    column += 1;
                    match s {
                        '\\' => {
                            chars.next();
                            column += 1;
                        }
                        '"' => break,
                        '\n' => (line, column) = (line + 1, 0),
                        _ => {}
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => {
                for s in chars.by_ref() {
                    if s == '\n' {
                        (line, column) = (line + 1, 0);
                        break;
                    }
                }
            }
            '(' | '[' | '{' | '<' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some((line, column));
                }
            }
            '>' if previous == '-' => {}
            ')' | ']' | '}' | '>' => depth = depth.saturating_sub(1),
            _ => {}
        }
        previous = c;
    }
    None
}

impl RematContext {
    /// Creates the context.
    pub fn new() -> Self {
        let registry = DialectRegistry::new();
        register_all_dialects(&registry);
        let context = Context::new_with_registry(&registry, false);
        context.load_all_available_dialects();
        context.set_allow_unregistered_dialects(true);
        let diagnostics: Rc<RefCell<Vec<MlirError>>> = Rc::default();
        let sink = diagnostics.clone();
        context.attach_diagnostic_handler(move |diagnostic| {
            let location = ir::location_text(diagnostic.location().to_raw());
            let mut message = diagnostic.to_string();
            for i in 0..diagnostic.note_count() {
                if let Ok(note) = diagnostic.note(i) {
                    message.push_str(&format!("\n  note: {note}"));
                }
            }
            let location = (!location.is_empty() && location != "loc(unknown)").then_some(location);
            sink.borrow_mut().push(MlirError { location, message });
            true
        });
        RematContext { context, diagnostics }
    }

    /// The melior context.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Diagnostics collected since the last call.
    pub fn take_diagnostics(&self) -> Vec<MlirError> {
        std::mem::take(&mut self.diagnostics.borrow_mut())
    }

    /// Parses a module from text; `source_name` is used in locations (e.g. the file name).
    pub fn parse(&self, text: &str, source_name: &str) -> Result<Module<'_>, Vec<MlirError>> {
        if text.contains('\0') {
            return Err(vec![MlirError {
                location: Some(format!("{source_name}:1:1")),
                message: "input contains a NUL byte".into(),
            }]);
        }
        if let Some((line, column)) = too_deep(text) {
            return Err(vec![MlirError {
                location: Some(format!("{source_name}:{line}:{column}")),
                message: format!(
                    "brackets nest deeper than {MAX_NESTING} levels here; MLIR's recursive-descent parser \
                     would overflow its stack"
                ),
            }]);
        }
        self.take_diagnostics();
        let c_text = std::ffi::CString::new(text).expect("checked for NUL above");
        let module = unsafe {
            let raw = rematParseModule(
                self.context.to_raw(),
                mlir_sys::mlirStringRefCreateFromCString(c_text.as_ptr()),
                ir::string_ref(source_name),
            );
            Module::from_option_raw(raw)
        };
        let diagnostics = self.take_diagnostics();
        let relabel = |mut d: MlirError| {
            if let Some(loc) = &d.location {
                // mlirModuleCreateParse names its buffer "-".
                if let Some(rest) = loc.strip_prefix("-:") {
                    d.location = Some(format!("{source_name}:{rest}"));
                } else if loc.is_empty() {
                    d.location = Some(source_name.to_string());
                }
            }
            d
        };
        match module {
            Some(m) if diagnostics.is_empty() => Ok(m),
            Some(_) => Err(diagnostics.into_iter().map(relabel).collect()),
            None if diagnostics.is_empty() => Err(vec![MlirError {
                location: Some(source_name.into()),
                message: "could not parse the module".into(),
            }]),
            None => Err(diagnostics.into_iter().map(relabel).collect()),
        }
    }

    /// Runs the verifier on `module`, returning its diagnostics on failure.
    pub fn verify(&self, module: &Module) -> Result<(), Vec<MlirError>> {
        self.take_diagnostics();
        if module.as_operation().verify() {
            Ok(())
        } else {
            let mut d = self.take_diagnostics();
            if d.is_empty() {
                d.push(MlirError { location: None, message: "the module does not verify".into() });
            }
            Err(d)
        }
    }
}

/// Emits `error` as an MLIR error diagnostic at `op`'s location (what a pass does on failure).
pub fn emit_error(op: mlir_sys::MlirOperation, error: &MlirError) {
    let message = std::ffi::CString::new(error.message.replace('\0', " ")).expect("NUL removed");
    unsafe { mlir_sys::mlirEmitError(mlir_sys::mlirOperationGetLocation(op), message.as_ptr()) };
}

/// Finds the function to plan (`function`, or the module's public one) and imports it.
/// Normalizes the function in place first (inlines private calls, unties shared init ops).
pub fn import(module: &Module, function: Option<&str>, options: &ImportOptions) -> Result<ImportedFunction, MlirError> {
    let body = module.body().to_raw();
    let module_op = module.as_operation().to_raw();
    let func = import::select_function(body, module_op, function)?;
    import::import_function(body, func, options)
}

/// The name of the function `import` would pick: `function` if given, else the module's one
/// public function with a body (preferring `main`).
pub fn select_function_name(module: &Module, function: Option<&str>) -> Result<String, MlirError> {
    let func = import::select_function(module.body().to_raw(), module.as_operation().to_raw(), function)?;
    Ok(ir::string_attribute(func, "sym_name").unwrap_or_default())
}

/// Imports from an operation: a `func.func` (planned itself) or a `builtin.module` (its
/// function `function`, or its public one).
///
/// # Safety
/// `op` must be a live operation; for a `func.func`, its parent block (the module body) must
/// be live too.
pub unsafe fn import_operation(
    op: mlir_sys::MlirOperation,
    function: Option<&str>,
    options: &ImportOptions,
) -> Result<ImportedFunction, MlirError> {
    match ir::op_name(op).as_str() {
        "func.func" => import::import_function(ir::op_block(op), op, options),
        "builtin.module" => {
            let body = ir::blocks(ir::regions(op)[0])[0];
            let func = import::select_function(body, op, function)?;
            import::import_function(body, func, options)
        }
        other => {
            Err(import::error_at(op, format!("the remat pass runs on func.func or builtin.module, not '{other}'")))
        }
    }
}

#[cfg(test)]
mod nesting_tests {
    use super::{too_deep, MAX_NESTING};

    fn nested(open: &str, close: &str, depth: usize) -> String {
        format!("x = {}{}", open.repeat(depth), close.repeat(depth))
    }

    #[test]
    fn nesting_up_to_the_limit_passes_and_one_more_is_located() {
        for (open, close) in [("[", "]"), ("(", ")"), ("{", "}"), ("tensor<", ">")] {
            assert_eq!(too_deep(&nested(open, close, MAX_NESTING)), None, "{open}");
            let text = nested(open, close, MAX_NESTING + 1);
            let column = 4 + open.len() * (MAX_NESTING + 1);
            assert_eq!(too_deep(&format!("\n{text}")), Some((2, column)), "{open}");
        }
    }

    #[test]
    fn strings_comments_and_arrows_do_not_nest() {
        let deep = "[".repeat(MAX_NESTING + 1);
        assert_eq!(too_deep(&format!("\"{deep}\" // {deep}\n")), None);
        assert_eq!(too_deep(&format!("\"a\\\"{deep}\"")), None, "an escaped quote does not end the string");
        // Each level of `<(d0) -> (d0)>` opens and closes: the arrow's `>` closes nothing.
        let maps = "affine_map<(d0) -> (d0)> ".repeat(10 * MAX_NESTING);
        assert_eq!(too_deep(&maps), None);
        let arrows = format!("{}{}", "<(a) -> (b)".repeat(MAX_NESTING + 1), ">".repeat(MAX_NESTING + 1));
        assert!(too_deep(&arrows).is_some());
    }
}

//! The C API of the remat pass, `include/remat-c/Remat.h`, built as `libremat.so` and
//! `libremat.a`. Every function here is a thin, panic-safe shell over remat-pass: the options
//! are parsed by the same C++ pass declaration a textual pipeline uses, and the report is
//! [`remat_pass::Report::to_json`]. The C test in `tests/capi_test.c` calls it from C.
//!
//! The functions are Rust's, not the C++ shim's, because a Rust cdylib exports only its own
//! `#[no_mangle]` symbols.

#![allow(non_snake_case)] // C names, as the header spells them.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use mlir_sys::{MlirLogicalResult, MlirOperation, MlirPass, MlirStringCallback, MlirStringRef};
use remat_mlir::MlirError;

/// The C API's version: `REMAT_C_API_VERSION` in the header.
pub const C_API_VERSION: isize = 1;

/// `rematGetCApiVersion`.
#[unsafe(no_mangle)]
pub extern "C" fn rematGetCApiVersion() -> isize {
    C_API_VERSION
}

/// `rematGetPassOptionsVersion`.
#[unsafe(no_mangle)]
pub extern "C" fn rematGetPassOptionsVersion() -> isize {
    remat_pass::PASS_OPTIONS_VERSION as isize
}

/// `rematGetReportSchemaVersion`.
#[unsafe(no_mangle)]
pub extern "C" fn rematGetReportSchemaVersion() -> isize {
    remat_pass::REPORT_SCHEMA_VERSION as isize
}

/// `rematRegisterPasses`: `remat` and the lowering passes.
#[unsafe(no_mangle)]
pub extern "C" fn rematRegisterPasses() {
    // A panic here would be a bug in registration; never unwind into C.
    let _ = catch_unwind(|| {
        remat_pass::register_remat_pass();
        remat_lower::register_lowering_passes();
    });
}

/// `rematCreatePass`.
///
/// # Safety
/// `options` must be a valid string ref; `error_callback`, if set, must accept `user_data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rematCreatePass(
    options: MlirStringRef,
    error_callback: MlirStringCallback,
    user_data: *mut c_void,
) -> MlirPass {
    let created =
        catch_unwind(|| remat_pass::create_remat_pass_from_options(&remat_mlir::ir::string_ref_to_string(options)))
            .unwrap_or(Err(remat_pass::RematError::Panic("creating the pass")));
    match created {
        Ok(pass) => pass,
        Err(e) => {
            unsafe { send(error_callback, user_data, &e.to_string()) };
            MlirPass { ptr: std::ptr::null_mut() }
        }
    }
}

/// `rematPlan`.
///
/// # Safety
/// `op` must be a live operation no one else modifies meanwhile; the callback as for
/// [`rematCreatePass`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rematPlan(
    op: MlirOperation,
    options: MlirStringRef,
    report_callback: MlirStringCallback,
    user_data: *mut c_void,
) -> MlirLogicalResult {
    unsafe {
        plan_and_report(op, options, report_callback, user_data, |op, options| remat_pass::plan_operation(op, options))
    }
}

/// `rematRun`.
///
/// # Safety
/// As for [`rematPlan`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rematRun(
    op: MlirOperation,
    options: MlirStringRef,
    report_callback: MlirStringCallback,
    user_data: *mut c_void,
) -> MlirLogicalResult {
    unsafe {
        plan_and_report(op, options, report_callback, user_data, |op, options| {
            let report = remat_pass::run_on_operation(op, options)?;
            if !mlir_sys::mlirOperationVerify(op) {
                return Err(MlirError {
                    location: None,
                    message: "internal error: the rewritten operation does not verify".into(),
                });
            }
            Ok(report)
        })
    }
}

/// Parses `options`, runs `plan`, and hands the report to `report_callback`; every failure is
/// an error diagnostic at `op`.
unsafe fn plan_and_report(
    op: MlirOperation,
    options: MlirStringRef,
    report_callback: MlirStringCallback,
    user_data: *mut c_void,
    plan: impl FnOnce(MlirOperation, &remat_pass::RematOptions) -> Result<remat_pass::Report, MlirError>,
) -> MlirLogicalResult {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let options = remat_pass::parse_pipeline_options(&remat_mlir::ir::string_ref_to_string(options))
            .map_err(|e| MlirError { location: None, message: format!("invalid remat options: {e}") })?;
        plan(op, &options)
    }))
    .unwrap_or_else(|_| Err(MlirError { location: None, message: "internal error in the remat pass (panic)".into() }));
    match outcome {
        Ok(report) => {
            let json = serde_json::to_string(&report.to_json(false)).expect("JSON values serialize");
            unsafe { send(report_callback, user_data, &json) };
            MlirLogicalResult { value: 1 }
        }
        Err(error) => {
            remat_mlir::emit_error(op, &error);
            MlirLogicalResult { value: 0 }
        }
    }
}

unsafe fn send(callback: MlirStringCallback, user_data: *mut c_void, text: &str) {
    if let Some(callback) = callback {
        unsafe { callback(MlirStringRef { data: text.as_ptr() as *const _, length: text.len() }, user_data) };
    }
}

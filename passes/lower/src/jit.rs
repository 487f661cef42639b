//! JIT-compiling a lowered step and finding its entry point, with the counting allocator of
//! `remat-runtime` bound to the allocation functions the lowering calls.

use crate::{LowerError, TensorKind};
use melior::ir::Module;
use mlir_sys::*;
use remat_mlir::ir;
use remat_runtime::{PackedEntry, TensorSpec};
use std::ffi::CString;

/// Attribute that keeps a function's tensor-level type through lowering (on the `func.func`,
/// then on the `llvm.func` that convert-func-to-llvm makes of it), so a runner knows the
/// tensors behind the flattened memref descriptors.
pub const SIGNATURE_ATTRIBUTE: &str = "remat.signature";

/// The tensors a step takes and returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepSignature {
    pub function: String,
    pub inputs: Vec<TensorSpec>,
    pub results: Vec<TensorSpec>,
}

fn string_ref(s: &CString) -> MlirStringRef {
    unsafe { mlirStringRefCreateFromCString(s.as_ptr()) }
}

fn function_op(module: &Module, name: &str) -> Option<MlirOperation> {
    ir::block_ops(module.body().to_raw()).into_iter().find(|&op| {
        matches!(ir::op_name(op).as_str(), "func.func" | "llvm.func")
            && ir::string_attribute(op, "sym_name").as_deref() == Some(name)
    })
}

/// Prepares every `func.func` with a body for lowering (done by [`crate::lower_to_llvm`]):
/// records its tensor-level type in [`SIGNATURE_ATTRIBUTE`], and marks its arguments
/// `bufferization.writable = false`. Arguments are pinned inputs in the memory model; a step
/// that writes into one gets a fresh buffer for the result (which the model counts) instead
/// of an in-place update (which it would not).
pub fn prepare_functions(module: &Module) {
    for op in ir::block_ops(module.body().to_raw()) {
        if ir::op_name(op) != "func.func" || ir::regions(op).first().is_none_or(|&r| ir::blocks(r).is_empty()) {
            continue;
        }
        if ir::attribute(op, SIGNATURE_ATTRIBUTE).is_none() {
            if let Some(t) = ir::attribute(op, "function_type") {
                let key = CString::new(SIGNATURE_ATTRIBUTE).expect("no NUL");
                unsafe { mlirOperationSetDiscardableAttributeByName(op, string_ref(&key), t) };
            }
        }
        mark_arguments_read_only(op);
    }
}

fn mark_arguments_read_only(func: MlirOperation) {
    let arguments = ir::block_arguments(ir::blocks(ir::regions(func)[0])[0]).len();
    unsafe {
        let ctx = mlirOperationGetContext(func);
        let existing = ir::attribute(func, "arg_attrs").filter(|&a| mlirAttributeIsAArray(a));
        let key = CString::new("bufferization.writable").expect("no NUL");
        let writable = mlirNamedAttributeGet(mlirIdentifierGet(ctx, string_ref(&key)), mlirBoolAttrGet(ctx, 0));
        let dicts: Vec<MlirAttribute> = (0..arguments)
            .map(|i| {
                let mut entries: Vec<MlirNamedAttribute> = Vec::new();
                if let Some(array) = existing {
                    if (i as isize) < mlirArrayAttrGetNumElements(array) {
                        let dict = mlirArrayAttrGetElement(array, i as isize);
                        for j in 0..mlirDictionaryAttrGetNumElements(dict) {
                            let entry = mlirDictionaryAttrGetElement(dict, j);
                            if ir::string_ref_to_string(mlirIdentifierStr(entry.name)) != "bufferization.writable" {
                                entries.push(entry);
                            }
                        }
                    }
                }
                entries.push(writable);
                mlirDictionaryAttrGet(ctx, entries.len() as isize, entries.as_ptr())
            })
            .collect();
        let array = mlirArrayAttrGet(ctx, dicts.len() as isize, dicts.as_ptr());
        let name = CString::new("arg_attrs").expect("no NUL");
        mlirOperationSetAttributeByName(func, string_ref(&name), array);
    }
}

/// The signature of `function`, from [`SIGNATURE_ATTRIBUTE`] or, before lowering, its type.
pub fn signature(module: &Module, function: &str) -> Result<StepSignature, LowerError> {
    let op =
        function_op(module, function).ok_or_else(|| LowerError::NoSuchFunction { function: function.to_string() })?;
    let attr = ir::attribute(op, SIGNATURE_ATTRIBUTE)
        .or_else(|| (ir::op_name(op) == "func.func").then(|| ir::attribute(op, "function_type")).flatten())
        .ok_or_else(|| LowerError::MissingSignature { function: function.to_string() })?;
    unsafe {
        if !mlirAttributeIsAType(attr) || !mlirTypeIsAFunction(mlirTypeAttrGetValue(attr)) {
            return Err(LowerError::SignatureNotFunctionType { function: function.to_string() });
        }
        let t = mlirTypeAttrGetValue(attr);
        let spec = |ty: MlirType, kind: TensorKind, index: isize| {
            TensorSpec::parse(&ir::type_text(ty)).map_err(|e| LowerError::UnsupportedTensorType {
                function: function.to_string(),
                kind,
                index,
                error: e,
            })
        };
        let inputs = (0..mlirFunctionTypeGetNumInputs(t))
            .map(|i| spec(mlirFunctionTypeGetInput(t, i), TensorKind::Argument, i))
            .collect::<Result<_, _>>()?;
        let results = (0..mlirFunctionTypeGetNumResults(t))
            .map(|i| spec(mlirFunctionTypeGetResult(t, i), TensorKind::Result, i))
            .collect::<Result<_, _>>()?;
        Ok(StepSignature { function: function.to_string(), inputs, results })
    }
}

/// A JIT-compiled module.
pub struct Jit {
    raw: MlirExecutionEngine,
}

impl Jit {
    /// Compiles `module` (LLVM dialect) at `opt_level` (0–3), binding the counting allocator.
    pub fn new(module: &Module, opt_level: usize) -> Result<Jit, LowerError> {
        unsafe {
            mlirRegisterAllLLVMTranslations(mlirModuleGetContext(module.to_raw()));
            let raw = mlirExecutionEngineCreate(module.to_raw(), opt_level as i32, 0, std::ptr::null(), false, false);
            if raw.ptr.is_null() {
                return Err(LowerError::JitCompile);
            }
            for (name, ptr) in remat_runtime::alloc::SYMBOLS {
                let c = CString::new(name).expect("no NUL");
                mlirExecutionEngineRegisterSymbol(raw, string_ref(&c), ptr as *mut std::ffi::c_void);
            }
            Ok(Jit { raw })
        }
    }

    /// The packed entry point of `function` (`_mlir_<function>`).
    pub fn entry(&self, function: &str) -> Result<PackedEntry, LowerError> {
        let c = CString::new(function).map_err(|_| LowerError::FunctionNameNul { function: function.to_string() })?;
        let ptr = unsafe { mlirExecutionEngineLookupPacked(self.raw, string_ref(&c)) };
        if ptr.is_null() {
            return Err(LowerError::NoJitFunction { function: function.to_string() });
        }
        Ok(unsafe { std::mem::transmute::<*mut std::ffi::c_void, PackedEntry>(ptr) })
    }
}

impl Drop for Jit {
    fn drop(&mut self) {
        unsafe { mlirExecutionEngineDestroy(self.raw) }
    }
}

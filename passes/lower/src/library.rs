//! A lowered step as a shared library, for a runner on a machine without LLVM
//! (`remat-opt --lower=gpu --emit=library`, run by `remat-gpu-run`).
//!
//! The library holds the host code with the kernels embedded (upstream's `gpu.binary`
//! translation loads them in a global constructor through `mgpuModuleLoad*`), plus two things a
//! runner needs that MLIR's ExecutionEngine would otherwise make at JIT time:
//!
//! * `_mlir_<function>(void **args)`: the packed entry point, the same convention as the
//!   ExecutionEngine's (`remat_runtime::call` documents it);
//! * `remat_step_signature`: a NUL-terminated JSON string with the function's name and tensor
//!   types (`{"function":…,"inputs":[…],"results":[…]}`).
//!
//! Its undefined symbols (`mgpu*`, the counting allocation functions) are the runner's. The
//! object is generated in-process with LLVM's C API for generic x86-64 (the library runs on
//! another machine) as position-independent code, and linked with the system `cc -shared`.

use crate::jit::StepSignature;
use crate::LowerError;
use melior::ir::Module;
use mlir_sys::*;
use remat_mlir::ir;
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::Path;

/// The global holding the step's signature as JSON.
pub const SIGNATURE_SYMBOL: &str = "remat_step_signature";

/// The signature as the JSON the runner reads.
pub fn signature_json(signature: &StepSignature) -> String {
    let list =
        |specs: &[remat_runtime::TensorSpec]| specs.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(",");
    format!(
        "{{\"function\":\"{}\",\"inputs\":[{}],\"results\":[{}]}}",
        signature.function,
        list(&signature.inputs),
        list(&signature.results)
    )
}

/// Adds `_mlir_<function>` and [`SIGNATURE_SYMBOL`] to a module lowered to the LLVM dialect.
pub fn add_entry_points(module: &Module, signature: &StepSignature) -> Result<(), LowerError> {
    let function = &signature.function;
    let func = ir::block_ops(module.body().to_raw())
        .into_iter()
        .find(|&op| {
            ir::op_name(op) == "llvm.func" && ir::string_attribute(op, "sym_name").as_deref() == Some(function.as_str())
        })
        .ok_or_else(|| LowerError::NoLlvmFunction { function: function.clone() })?;
    let function_type = ir::attribute(func, "function_type")
        .ok_or_else(|| LowerError::NoFunctionType { function: function.clone() })?;
    let (inputs, result) = unsafe {
        let t = mlirTypeAttrGetValue(function_type);
        let inputs: Vec<String> = (0..mlirLLVMFunctionTypeGetNumInputs(t))
            .map(|i| ir::type_text(mlirLLVMFunctionTypeGetInput(t, i)))
            .collect();
        (inputs, ir::type_text(mlirLLVMFunctionTypeGetReturnType(t)))
    };
    let mut body = String::new();
    let mut values = Vec::new();
    for (i, t) in inputs.iter().enumerate() {
        body.push_str(&format!(
            "    %p{i} = llvm.getelementptr %args[{i}] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr\n    %a{i} = llvm.load %p{i} : !llvm.ptr -> !llvm.ptr\n    %v{i} = llvm.load %a{i} : !llvm.ptr -> {t}\n"
        ));
        values.push(format!("%v{i}"));
    }
    let call = format!("llvm.call @{function}({}) : ({}) -> {result}", values.join(", "), inputs.join(", "));
    if result == "!llvm.void" {
        body.push_str(&format!("    {call}\n"));
    } else {
        let n = inputs.len();
        body.push_str(&format!(
            "    %r = {call}\n    %pr = llvm.getelementptr %args[{n}] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr\n    %ar = llvm.load %pr : !llvm.ptr -> !llvm.ptr\n    llvm.store %r, %ar : {result}, !llvm.ptr\n"
        ));
    }
    let json = signature_json(signature);
    let escaped: String = json
        .bytes()
        .map(|b| {
            if b == b'"' || b == b'\\' || !b.is_ascii_graphic() && b != b' ' {
                format!("\\{b:02X}")
            } else {
                (b as char).to_string()
            }
        })
        .collect();
    // The declaration of @function only lets the snippet verify on its own; it is not copied.
    let text = format!(
        "llvm.func @{function}({}){}\n\
         llvm.func @_mlir_{function}(%args: !llvm.ptr) {{\n{body}    llvm.return\n  }}\n\
         llvm.mlir.global external constant @{SIGNATURE_SYMBOL}(\"{escaped}\\00\") {{addr_space = 0 : i32}} : !llvm.array<{} x i8>\n",
        inputs.join(", "),
        if result == "!llvm.void" { String::new() } else { format!(" -> {result}") },
        json.len() + 1
    );
    append_parsed(module, &text, function)
}

/// Parses `text` (top-level ops) in `module`'s context and appends clones of its ops but the
/// declaration of `skip`.
fn append_parsed(module: &Module, text: &str, skip: &str) -> Result<(), LowerError> {
    let c = CString::new(text).map_err(|_| LowerError::GeneratedNul)?;
    unsafe {
        let ctx = mlirOperationGetContext(module.as_operation().to_raw());
        let parsed = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(c.as_ptr()));
        if parsed.ptr.is_null() {
            return Err(LowerError::EntryPointParse { text: text.to_string() });
        }
        let body = module.body().to_raw();
        for op in ir::block_ops(mlirModuleGetBody(parsed)) {
            if ir::string_attribute(op, "sym_name").as_deref() != Some(skip) {
                mlirBlockAppendOwnedOperation(body, mlirOperationClone(op));
            }
        }
        mlirModuleDestroy(parsed);
    }
    Ok(())
}

// LLVM's C API (linked statically with MLIR): just what emitting an object needs.
type LlvmTarget = *mut c_void;
type LlvmTargetMachine = *mut c_void;
type LlvmPassBuilderOptions = *mut c_void;
type LlvmTargetData = *mut c_void;
const LLVM_CODEGEN_LEVEL_DEFAULT: u32 = 2;
const LLVM_RELOC_PIC: u32 = 2;
const LLVM_CODE_MODEL_DEFAULT: u32 = 0;
const LLVM_OBJECT_FILE: u32 = 1;

unsafe extern "C" {
    fn LLVMContextCreate() -> LLVMContextRef;
    fn LLVMContextDispose(context: LLVMContextRef);
    fn LLVMDisposeModule(module: LLVMModuleRef);
    fn LLVMDisposeMessage(message: *mut c_char);
    fn LLVMGetTargetFromTriple(triple: *const c_char, target: *mut LlvmTarget, error: *mut *mut c_char) -> i32;
    fn LLVMCreateTargetMachine(
        target: LlvmTarget,
        triple: *const c_char,
        cpu: *const c_char,
        features: *const c_char,
        level: u32,
        reloc: u32,
        code_model: u32,
    ) -> LlvmTargetMachine;
    fn LLVMDisposeTargetMachine(machine: LlvmTargetMachine);
    fn LLVMCreateTargetDataLayout(machine: LlvmTargetMachine) -> LlvmTargetData;
    fn LLVMSetModuleDataLayout(module: LLVMModuleRef, layout: LlvmTargetData);
    fn LLVMDisposeTargetData(layout: LlvmTargetData);
    fn LLVMSetTarget(module: LLVMModuleRef, triple: *const c_char);
    fn LLVMTargetMachineEmitToFile(
        machine: LlvmTargetMachine,
        module: LLVMModuleRef,
        filename: *const c_char,
        codegen: u32,
        error: *mut *mut c_char,
    ) -> i32;
    fn LLVMCreatePassBuilderOptions() -> LlvmPassBuilderOptions;
    fn LLVMDisposePassBuilderOptions(options: LlvmPassBuilderOptions);
    fn LLVMRunPasses(
        module: LLVMModuleRef,
        passes: *const c_char,
        machine: LlvmTargetMachine,
        options: LlvmPassBuilderOptions,
    ) -> *mut c_void;
    fn LLVMInitializeX86TargetInfo();
    fn LLVMInitializeX86Target();
    fn LLVMInitializeX86TargetMC();
    fn LLVMInitializeX86AsmPrinter();
}

/// Takes an LLVM error message (owned C string) as a String.
unsafe fn take_message(message: *mut c_char) -> String {
    if message.is_null() {
        return "unknown LLVM error".into();
    }
    let text = unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned();
    unsafe { LLVMDisposeMessage(message) };
    text
}

/// The target the library is built for: generic x86-64 Linux (the runner's machine is not this one).
const TRIPLE: &str = "x86_64-unknown-linux-gnu";

/// Writes `module` (LLVM dialect, with [`add_entry_points`] done) as a PIC object file.
fn emit_object(module: &Module, path: &Path) -> Result<(), LowerError> {
    let triple = CString::new(TRIPLE).expect("no NUL");
    let cpu = CString::new("x86-64").expect("no NUL");
    let empty = CString::new("").expect("no NUL");
    let text = path.to_str().ok_or_else(|| LowerError::NonUtf8Path { path: path.to_path_buf() })?;
    let out = CString::new(text).map_err(|_| LowerError::PathNul { path: path.to_path_buf() })?;
    let pipeline = CString::new("default<O2>").expect("no NUL");
    unsafe {
        LLVMInitializeX86TargetInfo();
        LLVMInitializeX86Target();
        LLVMInitializeX86TargetMC();
        LLVMInitializeX86AsmPrinter();
        let op = module.as_operation().to_raw();
        mlirRegisterAllLLVMTranslations(mlirOperationGetContext(op));
        let context = LLVMContextCreate();
        let llvm_module = mlirTranslateModuleToLLVMIR(op, context);
        if llvm_module.is_null() {
            LLVMContextDispose(context);
            return Err(LowerError::TranslateToLlvmIr);
        }
        let result = (|| {
            let mut target: LlvmTarget = std::ptr::null_mut();
            let mut error: *mut c_char = std::ptr::null_mut();
            if LLVMGetTargetFromTriple(triple.as_ptr(), &mut target, &mut error) != 0 {
                return Err(LowerError::NoLlvmTarget { triple: TRIPLE, message: take_message(error) });
            }
            let machine = LLVMCreateTargetMachine(
                target,
                triple.as_ptr(),
                cpu.as_ptr(),
                empty.as_ptr(),
                LLVM_CODEGEN_LEVEL_DEFAULT,
                LLVM_RELOC_PIC,
                LLVM_CODE_MODEL_DEFAULT,
            );
            if machine.is_null() {
                return Err(LowerError::NoTargetMachine { triple: TRIPLE });
            }
            LLVMSetTarget(llvm_module, triple.as_ptr());
            let layout = LLVMCreateTargetDataLayout(machine);
            LLVMSetModuleDataLayout(llvm_module, layout);
            LLVMDisposeTargetData(layout);
            let options = LLVMCreatePassBuilderOptions();
            let failed = LLVMRunPasses(llvm_module, pipeline.as_ptr(), machine, options);
            LLVMDisposePassBuilderOptions(options);
            if !failed.is_null() {
                LLVMDisposeTargetMachine(machine);
                return Err(LowerError::LlvmOptimization);
            }
            let emitted = LLVMTargetMachineEmitToFile(machine, llvm_module, out.as_ptr(), LLVM_OBJECT_FILE, &mut error);
            LLVMDisposeTargetMachine(machine);
            if emitted != 0 {
                return Err(LowerError::EmitObject { message: take_message(error) });
            }
            Ok(())
        })();
        LLVMDisposeModule(llvm_module);
        LLVMContextDispose(context);
        result
    }
}

/// The shared library of a lowered `module` (LLVM dialect + `gpu.binary`), as bytes.
pub fn shared_library(module: &Module, signature: &StepSignature) -> Result<Vec<u8>, LowerError> {
    add_entry_points(module, signature)?;
    // Removed, with the object and the library in it, when `dir` drops.
    let dir = tempfile::Builder::new()
        .prefix("remat-lib-")
        .tempdir()
        .map_err(|source| LowerError::TempDir { dir: std::env::temp_dir(), source })?;
    let object = dir.path().join("step.o");
    let library = dir.path().join("step.so");
    emit_object(module, &object)?;
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let output = std::process::Command::new(&cc)
        .arg("-shared")
        // The step's own calls bind inside the library: a runner exports `main` too.
        .arg("-Wl,-Bsymbolic")
        .arg("-o")
        .arg(&library)
        .arg(&object)
        .arg("-lm")
        .output();
    let output = match output {
        Ok(output) => output,
        Err(source) => return Err(LowerError::LinkerNotRun { cc, source }),
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        return Err(LowerError::LinkerFailed { cc, status: output.status, stderr });
    }
    std::fs::read(&library).map_err(|source| LowerError::ReadLibrary { path: library, source })
}

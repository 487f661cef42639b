//! Lowering a (rewritten) training step to the LLVM dialect, so that it runs with the peak the
//! plan promised.
//!
//! * [`pipeline`] — the textual pipeline, one place: StableHLO leftovers to upstream
//!   dialects, one-shot bufferization, ownership-based deallocation, then
//!   [`place_deallocs`](place_deallocs::place_deallocs) to free each buffer right after its
//!   last use, [`host_buffers`](host_buffers::mark_host_buffers) to count host copies apart,
//!   then loops and LLVM. No pass that merges ops (CSE) runs on tensors.
//! * [`lower_to_llvm`] — runs it on a module.
//! * [`register_lowering_passes`] — puts `remat-place-deallocs` and `remat-lower-stablehlo` in
//!   MLIR's pass registry so textual pipelines (and `remat-opt --pass-pipeline`) can name them.
//!
//! Allocation accounting: `finalize-memref-to-llvm{use-generic-functions=1}` makes every buffer
//! allocation a call to `_mlir_memref_to_llvm_alloc(size)` and every free a call to
//! `_mlir_memref_to_llvm_free`, which `remat-runtime` provides and counts. Bufferization runs
//! with `buffer-alignment=0`, so `size` is the buffer's exact byte size (an aligned allocation
//! would be padded to a multiple of its alignment) and the count is the memory model's bytes.

pub mod error;
pub mod gpu;
pub mod gpu_target;
pub mod host_buffers;
pub mod jit;
pub mod library;
pub mod place_deallocs;
pub mod stablehlo;
#[cfg(test)]
mod testing;

pub use error::{LowerError, TensorKind};
pub use gpu_target::{find_cuda_toolkit, gpu_pipeline, GpuFormat, GpuOptions};
pub use jit::{signature, Jit, StepSignature};

use melior::ir::Module;
use melior::pass::PassManager;
use remat_mlir::{emit_error, MlirError, RematContext};

/// Where the step runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The host CPU, through the LLVM dialect.
    Cpu,
    /// An NVIDIA GPU through MLIR's gpu/NVVM path: host code in the LLVM dialect that launches
    /// kernels embedded as `gpu.binary` (see [`gpu_pipeline`]).
    Gpu(GpuOptions),
}

impl std::str::FromStr for Target {
    type Err = LowerError;
    fn from_str(s: &str) -> Result<Self, LowerError> {
        match s {
            "cpu" => Ok(Target::Cpu),
            "gpu" => Ok(Target::Gpu(GpuOptions::default())),
            other => Err(LowerError::UnknownTarget { target: other.to_string() }),
        }
    }
}

/// Tensor → buffers, with deallocations right after last uses. Private functions are inlined
/// as the planner's import does (JAX's `relu`, `log_softmax` helpers: a buffer passed to a call
/// that may return an alias of it can only be freed at the end of the step), after the
/// StableHLO ops are lowered (MLIR's inliner cannot handle unregistered ops), and with no
/// default pipeline: the inliner's canonicalization would change the program that was planned.
/// The private functions no call is left to are erased then (their loops would have to be
/// lowered for the GPU for nothing).
pub(crate) const BUFFERIZE: &str = "remat-lower-stablehlo,inline{default-pipeline=\"\"},symbol-dce,\
one-shot-bufferize{bufferize-function-boundaries=1 function-boundary-type-conversion=identity-layout-map buffer-alignment=0 allow-return-allocs-from-loops=1},\
expand-realloc,ownership-based-buffer-deallocation,canonicalize,buffer-deallocation-simplification,\
bufferization-lower-deallocations,canonicalize,func.func(remat-place-deallocs),remat-host-buffers";

/// Buffers → LLVM on the host. The generic allocation functions let a runner count bytes.
pub(crate) const CPU_TO_LLVM: &str = "convert-bufferization-to-memref,convert-linalg-to-loops,convert-scf-to-cf,expand-strided-metadata,lower-affine,\
finalize-memref-to-llvm{use-generic-functions=1},convert-arith-to-llvm,\
convert-math-to-llvm,convert-math-to-libm,convert-index-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts";

/// The whole lowering pipeline for `target`, as a textual pass pipeline on `builtin.module`.
pub fn pipeline(target: &Target) -> String {
    match target {
        Target::Cpu => format!("builtin.module({BUFFERIZE},{CPU_TO_LLVM})"),
        Target::Gpu(options) => format!("builtin.module({BUFFERIZE},{})", gpu_pipeline(options)),
    }
}

/// Lowers `module` in place to the LLVM dialect for `target`.
pub fn lower_to_llvm(context: &RematContext, module: &mut Module, target: &Target) -> Result<(), Vec<MlirError>> {
    register_lowering_passes();
    jit::prepare_functions(module);
    // gpu-module-to-binary translates kernel modules to LLVM IR in this context.
    unsafe { mlir_sys::mlirRegisterAllLLVMTranslations(context.context().to_raw()) };
    run_pipeline(context, module, &pipeline(target))?;
    if let Target::Gpu(options) = target {
        gpu_target::strip_timings(module);
        gpu_target::check_kernels(module, options)?;
    }
    Ok(())
}

/// Runs a textual pipeline (on `builtin.module`) on `module`, collecting its diagnostics.
pub fn run_pipeline(context: &RematContext, module: &mut Module, pipeline: &str) -> Result<(), Vec<MlirError>> {
    register_lowering_passes();
    context.take_diagnostics();
    let manager = PassManager::new(context.context());
    let parsed = melior::utility::parse_pass_pipeline(manager.as_operation_pass_manager(), pipeline);
    if let Err(e) = parsed {
        let mut d = context.take_diagnostics();
        d.push(MlirError { location: None, message: format!("invalid pass pipeline '{pipeline}': {e}") });
        return Err(d);
    }
    match manager.run(module) {
        Ok(()) => Ok(()),
        Err(_) => {
            let mut d = context.take_diagnostics();
            if d.is_empty() {
                d.push(MlirError { location: None, message: "the lowering pipeline failed".into() });
            }
            Err(d)
        }
    }
}

/// Legalizes the StableHLO ops of `module` that have a linalg form
/// ([`stablehlo::LEGALIZED`]) in place, leaving `while`, `scatter` and `optimization_barrier`
/// as jaxlib's `stablehlo-legalize-to-linalg` leaves them: remat-opt plans what will run when it
/// lowers a StableHLO step (so measured = planned, and elementwise fusion applies). Returns how
/// many ops it legalized; on an error nothing changed.
/// The pass `remat-legalize-stablehlo` does the same in a pipeline.
pub fn legalize_stablehlo(module: &Module) -> Result<usize, MlirError> {
    let root = module.as_operation().to_raw();
    let templates = stablehlo::legalize_plan(root).map_err(|e| e.to_mlir_error())?;
    stablehlo::legalize_apply(root, templates).map_err(|e| e.to_mlir_error())
}

unsafe extern "C" {
    fn rematRegisterLoweringPasses(
        place_deallocs: unsafe extern "C" fn(mlir_sys::MlirOperation) -> bool,
        lower_stablehlo: unsafe extern "C" fn(mlir_sys::MlirOperation) -> bool,
        legalize_stablehlo: unsafe extern "C" fn(mlir_sys::MlirOperation) -> bool,
        host_buffers: unsafe extern "C" fn(mlir_sys::MlirOperation) -> bool,
        gpu_parallelize: unsafe extern "C" fn(mlir_sys::MlirOperation) -> bool,
        gpu_check_host: unsafe extern "C" fn(mlir_sys::MlirOperation) -> bool,
        gpu_launch_stack: unsafe extern "C" fn(mlir_sys::MlirOperation) -> bool,
    );
}

/// Runs `body` without unwinding into C++; a panic or an error becomes a diagnostic on `op`.
fn guarded(op: mlir_sys::MlirOperation, pass: &str, body: impl FnOnce() -> Result<(), MlirError>) -> bool {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            // An empty message: the diagnostic was emitted already.
            if !e.message.is_empty() {
                emit_error(op, &e);
            }
            false
        }
        Err(_) => {
            emit_error(op, &MlirError { location: None, message: format!("internal error in {pass} (panic)") });
            false
        }
    }
}

/// Emits `e` at its op, where the user can find it; the empty error tells [`guarded`] that the
/// diagnostic is out already.
fn emit_at_op(e: stablehlo::OpError) -> MlirError {
    emit_error(e.op, &MlirError { location: None, message: e.message });
    MlirError { location: None, message: String::new() }
}

unsafe extern "C" fn place_deallocs_callback(op: mlir_sys::MlirOperation) -> bool {
    guarded(op, "remat-place-deallocs", || {
        let stats = place_deallocs::place_deallocs(op);
        tracing::debug!(deallocs = stats.deallocs, moved = stats.moved, "remat-place-deallocs");
        Ok(())
    })
}

unsafe extern "C" fn host_buffers_callback(op: mlir_sys::MlirOperation) -> bool {
    guarded(op, "remat-host-buffers", || {
        let stats = host_buffers::mark_host_buffers(op);
        tracing::debug!(?stats, "remat-host-buffers");
        Ok(())
    })
}

unsafe extern "C" fn gpu_parallelize_callback(op: mlir_sys::MlirOperation) -> bool {
    guarded(op, "remat-gpu-parallelize", || {
        let stats = gpu::parallelize(op);
        tracing::debug!(?stats, "remat-gpu-parallelize");
        Ok(())
    })
}

unsafe extern "C" fn gpu_check_host_callback(op: mlir_sys::MlirOperation) -> bool {
    guarded(op, "remat-gpu-check-host", || match gpu::check_host(op) {
        Ok(stats) => {
            tracing::debug!(?stats, "remat-gpu-check-host");
            Ok(())
        }
        Err(e) => Err(emit_at_op(e)),
    })
}

unsafe extern "C" fn gpu_launch_stack_callback(op: mlir_sys::MlirOperation) -> bool {
    guarded(op, "remat-gpu-launch-stack", || {
        let bracketed = gpu::bound_launch_stack(op);
        tracing::debug!(bracketed, "remat-gpu-launch-stack");
        Ok(())
    })
}

unsafe extern "C" fn lower_stablehlo_callback(op: mlir_sys::MlirOperation) -> bool {
    guarded(op, "remat-lower-stablehlo", || match stablehlo::lower_stablehlo(op) {
        Ok(stats) => {
            tracing::debug!(?stats, "remat-lower-stablehlo");
            Ok(())
        }
        Err(e) => Err(emit_at_op(e)),
    })
}

unsafe extern "C" fn legalize_stablehlo_callback(op: mlir_sys::MlirOperation) -> bool {
    guarded(op, "remat-legalize-stablehlo", || {
        let templates = stablehlo::legalize_plan(op).map_err(emit_at_op)?;
        let count = stablehlo::legalize_apply(op, templates).map_err(emit_at_op)?;
        tracing::debug!(count, "remat-legalize-stablehlo");
        Ok(())
    })
}

/// Registers the remat lowering passes (`remat-place-deallocs`, `remat-lower-stablehlo`,
/// `remat-legalize-stablehlo`,
/// `remat-host-buffers`, `remat-gpu-parallelize`, `remat-gpu-check-host`, `remat-gpu-launch-stack`), and every upstream pass the
/// pipelines name, in MLIR's global pass registry. Idempotent.
pub fn register_lowering_passes() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        melior::utility::register_all_passes();
        unsafe {
            rematRegisterLoweringPasses(
                place_deallocs_callback,
                lower_stablehlo_callback,
                legalize_stablehlo_callback,
                host_buffers_callback,
                gpu_parallelize_callback,
                gpu_check_host_callback,
                gpu_launch_stack_callback,
            )
        }
    });
}

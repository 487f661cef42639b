//! The crate's error type: everything outside the MLIR pipelines that can fail — parsing a
//! target or a binary format, checking GPU options, reading a step's signature, the JIT, and
//! building a shared library — with the data that explains it. Diagnostics of the lowering
//! pipelines themselves stay MLIR diagnostics ([`MlirError`](remat_mlir::MlirError)).
//!
//! Each message is what the tools print after `error: `; lit tests compare them.

use crate::jit::SIGNATURE_ATTRIBUTE;
use remat_runtime::RuntimeError;
use std::path::PathBuf;
use std::process::ExitStatus;

/// Why lowering, running or packaging a step failed before or after the MLIR pipelines.
#[derive(Debug, thiserror::Error)]
pub enum LowerError {
    // Options.
    /// `--lower=` names no target.
    #[error("unknown lowering target '{target}' (expected cpu or gpu)")]
    UnknownTarget { target: String },
    /// `--gpu-format=` names no format.
    #[error("unknown GPU binary format '{format}' (expected ptx or cubin)")]
    UnknownGpuFormat { format: String },
    /// The chip is not `sm_<alphanumerics>`.
    #[error("invalid --gpu-chip '{chip}' (expected an NVIDIA architecture such as sm_80 or sm_90)")]
    InvalidGpuChip { chip: String },
    /// The toolkit path would break the textual pass pipeline.
    #[error("CUDA toolkit path '{path}' cannot go into a pass pipeline (it has a space, comma, brace or quote)")]
    ToolkitPathInPipeline { path: PathBuf },
    /// The directory has no libdevice.
    #[error("'{path}' is not a CUDA toolkit: it has no nvvm/libdevice/libdevice.10.bc")]
    NotCudaToolkit { path: PathBuf },
    /// A cubin was asked for and the toolkit has no `ptxas`.
    #[error("a cubin needs ptxas, and '{path}' has no bin/ptxas (use --gpu-format=ptx)")]
    NoPtxas { path: PathBuf },
    /// A cubin was asked for and no toolkit was found.
    #[error(
        "a cubin needs ptxas from a CUDA toolkit, and none was found (run tools/setup.sh, set REMAT_CUDA_PATH or pass --cuda-path; or use --gpu-format=ptx)"
    )]
    NoCudaToolkit,
    /// `--emit=ptx` met a kernel module serialized as a cubin.
    #[error("kernel module @{module} is a cubin; lower with --gpu-format=ptx to see its PTX")]
    CubinHasNoPtx { module: String },

    // The step's signature.
    /// No `func.func` or `llvm.func` of that name.
    #[error("no function named '{function}' in the module")]
    NoSuchFunction { function: String },
    /// A lowered function without [`SIGNATURE_ATTRIBUTE`].
    #[error("'{function}' was lowered without its '{attribute}' attribute; lower it with remat-opt --lower=cpu", attribute = SIGNATURE_ATTRIBUTE)]
    MissingSignature { function: String },
    /// [`SIGNATURE_ATTRIBUTE`] holds something else than a function type.
    #[error("'{function}': {attribute} is not a function type", attribute = SIGNATURE_ATTRIBUTE)]
    SignatureNotFunctionType { function: String },
    /// An argument or result type is not a tensor type a runner can make. The message
    /// includes `error`'s, so `error` is not also the `source()`.
    #[error("'{function}' {kind} {index}: {error}")]
    UnsupportedTensorType {
        function: String,
        kind: TensorKind,
        index: isize,
        /// Why `remat_runtime::TensorSpec::parse` refused the type.
        error: RuntimeError,
    },

    // The JIT.
    /// MLIR's ExecutionEngine could not be created.
    #[error("the JIT could not compile the module (is it lowered to the LLVM dialect?)")]
    JitCompile,
    /// A function name that cannot be a C string.
    #[error("function name contains NUL")]
    FunctionNameNul { function: String },
    /// The JIT has no packed entry point of that name.
    #[error("the JIT has no function '{function}'")]
    NoJitFunction { function: String },

    // The shared library.
    /// The lowered module lacks the step's `llvm.func`.
    #[error("the lowered module has no llvm.func @{function}")]
    NoLlvmFunction { function: String },
    /// The step's `llvm.func` has no `function_type`.
    #[error("@{function} has no function_type")]
    NoFunctionType { function: String },
    /// The generated entry point text has a NUL byte.
    #[error("generated code has a NUL")]
    GeneratedNul,
    /// The generated entry point does not parse (a bug).
    #[error("internal error: the generated entry point does not parse:\n{text}")]
    EntryPointParse { text: String },
    /// The temporary directory could not be made.
    #[error("could not create a temporary directory in {dir}")]
    TempDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The temporary object path is not UTF-8.
    #[error("non-UTF-8 temporary path")]
    NonUtf8Path { path: PathBuf },
    /// The temporary object path has a NUL byte.
    #[error("path has a NUL")]
    PathNul { path: PathBuf },
    /// `mlirTranslateModuleToLLVMIR` failed.
    #[error("the module could not be translated to LLVM IR")]
    TranslateToLlvmIr,
    /// LLVM has no target for the triple.
    #[error("no LLVM target for {triple}: {message}")]
    NoLlvmTarget { triple: &'static str, message: String },
    /// LLVM could not make a target machine for the triple.
    #[error("could not create an LLVM target machine for {triple}")]
    NoTargetMachine { triple: &'static str },
    /// LLVM's optimization pipeline failed.
    #[error("LLVM's optimization pipeline failed on the step")]
    LlvmOptimization,
    /// LLVM could not write the object file.
    #[error("could not emit the object file: {message}")]
    EmitObject { message: String },
    /// The linker could not be started.
    #[error("could not run the linker '{cc}' (a C compiler driver is needed to link the library): {source}")]
    LinkerNotRun { cc: String, source: std::io::Error },
    /// The linker ran and failed.
    #[error("'{cc} -shared' failed:\n{stderr}")]
    LinkerFailed { cc: String, status: ExitStatus, stderr: String },
    /// The linked library could not be read back.
    #[error("{path}: {source}")]
    ReadLibrary { path: PathBuf, source: std::io::Error },

    // stablehlo.scatter's dimension numbers (the lowering puts them in a diagnostic at the op).
    /// A dimension number is outside its tensor's rank (or the index vector dimension is also
    /// a batching dimension).
    #[error("a dimension number is out of range")]
    ScatterDimensionOutOfRange { field: &'static str, dimension: i64, rank: i64 },
    /// `input_batching_dims` and `scatter_indices_batching_dims` have different lengths.
    #[error("input_batching_dims and scatter_indices_batching_dims differ in length")]
    ScatterBatchingDimsLength { input_batching_dims: Vec<i64>, scatter_indices_batching_dims: Vec<i64> },
    /// The window, inserted and batching dimensions do not add up to the operand's rank.
    #[error("update_window_dims, inserted_window_dims and input_batching_dims do not cover the operand")]
    ScatterWindowCoverage {
        update_window_dims: Vec<i64>,
        inserted_window_dims: Vec<i64>,
        input_batching_dims: Vec<i64>,
        operand_rank: usize,
    },
    /// The index vector's length is not the number of `scatter_dims_to_operand_dims`.
    #[error("scatter_dims_to_operand_dims does not match the index vector")]
    ScatterIndexVector { index_vector_length: i64, scatter_dims_to_operand_dims: Vec<i64> },
    /// `updates` has another number of scatter dimensions than the indices have batch dimensions.
    #[error("the update scatter dimensions do not match the index batch dimensions")]
    ScatterBatchDimensions { update_scatter_dims: i64, index_batch_dims: i64 },
}

/// Which side of a function's type a tensor is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorKind {
    Argument,
    Result,
}

impl std::fmt::Display for TensorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TensorKind::Argument => "argument",
            TensorKind::Result => "result",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_errors_print_what_the_tools_always_printed() {
        let e: LowerError = "tpu".parse::<crate::Target>().unwrap_err();
        assert!(matches!(&e, LowerError::UnknownTarget { target } if target == "tpu"));
        assert_eq!(e.to_string(), "unknown lowering target 'tpu' (expected cpu or gpu)");
        let e = "sass".parse::<crate::GpuFormat>().unwrap_err();
        assert_eq!(e.to_string(), "unknown GPU binary format 'sass' (expected ptx or cubin)");
        let e = LowerError::NotCudaToolkit { path: PathBuf::from("/opt/x.missing") };
        assert_eq!(e.to_string(), "'/opt/x.missing' is not a CUDA toolkit: it has no nvvm/libdevice/libdevice.10.bc");
    }

    #[test]
    fn signature_and_linker_errors_keep_their_data() {
        let e = LowerError::MissingSignature { function: "main".into() };
        assert_eq!(
            e.to_string(),
            "'main' was lowered without its 'remat.signature' attribute; lower it with remat-opt --lower=cpu"
        );
        let e = LowerError::UnsupportedTensorType {
            function: "main".into(),
            kind: TensorKind::Result,
            index: 1,
            error: RuntimeError::NotRankedTensor { text: "i32".into() },
        };
        assert_eq!(e.to_string(), "'main' result 1: 'i32' is not a ranked tensor type");
        use std::os::unix::process::ExitStatusExt;
        let e = LowerError::LinkerFailed {
            cc: "cc".into(),
            status: ExitStatus::from_raw(1 << 8),
            stderr: "ld: undefined symbol\n".into(),
        };
        assert!(matches!(&e, LowerError::LinkerFailed { status, .. } if status.code() == Some(1)));
        assert_eq!(e.to_string(), "'cc -shared' failed:\nld: undefined symbol\n");
    }

    #[test]
    fn scatter_errors_print_only_the_reason() {
        let e = LowerError::ScatterIndexVector { index_vector_length: 2, scatter_dims_to_operand_dims: vec![0] };
        assert_eq!(e.to_string(), "scatter_dims_to_operand_dims does not match the index vector");
    }
}

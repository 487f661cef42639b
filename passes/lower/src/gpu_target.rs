//! The GPU target: options, the pipeline after bufferization, the CUDA toolkit lookup, and the
//! checks and views of the kernels it produces.
//!
//! The kernels are serialized by upstream's `gpu-module-to-binary`: PTX needs no CUDA at all;
//! a cubin needs `ptxas`; kernels that call math functions need libdevice
//! (`nvvm/libdevice/libdevice.10.bc`), which `convert-gpu-to-nvvm` calls into (`__nv_expf`…).
//! `tools/setup.sh` unpacks both from the PyPI wheel `nvidia-cuda-nvcc-cu12`.

use crate::{LowerError, MlirError};
use melior::ir::Module;
use mlir_sys::*;
use remat_mlir::ir;
use std::path::{Path, PathBuf};

/// What the kernels are serialized to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuFormat {
    /// PTX assembly, compiled by the driver when the module is loaded (`mgpuModuleLoadJIT`).
    Ptx,
    /// A cubin for the chip, assembled by `ptxas` (`mgpuModuleLoad`).
    Cubin,
}

impl std::str::FromStr for GpuFormat {
    type Err = LowerError;
    fn from_str(s: &str) -> Result<Self, LowerError> {
        match s {
            "ptx" => Ok(GpuFormat::Ptx),
            "cubin" => Ok(GpuFormat::Cubin),
            other => Err(LowerError::UnknownGpuFormat { format: other.to_string() }),
        }
    }
}

/// Options of the GPU lowering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuOptions {
    /// The NVVM target chip (`sm_90` for H100/H200).
    pub chip: String,
    /// PTX or cubin.
    pub format: GpuFormat,
    /// A CUDA toolkit directory (with `nvvm/libdevice/libdevice.10.bc`, and `bin/ptxas` for
    /// cubins).
    pub toolkit: Option<PathBuf>,
}

impl Default for GpuOptions {
    /// `sm_90`; the toolkit [`find_cuda_toolkit`] finds; a cubin when it has `ptxas`, else PTX.
    fn default() -> Self {
        let toolkit = find_cuda_toolkit();
        let format = if toolkit.as_deref().is_some_and(has_ptxas) { GpuFormat::Cubin } else { GpuFormat::Ptx };
        GpuOptions { chip: "sm_90".into(), format, toolkit }
    }
}

/// Whether `dir` looks like a CUDA toolkit the NVVM serializer can use (it has libdevice).
pub fn is_cuda_toolkit(dir: &Path) -> bool {
    dir.join("nvvm/libdevice/libdevice.10.bc").is_file()
}

/// Whether the toolkit at `dir` can assemble cubins.
pub fn has_ptxas(dir: &Path) -> bool {
    dir.join("bin/ptxas").is_file()
}

/// The CUDA toolkit to use: `$REMAT_CUDA_PATH`, then the one `tools/setup.sh` unpacks
/// (`${XDG_CACHE_HOME:-~/.cache}/remat-opt/cuda-nvcc`), then `$CUDA_HOME`, then
/// `/usr/local/cuda`; the first that has libdevice.
pub fn find_cuda_toolkit() -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    let candidates = [
        std::env::var_os("REMAT_CUDA_PATH").map(PathBuf::from),
        cache.map(|c| c.join("remat-opt/cuda-nvcc")),
        std::env::var_os("CUDA_HOME").map(PathBuf::from),
        Some(PathBuf::from("/usr/local/cuda")),
    ];
    candidates.into_iter().flatten().find(|d| is_cuda_toolkit(d))
}

/// Buffers → kernels and host code. After the CPU pipeline's bufferization (same deallocation
/// placement, so the device peak follows the schedule the same way):
///
/// 1. copies and what has no parallel loop become parallel loops (`remat-gpu-parallelize`),
///    then linalg → `scf.parallel`;
/// 2. tile by 32×8 (the inner tile becomes the thread block), map to blocks and threads,
///    make `gpu.launch`es; constants move into them, and nothing else may touch memory on the
///    host (`remat-gpu-check-host`);
/// 3. outline kernels, attach the NVVM target, lower kernels to NVVM and the host to LLVM (with
///    the counting allocation functions, as on the CPU), bound the stack each launch takes
///    (`remat-gpu-launch-stack`), serialize the kernels.
pub fn gpu_pipeline(options: &GpuOptions) -> String {
    let format = match options.format {
        GpuFormat::Ptx => "isa",
        GpuFormat::Cubin => "bin",
    };
    let toolkit = options.toolkit.as_ref().map(|t| format!(" toolkit={}", t.display())).unwrap_or_default();
    format!(
        "convert-bufferization-to-memref,{GPU_LOOPS},func.func(gpu-map-parallel-loops,convert-parallel-loops-to-gpu,remat-gpu-check-host),\
gpu-kernel-outlining,nvvm-attach-target{{chip={} O=3}},gpu.module(convert-gpu-to-nvvm),\
expand-strided-metadata,lower-affine,convert-scf-to-cf,finalize-memref-to-llvm{{use-generic-functions=1}},\
convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,gpu-to-llvm,reconcile-unrealized-casts,\
remat-gpu-launch-stack,gpu-module-to-binary{{format={format}{toolkit}}}",
        options.chip
    )
}

/// The loop nests the kernels are made from (on the module, after bufferization): parallel
/// loops tiled 32×8, the inner tile being the thread block; `no-min-max-bounds` keeps the
/// tile loops' bounds constant (a guard skips the iterations past the end), which the GPU
/// mapping needs.
pub const GPU_LOOPS: &str = "remat-gpu-parallelize,func.func(convert-linalg-to-parallel-loops,\
scf-parallel-loop-tiling{parallel-loop-tile-sizes=32,8 no-min-max-bounds=1},sccp)";

/// The GPU pipeline's loop nests ([`GPU_LOOPS`]) lowered for the CPU instead of the GPU: what
/// the kernels compute, run sequentially. Tests compare its outputs with the plain CPU
/// lowering's, which checks the GPU path's rewrites without a GPU.
pub fn gpu_loops_on_cpu_pipeline() -> String {
    format!("builtin.module({},convert-bufferization-to-memref,{GPU_LOOPS},{})", crate::BUFFERIZE, crate::CPU_TO_LLVM)
}

/// Checks `options` before they go into a pipeline string.
pub fn validate(options: &GpuOptions) -> Result<(), LowerError> {
    if !options.chip.starts_with("sm_")
        || !options.chip[3..].chars().all(|c| c.is_ascii_alphanumeric())
        || options.chip.len() < 4
    {
        return Err(LowerError::InvalidGpuChip { chip: options.chip.clone() });
    }
    if let Some(t) = &options.toolkit {
        if t.display().to_string().contains([' ', ',', '{', '}', '"']) {
            return Err(LowerError::ToolkitPathInPipeline { path: t.clone() });
        }
        if !is_cuda_toolkit(t) {
            return Err(LowerError::NotCudaToolkit { path: t.clone() });
        }
        if options.format == GpuFormat::Cubin && !has_ptxas(t) {
            return Err(LowerError::NoPtxas { path: t.clone() });
        }
    } else if options.format == GpuFormat::Cubin {
        return Err(LowerError::NoCudaToolkit);
    }
    Ok(())
}

/// One serialized kernel module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelObject {
    /// The `gpu.binary` symbol.
    pub name: String,
    /// PTX text, or a cubin's bytes.
    pub bytes: Vec<u8>,
    pub format: GpuFormat,
}

/// Every kernel module of a lowered module, in order.
pub fn kernel_objects(module: &Module) -> Vec<KernelObject> {
    let mut out = Vec::new();
    for op in ir::block_ops(module.body().to_raw()) {
        if ir::op_name(op) != "gpu.binary" {
            continue;
        }
        let name = ir::string_attribute(op, "sym_name").unwrap_or_default();
        let Some(objects) = ir::attribute(op, "objects") else { continue };
        unsafe {
            for i in 0..mlirArrayAttrGetNumElements(objects) {
                let object = mlirArrayAttrGetElement(objects, i);
                let data = mlirGPUObjectAttrGetObject(object);
                let bytes = std::slice::from_raw_parts(data.data as *const u8, data.length).to_vec();
                // CompilationTarget: 1 offload, 2 assembly, 3 binary, 4 fatbinary.
                let format = if mlirGPUObjectAttrGetFormat(object) == 2 { GpuFormat::Ptx } else { GpuFormat::Cubin };
                out.push(KernelObject { name: name.clone(), bytes, format });
            }
        }
    }
    out
}

/// Drops the serializer's timings (`LLVMIRToISATimeInMs`, …) from every kernel object's
/// properties, so the same input gives the same bytes out.
pub fn strip_timings(module: &Module) {
    for op in ir::block_ops(module.body().to_raw()) {
        if ir::op_name(op) != "gpu.binary" {
            continue;
        }
        let Some(objects) = ir::attribute(op, "objects") else { continue };
        unsafe {
            let context = mlirOperationGetContext(op);
            let rebuilt: Vec<MlirAttribute> = (0..mlirArrayAttrGetNumElements(objects))
                .map(|i| {
                    let object = mlirArrayAttrGetElement(objects, i);
                    let properties = mlirGPUObjectAttrGetProperties(object);
                    if properties.ptr.is_null() {
                        return object;
                    }
                    let kept: Vec<MlirNamedAttribute> = (0..mlirDictionaryAttrGetNumElements(properties))
                        .map(|j| mlirDictionaryAttrGetElement(properties, j))
                        .filter(|entry| !ir::string_ref_to_string(mlirIdentifierStr(entry.name)).ends_with("TimeInMs"))
                        .collect();
                    let kept = mlirDictionaryAttrGet(context, kept.len() as isize, kept.as_ptr());
                    let (target, format, data) = (
                        mlirGPUObjectAttrGetTarget(object),
                        mlirGPUObjectAttrGetFormat(object),
                        mlirGPUObjectAttrGetObject(object),
                    );
                    if mlirGPUObjectAttrHasKernels(object) {
                        mlirGPUObjectAttrGetWithKernels(
                            context,
                            target,
                            format,
                            data,
                            kept,
                            mlirGPUObjectAttrGetKernels(object),
                        )
                    } else {
                        mlirGPUObjectAttrGet(context, target, format, data, kept)
                    }
                })
                .collect();
            let array = mlirArrayAttrGet(context, rebuilt.len() as isize, rebuilt.as_ptr());
            let key = std::ffi::CString::new("objects").expect("no NUL");
            mlirOperationSetAttributeByName(op, mlirStringRefCreateFromCString(key.as_ptr()), array);
        }
    }
}

/// Checks the serialized kernels: PTX that calls libdevice functions it was not linked with
/// would load on no GPU, so it is an error that says where to get libdevice.
pub fn check_kernels(module: &Module, options: &GpuOptions) -> Result<(), Vec<MlirError>> {
    let mut missing: Vec<String> = Vec::new();
    for object in kernel_objects(module).iter().filter(|o| o.format == GpuFormat::Ptx) {
        let text = String::from_utf8_lossy(&object.bytes);
        for line in text.lines().filter(|l| l.starts_with(".extern .func")) {
            if let Some(name) = line.split_whitespace().find(|w| w.starts_with("__nv_")) {
                if !missing.iter().any(|m| m == name) {
                    missing.push(name.to_string());
                }
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let searched = match &options.toolkit {
        Some(t) => format!("the toolkit at '{}' did not provide them", t.display()),
        None => "no CUDA toolkit with nvvm/libdevice/libdevice.10.bc was found".to_string(),
    };
    Err(vec![MlirError {
        location: None,
        message: format!(
            "the kernels call libdevice functions ({}) and {searched}: run tools/setup.sh (it unpacks libdevice and ptxas from the PyPI wheel nvidia-cuda-nvcc-cu12), set REMAT_CUDA_PATH, or pass --cuda-path",
            missing.join(", ")
        ),
    }])
}

/// The PTX of every kernel module, each after a `// gpu.binary @name` line (`--emit=ptx`).
pub fn ptx_listing(module: &Module) -> Result<String, LowerError> {
    let mut out = String::new();
    for object in kernel_objects(module) {
        if object.format != GpuFormat::Ptx {
            return Err(LowerError::CubinHasNoPtx { module: object.name });
        }
        out.push_str(&format!("// gpu.binary @{}\n", object.name));
        out.push_str(&String::from_utf8_lossy(&object.bytes));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

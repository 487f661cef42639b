//! The C functions a step's shared library calls, by name: upstream MLIR's
//! `CudaRuntimeWrappers.cpp` (modules, launches, streams, events, memory), and the counting
//! allocator (`_mlir_memref_to_llvm_*`, `remat_host_alloc_next`, `remat_staging_alloc_next`,
//! `memrefCopy`).
//!
//! A runner exports them from its executable (`-rdynamic`, and a use of [`EXPORTED_SYMBOLS`] so
//! the linker keeps them), so the library's undefined symbols resolve to them at `dlopen`.
//! Like upstream, a failing driver call is printed on stderr (`'call' failed with 'NAME'`);
//! it is also recorded for [`super::take_first_error`], since the step cannot see it.
//! Module loads, launches, streams and allocations run in the primary context of the default
//! device (`mgpuSetDefaultDevice`, or the last `Device::open`).

#![allow(non_snake_case)]

use super::allocator;
use super::driver::{driver_present, record_error, report, set_default_device, ScopedContext};
use super::ledger::MemoryKind;
use crate::error::RuntimeError;
use crate::layout;
use cudarc::driver::sys::{
    self, CUevent, CUevent_flags, CUfunction, CUfunction_attribute, CUjit_option, CUmodule, CUstream, CUstream_flags,
};
use std::ffi::{c_char, c_void, CStr};

/// One exported function: its C name and address.
#[derive(Clone, Copy, Debug)]
pub struct ExportedSymbol {
    pub name: &'static str,
    pub address: *const (),
}

// SAFETY: the addresses are of functions, which any thread may call.
unsafe impl Sync for ExportedSymbol {}

/// For the wrappers that need no context: whether the driver can be called (a missing one is
/// recorded instead of letting cudarc panic).
fn driver_loaded() -> bool {
    let present = driver_present();
    if !present {
        record_error(RuntimeError::NoDriver);
    }
    present
}

/// `mgpuModuleLoad`: loads a cubin (or anything `cuModuleLoadData` takes).
///
/// # Safety
/// `data` must point to a module image.
#[no_mangle]
pub unsafe extern "C" fn mgpuModuleLoad(data: *const c_void, _size: i64) -> *mut c_void {
    let Some(_context) = ScopedContext::enter_default() else {
        return std::ptr::null_mut();
    };
    let mut module: CUmodule = std::ptr::null_mut();
    report(unsafe { sys::cuModuleLoadData(&mut module, data) }, "cuModuleLoadData(&module, data)");
    module as *mut c_void
}

/// `mgpuModuleLoadJIT`: compiles NUL-terminated PTX at `opt_level` (0–4); the JIT's error log
/// is part of the reported error.
///
/// # Safety
/// `data` must point to NUL-terminated PTX.
#[no_mangle]
pub unsafe extern "C" fn mgpuModuleLoadJIT(data: *const c_void, opt_level: i32) -> *mut c_void {
    let Some(_context) = ScopedContext::enter_default() else {
        return std::ptr::null_mut();
    };
    let mut module: CUmodule = std::ptr::null_mut();
    let mut log = [0u8; 4096];
    let mut options = [
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        CUjit_option::CU_JIT_OPTIMIZATION_LEVEL,
    ];
    // The driver reads option values as pointer-sized integers.
    let mut values =
        [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void, opt_level.clamp(0, 4) as usize as *mut c_void];
    let result = unsafe {
        sys::cuModuleLoadDataEx(&mut module, data, options.len() as u32, options.as_mut_ptr(), values.as_mut_ptr())
    };
    if !report(result, "cuModuleLoadDataEx(&module, data, 3, options, values)") {
        let text = CStr::from_bytes_until_nul(&log).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
        record_error(format!("JIT compilation failed with: '{}'", text.trim_end()));
    }
    module as *mut c_void
}

/// `mgpuModuleUnload`.
///
/// # Safety
/// `module` must come from `mgpuModuleLoad*` and not be unloaded yet.
#[no_mangle]
pub unsafe extern "C" fn mgpuModuleUnload(module: *mut c_void) {
    let Some(_context) = ScopedContext::enter_default() else {
        return;
    };
    report(unsafe { sys::cuModuleUnload(module as CUmodule) }, "cuModuleUnload(module)");
}

/// `mgpuModuleGetFunction`.
///
/// # Safety
/// `module` must be a loaded module and `name` a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mgpuModuleGetFunction(module: *mut c_void, name: *const c_char) -> *mut c_void {
    let Some(_context) = ScopedContext::enter_default() else {
        return std::ptr::null_mut();
    };
    let mut function: CUfunction = std::ptr::null_mut();
    report(
        unsafe { sys::cuModuleGetFunction(&mut function, module as CUmodule, name) },
        "cuModuleGetFunction(&function, module, name)",
    );
    function as *mut c_void
}

/// `mgpuLaunchKernel`: launches on `stream`; dynamic shared memory above the default limit is
/// allowed first, as upstream does.
///
/// # Safety
/// `function` must be a kernel and `params` its argument pointers.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn mgpuLaunchKernel(
    function: *mut c_void,
    grid_x: i64,
    grid_y: i64,
    grid_z: i64,
    block_x: i64,
    block_y: i64,
    block_z: i64,
    shared_memory: i32,
    stream: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    _params_count: i64,
) {
    let Some(_context) = ScopedContext::enter_default() else {
        return;
    };
    let dimensions = [grid_x, grid_y, grid_z, block_x, block_y, block_z].map(u32::try_from);
    let (Ok(shared), [Ok(gx), Ok(gy), Ok(gz), Ok(bx), Ok(by), Ok(bz)]) = (u32::try_from(shared_memory), dimensions)
    else {
        record_error(format!(
            "mgpuLaunchKernel: grid {grid_x}x{grid_y}x{grid_z}, block {block_x}x{block_y}x{block_z}, shared memory {shared_memory}: out of range"
        ));
        return;
    };
    let function = function as CUfunction;
    if shared > 0 {
        let attribute = CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        report(
            unsafe { sys::cuFuncSetAttribute(function, attribute, shared_memory) },
            "cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)",
        );
    }
    let result =
        unsafe { sys::cuLaunchKernel(function, gx, gy, gz, bx, by, bz, shared, stream as CUstream, params, extra) };
    report(
        result,
        "cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY, blockZ, smem, stream, params, extra)",
    );
}

/// `mgpuStreamCreate`: a non-blocking stream.
#[no_mangle]
pub extern "C" fn mgpuStreamCreate() -> *mut c_void {
    let Some(_context) = ScopedContext::enter_default() else {
        return std::ptr::null_mut();
    };
    let mut stream: CUstream = std::ptr::null_mut();
    let flags = CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
    // SAFETY: a context is current; `stream` is a local out-pointer.
    report(unsafe { sys::cuStreamCreate(&mut stream, flags) }, "cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING)");
    stream as *mut c_void
}

/// `mgpuStreamDestroy`.
///
/// # Safety
/// `stream` must come from `mgpuStreamCreate`.
#[no_mangle]
pub unsafe extern "C" fn mgpuStreamDestroy(stream: *mut c_void) {
    if !driver_loaded() {
        return;
    }
    report(unsafe { sys::cuStreamDestroy_v2(stream as CUstream) }, "cuStreamDestroy(stream)");
}

/// `mgpuStreamSynchronize`.
///
/// # Safety
/// `stream` must be a live stream.
#[no_mangle]
pub unsafe extern "C" fn mgpuStreamSynchronize(stream: *mut c_void) {
    if !driver_loaded() {
        return;
    }
    report(unsafe { sys::cuStreamSynchronize(stream as CUstream) }, "cuStreamSynchronize(stream)");
}

/// `mgpuStreamWaitEvent`.
///
/// # Safety
/// `stream` and `event` must be live.
#[no_mangle]
pub unsafe extern "C" fn mgpuStreamWaitEvent(stream: *mut c_void, event: *mut c_void) {
    if !driver_loaded() {
        return;
    }
    report(
        unsafe { sys::cuStreamWaitEvent(stream as CUstream, event as CUevent, 0) },
        "cuStreamWaitEvent(stream, event, 0)",
    );
}

/// `mgpuEventCreate`: an event without timing.
#[no_mangle]
pub extern "C" fn mgpuEventCreate() -> *mut c_void {
    let Some(_context) = ScopedContext::enter_default() else {
        return std::ptr::null_mut();
    };
    let mut event: CUevent = std::ptr::null_mut();
    let flags = CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
    // SAFETY: a context is current; `event` is a local out-pointer.
    report(unsafe { sys::cuEventCreate(&mut event, flags) }, "cuEventCreate(&event, CU_EVENT_DISABLE_TIMING)");
    event as *mut c_void
}

/// `mgpuEventDestroy`.
///
/// # Safety
/// `event` must come from `mgpuEventCreate`.
#[no_mangle]
pub unsafe extern "C" fn mgpuEventDestroy(event: *mut c_void) {
    if !driver_loaded() {
        return;
    }
    report(unsafe { sys::cuEventDestroy_v2(event as CUevent) }, "cuEventDestroy(event)");
}

/// `mgpuEventSynchronize`.
///
/// # Safety
/// `event` must be live.
#[no_mangle]
pub unsafe extern "C" fn mgpuEventSynchronize(event: *mut c_void) {
    if !driver_loaded() {
        return;
    }
    report(unsafe { sys::cuEventSynchronize(event as CUevent) }, "cuEventSynchronize(event)");
}

/// `mgpuEventRecord`.
///
/// # Safety
/// `event` and `stream` must be live.
#[no_mangle]
pub unsafe extern "C" fn mgpuEventRecord(event: *mut c_void, stream: *mut c_void) {
    if !driver_loaded() {
        return;
    }
    report(unsafe { sys::cuEventRecord(event as CUevent, stream as CUstream) }, "cuEventRecord(event, stream)");
}

/// `mgpuMemAlloc` (`gpu.alloc`): device memory, or managed memory when `is_host_shared`;
/// counted as device bytes like every allocation a step makes.
#[no_mangle]
pub extern "C" fn mgpuMemAlloc(size: u64, _stream: *mut c_void, is_host_shared: bool) -> *mut c_void {
    allocator::allocate_device(size, is_host_shared) as *mut c_void
}

/// `mgpuMemFree` (`gpu.dealloc`): through the counting free.
#[no_mangle]
pub extern "C" fn mgpuMemFree(ptr: *mut c_void, _stream: *mut c_void) {
    allocator::free(ptr as *mut u8);
}

/// `mgpuMemcpy` (`gpu.memcpy`): asynchronous on `stream`.
///
/// # Safety
/// `dst` and `src` must be valid for `size` bytes; `stream` must be live (or null).
#[no_mangle]
pub unsafe extern "C" fn mgpuMemcpy(dst: *mut c_void, src: *const c_void, size: usize, stream: *mut c_void) {
    let Some(_context) = ScopedContext::enter_default() else {
        return;
    };
    report(
        unsafe { sys::cuMemcpyAsync(dst as u64, src as u64, size, stream as CUstream) },
        "cuMemcpyAsync(dst, src, sizeBytes, stream)",
    );
}

/// `mgpuMemset32` (`gpu.memset` of 4-byte elements): asynchronous on `stream`.
///
/// # Safety
/// `dst` must be device memory valid for `count` 4-byte elements; `stream` must be live.
#[no_mangle]
pub unsafe extern "C" fn mgpuMemset32(dst: *mut c_void, value: u32, count: usize, stream: *mut c_void) {
    let Some(_context) = ScopedContext::enter_default() else {
        return;
    };
    report(
        unsafe { sys::cuMemsetD32Async(dst as u64, value, count, stream as CUstream) },
        "cuMemsetD32Async(dst, value, count, stream)",
    );
}

/// `mgpuMemset16` (`gpu.memset` of 2-byte elements): asynchronous on `stream`.
///
/// # Safety
/// `dst` must be device memory valid for `count` 2-byte elements; `stream` must be live.
#[no_mangle]
pub unsafe extern "C" fn mgpuMemset16(dst: *mut c_void, value: u16, count: usize, stream: *mut c_void) {
    let Some(_context) = ScopedContext::enter_default() else {
        return;
    };
    report(
        unsafe { sys::cuMemsetD16Async(dst as u64, value, count, stream as CUstream) },
        "cuMemsetD16Async(dst, value, count, stream)",
    );
}

/// `mgpuSetDefaultDevice`: the device later wrapper calls use.
#[no_mangle]
pub extern "C" fn mgpuSetDefaultDevice(device: i32) {
    set_default_device(device);
}

/// `_mlir_memref_to_llvm_alloc`: counted device memory (or host memory right after
/// `remat_host_alloc_next`).
#[no_mangle]
pub extern "C" fn _mlir_memref_to_llvm_alloc(size: u64) -> *mut u8 {
    allocator::allocate(1, size)
}

/// `_mlir_memref_to_llvm_aligned_alloc`: as `_mlir_memref_to_llvm_alloc`, at an address that
/// is a multiple of `alignment`.
#[no_mangle]
pub extern "C" fn _mlir_memref_to_llvm_aligned_alloc(alignment: u64, size: u64) -> *mut u8 {
    allocator::allocate(alignment, size)
}

/// `_mlir_memref_to_llvm_free`: the counting free (foreign pointers are counted and ignored).
#[no_mangle]
pub extern "C" fn _mlir_memref_to_llvm_free(ptr: *mut u8) {
    allocator::free(ptr);
}

/// `remat_host_alloc_next`: the next allocation is pinned host memory, counted as host bytes.
#[no_mangle]
pub extern "C" fn remat_host_alloc_next() {
    allocator::mark_next(MemoryKind::Host);
}

/// `remat_staging_alloc_next`: the next allocation is pinned host memory through which the
/// host reads a scalar, counted as staging bytes.
#[no_mangle]
pub extern "C" fn remat_staging_alloc_next() {
    allocator::mark_next(MemoryKind::Staging);
}

/// An unranked memref as lowered code passes it: rank, then a pointer to the ranked
/// descriptor (allocated pointer, aligned pointer, offset, `rank` sizes, `rank` strides).
#[repr(C)]
pub struct UnrankedMemRef {
    pub rank: i64,
    pub descriptor: *const i64,
}

/// `memrefCopy`: copies a strided memref into another of the same shape with `cuMemcpy`, one
/// call per contiguous run. The GPU lowering turns copies into kernels, so this is a fallback:
/// it first waits for the device, since the copy is not ordered with the step's streams.
///
/// # Safety
/// Both arguments must be valid unranked memrefs of equal shape with `element_size`-byte
/// elements, as the lowered code passes them.
#[no_mangle]
pub unsafe extern "C" fn memrefCopy(
    element_size: i64,
    source: *const UnrankedMemRef,
    destination: *const UnrankedMemRef,
) {
    let Some(_context) = ScopedContext::enter_default() else {
        return;
    };
    let (src, dst) = unsafe { (&*source, &*destination) };
    let Ok(rank) = usize::try_from(src.rank) else {
        record_error(format!("memrefCopy: rank {} is negative", src.rank));
        return;
    };
    let read = |descriptor: *const i64, count: usize, from: usize| -> Vec<i64> {
        (0..count).map(|i| unsafe { *descriptor.add(from + i) }).collect()
    };
    let (src_fields, dst_fields) = (read(src.descriptor, 3 + 2 * rank, 0), read(dst.descriptor, 3 + 2 * rank, 0));
    let sizes = &src_fields[3..3 + rank];
    let (src_strides, dst_strides) = (&src_fields[3 + rank..], &dst_fields[3 + rank..]);
    // Wrapping: these are addresses; bad descriptors must not panic inside an `extern "C"` call.
    let src_start = src_fields[1].wrapping_add(src_fields[2].wrapping_mul(element_size));
    let dst_start = dst_fields[1].wrapping_add(dst_fields[2].wrapping_mul(element_size));
    if !report(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize()") {
        return;
    }
    let mut failed = false;
    layout::for_each_run(sizes, src_strides, dst_strides, |s, d, elements| {
        if failed {
            return;
        }
        let from = src_start.wrapping_add(s.wrapping_mul(element_size)) as u64;
        let to = dst_start.wrapping_add(d.wrapping_mul(element_size)) as u64;
        let bytes = elements.wrapping_mul(element_size) as usize;
        failed = !report(unsafe { sys::cuMemcpy(to, from, bytes) }, "cuMemcpy(dst, src, sizeBytes)");
    });
}

/// Every function above, by C name: what a runner must export.
pub static EXPORTED_SYMBOLS: [ExportedSymbol; 25] = [
    ExportedSymbol { name: "mgpuModuleLoad", address: mgpuModuleLoad as *const () },
    ExportedSymbol { name: "mgpuModuleLoadJIT", address: mgpuModuleLoadJIT as *const () },
    ExportedSymbol { name: "mgpuModuleUnload", address: mgpuModuleUnload as *const () },
    ExportedSymbol { name: "mgpuModuleGetFunction", address: mgpuModuleGetFunction as *const () },
    ExportedSymbol { name: "mgpuLaunchKernel", address: mgpuLaunchKernel as *const () },
    ExportedSymbol { name: "mgpuStreamCreate", address: mgpuStreamCreate as *const () },
    ExportedSymbol { name: "mgpuStreamDestroy", address: mgpuStreamDestroy as *const () },
    ExportedSymbol { name: "mgpuStreamSynchronize", address: mgpuStreamSynchronize as *const () },
    ExportedSymbol { name: "mgpuStreamWaitEvent", address: mgpuStreamWaitEvent as *const () },
    ExportedSymbol { name: "mgpuEventCreate", address: mgpuEventCreate as *const () },
    ExportedSymbol { name: "mgpuEventDestroy", address: mgpuEventDestroy as *const () },
    ExportedSymbol { name: "mgpuEventSynchronize", address: mgpuEventSynchronize as *const () },
    ExportedSymbol { name: "mgpuEventRecord", address: mgpuEventRecord as *const () },
    ExportedSymbol { name: "mgpuMemAlloc", address: mgpuMemAlloc as *const () },
    ExportedSymbol { name: "mgpuMemFree", address: mgpuMemFree as *const () },
    ExportedSymbol { name: "mgpuMemcpy", address: mgpuMemcpy as *const () },
    ExportedSymbol { name: "mgpuMemset32", address: mgpuMemset32 as *const () },
    ExportedSymbol { name: "mgpuMemset16", address: mgpuMemset16 as *const () },
    ExportedSymbol { name: "mgpuSetDefaultDevice", address: mgpuSetDefaultDevice as *const () },
    ExportedSymbol { name: "_mlir_memref_to_llvm_alloc", address: _mlir_memref_to_llvm_alloc as *const () },
    ExportedSymbol {
        name: "_mlir_memref_to_llvm_aligned_alloc",
        address: _mlir_memref_to_llvm_aligned_alloc as *const (),
    },
    ExportedSymbol { name: "_mlir_memref_to_llvm_free", address: _mlir_memref_to_llvm_free as *const () },
    ExportedSymbol { name: "remat_host_alloc_next", address: remat_host_alloc_next as *const () },
    ExportedSymbol { name: "remat_staging_alloc_next", address: remat_staging_alloc_next as *const () },
    ExportedSymbol { name: "memrefCopy", address: memrefCopy as *const () },
];

//! Running a compiled step on a CUDA device and measuring its memory (feature `gpu`).
//!
//! `remat-opt --lower=gpu --emit=library` writes a shared library whose host code calls
//! upstream MLIR's CUDA runtime wrappers (`mgpuModuleLoad`, `mgpuLaunchKernel`, …) and the
//! counting allocator (`_mlir_memref_to_llvm_alloc`, …) by name. [`exports`] defines all of
//! them; a runner exports them from its executable, opens the [`Device`], loads the library and
//! calls its packed entry with [`Device::call_step_on_device`].
//!
//! The driver is loaded at run time (cudarc's dynamic loading): this builds, and its tests
//! pass, without CUDA, and every entry point checks [`driver_present`] before the first driver
//! call, so a machine without a driver gets an error, not a panic.
//!
//! * `ledger` — the allocator's bookkeeping in plain Rust (tested with fake pointers).
//! * `allocator` — device buffers (`cuMemAlloc`), and after `remat_host_alloc_next` one pinned
//!   mapped host buffer (`cuMemHostAlloc`), counted at their requested sizes, plus samples of
//!   the driver's own usage (`driver_peak_bytes`).
//! * `driver` — driver presence, error names, the first-error record, primary contexts.
//! * `layout` — strided layouts as contiguous runs (result copies, `memrefCopy`).

mod allocator;
mod driver;
pub mod exports;
mod ledger;

pub use driver::{driver_present, take_first_error, NO_DRIVER};
pub use exports::{ExportedSymbol, EXPORTED_SYMBOLS};
pub use ledger::GpuCounts;

use crate::call::{descriptor_words, row_major_strides, PackedCall, PackedEntry};
use crate::error::RuntimeError;
use crate::layout;
use crate::tensor::{HostTensor, TensorSpec};
use cudarc::driver::sys::{self, CUdevice_attribute};
use driver::{check, report, ScopedContext};
use std::collections::BTreeSet;
use std::ffi::{c_char, CStr};
use std::time::Instant;

/// An open CUDA device: its primary context is retained and it is the wrappers' default device.
#[derive(Debug)]
pub struct Device {
    ordinal: i32,
    name: String,
}

/// One measured call on the device.
#[derive(Debug)]
pub struct GpuStepRun {
    /// The step's results, copied to the host (row-major).
    pub outputs: Vec<HostTensor>,
    /// What the step allocated (taken after the device finished, before results were freed).
    pub counts: GpuCounts,
    /// Wall time of the entry call and the context synchronization after it.
    pub seconds: f64,
}

impl Device {
    /// Opens device `ordinal` and makes it the default device of the wrappers (so open it
    /// before loading a step: the library's constructors load its kernels there). Errors (no
    /// driver, no such device, no unified addressing) are messages, never panics.
    pub fn open(ordinal: usize) -> Result<Device, RuntimeError> {
        if !driver_present() {
            return Err(RuntimeError::NoDriver);
        }
        let ordinal = i32::try_from(ordinal).map_err(|_| RuntimeError::DeviceOrdinalTooLarge { ordinal })?;
        let (mut count, mut device, mut unified) = (0, 0, 0);
        let mut name = [0 as c_char; 256];
        // SAFETY: the driver is loaded; every out-pointer is a valid local.
        unsafe {
            check(sys::cuInit(0), "cuInit(0)")?;
            check(sys::cuDeviceGetCount(&mut count), "cuDeviceGetCount(&count)")?;
            if ordinal >= count {
                return Err(RuntimeError::NoSuchDevice { ordinal, count });
            }
            check(sys::cuDeviceGet(&mut device, ordinal), &format!("cuDeviceGet(&device, {ordinal})"))?;
            check(
                sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, device),
                "cuDeviceGetName(name, 256, device)",
            )?;
            let attribute = CUdevice_attribute::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING;
            check(
                sys::cuDeviceGetAttribute(&mut unified, attribute, device),
                "cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, device)",
            )?;
        }
        // SAFETY: the driver NUL-terminates the name within the buffer.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        if unified == 0 {
            return Err(RuntimeError::NoUnifiedAddressing { ordinal, name });
        }
        driver::primary_context(ordinal)?;
        driver::set_default_device(ordinal);
        Ok(Device { ordinal, name })
    }

    /// The device's name (`NVIDIA H100 80GB HBM3`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal as usize
    }

    /// Forgets the allocator's counts and measures the driver's usage from now.
    pub fn reset_counts(&self) -> Result<(), RuntimeError> {
        let _context = ScopedContext::enter(self.ordinal)?;
        allocator::reset()
    }

    /// The allocator's counts since the last reset (process-wide).
    pub fn counts(&self) -> GpuCounts {
        allocator::counts()
    }

    /// The first error a wrapper or the allocator reported since the last call (the step's
    /// code cannot see them: check after every run).
    pub fn take_first_error(&self) -> Option<String> {
        take_first_error()
    }

    /// Calls `entry` with `inputs` copied to the device (identity-layout memrefs in buffers the
    /// caller owns, so not counted: inputs are pinned arguments in the memory model), then
    /// waits for the device, takes the counts, copies every result to the host, and frees the
    /// result buffers the step allocated (after the counts) and the inputs.
    ///
    /// Errors of the wrappers during the call stay recorded for [`Self::take_first_error`];
    /// the errors returned here are this function's own driver calls (a failed
    /// synchronization is how a faulting kernel shows; the step's result buffers are then
    /// left allocated, since the context is unusable after a fault anyway).
    ///
    /// # Safety
    /// `entry` must be the packed entry of a step loaded on this device, whose arguments are
    /// exactly `inputs`' memref types and whose results are `results`' memref types.
    pub unsafe fn call_step_on_device(
        &self,
        entry: PackedEntry,
        inputs: &[HostTensor],
        results: &[TensorSpec],
    ) -> Result<GpuStepRun, RuntimeError> {
        let default = driver::default_device();
        if default != self.ordinal {
            return Err(RuntimeError::NotDefaultDevice { device: self.ordinal, default });
        }
        let _context = ScopedContext::enter(self.ordinal)?;
        let copies = inputs.iter().map(InputCopy::of).collect::<Result<Vec<_>, _>>()?;
        let mut call = PackedCall::new(
            inputs.iter().zip(&copies).map(|(tensor, copy)| (copy.address, tensor.spec.shape.clone())),
            results,
        );
        let mut args = call.arguments();

        allocator::reset()?;
        let start = Instant::now();
        unsafe { entry(args.as_mut_ptr()) };
        // SAFETY: a context is current.
        let synchronized = check(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize()");
        let seconds = start.elapsed().as_secs_f64();
        let counts = allocator::counts();
        synchronized.map_err(|error| RuntimeError::StepFailedOnDevice { error: Box::new(error) })?;
        // Read only after the call wrote it through `args`.
        let result_storage = &call.result_storage;

        let mut outputs = Vec::with_capacity(results.len());
        let mut owned = BTreeSet::new();
        let mut error = None;
        let mut offset = 0;
        for (i, spec) in results.iter().enumerate() {
            let w = &result_storage[offset..offset + descriptor_words(spec.shape.len())];
            offset += w.len();
            if allocator::owns(w[0]) {
                owned.insert(w[0]);
            }
            match copy_result_out(spec, w) {
                Ok(tensor) => outputs.push(tensor),
                Err(e) => {
                    error.get_or_insert(RuntimeError::DeviceResult { index: i, error: Box::new(e) });
                    outputs.push(HostTensor::zeros(spec.clone()));
                }
            }
        }
        // Results may share a buffer (or be an input, or a constant): free each owned one once.
        for address in owned {
            if let Err(e) = allocator::free_result(address) {
                error.get_or_insert(e);
            }
        }
        drop(copies);
        match error {
            Some(e) => Err(e),
            None => Ok(GpuStepRun { outputs, counts, seconds }),
        }
    }
}

/// An input copied to the device with plain `cuMemAlloc`: the caller's buffer, outside the
/// counts. Freed on drop (inside the caller's context guard).
struct InputCopy {
    address: u64,
}

impl InputCopy {
    fn of(tensor: &HostTensor) -> Result<Self, RuntimeError> {
        let bytes = tensor.spec.bytes();
        // `cuMemAlloc(0)` fails: an empty input still gets a (1-byte) address.
        let reserved = bytes.max(1);
        let mut address = 0;
        // SAFETY: a context is current; `address` is a local out-pointer.
        check(unsafe { sys::cuMemAlloc_v2(&mut address, reserved) }, &format!("cuMemAlloc(&ptr, {reserved})"))?;
        let copy = InputCopy { address };
        if bytes > 0 {
            // SAFETY: both ranges hold `bytes` bytes; unified addressing tells host from device.
            check(
                unsafe { sys::cuMemcpy(address, tensor.bytes().as_ptr() as u64, bytes) },
                &format!("cuMemcpy(input, host, {bytes})"),
            )?;
        }
        Ok(copy)
    }
}

impl Drop for InputCopy {
    fn drop(&mut self) {
        // SAFETY: allocated by `of`, freed once.
        report(unsafe { sys::cuMemFree_v2(self.address) }, "cuMemFree(input)");
    }
}

/// Staging a strided result's whole footprint on the host is one copy; past this many bytes
/// beyond the result's own size, the rows are copied one by one instead.
const STAGING_SLACK_BYTES: usize = 1 << 24;

/// Copies the result described by descriptor `words` to the host as a dense row-major
/// tensor: one `cuMemcpy` when it is dense, else its footprint staged and gathered (or one
/// copy per contiguous run if the footprint is much larger than the result).
fn copy_result_out(spec: &TensorSpec, words: &[u64]) -> Result<HostTensor, RuntimeError> {
    let rank = spec.shape.len();
    let field = |i: usize| words[i] as i64;
    let sizes: Vec<i64> = (0..rank).map(|d| field(3 + d)).collect();
    let strides: Vec<i64> = (0..rank).map(|d| field(3 + rank + d)).collect();
    if sizes.iter().zip(&spec.shape).any(|(&got, &want)| got != want as i64) {
        return Err(RuntimeError::DeviceResultShape { found: sizes, expected: spec.clone() });
    }
    let mut out = HostTensor::zeros(spec.clone());
    if spec.elements() == 0 {
        return Ok(out);
    }
    let element = spec.element.bytes();
    let footprint = layout::footprint_elements(&sizes, &strides)
        .ok_or_else(|| RuntimeError::DeviceResultStrides { strides: strides.clone() })?;
    let (aligned, offset) = (words[1], field(2));
    let start =
        u64::try_from(offset).ok().and_then(|o| o.checked_mul(element as u64)).and_then(|o| aligned.checked_add(o));
    let (Some(start), false) = (start, aligned == 0) else {
        return Err(RuntimeError::DeviceResultAddress { pointer: aligned, offset });
    };
    let copy = |to: *mut u8, from: u64, bytes: usize| {
        // SAFETY: `to` holds `bytes` bytes; `from` is inside the result's footprint.
        check(unsafe { sys::cuMemcpy(to as u64, from, bytes) }, &format!("cuMemcpy(host, result, {bytes})"))
    };
    if layout::is_row_major_contiguous(&sizes, &strides) {
        copy(out.as_mut_ptr(), start, spec.bytes())?;
        return Ok(out);
    }
    let dense: Vec<i64> = row_major_strides(&spec.shape).into_iter().map(|s| s as i64).collect();
    let footprint_bytes = usize::try_from(footprint).ok().and_then(|n| n.checked_mul(element));
    let mut failure = Ok(());
    match footprint_bytes {
        Some(bytes) if bytes <= spec.bytes().saturating_add(STAGING_SLACK_BYTES) => {
            let mut staging = vec![0u8; bytes];
            copy(staging.as_mut_ptr(), start, bytes)?;
            let dst = out.bytes_mut();
            layout::for_each_run(&sizes, &strides, &dense, |s, d, n| {
                let (s, d, n) = (s as usize * element, d as usize * element, n as usize * element);
                dst[d..d + n].copy_from_slice(&staging[s..s + n]);
            });
        }
        _ => {
            let base = out.as_mut_ptr();
            layout::for_each_run(&sizes, &strides, &dense, |s, d, n| {
                if failure.is_ok() {
                    let (s, d, n) = (s as u64 * element as u64, d as usize * element, n as usize * element);
                    // SAFETY: `d + n` is within the dense output.
                    failure = copy(unsafe { base.add(d) }, start + s, n);
                }
            });
        }
    }
    failure.map(|()| out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result descriptor the runtime cannot copy is an error naming what is wrong, found
    /// before any driver call (so this needs no GPU).
    #[test]
    fn result_descriptors_that_cannot_be_copied_are_typed_errors() {
        let spec = TensorSpec { element: crate::tensor::ElementType::F32, shape: vec![2, 3] };
        // allocated, aligned, offset, sizes, strides.
        let words = |aligned: u64, sizes: [i64; 2], strides: [i64; 2]| {
            [aligned, aligned, 0, sizes[0] as u64, sizes[1] as u64, strides[0] as u64, strides[1] as u64]
        };
        let error = copy_result_out(&spec, &words(4096, [3, 2], [2, 1])).unwrap_err();
        assert_eq!(error.to_string(), "has shape [3, 2], expected tensor<2x3xf32>");
        assert!(
            matches!(&error, RuntimeError::DeviceResultShape { found, expected } if *found == [3, 2] && *expected == spec)
        );
        let error = copy_result_out(&spec, &words(4096, [2, 3], [-3, 1])).unwrap_err();
        assert!(matches!(&error, RuntimeError::DeviceResultStrides { strides } if *strides == [-3, 1]), "{error:?}");
        let error = copy_result_out(&spec, &words(0, [2, 3], [3, 1])).unwrap_err();
        assert!(matches!(error, RuntimeError::DeviceResultAddress { pointer: 0, offset: 0 }), "{error:?}");
        assert_eq!(error.to_string(), "has data pointer 0x0 and offset 0, which point nowhere");
        let wrapped = RuntimeError::DeviceResult { index: 2, error: Box::new(error) };
        assert_eq!(wrapped.to_string(), "result 2: has data pointer 0x0 and offset 0, which point nowhere");

        let failed = RuntimeError::Cuda {
            call: "cuCtxSynchronize()".into(),
            code: sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
            name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
        };
        let failed = RuntimeError::StepFailedOnDevice { error: Box::new(failed) };
        assert_eq!(
            failed.to_string(),
            "the step failed on the device: 'cuCtxSynchronize()' failed with 'CUDA_ERROR_ILLEGAL_ADDRESS'"
        );
    }

    /// Without a driver nothing panics: opening fails with the message, the wrappers return
    /// null and record the error, and zero-byte allocations (which need no driver) still work.
    #[test]
    fn without_a_driver_everything_fails_cleanly() {
        if driver_present() {
            eprintln!("note: skipped: this machine has a CUDA driver");
            return;
        }
        let error = Device::open(0).unwrap_err();
        assert!(matches!(error, RuntimeError::NoDriver), "{error:?}");
        assert_eq!(error.to_string(), NO_DRIVER);
        take_first_error();
        assert!(exports::_mlir_memref_to_llvm_alloc(64).is_null());
        assert_eq!(take_first_error().as_deref(), Some(NO_DRIVER));
        assert!(exports::mgpuStreamCreate().is_null());
        unsafe { exports::mgpuStreamSynchronize(std::ptr::null_mut()) };
        assert!(exports::mgpuEventCreate().is_null());
        assert!(unsafe { exports::mgpuModuleLoad(std::ptr::null(), 0) }.is_null());
        assert_eq!(take_first_error().as_deref(), Some(NO_DRIVER));
        let before = allocator::counts();
        exports::remat_host_alloc_next();
        let empty = exports::_mlir_memref_to_llvm_aligned_alloc(128, 0);
        assert!(!empty.is_null() && (empty as usize) & 127 == 0);
        let other = exports::_mlir_memref_to_llvm_alloc(0);
        assert_ne!(empty, other);
        exports::_mlir_memref_to_llvm_free(empty);
        exports::mgpuMemFree(other as *mut _, std::ptr::null_mut());
        let mut not_ours = 0u8;
        exports::_mlir_memref_to_llvm_free(&mut not_ours);
        let after = allocator::counts();
        assert_eq!(after.host_allocations - before.host_allocations, 1);
        assert_eq!(after.device_allocations - before.device_allocations, 1);
        assert_eq!(after.foreign_frees - before.foreign_frees, 1);
        assert_eq!(take_first_error(), None);
    }
}

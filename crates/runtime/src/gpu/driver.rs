//! The CUDA driver, loaded at run time: whether it is there, error names and the first-error
//! record, and the primary contexts the wrappers run in.
//!
//! Every path into the driver goes through [`driver_present`] first: cudarc panics when it
//! cannot load `libcuda.so`, and a panic inside an `extern "C"` wrapper called by a step's code
//! would abort the process instead of reporting a clean error.

use crate::error::RuntimeError;
use cudarc::driver::sys::{self, CUcontext, CUresult};
use std::ffi::{c_char, CStr};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// What a caller says when there is no driver to load.
pub const NO_DRIVER: &str = "no CUDA driver (libcuda.so) on this machine";

/// Whether the CUDA driver library can be loaded (checked once).
pub fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to dlopen the library; nothing is called in it.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

/// Locks `mutex` even if a panicking thread poisoned it: the data (counts, handles) stays
/// consistent between statements, and the `extern "C"` callers must not panic.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The driver's name for `result` (`CUDA_ERROR_OUT_OF_MEMORY`), or cudarc's if the driver has
/// none.
fn error_name(result: CUresult) -> String {
    let mut name: *const c_char = std::ptr::null();
    // SAFETY: `result` came from the driver, so it is loaded; `name` receives a static string.
    let named = unsafe { sys::cuGetErrorName(result, &mut name) } == CUresult::CUDA_SUCCESS;
    if named && !name.is_null() {
        // SAFETY: the driver returns a NUL-terminated static string.
        unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
    } else {
        format!("{result:?}")
    }
}

/// Ok, or the message upstream's `CUDA_REPORT_IF_ERROR` prints: `'call' failed with 'NAME'`.
pub(crate) fn check(result: CUresult, call: &str) -> Result<(), RuntimeError> {
    if result == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(RuntimeError::Cuda { call: call.to_string(), code: result, name: error_name(result) })
    }
}

static FIRST_ERROR: Mutex<Option<String>> = Mutex::new(None);

/// Prints `message` on stderr (as upstream's wrappers do) and keeps its text if it is the
/// first since [`take_first_error`]: the step's code cannot see a wrapper's failure, so the
/// runner asks afterwards.
pub(crate) fn record_error(message: impl std::fmt::Display) {
    let message = message.to_string();
    eprintln!("{message}");
    lock(&FIRST_ERROR).get_or_insert(message);
}

/// [`check`], with a failure recorded; whether the call succeeded.
pub(crate) fn report(result: CUresult, call: &str) -> bool {
    match check(result, call) {
        Ok(()) => true,
        Err(message) => {
            record_error(message);
            false
        }
    }
}

/// The first error a wrapper or the allocator reported since the last call, if any.
pub fn take_first_error() -> Option<String> {
    lock(&FIRST_ERROR).take()
}

static DEFAULT_DEVICE: AtomicI32 = AtomicI32::new(0);

/// The device the wrappers load modules, launch and allocate on (`mgpuSetDefaultDevice`).
pub(crate) fn set_default_device(ordinal: i32) {
    DEFAULT_DEVICE.store(ordinal, Ordering::Relaxed);
}

pub(crate) fn default_device() -> i32 {
    DEFAULT_DEVICE.load(Ordering::Relaxed)
}

/// Primary contexts retained so far, by device ordinal (the context as an address, so the
/// static is `Sync`). Never released: the modules a step's constructors load live in them until
/// its destructors unload them, at `dlclose` or process exit, after any `Device` is gone.
static CONTEXTS: Mutex<Vec<(i32, usize)>> = Mutex::new(Vec::new());

/// The primary context of device `ordinal`, retained on first use (initializing the driver).
pub(crate) fn primary_context(ordinal: i32) -> Result<CUcontext, RuntimeError> {
    if !driver_present() {
        return Err(RuntimeError::NoDriver);
    }
    let mut contexts = lock(&CONTEXTS);
    if let Some(&(_, context)) = contexts.iter().find(|(o, _)| *o == ordinal) {
        return Ok(context as CUcontext);
    }
    let mut device = 0;
    let mut context = std::ptr::null_mut();
    // SAFETY: the driver is loaded; the out-pointers are valid locals.
    unsafe {
        check(sys::cuInit(0), "cuInit(0)")?;
        check(sys::cuDeviceGet(&mut device, ordinal), &format!("cuDeviceGet(&device, {ordinal})"))?;
        check(sys::cuDevicePrimaryCtxRetain(&mut context, device), "cuDevicePrimaryCtxRetain(&context, device)")?;
    }
    contexts.push((ordinal, context as usize));
    Ok(context)
}

/// A primary context made current on this thread for the guard's lifetime (upstream's
/// `ScopedContext`): pushing and popping leaves whatever the caller had current untouched.
pub(crate) struct ScopedContext(());

impl ScopedContext {
    /// Device `ordinal`'s primary context.
    pub(crate) fn enter(ordinal: i32) -> Result<Self, RuntimeError> {
        let context = primary_context(ordinal)?;
        // SAFETY: a retained primary context.
        check(unsafe { sys::cuCtxPushCurrent_v2(context) }, "cuCtxPushCurrent(context)")?;
        Ok(ScopedContext(()))
    }

    /// The default device's primary context, for the wrappers: a failure is recorded and the
    /// wrapper returns without calling the driver.
    pub(crate) fn enter_default() -> Option<Self> {
        Self::enter(default_device()).map_err(record_error).ok()
    }
}

impl Drop for ScopedContext {
    fn drop(&mut self) {
        // SAFETY: pops the context `enter` pushed.
        report(unsafe { sys::cuCtxPopCurrent_v2(std::ptr::null_mut()) }, "cuCtxPopCurrent(nullptr)");
    }
}

/// Bytes of device memory in use now (`total - free`), for the current context's device.
pub(crate) fn device_memory_used() -> Result<u64, RuntimeError> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: a context is current (callers hold a `ScopedContext`); out-pointers are locals.
    check(unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) }, "cuMemGetInfo(&free, &total)")?;
    Ok(total.saturating_sub(free) as u64)
}

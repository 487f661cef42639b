//! The counting allocator on the GPU: device buffers from `cuMemAlloc`, and after
//! `remat_host_alloc_next()` one pinned, device-mapped host buffer from `cuMemHostAlloc`, each
//! counted at its requested size in the [`Ledger`]. Counts are process-wide (device memory is),
//! unlike the CPU allocator's per-thread counts.

use super::driver::{self, check, lock, record_error, report, ScopedContext};
use super::ledger::{GpuCounts, Ledger, MemoryKind};
use crate::error::RuntimeError;
use cudarc::driver::sys::{self, CUmemAttach_flags, CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_PORTABLE};
use std::alloc::Layout;
use std::sync::{LazyLock, Mutex};

/// How a counted block was obtained, so it is released the same way.
#[derive(Debug)]
pub(crate) enum Backing {
    /// From the driver.
    Driver(DriverBlock),
    /// A zero-byte request: `cuMemAlloc(0)` fails, so a unique address from Rust's allocator
    /// (at the block's key) stands in; nothing ever reads or writes through it.
    Empty { layout: Layout },
}

/// A driver allocation.
#[derive(Debug)]
pub(crate) enum DriverBlock {
    /// `cuMemAlloc` or `cuMemAllocManaged`: `cuMemFree(base)`.
    Device { base: u64 },
    /// `cuMemHostAlloc`: `cuMemFreeHost(base)` (the host address; the block's key is the
    /// device address, the same one under unified addressing).
    PinnedHost { base: usize },
}

static LEDGER: LazyLock<Mutex<Ledger<Backing>>> = LazyLock::new(|| Mutex::new(Ledger::default()));

/// Forgets the counts and measures the driver's usage from now. Needs a current context.
pub(crate) fn reset() -> Result<(), RuntimeError> {
    let used = driver::device_memory_used()?;
    lock(&LEDGER).reset(used);
    Ok(())
}

pub(crate) fn counts() -> GpuCounts {
    lock(&LEDGER).counts()
}

/// Whether `ptr` is a live block of this allocator.
pub(crate) fn owns(ptr: u64) -> bool {
    lock(&LEDGER).owns(ptr as usize)
}

/// `remat_host_alloc_next` (`Host`) or `remat_staging_alloc_next` (`Staging`).
pub(crate) fn mark_next(kind: MemoryKind) {
    lock(&LEDGER).mark_next(kind);
}

/// What lowered code allocates (`_mlir_memref_to_llvm_alloc`): a device buffer, or a host
/// buffer if `remat_host_alloc_next` or `remat_staging_alloc_next` came just before. Null
/// after a reported error.
pub(crate) fn allocate(alignment: u64, size: u64) -> *mut u8 {
    let kind = lock(&LEDGER).take_next_kind();
    allocate_counted(kind, false, alignment, size)
}

/// `mgpuMemAlloc`: a device buffer (managed memory when `host_shared`), counted like the
/// memref allocations so no buffer a step makes escapes the measurement.
pub(crate) fn allocate_device(size: u64, host_shared: bool) -> *mut u8 {
    allocate_counted(MemoryKind::Device, host_shared, 256, size)
}

fn allocate_counted(kind: MemoryKind, managed: bool, alignment: u64, size: u64) -> *mut u8 {
    let Some(alignment) = alignment.max(1).checked_next_power_of_two() else {
        record_error(format!("allocation of {size} bytes: alignment {alignment} is too large"));
        return std::ptr::null_mut();
    };
    if size == 0 {
        return allocate_empty(kind, alignment);
    }
    let Some(_context) = ScopedContext::enter_default() else {
        return std::ptr::null_mut();
    };
    // SAFETY: a context is current; a failure is reported and gives None.
    let Some((address, backing)) = (unsafe { obtain_aligned(kind, managed, alignment, size) }) else {
        return std::ptr::null_mut();
    };
    let used = driver::device_memory_used();
    let mut ledger = lock(&LEDGER);
    ledger.record_allocation(address, size, kind, backing);
    match used {
        Ok(used) => ledger.observe_driver_used(used),
        Err(message) => {
            drop(ledger);
            record_error(message);
        }
    }
    address as *mut u8
}

fn allocate_empty(kind: MemoryKind, alignment: u64) -> *mut u8 {
    let Ok(layout) = Layout::from_size_align(1, alignment as usize) else {
        record_error(format!("zero-byte allocation: alignment {alignment} is too large"));
        return std::ptr::null_mut();
    };
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { std::alloc::alloc(layout) };
    if ptr.is_null() {
        record_error("zero-byte allocation: out of host memory");
        return ptr;
    }
    lock(&LEDGER).record_allocation(ptr as usize, 0, kind, Backing::Empty { layout });
    ptr
}

/// `size` bytes of `kind` at an address aligned to `alignment`: what the driver gives if it is
/// aligned already (it gives 256-byte device and page-aligned host memory), else a block
/// `alignment - 1` bytes larger, rounded up inside. None after a reported error.
///
/// # Safety
/// A context must be current.
unsafe fn obtain_aligned(kind: MemoryKind, managed: bool, alignment: u64, size: u64) -> Option<(usize, Backing)> {
    let (address, block) = unsafe { obtain(kind, managed, size)? };
    if (address as u64) & (alignment - 1) == 0 {
        return Some((address, Backing::Driver(block)));
    }
    if let Err(message) = unsafe { release(block) } {
        record_error(message);
    }
    let Some(padded) = size.checked_add(alignment - 1) else {
        record_error(format!("allocation of {size} bytes aligned to {alignment}: size overflows"));
        return None;
    };
    let (address, block) = unsafe { obtain(kind, managed, padded)? };
    Some((address.next_multiple_of(alignment as usize), Backing::Driver(block)))
}

/// One driver allocation of `size` bytes: its device-visible address and how to release it.
///
/// # Safety
/// A context must be current.
unsafe fn obtain(kind: MemoryKind, managed: bool, size: u64) -> Option<(usize, DriverBlock)> {
    let Ok(bytes) = usize::try_from(size) else {
        record_error(format!("allocation of {size} bytes: too large for this machine"));
        return None;
    };
    match kind {
        MemoryKind::Device => {
            let mut address = 0;
            let ok = if managed {
                let flags = CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32;
                report(
                    unsafe { sys::cuMemAllocManaged(&mut address, bytes, flags) },
                    &format!("cuMemAllocManaged(&ptr, {bytes}, CU_MEM_ATTACH_GLOBAL)"),
                )
            } else {
                report(unsafe { sys::cuMemAlloc_v2(&mut address, bytes) }, &format!("cuMemAlloc(&ptr, {bytes})"))
            };
            ok.then_some((address as usize, DriverBlock::Device { base: address }))
        }
        MemoryKind::Host | MemoryKind::Staging => {
            let mut host = std::ptr::null_mut();
            let flags = CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE;
            let call = format!("cuMemHostAlloc(&ptr, {bytes}, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE)");
            if !report(unsafe { sys::cuMemHostAlloc(&mut host, bytes, flags) }, &call) {
                return None;
            }
            // Under unified addressing the device address is the host address; ask anyway, so
            // kernels get the address the driver says is theirs.
            let mut device = 0;
            if !report(
                unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0) },
                "cuMemHostGetDevicePointer(&dptr, ptr, 0)",
            ) {
                report(unsafe { sys::cuMemFreeHost(host) }, "cuMemFreeHost(ptr)");
                return None;
            }
            Some((device as usize, DriverBlock::PinnedHost { base: host as usize }))
        }
    }
}

/// Returns a driver block.
///
/// # Safety
/// `block` must come from [`obtain`] and not be released yet; a context must be current.
unsafe fn release(block: DriverBlock) -> Result<(), RuntimeError> {
    match block {
        DriverBlock::Device { base } => check(unsafe { sys::cuMemFree_v2(base) }, "cuMemFree(ptr)"),
        DriverBlock::PinnedHost { base } => check(unsafe { sys::cuMemFreeHost(base as *mut _) }, "cuMemFreeHost(ptr)"),
    }
}

/// Forgets the block at `address` in the ledger and releases it; Ok for a foreign pointer
/// (counted, left alone). `cuMemFree` and `cuMemFreeHost` wait for the device, so a kernel
/// still using the buffer finishes first.
fn forget_and_release(address: usize) -> Result<(), RuntimeError> {
    let Some(backing) = lock(&LEDGER).record_free(address) else {
        return Ok(());
    };
    match backing {
        Backing::Empty { layout } => {
            // SAFETY: `allocate_empty` returned `address` from `alloc(layout)`.
            unsafe { std::alloc::dealloc(address as *mut u8, layout) };
            Ok(())
        }
        Backing::Driver(block) => {
            let _context = ScopedContext::enter(driver::default_device())?;
            // SAFETY: the ledger handed the block over exactly once; a context is current.
            unsafe { release(block) }
        }
    }
}

/// `_mlir_memref_to_llvm_free` and `mgpuMemFree`: frees a block this allocator made (a failure
/// is recorded); any other pointer is counted as a foreign free and left alone.
pub(crate) fn free(ptr: *mut u8) {
    if !ptr.is_null() {
        if let Err(message) = forget_and_release(ptr as usize) {
            record_error(message);
        }
    }
}

/// [`free`] for `call_step_on_device`, which reports failures itself.
pub(crate) fn free_result(address: u64) -> Result<(), RuntimeError> {
    forget_and_release(address as usize)
}

//! Counting allocator for lowered code.
//!
//! `finalize-memref-to-llvm{use-generic-functions=1}` turns `memref.alloc` into calls to
//! `_mlir_memref_to_llvm_alloc(size)` / `_mlir_memref_to_llvm_aligned_alloc(alignment, size)`
//! and `memref.dealloc` into `_mlir_memref_to_llvm_free(ptr)`. A JIT registers the functions
//! below under those names ([`SYMBOLS`]). They allocate with Rust's global allocator and count
//! the requested bytes: `size` is the buffer's exact byte size (the lowering adds no padding),
//! so live and peak bytes are the memory model's, with no allocator overhead in them.
//!
//! Host buffers: `remat-host-buffers` puts a call to `remat_host_alloc_next()` right before
//! every allocation of a host copy (memory space 1; docs/memory-model.md, "Host transfers").
//! The next allocation is then counted as host bytes, apart from the device bytes that
//! `peak_bytes` measures.
//!
//! Counts are per thread: the lowered code runs on the calling thread, so concurrent runs
//! (tests) do not see each other's buffers.

use std::alloc::{alloc, dealloc, Layout};
use std::cell::RefCell;
use std::collections::HashMap;

/// What the counters saw since the last [`reset`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocationCounts {
    /// Bytes allocated and not freed.
    pub live_bytes: u64,
    /// The most `live_bytes` ever were.
    pub peak_bytes: u64,
    /// Number of allocations.
    pub allocations: u64,
    /// Number of frees of buffers these hooks allocated.
    pub frees: u64,
    /// Frees of pointers these hooks did not allocate (ignored; a lowering bug if non-zero).
    pub foreign_frees: u64,
    /// Host bytes allocated and not freed (not in `live_bytes`).
    pub host_live_bytes: u64,
    /// The most `host_live_bytes` ever were.
    pub host_peak_bytes: u64,
    /// Number of host allocations (not in `allocations`).
    pub host_allocations: u64,
}

/// One allocation or free, when tracing is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocationEvent {
    Alloc { bytes: u64, live_after: u64 },
    Free { bytes: u64, live_after: u64 },
}

#[derive(Default)]
struct Counter {
    counts: AllocationCounts,
    /// Live blocks: layout, counted bytes, the generation (reset count) that counted them, and
    /// whether they are host buffers.
    blocks: HashMap<usize, (Layout, u64, u64, bool)>,
    /// `remat_host_alloc_next` was called: the next allocation is a host buffer.
    next_is_host: bool,
    generation: u64,
    trace: Option<Vec<AllocationEvent>>,
}

thread_local! {
    static COUNTER: RefCell<Counter> = RefCell::new(Counter::default());
}

/// Forgets the counts (and the trace) of this thread; buffers still live stay known, so they
/// can be freed later, but no longer count as live.
pub fn reset(trace: bool) {
    COUNTER.with(|c| {
        let mut c = c.borrow_mut();
        c.counts = AllocationCounts::default();
        c.generation += 1;
        c.trace = trace.then(Vec::new);
    });
}

/// This thread's counts.
pub fn counts() -> AllocationCounts {
    COUNTER.with(|c| c.borrow().counts)
}

/// This thread's trace since [`reset`] (empty unless tracing was asked for).
pub fn take_trace() -> Vec<AllocationEvent> {
    COUNTER.with(|c| c.borrow_mut().trace.take().unwrap_or_default())
}

/// Whether `ptr` is a live buffer allocated by these hooks on this thread.
pub fn owns(ptr: *const u8) -> bool {
    COUNTER.with(|c| c.borrow().blocks.contains_key(&(ptr as usize)))
}

fn allocate(alignment: u64, size: u64) -> *mut u8 {
    let alignment = alignment.max(16).next_power_of_two() as usize;
    let Ok(layout) = Layout::from_size_align(size.max(1) as usize, alignment) else {
        return std::ptr::null_mut();
    };
    let ptr = unsafe { alloc(layout) };
    if ptr.is_null() {
        return ptr;
    }
    COUNTER.with(|c| {
        let mut c = c.borrow_mut();
        let generation = c.generation;
        let host = std::mem::take(&mut c.next_is_host);
        c.blocks.insert(ptr as usize, (layout, size, generation, host));
        if host {
            c.counts.host_allocations += 1;
            c.counts.host_live_bytes += size;
            c.counts.host_peak_bytes = c.counts.host_peak_bytes.max(c.counts.host_live_bytes);
            return;
        }
        c.counts.allocations += 1;
        c.counts.live_bytes += size;
        c.counts.peak_bytes = c.counts.peak_bytes.max(c.counts.live_bytes);
        let live_after = c.counts.live_bytes;
        if let Some(t) = c.trace.as_mut() {
            t.push(AllocationEvent::Alloc { bytes: size, live_after });
        }
    });
    ptr
}

/// Frees a buffer these hooks allocated (from lowered code or from the host); other pointers
/// are counted as foreign and left alone.
// Safe to call with any pointer: only a live block of our own table is deallocated.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn free(ptr: *mut u8) {
    if ptr.is_null() {
        return;
    }
    let layout = COUNTER.with(|c| {
        let mut c = c.borrow_mut();
        match c.blocks.remove(&(ptr as usize)) {
            Some((layout, size, generation, host)) => {
                let bytes = if generation == c.generation { size } else { 0 };
                if host {
                    c.counts.host_live_bytes -= bytes;
                    return Some(layout);
                }
                c.counts.frees += 1;
                c.counts.live_bytes -= bytes;
                let live_after = c.counts.live_bytes;
                if let Some(t) = c.trace.as_mut() {
                    t.push(AllocationEvent::Free { bytes, live_after });
                }
                Some(layout)
            }
            None => {
                c.counts.foreign_frees += 1;
                None
            }
        }
    });
    if let Some(layout) = layout {
        unsafe { dealloc(ptr, layout) };
    }
}

/// `_mlir_memref_to_llvm_alloc`.
pub extern "C" fn mlir_alloc(size: u64) -> *mut u8 {
    allocate(16, size)
}

/// `_mlir_memref_to_llvm_aligned_alloc`.
pub extern "C" fn mlir_aligned_alloc(alignment: u64, size: u64) -> *mut u8 {
    allocate(alignment, size)
}

/// `remat_host_alloc_next`: the next allocation on this thread is a host buffer.
pub extern "C" fn host_alloc_next() {
    COUNTER.with(|c| c.borrow_mut().next_is_host = true);
}

/// `remat_staging_alloc_next`: a staged scalar read. Only the GPU lowering stages reads (its
/// loop nests run here in tests); on the CPU its buffer is counted with the host bytes, out of
/// the peak as on the GPU.
pub extern "C" fn staging_alloc_next() {
    host_alloc_next()
}

/// `_mlir_memref_to_llvm_free`.
pub extern "C" fn mlir_free(ptr: *mut u8) {
    free(ptr)
}

/// An unranked memref as lowered code passes it: rank, then a pointer to the ranked
/// descriptor (allocated pointer, aligned pointer, offset, sizes[rank], strides[rank]).
#[repr(C)]
pub struct UnrankedMemRef {
    rank: i64,
    descriptor: *const i64,
}

/// `memrefCopy` (MLIR's C runner utilities): copies a strided memref into another of the same
/// shape. `memref.copy` between non-contiguous layouts lowers to a call to it; it allocates
/// nothing.
///
/// # Safety
/// Both arguments must be valid unranked memrefs of equal shape with `element_size`-byte
/// elements, as the lowered code passes them.
pub unsafe extern "C" fn memref_copy(
    element_size: i64,
    source: *const UnrankedMemRef,
    destination: *const UnrankedMemRef,
) {
    unsafe {
        let (src, dst) = (&*source, &*destination);
        let rank = src.rank as usize;
        let field = |d: *const i64, i: usize| *d.add(i);
        let (src_base, dst_base) = (field(src.descriptor, 1) as *const u8, field(dst.descriptor, 1) as *mut u8);
        let (src_offset, dst_offset) = (field(src.descriptor, 2), field(dst.descriptor, 2));
        let sizes: Vec<i64> = (0..rank).map(|i| field(src.descriptor, 3 + i)).collect();
        if sizes.contains(&0) {
            return;
        }
        let src_strides: Vec<i64> = (0..rank).map(|i| field(src.descriptor, 3 + rank + i)).collect();
        let dst_strides: Vec<i64> = (0..rank).map(|i| field(dst.descriptor, 3 + rank + i)).collect();
        let size = element_size as usize;
        crate::layout::for_each_run(&sizes, &src_strides, &dst_strides, |s, d, elements| {
            let (s, d) = ((src_offset + s) as usize * size, (dst_offset + d) as usize * size);
            std::ptr::copy(src_base.add(s), dst_base.add(d), elements as usize * size);
        });
    }
}

/// The symbols to register with a JIT, by name.
pub const SYMBOLS: [(&str, *const ()); 6] = [
    ("_mlir_memref_to_llvm_alloc", mlir_alloc as *const ()),
    ("remat_host_alloc_next", host_alloc_next as *const ()),
    ("remat_staging_alloc_next", staging_alloc_next as *const ()),
    ("_mlir_memref_to_llvm_aligned_alloc", mlir_aligned_alloc as *const ()),
    ("_mlir_memref_to_llvm_free", mlir_free as *const ()),
    ("memrefCopy", memref_copy as *const ()),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_live_and_peak_bytes() {
        reset(true);
        let a = mlir_aligned_alloc(64, 100);
        let b = mlir_alloc(28);
        assert_eq!(a as usize % 64, 0);
        assert_eq!(counts().live_bytes, 128);
        mlir_free(a);
        let c = mlir_aligned_alloc(64, 50);
        assert_eq!(
            counts(),
            AllocationCounts {
                live_bytes: 78,
                peak_bytes: 128,
                allocations: 3,
                frees: 1,
                ..AllocationCounts::default()
            }
        );
        mlir_free(b);
        mlir_free(c);
        let mut host = 0u8;
        mlir_free(&mut host);
        assert_eq!(counts().live_bytes, 0);
        assert_eq!(counts().foreign_frees, 1);
        assert_eq!(take_trace().len(), 6);
    }

    #[test]
    fn host_buffers_are_counted_apart() {
        reset(false);
        let device = mlir_alloc(100);
        host_alloc_next();
        let host = mlir_alloc(40);
        let next = mlir_alloc(8);
        let c = counts();
        assert_eq!((c.live_bytes, c.peak_bytes, c.allocations), (108, 108, 2));
        assert_eq!((c.host_live_bytes, c.host_peak_bytes, c.host_allocations), (40, 40, 1));
        mlir_free(host);
        mlir_free(device);
        mlir_free(next);
        let c = counts();
        assert_eq!((c.live_bytes, c.host_live_bytes, c.host_peak_bytes, c.frees), (0, 0, 40, 2));
    }

    #[test]
    fn memref_copy_follows_strides() {
        // A 2x2 window (offset 1, strides [3, 1]) of a 3x3 source into a contiguous 2x2.
        let src: Vec<f32> = (0..9).map(|i| i as f32).collect();
        let mut dst = [0f32; 4];
        let sd = [src.as_ptr() as i64, src.as_ptr() as i64, 1, 2, 2, 3, 1];
        let dd = [dst.as_mut_ptr() as i64, dst.as_mut_ptr() as i64, 0, 2, 2, 2, 1];
        let (s, d) =
            (UnrankedMemRef { rank: 2, descriptor: sd.as_ptr() }, UnrankedMemRef { rank: 2, descriptor: dd.as_ptr() });
        unsafe { memref_copy(4, &s, &d) };
        assert_eq!(dst, [1.0, 2.0, 4.0, 5.0]);
    }

    #[test]
    fn threads_count_separately() {
        reset(false);
        let p = mlir_alloc(1000);
        std::thread::spawn(|| {
            reset(false);
            assert_eq!(counts().live_bytes, 0);
        })
        .join()
        .unwrap();
        assert_eq!(counts().live_bytes, 1000);
        mlir_free(p);
    }
}

//! The counting allocator's bookkeeping, in plain Rust: which pointers are live, of which kind
//! and size, and the live/peak counts. No CUDA in here, so it is tested with fake pointers; the
//! allocator (`allocator.rs`) does the driver calls and records them here.

use std::collections::HashMap;

/// What the counters saw since the last reset. Device bytes are what the memory model calls
/// peak memory; host bytes are the offloaded copies (`remat_host_alloc_next`), apart; staging
/// bytes are the pinned buffers through which the host reads a scalar it needs
/// (`remat_staging_alloc_next`), which the memory model leaves out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuCounts {
    /// Device bytes allocated and not freed (exact requested sizes).
    pub device_live_bytes: u64,
    /// The most `device_live_bytes` ever were.
    pub device_peak_bytes: u64,
    /// Number of device allocations.
    pub device_allocations: u64,
    /// Number of frees of device buffers the allocator made.
    pub device_frees: u64,
    /// Pinned host bytes allocated and not freed.
    pub host_live_bytes: u64,
    /// The most `host_live_bytes` ever were.
    pub host_peak_bytes: u64,
    /// Number of pinned host allocations.
    pub host_allocations: u64,
    /// Pinned staging bytes allocated and not freed.
    pub staging_live_bytes: u64,
    /// The most `staging_live_bytes` ever were.
    pub staging_peak_bytes: u64,
    /// Number of staging allocations.
    pub staging_allocations: u64,
    /// The most device memory the driver reported in use beyond what was in use at the reset,
    /// sampled at every allocation: the counted bytes plus the driver's rounding and anything
    /// else the step made the driver allocate (and anything other processes allocated).
    pub driver_peak_bytes: u64,
    /// Frees of pointers the allocator did not make (ignored; a lowering bug if non-zero).
    pub foreign_frees: u64,
}

/// Where an allocation is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryKind {
    Device,
    /// An offloaded copy (memory space 1): the plan's host bytes.
    Host,
    /// A scalar the host reads, staged in pinned memory: outside the plan.
    Staging,
}

/// One live allocation. `backing` is whatever the allocator needs to release it.
#[derive(Debug)]
struct Block<B> {
    bytes: u64,
    kind: MemoryKind,
    /// The reset count at allocation: blocks from before the last reset count 0 bytes when
    /// freed, since they were never counted live in the current counts.
    generation: u64,
    backing: B,
}

/// The live allocations and the counts. `B` is how a block is released (the allocator's
/// backing; `()` in tests).
#[derive(Debug)]
pub struct Ledger<B> {
    counts: GpuCounts,
    blocks: HashMap<usize, Block<B>>,
    next_kind: Option<MemoryKind>,
    generation: u64,
    driver_baseline: u64,
}

impl<B> Default for Ledger<B> {
    fn default() -> Self {
        Ledger {
            counts: GpuCounts::default(),
            blocks: HashMap::new(),
            next_kind: None,
            generation: 0,
            driver_baseline: 0,
        }
    }
}

impl<B> Ledger<B> {
    /// Forgets the counts. Live blocks stay known (they can still be freed) but no longer
    /// count. `driver_used` is the driver's `total - free` now: later samples are measured
    /// from it. A pending `remat_host_alloc_next` (or staging mark) is dropped: it belonged to
    /// an earlier run.
    pub fn reset(&mut self, driver_used: u64) {
        self.counts = GpuCounts::default();
        self.generation += 1;
        self.next_kind = None;
        self.driver_baseline = driver_used;
    }

    /// `remat_host_alloc_next` (`Host`) or `remat_staging_alloc_next` (`Staging`): the kind of
    /// the next allocation.
    pub fn mark_next(&mut self, kind: MemoryKind) {
        self.next_kind = Some(kind);
    }

    /// The kind of the allocation about to be made; consumes a pending mark.
    pub fn take_next_kind(&mut self) -> MemoryKind {
        self.next_kind.take().unwrap_or(MemoryKind::Device)
    }

    /// Records a new block of `bytes` (the requested size) at `ptr`.
    pub fn record_allocation(&mut self, ptr: usize, bytes: u64, kind: MemoryKind, backing: B) {
        let c = &mut self.counts;
        match kind {
            MemoryKind::Device => {
                c.device_allocations += 1;
                c.device_live_bytes += bytes;
                c.device_peak_bytes = c.device_peak_bytes.max(c.device_live_bytes);
            }
            MemoryKind::Host => {
                c.host_allocations += 1;
                c.host_live_bytes += bytes;
                c.host_peak_bytes = c.host_peak_bytes.max(c.host_live_bytes);
            }
            MemoryKind::Staging => {
                c.staging_allocations += 1;
                c.staging_live_bytes += bytes;
                c.staging_peak_bytes = c.staging_peak_bytes.max(c.staging_live_bytes);
            }
        }
        self.blocks.insert(ptr, Block { bytes, kind, generation: self.generation, backing });
    }

    /// Forgets the block at `ptr` and returns how to release it; a pointer the ledger does not
    /// know is counted as a foreign free and gives None (the caller must leave it alone).
    pub fn record_free(&mut self, ptr: usize) -> Option<B> {
        let Some(block) = self.blocks.remove(&ptr) else {
            self.counts.foreign_frees += 1;
            return None;
        };
        let bytes = if block.generation == self.generation { block.bytes } else { 0 };
        match block.kind {
            MemoryKind::Device => {
                self.counts.device_frees += 1;
                self.counts.device_live_bytes -= bytes;
            }
            MemoryKind::Host => self.counts.host_live_bytes -= bytes,
            MemoryKind::Staging => self.counts.staging_live_bytes -= bytes,
        }
        Some(block.backing)
    }

    /// A sample of the driver's `total - free`, taken right after an allocation.
    pub fn observe_driver_used(&mut self, used: u64) {
        let beyond = used.saturating_sub(self.driver_baseline);
        self.counts.driver_peak_bytes = self.counts.driver_peak_bytes.max(beyond);
    }

    /// Whether `ptr` is a live block.
    pub fn owns(&self, ptr: usize) -> bool {
        self.blocks.contains_key(&ptr)
    }

    /// The counts since the last reset.
    pub fn counts(&self) -> GpuCounts {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_device_live_and_peak_bytes() {
        let mut ledger = Ledger::<&str>::default();
        ledger.reset(0);
        ledger.record_allocation(0x1000, 100, MemoryKind::Device, "a");
        ledger.record_allocation(0x2000, 28, MemoryKind::Device, "b");
        assert_eq!(ledger.record_free(0x1000), Some("a"));
        ledger.record_allocation(0x3000, 50, MemoryKind::Device, "c");
        let c = ledger.counts();
        assert_eq!((c.device_live_bytes, c.device_peak_bytes, c.device_allocations, c.device_frees), (78, 128, 3, 1));
        assert_eq!((c.host_live_bytes, c.host_allocations), (0, 0));
        assert!(ledger.owns(0x2000) && !ledger.owns(0x1000));
    }

    #[test]
    fn host_mark_applies_to_the_next_allocation_only() {
        let mut ledger = Ledger::<()>::default();
        ledger.reset(0);
        assert_eq!(ledger.take_next_kind(), MemoryKind::Device);
        ledger.mark_next(MemoryKind::Host);
        let kind = ledger.take_next_kind();
        assert_eq!(kind, MemoryKind::Host);
        ledger.record_allocation(0x10, 40, kind, ());
        let kind = ledger.take_next_kind();
        assert_eq!(kind, MemoryKind::Device);
        ledger.record_allocation(0x20, 8, kind, ());
        let c = ledger.counts();
        assert_eq!((c.device_live_bytes, c.device_peak_bytes, c.device_allocations), (8, 8, 1));
        assert_eq!((c.host_live_bytes, c.host_peak_bytes, c.host_allocations), (40, 40, 1));
        ledger.record_free(0x10);
        ledger.record_free(0x20);
        let c = ledger.counts();
        assert_eq!((c.device_live_bytes, c.host_live_bytes, c.host_peak_bytes, c.device_frees), (0, 0, 40, 1));
        // A mark left over from an earlier run does not leak into the next one.
        ledger.mark_next(MemoryKind::Host);
        ledger.reset(0);
        assert_eq!(ledger.take_next_kind(), MemoryKind::Device);
    }

    #[test]
    fn staging_is_counted_apart_from_device_and_host_bytes() {
        let mut ledger = Ledger::<()>::default();
        ledger.reset(0);
        ledger.mark_next(MemoryKind::Host);
        let kind = ledger.take_next_kind();
        ledger.record_allocation(0x10, 40, kind, ());
        ledger.mark_next(MemoryKind::Staging);
        let kind = ledger.take_next_kind();
        assert_eq!(kind, MemoryKind::Staging);
        ledger.record_allocation(0x20, 4, kind, ());
        let kind = ledger.take_next_kind();
        assert_eq!(kind, MemoryKind::Device);
        ledger.record_allocation(0x30, 8, kind, ());
        let c = ledger.counts();
        assert_eq!((c.device_peak_bytes, c.host_peak_bytes, c.staging_peak_bytes), (8, 40, 4));
        assert_eq!((c.device_allocations, c.host_allocations, c.staging_allocations), (1, 1, 1));
        ledger.record_free(0x20);
        assert_eq!((ledger.counts().staging_live_bytes, ledger.counts().staging_peak_bytes), (0, 4));
    }

    #[test]
    fn foreign_frees_are_counted_and_ignored() {
        let mut ledger = Ledger::<u32>::default();
        ledger.reset(0);
        ledger.record_allocation(0x100, 64, MemoryKind::Device, 7);
        assert_eq!(ledger.record_free(0x200), None);
        assert_eq!(ledger.record_free(0x100), Some(7));
        // Freeing twice: the second is foreign.
        assert_eq!(ledger.record_free(0x100), None);
        let c = ledger.counts();
        assert_eq!((c.foreign_frees, c.device_frees, c.device_live_bytes), (2, 1, 0));
    }

    #[test]
    fn blocks_from_before_a_reset_free_without_counting() {
        let mut ledger = Ledger::<()>::default();
        ledger.reset(0);
        ledger.record_allocation(0x100, 1000, MemoryKind::Device, ());
        ledger.mark_next(MemoryKind::Host);
        let kind = ledger.take_next_kind();
        ledger.record_allocation(0x200, 500, kind, ());
        ledger.reset(0);
        ledger.record_allocation(0x300, 10, MemoryKind::Device, ());
        assert!(ledger.record_free(0x100).is_some());
        assert!(ledger.record_free(0x200).is_some());
        let c = ledger.counts();
        assert_eq!((c.device_live_bytes, c.device_peak_bytes, c.device_frees, c.host_live_bytes), (10, 10, 1, 0));
    }

    #[test]
    fn driver_peak_is_measured_from_the_reset() {
        let mut ledger = Ledger::<()>::default();
        ledger.reset(5_000);
        ledger.observe_driver_used(4_000);
        assert_eq!(ledger.counts().driver_peak_bytes, 0);
        ledger.observe_driver_used(7_000);
        ledger.observe_driver_used(6_000);
        assert_eq!(ledger.counts().driver_peak_bytes, 2_000);
        ledger.reset(6_000);
        assert_eq!(ledger.counts().driver_peak_bytes, 0);
        ledger.observe_driver_used(6_512);
        assert_eq!(ledger.counts().driver_peak_bytes, 512);
    }
}

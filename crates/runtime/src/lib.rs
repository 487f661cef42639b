//! Running a compiled training step on the CPU and measuring its memory. No MLIR in here:
//! the JIT that produces the entry point is `remat_lower::jit`.
//!
//! * [`alloc`] — the allocation functions the lowered code calls
//!   (`finalize-memref-to-llvm{use-generic-functions=1}`): they count live and peak bytes per
//!   thread, so a run measures exactly the buffers the step allocates.
//! * [`tensor`] — host tensors: element types, seeded random inputs, byte-exact comparison.
//! * [`tensor`] also compares within a tolerance ([`compare_within`]): a GPU run against the
//!   CPU's outputs.
//! * [`npy`] — `.npy` files, written and read, so a framework (or the GPU runner) can check a
//!   run (tools/export/compare_*.py).
//! * [`call`] — calls a step through MLIR's packed calling convention (`_mlir_<name>`), with
//!   memref descriptors for tensors, and measures the call.
//! * [`RuntimeError`] — what every fallible function here returns: structured variants whose
//!   messages are what the runners print.
//! * `gpu` (feature `gpu`) — the same on a CUDA device, for a step compiled to a shared
//!   library: upstream MLIR's CUDA runtime wrappers and a counting device/host allocator, as C
//!   functions a runner exports; the driver is loaded at run time, so no CUDA is needed to
//!   build or test.

pub mod alloc;
pub mod call;
mod error;
#[cfg(feature = "gpu")]
pub mod gpu;
pub(crate) mod layout;
pub mod npy;
pub mod tensor;

pub use alloc::{AllocationCounts, AllocationEvent};
pub use call::{call_step, PackedEntry, StepRun};
pub use error::RuntimeError;
/// The generator of seeded inputs, so a runner seeds exactly like remat-run.
pub use remat_rng::SplitMix64;
pub use tensor::{compare, compare_within, ElementType, HostTensor, Mismatch, TensorSpec, ToleranceReport};

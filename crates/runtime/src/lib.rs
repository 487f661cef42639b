//! Running a compiled training step on the CPU and measuring its memory. No MLIR in here:
//! the JIT that produces the entry point is `remat_lower::jit`.
//!
//! * [`alloc`] — the allocation functions the lowered code calls
//!   (`finalize-memref-to-llvm{use-generic-functions=1}`): they count live and peak bytes per
//!   thread, so a run measures exactly the buffers the step allocates.
//! * [`tensor`] — host tensors: element types, seeded random inputs, byte-exact comparison.
//! * [`npy`] — `.npy` files, so a framework can check a run (tools/export/compare_*.py).
//! * [`call`] — calls a step through MLIR's packed calling convention (`_mlir_<name>`), with
//!   memref descriptors for tensors, and measures the call.

pub mod alloc;
pub mod call;
pub mod npy;
pub mod tensor;

pub use alloc::{AllocationCounts, AllocationEvent};
pub use call::{call_step, PackedEntry, StepRun};
pub use tensor::{compare, ElementType, HostTensor, Mismatch, TensorSpec};

//! `remat-host-buffers`: turn the buffers of host copies (memory space 1, what the rewriter's
//! offloads bufferize to) into counted host allocations on the CPU.
//!
//! The CPU has one memory, and `finalize-memref-to-llvm` cannot free a buffer in a non-default
//! address space (its `free` call takes an address-space-0 pointer). So this pass, run after
//! bufferization, (1) puts `func.call @remat_host_alloc_next()` right before every
//! `memref.alloc` in memory space 1, which tells `remat-runtime`'s counting allocator that the
//! next allocation is host memory, and (2) drops memory space 1 from every memref type, so the
//! rest of the pipeline sees ordinary buffers. The device peak the runner measures then
//! excludes offloaded bytes, and the host peak is counted on its own.

use mlir_sys::*;
use remat_mlir::ir::{self, Op, Val};
use remat_mlir::HOST_MEMORY_SPACE;
use std::ffi::CString;

/// The runtime function that marks the next allocation as host memory.
pub const HOST_ALLOC_NEXT: &str = "remat_host_alloc_next";

/// What the pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostBufferStats {
    /// Host allocations marked.
    pub allocations: usize,
    /// Values whose type lost memory space 1.
    pub retyped: usize,
}

/// Runs the pass on `module`.
pub fn mark_host_buffers(module: Op) -> HostBufferStats {
    let mut stats = HostBufferStats::default();
    let ops = ir::nested_ops(module);
    let allocs: Vec<Op> = ops
        .iter()
        .copied()
        .filter(|&op| {
            ir::op_name(op) == "memref.alloc" && ir::results(op).first().is_some_and(|&r| is_host(ir::value_type(r)))
        })
        .collect();
    if allocs.is_empty() {
        return stats;
    }
    for &alloc in &allocs {
        mark_host_allocation(module, alloc);
        stats.allocations += 1;
    }
    for op in ops {
        for v in ir::results(op) {
            stats.retyped += usize::from(retype(v));
        }
        for region in ir::regions(op) {
            for block in ir::blocks(region) {
                for v in ir::block_arguments(block) {
                    stats.retyped += usize::from(retype(v));
                }
            }
        }
    }
    stats
}

/// Puts `func.call @remat_host_alloc_next()` right before `alloc` (declaring the function in
/// `module` if needed), so the runtime allocates and counts it as host memory.
pub(crate) fn mark_host_allocation(module: Op, alloc: Op) {
    declare_runtime_function(module);
    let callee = unsafe {
        let ctx = mlirOperationGetContext(alloc);
        let name = CString::new(HOST_ALLOC_NEXT).expect("no NUL");
        mlirFlatSymbolRefAttrGet(ctx, mlirStringRefCreateFromCString(name.as_ptr()))
    };
    let call = ir::create_op("func.call", &[], &[], &[("callee", callee)], ir::location(alloc));
    ir::insert_before(ir::op_block(alloc), alloc, call);
}

/// Whether `t` is a memref in the host memory space.
fn is_host(t: MlirType) -> bool {
    ir::is_memref(t) && {
        let space = unsafe { mlirMemRefTypeGetMemorySpace(t) };
        !space.ptr.is_null() && ir::integer_attribute_value(space) == Some(HOST_MEMORY_SPACE)
    }
}

/// Drops memory space 1 from `v`'s type; true when it had it.
fn retype(v: Val) -> bool {
    let t = ir::value_type(v);
    if !is_host(t) {
        return false;
    }
    unsafe {
        let rank = mlirShapedTypeGetRank(t);
        let shape: Vec<i64> = (0..rank).map(|i| mlirShapedTypeGetDimSize(t, i as isize)).collect();
        let plain = mlirMemRefTypeGet(
            mlirShapedTypeGetElementType(t),
            rank as isize,
            shape.as_ptr(),
            mlirMemRefTypeGetLayout(t),
            MlirAttribute { ptr: std::ptr::null() },
        );
        mlirValueSetType(v, plain);
    }
    true
}

/// `func.func private @remat_host_alloc_next()` at the top of `module`, unless it is there.
fn declare_runtime_function(module: Op) {
    let Some(body) = ir::regions(module).first().and_then(|r| ir::blocks(*r).first().copied()) else { return };
    if ir::block_ops(body).iter().any(|&op| {
        ir::op_name(op) == "func.func" && ir::string_attribute(op, "sym_name").as_deref() == Some(HOST_ALLOC_NEXT)
    }) {
        return;
    }
    unsafe {
        let ctx = mlirOperationGetContext(module);
        let text = CString::new(format!("func.func private @{HOST_ALLOC_NEXT}()")).expect("no NUL");
        let parsed = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(text.as_ptr()));
        let declaration = mlirBlockGetFirstOperation(mlirModuleGetBody(parsed));
        let clone = mlirOperationClone(declaration);
        mlirModuleDestroy(parsed);
        mlirBlockInsertOwnedOperation(body, 0, clone);
    }
}

//! `remat-host-buffers`: turn the buffers of host copies (memory space 1, what the rewriter's
//! offloads bufferize to) into counted host allocations on the CPU.
//!
//! The CPU has one memory, and `finalize-memref-to-llvm` cannot free a buffer in a non-default
//! address space (its `free` call takes an address-space-0 pointer). So this pass, run after
//! bufferization, (1) puts `func.call @remat_host_alloc_next()` right before every
//! `memref.alloc` in memory space 1, which tells `remat-runtime`'s counting allocator that the
//! next allocation is host memory, and (2) drops memory space 1 from every memref type — of
//! values, ranked or unranked, and in function signatures — so the rest of the pipeline sees
//! ordinary buffers. The device peak the runner measures then
//! excludes offloaded bytes, and the host peak is counted on its own.

use mlir_sys::*;
use remat_mlir::ir::{self, Op, Val};
use remat_mlir::HOST_MEMORY_SPACE;
use std::ffi::CString;

/// The runtime function that marks the next allocation as host memory.
pub const HOST_ALLOC_NEXT: &str = "remat_host_alloc_next";

/// The runtime function that marks the next allocation as a staging buffer: pinned host
/// memory through which the host reads a scalar (the GPU lowering's read-backs), counted apart
/// from the plan's host bytes.
pub const STAGING_ALLOC_NEXT: &str = "remat_staging_alloc_next";

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
        if ir::op_name(op) == "func.func" {
            retype_signature(op);
        }
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
    mark_allocation(module, alloc, HOST_ALLOC_NEXT);
}

/// Puts `func.call @<marker>()` right before `alloc` (declaring `marker` in `module` if
/// needed): [`HOST_ALLOC_NEXT`] or [`STAGING_ALLOC_NEXT`].
pub(crate) fn mark_allocation(module: Op, alloc: Op, marker: &str) {
    declare_runtime_function(module, marker);
    let callee = unsafe {
        let ctx = mlirOperationGetContext(alloc);
        let name = CString::new(marker).expect("no NUL");
        mlirFlatSymbolRefAttrGet(ctx, mlirStringRefCreateFromCString(name.as_ptr()))
    };
    let call = ir::create_op("func.call", &[], &[], &[("callee", callee)], ir::location(alloc));
    ir::insert_before(ir::op_block(alloc), alloc, call);
}

/// Whether `t` is a memref (ranked or unranked) in the host memory space.
fn is_host(t: MlirType) -> bool {
    let space = unsafe {
        if ir::is_memref(t) {
            mlirMemRefTypeGetMemorySpace(t)
        } else if mlirTypeIsAUnrankedMemRef(t) {
            mlirUnrankedMemrefGetMemorySpace(t)
        } else {
            return false;
        }
    };
    !space.ptr.is_null() && ir::integer_attribute_value(space) == Some(HOST_MEMORY_SPACE)
}

/// `t` without memory space 1, or `t` itself when it is not a host memref.
fn plain(t: MlirType) -> MlirType {
    if !is_host(t) {
        return t;
    }
    let default_space = MlirAttribute { ptr: std::ptr::null() };
    unsafe {
        if mlirTypeIsAUnrankedMemRef(t) {
            return mlirUnrankedMemRefTypeGet(mlirShapedTypeGetElementType(t), default_space);
        }
        let rank = mlirShapedTypeGetRank(t);
        let shape: Vec<i64> = (0..rank).map(|i| mlirShapedTypeGetDimSize(t, i as isize)).collect();
        mlirMemRefTypeGet(
            mlirShapedTypeGetElementType(t),
            rank as isize,
            shape.as_ptr(),
            mlirMemRefTypeGetLayout(t),
            default_space,
        )
    }
}

/// Drops memory space 1 from `v`'s type; true when it had it.
fn retype(v: Val) -> bool {
    let t = ir::value_type(v);
    if !is_host(t) {
        return false;
    }
    unsafe { mlirValueSetType(v, plain(t)) };
    true
}

/// Drops memory space 1 from the inputs and results of `func`'s `function_type`, as from the
/// values of its body (a declaration has no body, but its callers' values are retyped too).
fn retype_signature(func: Op) {
    let Some(attr) = ir::attribute(func, "function_type") else { return };
    unsafe {
        let t = mlirTypeAttrGetValue(attr);
        let inputs: Vec<MlirType> =
            (0..mlirFunctionTypeGetNumInputs(t)).map(|i| plain(mlirFunctionTypeGetInput(t, i))).collect();
        let results: Vec<MlirType> =
            (0..mlirFunctionTypeGetNumResults(t)).map(|i| plain(mlirFunctionTypeGetResult(t, i))).collect();
        let retyped = mlirFunctionTypeGet(
            mlirOperationGetContext(func),
            inputs.len() as isize,
            inputs.as_ptr(),
            results.len() as isize,
            results.as_ptr(),
        );
        let name = CString::new("function_type").expect("no NUL");
        mlirOperationSetAttributeByName(func, mlirStringRefCreateFromCString(name.as_ptr()), mlirTypeAttrGet(retyped));
    }
}

/// `func.func private @<name>()` at the top of `module`, unless it is there.
fn declare_runtime_function(module: Op, name: &str) {
    let Some(body) = ir::regions(module).first().and_then(|r| ir::blocks(*r).first().copied()) else { return };
    if ir::block_ops(body)
        .iter()
        .any(|&op| ir::op_name(op) == "func.func" && ir::string_attribute(op, "sym_name").as_deref() == Some(name))
    {
        return;
    }
    unsafe {
        let ctx = mlirOperationGetContext(module);
        let text = CString::new(format!("func.func private @{name}()")).expect("no NUL");
        let parsed = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(text.as_ptr()));
        let declaration = mlirBlockGetFirstOperation(mlirModuleGetBody(parsed));
        let clone = mlirOperationClone(declaration);
        mlirModuleDestroy(parsed);
        mlirBlockInsertOwnedOperation(body, 0, clone);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{lines, printed};
    use remat_mlir::RematContext;

    /// Runs the pass on `input`, checks that the result verifies and prints as `expected`.
    fn check(input: &str, expected: &str) -> HostBufferStats {
        let context = RematContext::new();
        let module = context.parse(input, "host.mlir").unwrap_or_else(|e| panic!("{e:?}\n{input}"));
        let stats = mark_host_buffers(module.as_operation().to_raw());
        context.verify(&module).unwrap_or_else(|e| panic!("{e:?}\n{}", module.as_operation()));
        assert_eq!(printed(&module), lines(expected), "\n{}", module.as_operation());
        stats
    }

    #[test]
    fn a_host_buffer_loses_its_memory_space_and_is_announced_to_the_runtime() {
        let stats = check(
            r#"
            func.func @main(%x: memref<4xf32>, %out: memref<4xf32>) {
              %h = memref.alloc() : memref<4xf32, 1>
              memref.copy %x, %h : memref<4xf32> to memref<4xf32, 1>
              %d = memref.alloc() : memref<4xf32>
              memref.copy %h, %d : memref<4xf32, 1> to memref<4xf32>
              memref.dealloc %h : memref<4xf32, 1>
              memref.copy %d, %out : memref<4xf32> to memref<4xf32>
              memref.dealloc %d : memref<4xf32>
              return
            }
            "#,
            "
            func.func private @remat_host_alloc_next()
            func.func @main(%arg0: memref<4xf32>, %arg1: memref<4xf32>) {
            call @remat_host_alloc_next() : () -> ()
            %alloc = memref.alloc() : memref<4xf32>
            memref.copy %arg0, %alloc : memref<4xf32> to memref<4xf32>
            %alloc_0 = memref.alloc() : memref<4xf32>
            memref.copy %alloc, %alloc_0 : memref<4xf32> to memref<4xf32>
            memref.dealloc %alloc : memref<4xf32>
            memref.copy %alloc_0, %arg1 : memref<4xf32> to memref<4xf32>
            memref.dealloc %alloc_0 : memref<4xf32>
            return
            }
            ",
        );
        assert_eq!(stats, HostBufferStats { allocations: 1, retyped: 1 });
    }

    #[test]
    fn without_host_buffers_nothing_changes() {
        let input = r#"
            func.func @main(%x: memref<4xf32>) {
              %d = memref.alloc() : memref<4xf32, 2>
              memref.copy %x, %d : memref<4xf32> to memref<4xf32, 2>
              memref.dealloc %d : memref<4xf32, 2>
              return
            }
        "#;
        let stats = check(
            input,
            "
            func.func @main(%arg0: memref<4xf32>) {
            %alloc = memref.alloc() : memref<4xf32, 2>
            memref.copy %arg0, %alloc : memref<4xf32> to memref<4xf32, 2>
            memref.dealloc %alloc : memref<4xf32, 2>
            return
            }
            ",
        );
        assert_eq!(stats, HostBufferStats::default());
    }

    #[test]
    fn every_host_allocation_is_marked_and_the_runtime_function_declared_once() {
        // The declaration is already there; two host buffers, one in a loop, and a loop
        // carrying a host buffer: its block argument and result are retyped as well.
        let stats = check(
            r#"
            func.func private @remat_host_alloc_next()
            func.func @main(%n: index, %x: f32) {
              %c0 = arith.constant 0 : index
              %c1 = arith.constant 1 : index
              %h = memref.alloc() : memref<4xf32, 1>
              %r = scf.for %i = %c0 to %n step %c1 iter_args(%b = %h) -> (memref<4xf32, 1>) {
                %t = memref.alloc() : memref<2xf32, 1>
                memref.store %x, %t[%c0] : memref<2xf32, 1>
                memref.dealloc %t : memref<2xf32, 1>
                memref.store %x, %b[%i] : memref<4xf32, 1>
                scf.yield %b : memref<4xf32, 1>
              }
              memref.dealloc %r : memref<4xf32, 1>
              return
            }
            "#,
            "
            func.func private @remat_host_alloc_next()
            func.func @main(%arg0: index, %arg1: f32) {
            %c0 = arith.constant 0 : index
            %c1 = arith.constant 1 : index
            call @remat_host_alloc_next() : () -> ()
            %alloc = memref.alloc() : memref<4xf32>
            %0 = scf.for %arg2 = %c0 to %arg0 step %c1 iter_args(%arg3 = %alloc) -> (memref<4xf32>) {
            func.call @remat_host_alloc_next() : () -> ()
            %alloc_0 = memref.alloc() : memref<2xf32>
            memref.store %arg1, %alloc_0[%c0] : memref<2xf32>
            memref.dealloc %alloc_0 : memref<2xf32>
            memref.store %arg1, %arg3[%arg2] : memref<4xf32>
            scf.yield %arg3 : memref<4xf32>
            }
            memref.dealloc %0 : memref<4xf32>
            return
            }
            ",
        );
        assert_eq!(stats, HostBufferStats { allocations: 2, retyped: 4 });
    }

    #[test]
    fn host_copies_from_the_rewriter_become_marked_allocations_after_bufferization() {
        // What `apply_plan` writes for an offload, through the bufferization half of the CPU
        // pipeline (which ends with remat-host-buffers).
        let context = RematContext::new();
        let input = r#"
            func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
              %e = tensor.empty() : tensor<4xf32>
              %a = linalg.exp ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
              %h = bufferization.alloc_tensor() copy(%a) {memory_space = 1 : i64} : tensor<4xf32>
              %d = bufferization.alloc_tensor() copy(%h) {memory_space = 0 : i64} : tensor<4xf32>
              %e2 = tensor.empty() : tensor<4xf32>
              %b = linalg.negf ins(%d : tensor<4xf32>) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
              return %b : tensor<4xf32>
            }
        "#;
        let mut module = context.parse(input, "host.mlir").unwrap();
        crate::run_pipeline(&context, &mut module, &format!("builtin.module({})", crate::BUFFERIZE))
            .unwrap_or_else(|e| panic!("{e:?}"));
        // The exp's buffer is freed once it is on the host, the host copy once it is back.
        assert_eq!(
            printed(&module),
            lines(
                "
                func.func private @remat_host_alloc_next()
                func.func @main(%arg0: memref<4xf32>) -> memref<4xf32> {
                %alloc = memref.alloc() : memref<4xf32>
                linalg.exp ins(%arg0 : memref<4xf32>) outs(%alloc : memref<4xf32>)
                call @remat_host_alloc_next() : () -> ()
                %alloc_0 = memref.alloc() : memref<4xf32>
                memref.copy %alloc, %alloc_0 : memref<4xf32> to memref<4xf32>
                memref.dealloc %alloc : memref<4xf32>
                %alloc_1 = memref.alloc() : memref<4xf32>
                memref.copy %alloc_0, %alloc_1 : memref<4xf32> to memref<4xf32>
                memref.dealloc %alloc_0 : memref<4xf32>
                %alloc_2 = memref.alloc() : memref<4xf32>
                linalg.negf ins(%alloc_1 : memref<4xf32>) outs(%alloc_2 : memref<4xf32>)
                memref.dealloc %alloc_1 : memref<4xf32>
                return %alloc_2 : memref<4xf32>
                }
                "
            )
        );
    }

    /// Memory space 1 leaves function signatures too (it once stayed there while the values
    /// lost it, and the module no longer verified).
    #[test]
    fn a_host_buffer_passed_to_a_function_loses_its_memory_space_in_the_signature_too() {
        let stats = check(
            r#"
            func.func private @fill_host(%h: memref<4xf32, 1>, %x: f32) {
              linalg.fill ins(%x : f32) outs(%h : memref<4xf32, 1>)
              return
            }
            func.func @main(%x: f32) {
              %h = memref.alloc() : memref<4xf32, 1>
              func.call @fill_host(%h, %x) : (memref<4xf32, 1>, f32) -> ()
              memref.dealloc %h : memref<4xf32, 1>
              return
            }
            "#,
            "
            func.func private @remat_host_alloc_next()
            func.func private @fill_host(%arg0: memref<4xf32>, %arg1: f32) {
            linalg.fill ins(%arg1 : f32) outs(%arg0 : memref<4xf32>)
            return
            }
            func.func @main(%arg0: f32) {
            call @remat_host_alloc_next() : () -> ()
            %alloc = memref.alloc() : memref<4xf32>
            call @fill_host(%alloc, %arg0) : (memref<4xf32>, f32) -> ()
            memref.dealloc %alloc : memref<4xf32>
            return
            }
            ",
        );
        assert_eq!(stats.allocations, 1);
    }

    /// An unranked view of a host buffer loses the memory space as well.
    #[test]
    fn unranked_host_buffers_lose_their_memory_space() {
        let stats = check(
            r#"
            func.func private @print(%m: memref<*xf32, 1>)
            func.func @main() {
              %h = memref.alloc() : memref<4xf32, 1>
              %u = memref.cast %h : memref<4xf32, 1> to memref<*xf32, 1>
              func.call @print(%u) : (memref<*xf32, 1>) -> ()
              memref.dealloc %h : memref<4xf32, 1>
              return
            }
            "#,
            "
            func.func private @remat_host_alloc_next()
            func.func private @print(memref<*xf32>)
            func.func @main() {
            call @remat_host_alloc_next() : () -> ()
            %alloc = memref.alloc() : memref<4xf32>
            %cast = memref.cast %alloc : memref<4xf32> to memref<*xf32>
            call @print(%cast) : (memref<*xf32>) -> ()
            memref.dealloc %alloc : memref<4xf32>
            return
            }
            ",
        );
        assert_eq!((stats.allocations, stats.retyped), (1, 2));
    }
}

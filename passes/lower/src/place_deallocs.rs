//! `remat-place-deallocs`: move every `memref.dealloc` to right after the last use of its
//! buffer.
//!
//! Ownership-based buffer deallocation (upstream) is correct but puts the deallocations of a
//! block at its end, so a straight-line training step frees nothing until it returns and its
//! measured peak is the sum of all its buffers, whatever the op order. The memory model
//! (docs/memory-model.md) frees a value right after its last use. This pass closes that gap:
//! in every block, each `memref.dealloc %m` moves up to just after the last op of that block
//! that uses `%m` or an alias of `%m`.
//!
//! Aliases are found conservatively, in both directions: the buffers the dealloc's operand may
//! be derived from (the memref operands of the op that defines it — a cast or a view of an
//! allocation — transitively, up to an allocation), and every memref, tensor or pointer result
//! of an op that uses any of those (directly or inside one of its regions — a loop yielding the
//! buffer, say), with the results of the ops enclosing that use up to the block. A too-large
//! alias set only keeps a buffer alive longer; it never frees one early. A dealloc whose buffer
//! is used outside the dealloc's block stays where it is.

use mlir_sys::*;
use remat_mlir::ir::{self, Op, Val};
use std::collections::{HashMap, HashSet};

/// How many deallocations moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlacementStats {
    /// `memref.dealloc` ops seen.
    pub deallocs: usize,
    /// Of those, moved earlier.
    pub moved: usize,
}

/// Runs the placement on every block nested in `root` (a function or a module).
pub fn place_deallocs(root: Op) -> PlacementStats {
    let mut stats = PlacementStats::default();
    let mut blocks = Vec::new();
    collect_blocks(root, &mut blocks);
    for block in blocks {
        place_in_block(block, &mut stats);
    }
    stats
}

fn collect_blocks(op: Op, out: &mut Vec<MlirBlock>) {
    for region in ir::regions(op) {
        for block in ir::blocks(region) {
            out.push(block);
            for inner in ir::block_ops(block) {
                collect_blocks(inner, out);
            }
        }
    }
}

fn place_in_block(block: MlirBlock, stats: &mut PlacementStats) {
    let ops = ir::block_ops(block);
    let position: HashMap<usize, usize> = ops.iter().enumerate().map(|(i, &op)| (ir::op_key(op), i)).collect();
    let deallocs: Vec<Op> = ops.iter().copied().filter(|&op| ir::op_name(op) == "memref.dealloc").collect();
    for dealloc in deallocs {
        stats.deallocs += 1;
        let Some(&buffer) = ir::operands(dealloc).first() else { continue };
        let Some(last) = last_user_in_block(buffer, dealloc, block, &position) else { continue };
        let here = position[&ir::op_key(dealloc)];
        let target = match last {
            LastUse::Op(i) => i,
            // Never used: free right after the definition when it is in this block.
            LastUse::Unused => match defining_position(buffer, &position) {
                Some(i) => i,
                None => continue,
            },
        };
        if target + 1 >= here {
            continue;
        }
        // After the last user and after deallocs already placed there (keeps source order).
        let mut anchor = ops[target];
        loop {
            let next = unsafe { mlirOperationGetNextInBlock(anchor) };
            if next.ptr.is_null() || ir::op_key(next) == ir::op_key(dealloc) || ir::op_name(next) != "memref.dealloc" {
                break;
            }
            anchor = next;
        }
        unsafe { mlirOperationMoveAfter(dealloc, anchor) };
        stats.moved += 1;
    }
}

enum LastUse {
    Op(usize),
    Unused,
}

/// The position in `block` of the last op that uses `buffer` or one of its aliases, or None
/// when some use lies outside `block` (then the dealloc must stay).
fn last_user_in_block(buffer: Val, dealloc: Op, block: MlirBlock, position: &HashMap<usize, usize>) -> Option<LastUse> {
    let mut work = sources(buffer);
    let mut seen: HashSet<usize> = work.iter().map(|&v| ir::value_key(v)).collect();
    let mut last: Option<usize> = None;
    while let Some(value) = work.pop() {
        for (user, _) in ir::uses(value) {
            if ir::op_key(user) == ir::op_key(dealloc) {
                continue;
            }
            // Walk from the user up to its ancestor in `block`; every op on the way may
            // produce an alias (a view, or a region op yielding the buffer).
            let mut op = user;
            loop {
                for result in ir::results(op) {
                    if may_alias(result) && seen.insert(ir::value_key(result)) {
                        work.push(result);
                    }
                }
                if unsafe { mlirBlockEqual(ir::op_block(op), block) } {
                    break;
                }
                op = unsafe { mlirOperationGetParentOperation(op) };
                if op.ptr.is_null() {
                    return None;
                }
            }
            let i = *position.get(&ir::op_key(op))?;
            last = Some(last.map_or(i, |l: usize| l.max(i)));
        }
    }
    Some(last.map_or(LastUse::Unused, LastUse::Op))
}

/// `buffer` and the buffers it may be derived from: the memref operands of the op defining it,
/// transitively, stopping at allocations (which make a new buffer of nothing).
fn sources(buffer: Val) -> Vec<Val> {
    let mut found = vec![buffer];
    let mut seen: HashSet<usize> = HashSet::from([ir::value_key(buffer)]);
    let mut i = 0;
    while let Some(&value) = found.get(i) {
        i += 1;
        if unsafe { !mlirValueIsAOpResult(value) } {
            continue;
        }
        let owner = unsafe { mlirOpResultGetOwner(value) };
        if matches!(ir::op_name(owner).as_str(), "memref.alloc" | "memref.alloca" | "memref.get_global") {
            continue;
        }
        for operand in ir::operands(owner) {
            if may_alias(operand) && seen.insert(ir::value_key(operand)) {
                found.push(operand);
            }
        }
    }
    found
}

fn defining_position(value: Val, position: &HashMap<usize, usize>) -> Option<usize> {
    unsafe {
        if !mlirValueIsAOpResult(value) {
            return None;
        }
        position.get(&ir::op_key(mlirOpResultGetOwner(value))).copied()
    }
}

/// Results that can carry a buffer: memrefs, tensors (to_tensor), LLVM pointers, and the
/// index that `memref.extract_aligned_pointer_as_index` makes of a pointer.
fn may_alias(value: Val) -> bool {
    let t = ir::value_type(value);
    unsafe {
        if mlirTypeIsAMemRef(t) || mlirTypeIsAUnrankedMemRef(t) || mlirTypeIsATensor(t) || mlirTypeIsALLVMPointerType(t)
        {
            return true;
        }
        if mlirTypeIsAIndex(t) && mlirValueIsAOpResult(value) {
            return ir::op_name(mlirOpResultGetOwner(value)) == "memref.extract_aligned_pointer_as_index";
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{lines, printed};
    use remat_mlir::RematContext;

    /// Places the deallocations of `input` and compares the printed result with `expected`.
    fn check(input: &str, expected: &str) -> PlacementStats {
        let context = RematContext::new();
        let module = context.parse(input, "place.mlir").unwrap_or_else(|e| panic!("{e:?}\n{input}"));
        let stats = place_deallocs(module.as_operation().to_raw());
        context.verify(&module).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(printed(&module), lines(expected), "\n{}", module.as_operation());
        stats
    }

    #[test]
    fn each_dealloc_follows_the_last_use_of_its_buffer() {
        let stats = check(
            r#"
            func.func @chain(%x: f32) -> memref<4xf32> {
              %a = memref.alloc() : memref<4xf32>
              linalg.fill ins(%x : f32) outs(%a : memref<4xf32>)
              %b = memref.alloc() : memref<4xf32>
              linalg.copy ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
              %c = memref.alloc() : memref<4xf32>
              linalg.copy ins(%b : memref<4xf32>) outs(%c : memref<4xf32>)
              memref.dealloc %a : memref<4xf32>
              memref.dealloc %b : memref<4xf32>
              return %c : memref<4xf32>
            }
            "#,
            "
            func.func @chain(%arg0: f32) -> memref<4xf32> {
            %alloc = memref.alloc() : memref<4xf32>
            linalg.fill ins(%arg0 : f32) outs(%alloc : memref<4xf32>)
            %alloc_0 = memref.alloc() : memref<4xf32>
            linalg.copy ins(%alloc : memref<4xf32>) outs(%alloc_0 : memref<4xf32>)
            memref.dealloc %alloc : memref<4xf32>
            %alloc_1 = memref.alloc() : memref<4xf32>
            linalg.copy ins(%alloc_0 : memref<4xf32>) outs(%alloc_1 : memref<4xf32>)
            memref.dealloc %alloc_0 : memref<4xf32>
            return %alloc_1 : memref<4xf32>
            }
            ",
        );
        // %b's dealloc counts as moved although, once %a's has left, it already follows its
        // last use: positions are those of the block before the pass.
        assert_eq!(stats, PlacementStats { deallocs: 2, moved: 2 });
    }

    #[test]
    fn a_view_keeps_its_source_alive() {
        let stats = check(
            r#"
            func.func @view(%x: f32, %out: memref<2x2xf32>, %other: memref<4xf32>) {
              %a = memref.alloc() : memref<4xf32>
              %v = memref.expand_shape %a [[0, 1]] output_shape [2, 2] : memref<4xf32> into memref<2x2xf32>
              linalg.fill ins(%x : f32) outs(%a : memref<4xf32>)
              linalg.copy ins(%v : memref<2x2xf32>) outs(%out : memref<2x2xf32>)
              linalg.fill ins(%x : f32) outs(%other : memref<4xf32>)
              memref.dealloc %a : memref<4xf32>
              return
            }
            "#,
            "
            func.func @view(%arg0: f32, %arg1: memref<2x2xf32>, %arg2: memref<4xf32>) {
            %alloc = memref.alloc() : memref<4xf32>
            %expand_shape = memref.expand_shape %alloc [[0, 1]] output_shape [2, 2] : memref<4xf32> into memref<2x2xf32>
            linalg.fill ins(%arg0 : f32) outs(%alloc : memref<4xf32>)
            linalg.copy ins(%expand_shape : memref<2x2xf32>) outs(%arg1 : memref<2x2xf32>)
            memref.dealloc %alloc : memref<4xf32>
            linalg.fill ins(%arg0 : f32) outs(%arg2 : memref<4xf32>)
            return
            }
            ",
        );
        assert_eq!(stats, PlacementStats { deallocs: 1, moved: 1 });
    }

    #[test]
    fn a_use_inside_a_region_is_a_use_by_the_region_op_and_its_results_are_aliases() {
        let stats = check(
            r#"
            func.func @region_use(%x: f32, %n: index, %p: i1, %out: memref<4xf32>) -> f32 {
              %c0 = arith.constant 0 : index
              %c1 = arith.constant 1 : index
              %a = memref.alloc() : memref<4xf32>
              scf.for %i = %c0 to %n step %c1 {
                memref.store %x, %a[%i] : memref<4xf32>
              }
              %b = memref.alloc() : memref<4xf32>
              %r = scf.if %p -> memref<4xf32> {
                scf.yield %b : memref<4xf32>
              } else {
                scf.yield %out : memref<4xf32>
              }
              %s = arith.addf %x, %x : f32
              %v = memref.load %r[%c0] : memref<4xf32>
              %w = arith.addf %v, %s : f32
              memref.dealloc %a : memref<4xf32>
              memref.dealloc %b : memref<4xf32>
              return %w : f32
            }
            "#,
            "
            func.func @region_use(%arg0: f32, %arg1: index, %arg2: i1, %arg3: memref<4xf32>) -> f32 {
            %c0 = arith.constant 0 : index
            %c1 = arith.constant 1 : index
            %alloc = memref.alloc() : memref<4xf32>
            scf.for %arg4 = %c0 to %arg1 step %c1 {
            memref.store %arg0, %alloc[%arg4] : memref<4xf32>
            }
            memref.dealloc %alloc : memref<4xf32>
            %alloc_0 = memref.alloc() : memref<4xf32>
            %0 = scf.if %arg2 -> (memref<4xf32>) {
            scf.yield %alloc_0 : memref<4xf32>
            } else {
            scf.yield %arg3 : memref<4xf32>
            }
            %1 = arith.addf %arg0, %arg0 : f32
            %2 = memref.load %0[%c0] : memref<4xf32>
            memref.dealloc %alloc_0 : memref<4xf32>
            %3 = arith.addf %2, %1 : f32
            return %3 : f32
            }
            ",
        );
        assert_eq!(stats, PlacementStats { deallocs: 2, moved: 2 });
    }

    #[test]
    fn an_unused_buffer_is_freed_right_after_its_allocation() {
        let stats = check(
            r#"
            func.func @unused(%x: f32) {
              %a = memref.alloc() : memref<8xf32>
              %b = memref.alloc() : memref<8xf32>
              linalg.fill ins(%x : f32) outs(%b : memref<8xf32>)
              memref.dealloc %b : memref<8xf32>
              memref.dealloc %a : memref<8xf32>
              return
            }
            "#,
            "
            func.func @unused(%arg0: f32) {
            %alloc = memref.alloc() : memref<8xf32>
            memref.dealloc %alloc : memref<8xf32>
            %alloc_0 = memref.alloc() : memref<8xf32>
            linalg.fill ins(%arg0 : f32) outs(%alloc_0 : memref<8xf32>)
            memref.dealloc %alloc_0 : memref<8xf32>
            return
            }
            ",
        );
        assert_eq!(stats, PlacementStats { deallocs: 2, moved: 1 });
    }

    #[test]
    fn deallocs_after_the_same_last_use_keep_their_order() {
        let stats = check(
            r#"
            func.func @same_use(%x: f32, %out: memref<4xf32>) {
              %a = memref.alloc() : memref<4xf32>
              %b = memref.alloc() : memref<4xf32>
              linalg.add ins(%a, %b : memref<4xf32>, memref<4xf32>) outs(%out : memref<4xf32>)
              linalg.fill ins(%x : f32) outs(%out : memref<4xf32>)
              memref.dealloc %b : memref<4xf32>
              memref.dealloc %a : memref<4xf32>
              return
            }
            "#,
            "
            func.func @same_use(%arg0: f32, %arg1: memref<4xf32>) {
            %alloc = memref.alloc() : memref<4xf32>
            %alloc_0 = memref.alloc() : memref<4xf32>
            linalg.add ins(%alloc, %alloc_0 : memref<4xf32>, memref<4xf32>) outs(%arg1 : memref<4xf32>)
            memref.dealloc %alloc_0 : memref<4xf32>
            memref.dealloc %alloc : memref<4xf32>
            linalg.fill ins(%arg0 : f32) outs(%arg1 : memref<4xf32>)
            return
            }
            ",
        );
        assert_eq!(stats, PlacementStats { deallocs: 2, moved: 2 });
    }

    #[test]
    fn blocks_are_placed_one_by_one_and_a_buffer_used_outside_the_block_stays() {
        // In the loop body %t is freed after its fill. In the `scf.if`, %a's last use in that
        // block is the fill, but the function body reads %a after the `scf.if`: that dealloc
        // must not move.
        let stats = check(
            r#"
            func.func private @side_effect()
            func.func @blocks(%x: f32, %n: index, %p: i1, %out: memref<8xf32>) {
              %c0 = arith.constant 0 : index
              %c1 = arith.constant 1 : index
              scf.for %i = %c0 to %n step %c1 {
                %t = memref.alloc() : memref<8xf32>
                linalg.fill ins(%x : f32) outs(%t : memref<8xf32>)
                func.call @side_effect() : () -> ()
                memref.dealloc %t : memref<8xf32>
              }
              %a = memref.alloc() : memref<8xf32>
              scf.if %p {
                linalg.fill ins(%x : f32) outs(%a : memref<8xf32>)
                func.call @side_effect() : () -> ()
                memref.dealloc %a : memref<8xf32>
              }
              linalg.copy ins(%a : memref<8xf32>) outs(%out : memref<8xf32>)
              return
            }
            "#,
            "
            func.func private @side_effect()
            func.func @blocks(%arg0: f32, %arg1: index, %arg2: i1, %arg3: memref<8xf32>) {
            %c0 = arith.constant 0 : index
            %c1 = arith.constant 1 : index
            scf.for %arg4 = %c0 to %arg1 step %c1 {
            %alloc_0 = memref.alloc() : memref<8xf32>
            linalg.fill ins(%arg0 : f32) outs(%alloc_0 : memref<8xf32>)
            memref.dealloc %alloc_0 : memref<8xf32>
            func.call @side_effect() : () -> ()
            }
            %alloc = memref.alloc() : memref<8xf32>
            scf.if %arg2 {
            linalg.fill ins(%arg0 : f32) outs(%alloc : memref<8xf32>)
            func.call @side_effect() : () -> ()
            memref.dealloc %alloc : memref<8xf32>
            }
            linalg.copy ins(%alloc : memref<8xf32>) outs(%arg3 : memref<8xf32>)
            return
            }
            ",
        );
        assert_eq!(stats, PlacementStats { deallocs: 2, moved: 1 });
    }

    #[test]
    fn the_registered_pass_does_the_same() {
        let context = RematContext::new();
        let input = r#"
            func.func @f(%x: f32, %out: memref<4xf32>) {
              %a = memref.alloc() : memref<4xf32>
              linalg.fill ins(%x : f32) outs(%a : memref<4xf32>)
              linalg.copy ins(%a : memref<4xf32>) outs(%out : memref<4xf32>)
              linalg.fill ins(%x : f32) outs(%out : memref<4xf32>)
              memref.dealloc %a : memref<4xf32>
              return
            }
        "#;
        let mut module = context.parse(input, "place.mlir").unwrap();
        crate::run_pipeline(&context, &mut module, "builtin.module(func.func(remat-place-deallocs))").unwrap();
        assert_eq!(
            printed(&module),
            lines(
                "
                func.func @f(%arg0: f32, %arg1: memref<4xf32>) {
                %alloc = memref.alloc() : memref<4xf32>
                linalg.fill ins(%arg0 : f32) outs(%alloc : memref<4xf32>)
                linalg.copy ins(%alloc : memref<4xf32>) outs(%arg1 : memref<4xf32>)
                memref.dealloc %alloc : memref<4xf32>
                linalg.fill ins(%arg0 : f32) outs(%arg1 : memref<4xf32>)
                return
                }
                "
            )
        );
    }

    /// A dealloc of an alias (here a cast of the buffer) waits for every use of the buffer it
    /// aliases: searching aliases only forward from the operand once moved it before them.
    #[test]
    fn a_dealloc_of_an_alias_waits_for_the_buffers_other_uses() {
        let stats = check(
            r#"
            func.func @alias(%x: f32, %out: memref<4xf32>) {
              %a = memref.alloc() : memref<4xf32>
              %c = memref.cast %a : memref<4xf32> to memref<?xf32>
              linalg.fill ins(%x : f32) outs(%a : memref<4xf32>)
              linalg.copy ins(%a : memref<4xf32>) outs(%out : memref<4xf32>)
              memref.dealloc %c : memref<?xf32>
              return
            }
            "#,
            "
            func.func @alias(%arg0: f32, %arg1: memref<4xf32>) {
            %alloc = memref.alloc() : memref<4xf32>
            %cast = memref.cast %alloc : memref<4xf32> to memref<?xf32>
            linalg.fill ins(%arg0 : f32) outs(%alloc : memref<4xf32>)
            linalg.copy ins(%alloc : memref<4xf32>) outs(%arg1 : memref<4xf32>)
            memref.dealloc %cast : memref<?xf32>
            return
            }
            ",
        );
        assert_eq!(stats, PlacementStats { deallocs: 1, moved: 0 });
    }
}

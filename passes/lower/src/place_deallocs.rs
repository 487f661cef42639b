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
//! Aliases are found conservatively: every memref, tensor or pointer result of an op that uses
//! the buffer (directly or inside one of its regions — a loop yielding the buffer, say) may
//! alias it, and so may the results of the ops enclosing that use up to the block. A too-large
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
    let mut seen: HashSet<usize> = HashSet::from([ir::value_key(buffer)]);
    let mut work = vec![buffer];
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

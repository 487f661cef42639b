//! [`Schedule`] → rewritten function body.
//!
//! docs/memory-model.md, "Schedule → IR": walking the schedule, (1) the first execution of a
//! node moves the node's ops (init ops first) to the end of the body, before the terminator;
//! (2) every later execution inserts a clone there, the main op marked `remat.recompute`;
//! (3) every operand — nested ones in regions too — is pointed at the most recent execution of
//! its producer. The terminator is rewired last, so outputs come from their latest executions.
//!
//! Host transfers ([`Transfer`]): after the offload step, the instance's tensor results are
//! copied to host memory, `bufferization.alloc_tensor() copy(%v) {memory_space = 1 : i64}`;
//! right before the prefetch step they are copied back, `alloc_tensor() copy(%h)
//! {memory_space = 0 : i64}`, and later uses read that copy. Memory space 1 is the host
//! ([`HOST_MEMORY_SPACE`]); the lowering turns its buffers into counted host allocations.
//!
//! Cost: O(Σ ops placed × operands + transfers).

use crate::import::ImportedFunction;
use crate::ir::{self, Op, Val};
use indexmap::IndexMap;
use remat_graph::{simulate_with_transfers, validate, NodeId, Transfer};

/// The discardable attribute that marks a rematerialized (cloned) op.
pub const RECOMPUTE_ATTRIBUTE: &str = "remat.recompute";

/// The memory space of host copies (`memory_space` of `bufferization.alloc_tensor`).
pub const HOST_MEMORY_SPACE: i64 = 1;

/// What the rewrite did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RewriteStats {
    /// Ops moved to their first planned position.
    pub moved_ops: usize,
    /// Ops inserted as recomputations (init ops included).
    pub cloned_ops: usize,
    /// Copies to the host and back inserted (two per transferred tensor).
    pub copies: usize,
}

/// Materializes `schedule` in the function `imported` came from.
///
/// The schedule must be valid for `imported.graph` (checked). `imported` describes the IR as
/// it was imported; after this call it no longer matches and must not be reused.
pub fn apply_schedule(
    imported: &ImportedFunction,
    schedule: &[NodeId],
) -> Result<RewriteStats, remat_graph::ScheduleError> {
    apply_plan(imported, schedule, &[])
}

/// Materializes `schedule` with its host `transfers` (both checked against the memory model).
pub fn apply_plan(
    imported: &ImportedFunction,
    schedule: &[NodeId],
    transfers: &[Transfer],
) -> Result<RewriteStats, remat_graph::ScheduleError> {
    if transfers.is_empty() {
        validate(&imported.graph, schedule)?;
    } else {
        simulate_with_transfers(&imported.graph, schedule, transfers)?;
    }
    let body = imported.body;
    let terminator = imported.terminator;
    // Any value produced by a node's ops (original or clone) → the original value it copies.
    let mut original_of: IndexMap<usize, Val> = IndexMap::new();
    // Original value → its most recent execution so far.
    let mut latest: IndexMap<usize, Val> = IndexMap::new();
    let mut executed = vec![false; imported.graph.len()];
    let mut stats = RewriteStats::default();
    // Host copies waiting for their prefetch: transfer index → (original, host copy) pairs.
    let mut on_host: IndexMap<usize, Vec<(Val, Val)>> = IndexMap::new();
    let rewire = |op: Op, original_of: &IndexMap<usize, Val>, latest: &IndexMap<usize, Val>| {
        for o in std::iter::once(op).chain(ir::nested_ops(op)) {
            for (i, v) in ir::operands(o).into_iter().enumerate() {
                let original = original_of.get(&ir::value_key(v)).copied().unwrap_or(v);
                if let Some(&current) = latest.get(&ir::value_key(original)) {
                    if !ir::same_value(current, v) {
                        ir::set_operand(o, i, current);
                    }
                }
            }
        }
    };
    for (step, &node) in schedule.iter().enumerate() {
        for (k, _) in transfers.iter().enumerate().filter(|(_, t)| t.prefetch_before == step) {
            for (original, host) in on_host.shift_remove(&k).unwrap_or_default() {
                let device = copy_to_memory_space(host, 0, body, terminator);
                original_of.insert(ir::value_key(device), original);
                latest.insert(ir::value_key(original), device);
                stats.copies += 1;
            }
        }
        let group = &imported.groups[node.index()];
        let first = !executed[node.index()];
        executed[node.index()] = true;
        for (k, &op) in group.iter().enumerate() {
            let placed = if first {
                ir::move_before(op, terminator);
                stats.moved_ops += 1;
                op
            } else {
                let clone = ir::clone_op(op);
                ir::insert_before(body, terminator, clone);
                if k + 1 == group.len() {
                    ir::set_unit_attribute(clone, RECOMPUTE_ATTRIBUTE);
                }
                stats.cloned_ops += 1;
                clone
            };
            rewire(placed, &original_of, &latest);
            for (orig, new) in ir::results(op).into_iter().zip(ir::results(placed)) {
                original_of.insert(ir::value_key(new), orig);
                latest.insert(ir::value_key(orig), new);
            }
        }
        for (k, t) in transfers.iter().enumerate().filter(|(_, t)| t.offload_after == step) {
            let main = imported.mains[schedule[t.instance].index()].expect("transfers move computed values");
            let mut copies = Vec::new();
            for original in ir::results(main).into_iter().filter(|&r| ir::is_ranked_tensor(ir::value_type(r))) {
                let current = latest[&ir::value_key(original)];
                copies.push((original, copy_to_memory_space(current, HOST_MEMORY_SPACE, body, terminator)));
                stats.copies += 1;
            }
            on_host.insert(k, copies);
        }
    }
    rewire(terminator, &original_of, &latest);
    Ok(stats)
}

/// `bufferization.alloc_tensor() copy(%value) {memory_space = space : i64}`, before
/// `terminator`.
fn copy_to_memory_space(value: Val, space: i64, body: mlir_sys::MlirBlock, terminator: Op) -> Val {
    let loc = ir::location(terminator);
    let t = ir::value_type(value);
    let space_attr = ir::integer_attribute(terminator, 64, space);
    let segments = ir::dense_i32_array_attribute(terminator, &[0, 1, 0]);
    let op = ir::create_op(
        "bufferization.alloc_tensor",
        &[value],
        &[t],
        &[("memory_space", space_attr), ("operandSegmentSizes", segments)],
        loc,
    );
    ir::insert_before(body, terminator, op);
    ir::results(op)[0]
}

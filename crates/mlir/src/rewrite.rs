//! [`Schedule`] → rewritten function body.
//!
//! DESIGN.md, "Schedule → IR": walking the schedule, (1) the first execution of a node moves
//! the node's ops (init ops first) to the end of the body, before the terminator; (2) every
//! later execution inserts a clone there, the main op marked `remat.recompute`; (3) every
//! operand — nested ones in regions too — is pointed at the most recent execution of its
//! producer. The terminator is rewired last, so outputs come from their latest executions.
//!
//! Cost: O(Σ ops placed × operands).

use crate::import::ImportedFunction;
use crate::ir::{self, Op, Val};
use indexmap::IndexMap;
use remat_graph::{validate, NodeId};

/// The discardable attribute that marks a rematerialized (cloned) op.
pub const RECOMPUTE_ATTRIBUTE: &str = "remat.recompute";

/// What the rewrite did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RewriteStats {
    /// Ops moved to their first planned position.
    pub moved_ops: usize,
    /// Ops inserted as recomputations (init ops included).
    pub cloned_ops: usize,
}

/// Materializes `schedule` in the function `imported` came from.
///
/// The schedule must be valid for `imported.graph` (checked). `imported` describes the IR as
/// it was imported; after this call it no longer matches and must not be reused.
pub fn apply_schedule(imported: &ImportedFunction, schedule: &[NodeId]) -> Result<RewriteStats, remat_graph::ScheduleError> {
    validate(&imported.graph, schedule)?;
    let body = imported.body;
    let terminator = imported.terminator;
    // Any value produced by a node's ops (original or clone) → the original value it copies.
    let mut original_of: IndexMap<usize, Val> = IndexMap::new();
    // Original value → its most recent execution so far.
    let mut latest: IndexMap<usize, Val> = IndexMap::new();
    let mut executed = vec![false; imported.graph.len()];
    let mut stats = RewriteStats::default();
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
    for &node in schedule {
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
    }
    rewire(terminator, &original_of, &latest);
    Ok(stats)
}

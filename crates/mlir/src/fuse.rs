//! Elementwise fusion of an imported function, before planning: which producer → consumer
//! pairs of `linalg.generic` ops could be fused ([`fusion_candidates`]), and applying the pairs
//! someone else chose ([`apply_fusions`]; remat-planners' `fusion::choose_fusions` decides,
//! with the memory model: the bridge never decides what to recompute). After a round the
//! function is imported again ([`ImportedFunction::reimport`]), so the graph's nodes are the
//! fused ops and the lowering lowers exactly what was planned.
//!
//! A pair qualifies when both ops are single-result generics on tensors, the producer's loops
//! are all parallel, and the consumer reads the producer's result through inputs that share
//! one indexing map, a permutation of all its loops: fused, the consumer computes each
//! producer element exactly once (never inside a contraction or a broadcast, where it would
//! compute it many times). Several such inputs (`x * x`, or two producers fused earlier that
//! both read the value) are deduplicated into one first, and the fused op's inputs again
//! after: a value read twice is fused like a value read once. Before that, a broadcast
//! constant that one gelu's fused derivative read through four inputs stayed materialized
//! at 32 KiB in every layer of transformer12 (docs/bench, "Fusing values read through several
//! inputs"). A producer with other users is cloned for the consumer (`cpp/fuse.cpp`): its
//! work is recomputed there, and the consumer no longer keeps its result alive.

use crate::import::ImportedFunction;
use crate::{ir, ImportOptions, MlirError};
use remat_graph::NodeId;

unsafe extern "C" {
    fn rematCanFuse(consumer: mlir_sys::MlirOperation, producer_result: mlir_sys::MlirValue) -> bool;
    fn rematFuse(consumer: mlir_sys::MlirOperation, producer_result: mlir_sys::MlirValue) -> mlir_sys::MlirOperation;
    fn rematReusableInput(op: mlir_sys::MlirOperation) -> isize;
}

/// The operand number of the input an elementwise `linalg.generic` may write its result into
/// (same type, read through the result's own indexing map, all loops parallel, a body that
/// never reads the init): what [`remat_graph::Node::reuses`] names.
pub(crate) fn reusable_input(op: mlir_sys::MlirOperation) -> Option<usize> {
    usize::try_from(unsafe { rematReusableInput(op) }).ok()
}

/// A producer → consumer pair of nodes that can be fused: the consumer would compute the
/// producer's value per element itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FusionPair {
    /// The elementwise producer.
    pub producer: NodeId,
    /// The node that reads it.
    pub consumer: NodeId,
}

fn generic(imported: &ImportedFunction, node: NodeId) -> Option<mlir_sys::MlirOperation> {
    imported.mains.get(node.index()).copied().flatten().filter(|&op| ir::op_name(op) == "linalg.generic")
}

/// Every fusable pair of `imported`'s graph, consumers in order, each consumer's producers in
/// the order of its operands.
pub fn fusion_candidates(imported: &ImportedFunction) -> Vec<FusionPair> {
    let graph = &imported.graph;
    let mut pairs = Vec::new();
    for &consumer in &imported.order {
        let Some(consumer_op) = generic(imported, consumer) else { continue };
        for &producer in graph.preds(consumer) {
            let Some(producer_op) = generic(imported, producer) else { continue };
            let [result] = ir::results(producer_op)[..] else { continue };
            if unsafe { rematCanFuse(consumer_op, result) } {
                pairs.push(FusionPair { producer, consumer });
            }
        }
    }
    pairs
}

/// Fuses the generic defining `producer_result` into `consumer` (cloning it if it has other
/// users) and returns the fused op, which replaces `consumer`; `None` when they cannot be
/// fused (nothing changed).
pub(crate) fn fuse_into(
    consumer: mlir_sys::MlirOperation,
    producer_result: mlir_sys::MlirValue,
) -> Option<mlir_sys::MlirOperation> {
    let op = unsafe { rematFuse(consumer, producer_result) };
    (!op.ptr.is_null()).then_some(op)
}

/// Fuses `pairs` in order and returns how many were fused; the first pair that cannot be fused
/// ends it (whoever chose the pairs judged each on the ones before it). `imported` is stale
/// afterwards: import the function again.
pub fn apply_fusions(imported: &ImportedFunction, pairs: &[FusionPair]) -> usize {
    let mut current: Vec<Option<mlir_sys::MlirOperation>> = imported.mains.clone();
    let mut fused = 0;
    for pair in pairs {
        let (Some(consumer), Some(producer)) = (current[pair.consumer.index()], current[pair.producer.index()]) else {
            break;
        };
        let [result] = ir::results(producer)[..] else { break };
        let remaining_uses = ir::uses(result).len();
        let op = unsafe { rematFuse(consumer, result) };
        if op.ptr.is_null() {
            break;
        }
        fused += 1;
        current[pair.consumer.index()] = Some(op);
        if remaining_uses == 1 {
            // The consumer was its last user: the producer is gone.
            current[pair.producer.index()] = None;
        }
    }
    fused
}

impl ImportedFunction {
    /// Imports the same function again (after [`apply_fusions`] changed it).
    /// What earlier imports normalized is added to what this one does (usually nothing).
    pub fn reimport(self, options: &ImportOptions) -> Result<ImportedFunction, MlirError> {
        let module_body = ir::op_block(self.func);
        // The first import merged what the input recomputed; merging again would only re-merge
        // the inits it untied (and count them again).
        let options = ImportOptions { merge_recomputation: crate::MergeRecomputation::Keep, ..options.clone() };
        let mut again = crate::import::import_function(module_body, self.func, &options)?;
        again.normalized = again.normalized.and(self.normalized);
        Ok(again)
    }
}

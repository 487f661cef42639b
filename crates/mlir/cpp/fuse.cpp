//===- fuse.cpp - Fuse one elementwise producer into a consumer --*- C++ -*-===//
//
// Upstream's elementwise fusion (linalg::fuseElementwiseOps), one producer and
// one consumer at a time, for the fusion decisions remat-opt makes with its
// memory model (crates/mlir/src/fuse.rs). Two differences from upstream's
// greedy pattern, both because of what memory the result holds:
//
//  * a producer with other users is cloned for this consumer, so the fused op
//    computes it inside (rematerialization at the use site) instead of
//    yielding it as an extra result, which would keep it materialized;
//  * the consumer must read the producer's result through a permutation of all
//    its loops, so each producer element is computed exactly once per consumer
//    element: never inside a matmul's reduction or a broadcast, where it would
//    be computed many times. Inputs repeating the value through the same map
//    are deduplicated first (linalg::deduplicateOperandsAndRemoveDeadResults),
//    as upstream's canonicalization would between its fusions.
//
//===----------------------------------------------------------------------===//

#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace {
/// The input operand of `consumer` that reads `value`, or null (none, only the
/// init, or several through different indexing maps). Several inputs reading it
/// through the same map are one input once deduplicated (`rematFuse` does that
/// first): the first of them stands for all.
OpOperand *readingInput(linalg::GenericOp consumer, Value value) {
  OpOperand *found = nullptr;
  for (OpOperand &operand : consumer->getOpOperands()) {
    if (operand.get() != value)
      continue;
    if (!consumer.isDpsInput(&operand))
      return nullptr;
    if (found && consumer.getMatchingIndexingMap(found) !=
                     consumer.getMatchingIndexingMap(&operand))
      return nullptr;
    if (!found)
      found = &operand;
  }
  return found;
}

bool fusable(Operation *consumerOp, Value value) {
  auto consumer = dyn_cast<linalg::GenericOp>(consumerOp);
  auto producer = value.getDefiningOp<linalg::GenericOp>();
  if (!consumer || !producer || producer->getNumResults() != 1 ||
      consumer->getNumResults() != 1 || !consumer.hasPureTensorSemantics() ||
      !producer.hasPureTensorSemantics())
    return false;
  OpOperand *operand = readingInput(consumer, value);
  if (!operand || !consumer.getMatchingIndexingMap(operand).isPermutation())
    return false;
  return linalg::areElementwiseOpsFusable(operand);
}
} // namespace

/// Whether `producerResult`'s generic can be fused into `consumer`.
extern "C" bool rematCanFuse(MlirOperation consumer, MlirValue producerResult) {
  return fusable(unwrap(consumer), unwrap(producerResult));
}

/// Fuses the generic defining `producerResult` into `consumer` (cloning it
/// first when it has other users) and returns the fused op, which replaces
/// `consumer`; the producer is erased when nothing else uses it. Null when the
/// pair cannot be fused (nothing changed).
extern "C" MlirOperation rematFuse(MlirOperation consumerOp,
                                   MlirValue producerResult) {
  Operation *consumer = unwrap(consumerOp);
  Value value = unwrap(producerResult);
  if (!fusable(consumer, value))
    return MlirOperation{nullptr};
  IRRewriter rewriter(consumer->getContext());
  rewriter.setInsertionPoint(consumer);
  // A value read through several inputs (x * x, or a producer fused earlier that
  // read the same value) is read through one: fusing it then computes it once per
  // element, and the fused op's inputs stay deduplicated for the next round. The
  // fusion below cannot fail where `fusable` held, so the consumer replaced here
  // is never left half-changed.
  FailureOr<linalg::GenericOp> deduplicated =
      linalg::deduplicateOperandsAndRemoveDeadResults(
          rewriter, cast<linalg::GenericOp>(consumer), /*removeOutputs=*/false);
  if (failed(deduplicated))
    return MlirOperation{nullptr};
  consumer = *deduplicated;
  rewriter.setInsertionPoint(consumer);
  Operation *producer = value.getDefiningOp();
  bool shared = llvm::any_of(value.getUses(), [&](OpOperand &use) {
    return use.getOwner() != consumer;
  });
  if (shared) {
    Operation *clone = rewriter.clone(*producer);
    Value cloned = clone->getResult(0);
    rewriter.modifyOpInPlace(consumer, [&] { consumer->replaceUsesOfWith(value, cloned); });
    producer = clone;
    value = cloned;
  }
  OpOperand *operand = readingInput(cast<linalg::GenericOp>(consumer), value);
  FailureOr<linalg::ElementwiseOpFusionResult> fused =
      linalg::fuseElementwiseOps(rewriter, operand);
  if (failed(fused)) {
    if (shared) {
      rewriter.modifyOpInPlace(consumer, [&] {
        consumer->replaceUsesOfWith(value, unwrap(producerResult));
      });
      rewriter.eraseOp(producer);
    }
    return MlirOperation{nullptr};
  }
  for (auto [original, replacement] : fused->replacements)
    rewriter.replaceAllUsesExcept(original, replacement, fused->fusedOp);
  rewriter.eraseOp(consumer);
  if (producer->use_empty())
    rewriter.eraseOp(producer);
  // The producer's inputs may repeat the consumer's (both read the same value).
  rewriter.setInsertionPoint(fused->fusedOp);
  FailureOr<linalg::GenericOp> result = linalg::deduplicateOperandsAndRemoveDeadResults(
      rewriter, cast<linalg::GenericOp>(fused->fusedOp), /*removeOutputs=*/false);
  return wrap(succeeded(result) ? result->getOperation() : fused->fusedOp);
}

/// The input of an elementwise `linalg.generic` whose buffer its result may take (XLA's
/// buffer sharing): all loops parallel, one result, the input of the result's type read
/// through the result's own indexing map, and a body that never reads the init. -1 if none.
extern "C" intptr_t rematReusableInput(MlirOperation op) {
  auto generic = dyn_cast<linalg::GenericOp>(unwrap(op));
  if (!generic || generic->getNumResults() != 1 || !generic.hasPureTensorSemantics() ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return -1;
  OpOperand *init = generic.getDpsInitOperand(0);
  if (generic.getMatchingBlockArgument(init).use_empty() == false)
    return -1;
  AffineMap resultMap = generic.getMatchingIndexingMap(init);
  for (OpOperand *input : generic.getDpsInputOperands()) {
    if (input->get().getType() == generic->getResult(0).getType() &&
        generic.getMatchingIndexingMap(input) == resultMap)
      return input->getOperandNumber();
  }
  return -1;
}

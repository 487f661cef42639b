//===- merge.cpp - Merge recomputation the input already does -----*- C++ -*-===//
//
// `jax.checkpoint` writes its recomputation into the program: the backward
// recomputes the forward's ops from the same operands, kept apart from them
// only by `stablehlo.optimization_barrier`s. Once the importer has dissolved
// the barriers, each recomputed op is equivalent to the op it repeats (same
// name, attributes, regions and operands), and upstream's common-subexpression
// elimination merges it into that first op, so the planner sees every value
// once and decides itself what to keep and what to recompute
// (crates/mlir/src/import.rs, `merge_recomputation`).
//
//===----------------------------------------------------------------------===//

#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/CSE.h"

using namespace mlir;

namespace {
size_t countOps(Operation *root) {
  size_t count = 0;
  root->walk([&](Operation *) { ++count; });
  return count;
}
} // namespace

/// Merges equivalent side-effect-free ops within `op` (upstream CSE), then
/// erases the ops of its first block that nothing uses and that have no side
/// effects (the bookkeeping the merged ops computed their indices with);
/// returns how many ops were erased.
extern "C" size_t rematMergeEquivalentOps(MlirOperation op) {
  Operation *root = unwrap(op);
  size_t before = countOps(root);
  IRRewriter rewriter(root->getContext());
  DominanceInfo dominance(root);
  eliminateCommonSubExpressions(rewriter, dominance, root);
  if (root->getNumRegions() > 0 && !root->getRegion(0).empty()) {
    Block &body = root->getRegion(0).front();
    for (bool erased = true; erased;) {
      erased = false;
      for (Operation &inner : llvm::make_early_inc_range(llvm::reverse(body))) {
        if (isOpTriviallyDead(&inner)) {
          inner.erase();
          erased = true;
        }
      }
    }
  }
  return before - countOps(root);
}

/// Whether `op` is a `linalg.generic` that only copies its one input into a
/// result of the same elements in the same row-major order with unit
/// dimensions added (how jaxlib lowers `broadcast_in_dim` to a leading 1, as a
/// scan does before stacking a value): all loops parallel, a body that yields
/// the input's element, the init read through the identity, and the input
/// through the loops of the non-unit dimensions, in order.
extern "C" bool rematIsUnitDimCopy(MlirOperation op) {
  auto generic = dyn_cast<linalg::GenericOp>(unwrap(op));
  if (!generic || generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      !generic.hasPureTensorSemantics() ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return false;
  Block *body = generic.getBody();
  if (body->getOperations().size() != 1)
    return false;
  auto yield = dyn_cast<linalg::YieldOp>(body->getTerminator());
  if (!yield || yield->getNumOperands() != 1 ||
      yield->getOperand(0) != body->getArgument(0))
    return false;
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (!maps[1].isIdentity())
    return false;
  auto resultType = dyn_cast<RankedTensorType>(generic->getResult(0).getType());
  auto inputType = dyn_cast<RankedTensorType>(generic.getDpsInputOperand(0)->get().getType());
  if (!resultType || !inputType || !resultType.hasStaticShape() ||
      inputType.getElementType() != resultType.getElementType() ||
      maps[0].getNumResults() != inputType.getRank())
    return false;
  // The input's dimensions, in order, are exactly the result's non-unit ones.
  int64_t next = 0;
  for (unsigned i = 0; i < maps[0].getNumResults(); ++i) {
    auto dim = dyn_cast<AffineDimExpr>(maps[0].getResult(i));
    if (!dim)
      return false;
    int64_t position = dim.getPosition();
    if (position < next)
      return false;
    for (; next < position; ++next)
      if (resultType.getDimSize(next) != 1)
        return false;
    if (inputType.getDimSize(i) != resultType.getDimSize(position))
      return false;
    next = position + 1;
  }
  for (; next < resultType.getRank(); ++next)
    if (resultType.getDimSize(next) != 1)
      return false;
  return true;
}

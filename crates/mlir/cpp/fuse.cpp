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
//    be computed many times.
//
// A padded tensor feeding such a consumer is fused too: `tensor.pad` with
// static widths and a pad value defined outside it, or `tensor.insert_slice`
// into a `linalg.fill` (how an interior pad is legalized; JAX's max-pool
// gradient adds nine of them). The consumer computes the padded element
// itself, `select(in the window, source[j], pad value)`, reading the source
// directly: the same value bit for bit, and the padded tensor never exists.
//
//===----------------------------------------------------------------------===//

#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace {
/// The single input operand of `consumer` that reads `value`, or null (none,
/// several, or only the init).
OpOperand *uniqueInput(linalg::GenericOp consumer, Value value) {
  OpOperand *found = nullptr;
  for (OpOperand &operand : consumer->getOpOperands()) {
    if (operand.get() != value)
      continue;
    if (found || !consumer.isDpsInput(&operand))
      return nullptr;
    found = &operand;
  }
  return found;
}

/// A padded tensor: its source, and per dimension where the source's first
/// element lands, the step between its elements, and how many there are.
struct Padded {
  Value source;
  Value padValue;
  SmallVector<int64_t> offsets, strides, sizes;
};

/// `value` as a padded tensor, when its producer is one of the two forms the
/// file comment names, with static shapes, widths and strides; else nothing.
std::optional<Padded> paddedTensor(Value value) {
  Operation *op = value.getDefiningOp();
  if (!op || op->getNumResults() != 1)
    return std::nullopt;
  Padded padded;
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    Value yielded = pad.getConstantPaddingValue();
    auto source = dyn_cast<RankedTensorType>(pad.getSource().getType());
    if (!yielded || !source || !source.hasStaticShape() || pad.getNofold() ||
        !pad.getResultType().hasStaticShape())
      return std::nullopt;
    // A value made inside the pad's region cannot be read outside it, except a
    // constant, which the consumer makes again.
    if (pad.getRegion().isAncestor(yielded.getParentRegion()) &&
        !yielded.getDefiningOp<arith::ConstantOp>())
      return std::nullopt;
    for (OpFoldResult low : pad.getMixedLowPad()) {
      std::optional<int64_t> width = getConstantIntValue(low);
      if (!width || *width < 0)
        return std::nullopt;
      padded.offsets.push_back(*width);
    }
    padded.source = pad.getSource();
    padded.padValue = yielded;
    padded.strides.assign(source.getRank(), 1);
    padded.sizes.assign(source.getShape().begin(), source.getShape().end());
    return padded;
  }
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    auto fill = insert.getDest().getDefiningOp<linalg::FillOp>();
    auto source = dyn_cast<RankedTensorType>(insert.getSource().getType());
    if (!fill || !fill.hasPureTensorSemantics() || !source ||
        !source.hasStaticShape() || !insert.getResultType().hasStaticShape() ||
        insert.getSourceType().getRank() != insert.getResultType().getRank() ||
        ShapedType::isDynamicShape(insert.getStaticOffsets()) ||
        ShapedType::isDynamicShape(insert.getStaticSizes()) ||
        ShapedType::isDynamicShape(insert.getStaticStrides()) ||
        llvm::any_of(insert.getStaticStrides(), [](int64_t s) { return s <= 0; }))
      return std::nullopt;
    padded.source = insert.getSource();
    padded.padValue = fill.getInputs()[0];
    padded.offsets.assign(insert.getStaticOffsets().begin(), insert.getStaticOffsets().end());
    padded.strides.assign(insert.getStaticStrides().begin(), insert.getStaticStrides().end());
    padded.sizes.assign(insert.getStaticSizes().begin(), insert.getStaticSizes().end());
    if (ArrayRef<int64_t>(padded.sizes) != source.getShape())
      return std::nullopt;
    return padded;
  }
  return std::nullopt;
}

/// Whether `consumer` can compute `value`'s padded elements itself: one input
/// reads it, through a permutation of all the consumer's loops.
bool paddedFusable(Operation *consumerOp, Value value) {
  auto consumer = dyn_cast<linalg::GenericOp>(consumerOp);
  if (!consumer || consumer->getNumResults() != 1 ||
      !consumer.hasPureTensorSemantics() || !paddedTensor(value))
    return false;
  OpOperand *operand = uniqueInput(consumer, value);
  return operand && consumer.getMatchingIndexingMap(operand).isPermutation();
}

/// Replaces `consumer` by a generic without the input reading the padded
/// `value`: its body computes the element from the source. Returns the new op.
linalg::GenericOp fusePadded(IRRewriter &rewriter, linalg::GenericOp consumer, Value value) {
  Padded padded = *paddedTensor(value);
  OpOperand *operand = uniqueInput(consumer, value);
  AffineMap map = consumer.getMatchingIndexingMap(operand);
  unsigned position = operand->getOperandNumber();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : consumer.getDpsInputOperands()) {
    if (input == operand)
      continue;
    inputs.push_back(input->get());
    maps.push_back(consumer.getMatchingIndexingMap(input));
  }
  for (OpOperand &init : consumer.getDpsInitsMutable())
    maps.push_back(consumer.getMatchingIndexingMap(&init));
  rewriter.setInsertionPoint(consumer);
  auto fused = linalg::GenericOp::create(
      rewriter, consumer.getLoc(), consumer->getResultTypes(), inputs,
      consumer.getDpsInits(), maps, consumer.getIteratorTypesArray());
  fused->setDiscardableAttrs(consumer->getDiscardableAttrDictionary());
  rewriter.inlineRegionBefore(consumer.getRegion(), fused.getRegion(),
                              fused.getRegion().end());
  Block &body = fused.getRegion().front();
  BlockArgument element = body.getArgument(position);
  Location loc = consumer.getLoc();
  // Index constants go before the op (captured, free); a dimension the source
  // fills whole (offset 0, stride 1, full size) needs no test at all.
  auto resultShape = cast<RankedTensorType>(value.getType()).getShape();
  // One constant per value in the function: an earlier one in the block is reused (each is
  // a node of the graph, though one without bytes or cost).
  auto constant = [&](int64_t v) -> Value {
    for (Operation &op : *fused->getBlock()) {
      if (&op == fused.getOperation())
        break;
      if (auto c = dyn_cast<arith::ConstantIndexOp>(&op); c && c.value() == v)
        return c;
    }
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(fused);
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  Value zero = constant(0);
  rewriter.setInsertionPointToStart(&body);
  Value inside;
  SmallVector<Value> indices;
  for (unsigned d = 0; d < map.getNumResults(); ++d) {
    Value index = linalg::IndexOp::create(rewriter, loc, map.getDimPosition(d));
    if (padded.offsets[d] == 0 && padded.strides[d] == 1 && padded.sizes[d] == resultShape[d]) {
      indices.push_back(index);
      continue;
    }
    Value relative = arith::SubIOp::create(rewriter, loc, index, constant(padded.offsets[d]));
    Value within = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, relative, zero);
    Value source = relative;
    if (padded.strides[d] != 1) {
      source = arith::DivSIOp::create(rewriter, loc, relative, constant(padded.strides[d]));
      Value remainder = arith::RemSIOp::create(rewriter, loc, relative, constant(padded.strides[d]));
      within = arith::AndIOp::create(
          rewriter, loc, within, arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, remainder, zero));
    }
    within = arith::AndIOp::create(rewriter, loc, within,
                                   arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt, source,
                                                         constant(padded.sizes[d])));
    inside = inside ? arith::AndIOp::create(rewriter, loc, inside, within).getResult() : within;
    // Outside the window the element read is discarded, but the read must stay
    // in bounds: index 0 there.
    indices.push_back(arith::SelectOp::create(rewriter, loc, within, source, zero));
  }
  Value read = tensor::ExtractOp::create(rewriter, loc, padded.source, indices);
  Value padValue = padded.padValue;
  if (auto pad = value.getDefiningOp<tensor::PadOp>();
      pad && pad.getRegion().isAncestor(padValue.getParentRegion()))
    padValue = rewriter.clone(*padValue.getDefiningOp())->getResult(0);
  Value result = inside ? arith::SelectOp::create(rewriter, loc, inside, read, padValue).getResult() : read;
  rewriter.replaceAllUsesWith(element, result);
  body.eraseArgument(position);
  rewriter.replaceOp(consumer, fused->getResults());
  return fused;
}

bool fusable(Operation *consumerOp, Value value) {
  auto consumer = dyn_cast<linalg::GenericOp>(consumerOp);
  auto producer = value.getDefiningOp<linalg::GenericOp>();
  if (!consumer || !producer || producer->getNumResults() != 1 ||
      consumer->getNumResults() != 1 || !consumer.hasPureTensorSemantics() ||
      !producer.hasPureTensorSemantics())
    return false;
  OpOperand *operand = uniqueInput(consumer, value);
  if (!operand || !consumer.getMatchingIndexingMap(operand).isPermutation())
    return false;
  return linalg::areElementwiseOpsFusable(operand);
}
} // namespace

/// Whether `producerResult`'s generic can be fused into `consumer`.
extern "C" bool rematCanFuse(MlirOperation consumer, MlirValue producerResult) {
  return fusable(unwrap(consumer), unwrap(producerResult)) ||
         paddedFusable(unwrap(consumer), unwrap(producerResult));
}

/// Fuses the generic defining `producerResult` into `consumer` (cloning it
/// first when it has other users) and returns the fused op, which replaces
/// `consumer`; the producer is erased when nothing else uses it. Null when the
/// pair cannot be fused (nothing changed).
extern "C" MlirOperation rematFuse(MlirOperation consumerOp,
                                   MlirValue producerResult) {
  Operation *consumer = unwrap(consumerOp);
  Value value = unwrap(producerResult);
  if (paddedFusable(consumer, value)) {
    IRRewriter rewriter(consumer->getContext());
    Operation *producer = value.getDefiningOp();
    linalg::GenericOp fused = fusePadded(rewriter, cast<linalg::GenericOp>(consumer), value);
    // The padded tensor, and the fill it was inserted into, when nothing else reads them.
    if (producer->use_empty()) {
      auto insert = dyn_cast<tensor::InsertSliceOp>(producer);
      Operation *fill = insert ? insert.getDest().getDefiningOp() : nullptr;
      rewriter.eraseOp(producer);
      if (fill && fill->use_empty()) {
        Operation *empty = cast<linalg::FillOp>(fill).getOutputs()[0].getDefiningOp();
        rewriter.eraseOp(fill);
        if (empty && empty->use_empty() && isa<tensor::EmptyOp>(empty))
          rewriter.eraseOp(empty);
      }
    }
    return wrap(fused.getOperation());
  }
  if (!fusable(consumer, value))
    return MlirOperation{nullptr};
  IRRewriter rewriter(consumer->getContext());
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
  OpOperand *operand = uniqueInput(cast<linalg::GenericOp>(consumer), value);
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
  return wrap(fused->fusedOp);
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

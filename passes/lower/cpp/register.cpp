//===- register.cpp - Register the Rust lowering passes with MLIR -*- C++ -*-===//
//
// The MLIR C API cannot put a pass in the global registry, which is what a
// textual pipeline such as
//   builtin.module(remat-lower-stablehlo, one-shot-bufferize, ...,
//                  func.func(remat-place-deallocs), ...)
// looks names up in. Each pass here is declared once, the MLIR way, and
// forwards runOnOperation to a Rust callback.
//
//===----------------------------------------------------------------------===//

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

extern "C" {
/// Runs a pass on `op`; returns false on failure (after emitting a diagnostic).
typedef bool (*RematLowerCallback)(MlirOperation op);
}

namespace {
RematLowerCallback placeDeallocsCallback = nullptr;
RematLowerCallback lowerStablehloCallback = nullptr;
RematLowerCallback hostBuffersCallback = nullptr;

struct PlaceDeallocsPass
    : public mlir::PassWrapper<PlaceDeallocsPass, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PlaceDeallocsPass)

  llvm::StringRef getArgument() const final { return "remat-place-deallocs"; }
  llvm::StringRef getDescription() const final {
    return "Move every memref.dealloc to right after the last use of its "
           "buffer and of the buffer's aliases (views, casts)";
  }
  void runOnOperation() override {
    if (!placeDeallocsCallback || !placeDeallocsCallback(wrap(getOperation())))
      signalPassFailure();
  }
};

struct LowerStablehloPass
    : public mlir::PassWrapper<LowerStablehloPass, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerStablehloPass)

  llvm::StringRef getArgument() const final { return "remat-lower-stablehlo"; }
  llvm::StringRef getDescription() const final {
    return "Lower the StableHLO ops that stablehlo-legalize-to-linalg leaves "
           "(scatter, while, optimization_barrier) to upstream dialects";
  }
  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::func::FuncDialect,
                    mlir::scf::SCFDialect, mlir::tensor::TensorDialect>();
  }
  void runOnOperation() override {
    if (!lowerStablehloCallback ||
        !lowerStablehloCallback(wrap(getOperation())))
      signalPassFailure();
  }
};

struct HostBuffersPass
    : public mlir::PassWrapper<HostBuffersPass,
                               mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(HostBuffersPass)

  llvm::StringRef getArgument() const final { return "remat-host-buffers"; }
  llvm::StringRef getDescription() const final {
    return "Make buffers in memory space 1 (host copies) counted host "
           "allocations on the CPU: mark each allocation with a call to "
           "remat_host_alloc_next and drop the memory space";
  }
  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::func::FuncDialect>();
  }
  void runOnOperation() override {
    if (!hostBuffersCallback || !hostBuffersCallback(wrap(getOperation().getOperation())))
      signalPassFailure();
  }
};
} // namespace

extern "C" void rematRegisterLoweringPasses(RematLowerCallback placeDeallocs,
                                            RematLowerCallback lowerStablehlo,
                                            RematLowerCallback hostBuffers) {
  placeDeallocsCallback = placeDeallocs;
  lowerStablehloCallback = lowerStablehlo;
  hostBuffersCallback = hostBuffers;
  static bool registered = [] {
    mlir::PassRegistration<PlaceDeallocsPass>();
    mlir::PassRegistration<LowerStablehloPass>();
    mlir::PassRegistration<HostBuffersPass>();
    return true;
  }();
  (void)registered;
}

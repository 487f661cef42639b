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
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
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
RematLowerCallback legalizeStablehloCallback = nullptr;
RematLowerCallback hostBuffersCallback = nullptr;
RematLowerCallback gpuParallelizeCallback = nullptr;
RematLowerCallback gpuCheckHostCallback = nullptr;
RematLowerCallback gpuLaunchStackCallback = nullptr;

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
    return "Lower StableHLO to upstream dialects: legalize what has a linalg "
           "form (as remat-legalize-stablehlo), then scatter, while and "
           "optimization_barrier";
  }
  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::func::FuncDialect,
                    mlir::linalg::LinalgDialect, mlir::math::MathDialect,
                    mlir::scf::SCFDialect, mlir::tensor::TensorDialect>();
  }
  void runOnOperation() override {
    if (!lowerStablehloCallback ||
        !lowerStablehloCallback(wrap(getOperation())))
      signalPassFailure();
  }
};

struct LegalizeStablehloPass
    : public mlir::PassWrapper<LegalizeStablehloPass, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LegalizeStablehloPass)

  llvm::StringRef getArgument() const final {
    return "remat-legalize-stablehlo";
  }
  llvm::StringRef getDescription() const final {
    return "Legalize StableHLO ops to linalg, tensor, arith and math on "
           "tensors as jaxlib's stablehlo-legalize-to-linalg does (while, "
           "scatter and optimization_barrier stay), before the remat pass";
  }
  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::linalg::LinalgDialect,
                    mlir::math::MathDialect, mlir::tensor::TensorDialect>();
  }
  void runOnOperation() override {
    if (!legalizeStablehloCallback ||
        !legalizeStablehloCallback(wrap(getOperation())))
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

struct GpuParallelizePass
    : public mlir::PassWrapper<GpuParallelizePass,
                               mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuParallelizePass)

  llvm::StringRef getArgument() const final { return "remat-gpu-parallelize"; }
  llvm::StringRef getDescription() const final {
    return "Make every memory access a parallel loop for the GPU mapping: "
           "memref.copy becomes a load/store loop nest, a sequential loop at "
           "the top of a function a one-iteration scf.parallel, and a scalar "
           "the host reads is staged through a pinned host buffer";
  }
  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::func::FuncDialect,
                    mlir::memref::MemRefDialect, mlir::scf::SCFDialect>();
  }
  void runOnOperation() override {
    if (!gpuParallelizeCallback ||
        !gpuParallelizeCallback(wrap(getOperation().getOperation())))
      signalPassFailure();
  }
};

struct GpuCheckHostPass
    : public mlir::PassWrapper<GpuCheckHostPass,
                               mlir::OperationPass<mlir::func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuCheckHostPass)

  llvm::StringRef getArgument() const final { return "remat-gpu-check-host"; }
  llvm::StringRef getDescription() const final {
    return "Clone the constants each gpu.launch reads into its body (so "
           "outlining puts them in device memory) and reject host code that "
           "would touch device memory";
  }
  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::memref::MemRefDialect>();
  }
  void runOnOperation() override {
    if (!gpuCheckHostCallback ||
        !gpuCheckHostCallback(wrap(getOperation().getOperation())))
      signalPassFailure();
  }
};

struct GpuLaunchStackPass
    : public mlir::PassWrapper<GpuLaunchStackPass,
                               mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuLaunchStackPass)

  llvm::StringRef getArgument() const final { return "remat-gpu-launch-stack"; }
  llvm::StringRef getDescription() const final {
    return "Bracket every gpu.launch_func outside a function's entry block "
           "with llvm.intr.stacksave/stackrestore, so the argument arrays its "
           "translation allocates on the stack are freed after each launch "
           "instead of piling up in host loops";
  }
  void runOnOperation() override {
    if (!gpuLaunchStackCallback ||
        !gpuLaunchStackCallback(wrap(getOperation().getOperation())))
      signalPassFailure();
  }
};
} // namespace

extern "C" void rematRegisterLoweringPasses(RematLowerCallback placeDeallocs,
                                            RematLowerCallback lowerStablehlo,
                                            RematLowerCallback legalizeStablehlo,
                                            RematLowerCallback hostBuffers,
                                            RematLowerCallback gpuParallelize,
                                            RematLowerCallback gpuCheckHost,
                                            RematLowerCallback gpuLaunchStack) {
  placeDeallocsCallback = placeDeallocs;
  lowerStablehloCallback = lowerStablehlo;
  legalizeStablehloCallback = legalizeStablehlo;
  hostBuffersCallback = hostBuffers;
  gpuParallelizeCallback = gpuParallelize;
  gpuCheckHostCallback = gpuCheckHost;
  gpuLaunchStackCallback = gpuLaunchStack;
  static bool registered = [] {
    mlir::PassRegistration<PlaceDeallocsPass>();
    mlir::PassRegistration<LowerStablehloPass>();
    mlir::PassRegistration<LegalizeStablehloPass>();
    mlir::PassRegistration<HostBuffersPass>();
    mlir::PassRegistration<GpuParallelizePass>();
    mlir::PassRegistration<GpuCheckHostPass>();
    mlir::PassRegistration<GpuLaunchStackPass>();
    return true;
  }();
  (void)registered;
}

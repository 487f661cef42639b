//===- register.cpp - Register the Rust remat pass with MLIR ----*- C++ -*-===//
//
// The MLIR C API can create a pass object but cannot put a pass in the global
// registry, which is what a textual pipeline such as
//   builtin.module(func.func(remat{strategy=greedy budget=60%}))
// looks names up in. This shim declares the pass and its options once, the
// MLIR way, and forwards runOnOperation to a Rust callback.
//
//===----------------------------------------------------------------------===//

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <string>

extern "C" {
/// Runs the pass on `op` with the options as strings; returns false on failure
/// (after emitting a diagnostic on `op`).
typedef bool (*RematRunCallback)(MlirOperation op, MlirStringRef strategy,
                                 MlirStringRef budget, MlirStringRef function,
                                 MlirStringRef costModel,
                                 MlirStringRef unrollLimit);
}

namespace {
RematRunCallback rematCallback = nullptr;

struct RematPass : public mlir::PassWrapper<RematPass, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RematPass)

  RematPass() = default;
  RematPass(const RematPass &other) : PassWrapper(other) {}

  llvm::StringRef getArgument() const final { return "remat"; }
  llvm::StringRef getDescription() const final {
    return "Plan which activations to keep or recompute and rewrite the "
           "function to the planned schedule (clones marked remat.recompute)";
  }

  Option<std::string> strategy{
      *this, "strategy",
      llvm::cl::desc("Rematerialization strategy (none, greedy, ...)"),
      llvm::cl::init("greedy")};
  Option<std::string> budget{
      *this, "budget",
      llvm::cl::desc("Peak memory budget: bytes, KiB/MiB/GiB, or N% of the "
                     "input order's peak; empty for the least memory"),
      llvm::cl::init("")};
  Option<std::string> function{
      *this, "function",
      llvm::cl::desc("When run on a module: the function to plan"),
      llvm::cl::init("")};
  Option<std::string> costModel{
      *this, "cost-model",
      llvm::cl::desc("Cost model: estimate or unit"),
      llvm::cl::init("estimate")};
  Option<std::string> unrollLimit{
      *this, "unroll-limit",
      llvm::cl::desc("Unroll stablehlo.while loops with a static trip count up "
                     "to this before planning (0: none; empty: the default)"),
      llvm::cl::init("")};

  void runOnOperation() override {
    auto ref = [](const std::string &s) {
      return MlirStringRef{s.data(), s.size()};
    };
    if (!rematCallback ||
        !rematCallback(wrap(getOperation()), ref(strategy), ref(budget),
                       ref(function), ref(costModel),
                       ref(unrollLimit)))
      signalPassFailure();
  }
};
} // namespace

extern "C" void rematRegisterPass(RematRunCallback callback) {
  rematCallback = callback;
  static bool registered = [] {
    mlir::PassRegistration<RematPass>();
    return true;
  }();
  (void)registered;
}

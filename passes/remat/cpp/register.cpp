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
/// Runs the pass on `op` with its options as (name, value) strings; returns
/// false on failure (after emitting a diagnostic on `op`). Rust parses them.
typedef bool (*RematRunCallback)(MlirOperation op, const MlirStringRef *names,
                                 const MlirStringRef *values, intptr_t count);
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
  Option<std::string> twStop{
      *this, "tw-stop",
      llvm::cl::desc("TWRemat(k): stop the recursion below k bags (empty: "
                     "choose k)"),
      llvm::cl::init("")};
  Option<std::string> tdHeuristic{
      *this, "td-heuristic",
      llvm::cl::desc("Tree decomposition heuristic: min-fill or min-degree "
                     "(empty: try both)"),
      llvm::cl::init("")};
  Option<std::string> pwStop{
      *this, "pw-stop",
      llvm::cl::desc("PWRemat(k): stop the recursion below k bags (empty: "
                     "choose k)"),
      llvm::cl::init("")};
  Option<std::string> polish{
      *this, "polish",
      llvm::cl::desc("Polish the plan: drop recomputations the target does "
                     "not need (true or false)"),
      llvm::cl::init("true")};
  Option<std::string> ilpOrder{
      *this, "ilp-order",
      llvm::cl::desc("ILP stages: fixed (Checkmate's, in the input order) or "
                     "free (order-free); empty: by graph size"),
      llvm::cl::init("")};
  Option<std::string> ilpStages{
      *this, "ilp-stages",
      llvm::cl::desc("Stages of the order-free ILP (empty: enough for the "
                     "input order and the warm start)"),
      llvm::cl::init("")};
  Option<std::string> ilpMethod{
      *this, "ilp-method",
      llvm::cl::desc("ILP solve: milp or lp-rounding (empty: by graph size)"),
      llvm::cl::init("")};
  Option<std::string> ilpTimeLimit{
      *this, "ilp-time-limit",
      llvm::cl::desc("ILP solver wall-clock limit in seconds (empty: the "
                     "default)"),
      llvm::cl::init("")};
  Option<std::string> ilpGap{
      *this, "ilp-gap",
      llvm::cl::desc("Relative MIP gap at which the ILP solver stops (empty: "
                     "the default)"),
      llvm::cl::init("")};
  Option<std::string> ilpWarmStart{
      *this, "ilp-warm-start",
      llvm::cl::desc("Seed the ILP solver with the best heuristic plan (true "
                     "or false; empty: true)"),
      llvm::cl::init("")};
  Option<std::string> ilpSeed{
      *this, "ilp-seed",
      llvm::cl::desc("Seed of the ILP's randomized rounding (empty: 0)"),
      llvm::cl::init("")};
  Option<std::string> autoTimeLimit{
      *this, "auto-time-limit",
      llvm::cl::desc("Wall-clock seconds strategy=auto spends over all "
                     "strategies (empty: the default)"),
      llvm::cl::init("")};
  Option<std::string> dtrHeuristic{
      *this, "dtr-heuristic",
      llvm::cl::desc("DTR's eviction heuristic: dtr, dtr-eq, dtr-local, lru, "
                     "size, msps, random or estar (empty: dtr-eq)"),
      llvm::cl::init("")};
  Option<std::string> dtrDealloc{
      *this, "dtr-dealloc",
      llvm::cl::desc("DTR on deallocation: eager, banish or ignore (empty: "
                     "eager)"),
      llvm::cl::init("")};
  Option<std::string> dtrSeed{
      *this, "dtr-seed",
      llvm::cl::desc("Seed of DTR's random heuristic (empty: 0)"),
      llvm::cl::init("")};
  Option<std::string> bandwidth{
      *this, "bandwidth",
      llvm::cl::desc("Host link bandwidth in GB/s for strategy=chain's "
                     "offloading plan (empty: none)"),
      llvm::cl::init("")};
  Option<std::string> computeRate{
      *this, "compute-rate",
      llvm::cl::desc("Cost units per second, for bandwidth (empty: 1e13)"),
      llvm::cl::init("")};
  Option<std::string> memSlots{
      *this, "mem-slots",
      llvm::cl::desc("Memory discretization of the chain DP (empty: exact "
                     "when small, else 50)"),
      llvm::cl::init("")};

  void runOnOperation() override {
    auto ref = [](const std::string &s) {
      return MlirStringRef{s.data(), s.size()};
    };
    // Option names point into static storage.
    auto name = [](llvm::StringRef s) { return MlirStringRef{s.data(), s.size()}; };
    const MlirStringRef names[] = {
        name(strategy.getArgStr()),     name(budget.getArgStr()),
        name(function.getArgStr()),     name(costModel.getArgStr()),
        name(unrollLimit.getArgStr()),  name(twStop.getArgStr()),
        name(tdHeuristic.getArgStr()),  name(pwStop.getArgStr()),
        name(polish.getArgStr()),       name(ilpOrder.getArgStr()),
        name(ilpStages.getArgStr()),    name(ilpMethod.getArgStr()),
        name(ilpTimeLimit.getArgStr()), name(ilpGap.getArgStr()),
        name(ilpWarmStart.getArgStr()), name(ilpSeed.getArgStr()),
        name(autoTimeLimit.getArgStr()), name(dtrHeuristic.getArgStr()),
        name(dtrDealloc.getArgStr()),   name(dtrSeed.getArgStr()),
        name(bandwidth.getArgStr()),    name(computeRate.getArgStr()),
        name(memSlots.getArgStr())};
    const MlirStringRef values[] = {
        ref(strategy),     ref(budget),       ref(function),
        ref(costModel),    ref(unrollLimit),  ref(twStop),
        ref(tdHeuristic),  ref(pwStop),       ref(polish),
        ref(ilpOrder),     ref(ilpStages),    ref(ilpMethod),
        ref(ilpTimeLimit), ref(ilpGap),       ref(ilpWarmStart),
        ref(ilpSeed),      ref(autoTimeLimit), ref(dtrHeuristic),
        ref(dtrDealloc),   ref(dtrSeed),      ref(bandwidth),
        ref(computeRate),  ref(memSlots)};
    static_assert(std::size(names) == std::size(values));
    if (!rematCallback ||
        !rematCallback(wrap(getOperation()), names, values, std::size(names)))
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

//===- register.cpp - Register the Rust remat pass with MLIR ----*- C++ -*-===//
//
// The MLIR C API can create a pass object but cannot put a pass in the global
// registry, which is what a textual pipeline such as
//   builtin.module(func.func(remat{strategy=greedy budget=60%}))
// looks names up in. This shim declares the pass and its options once, the
// MLIR way, and forwards runOnOperation and the check of option values to
// Rust callbacks. It also makes configured passes for the C API (crates/capi):
// options parsed here are the same whichever way the pass is reached.
//
//===----------------------------------------------------------------------===//

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Support.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <memory>
#include <string>

extern "C" {
/// Runs the pass on `op` with its options as (name, value) strings; returns
/// false on failure (after emitting a diagnostic on `op`). Rust parses them.
typedef bool (*RematRunCallback)(MlirOperation op, const MlirStringRef *names,
                                 const MlirStringRef *values, intptr_t count);
/// Checks the options' values; on a bad one returns false after passing the
/// message to `error`.
typedef bool (*RematCheckCallback)(const MlirStringRef *names,
                                   const MlirStringRef *values, intptr_t count,
                                   MlirStringCallback error, void *userData);
}

namespace {
struct {
  RematRunCallback run = nullptr;
  RematCheckCallback check = nullptr;
} callbacks;

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

  /// Calls `use(names, values, count)` with every option as a string: the one
  /// place the option list is spelled out for Rust, which parses the values.
  template <typename Use> bool withOptions(Use &&use) {
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
    return use(names, values, static_cast<intptr_t>(std::size(names)));
  }

  /// Parses the options as every pass does, then has Rust check their values,
  /// so `remat{strategy=magic}` fails when the pipeline is parsed, not when
  /// it runs.
  mlir::LogicalResult initializeOptions(
      llvm::StringRef options,
      llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)> errorHandler)
      override {
    if (mlir::failed(Pass::initializeOptions(options, errorHandler)))
      return mlir::failure();
    if (!callbacks.check)
      return mlir::success();
    std::string message;
    auto append = [](MlirStringRef part, void *data) {
      static_cast<std::string *>(data)->append(part.data, part.length);
    };
    bool valid = withOptions([&](const MlirStringRef *names,
                                 const MlirStringRef *values, intptr_t count) {
      return callbacks.check(names, values, count, append, &message);
    });
    return valid ? mlir::success() : errorHandler(message);
  }

  void runOnOperation() override {
    bool succeeded = callbacks.run && withOptions([&](const MlirStringRef *names,
                                                      const MlirStringRef *values,
                                                      intptr_t count) {
      return callbacks.run(wrap(getOperation()), names, values, count);
    });
    if (!succeeded)
      signalPassFailure();
  }
};
} // namespace

extern "C" void rematSetPassCallbacks(RematRunCallback run,
                                      RematCheckCallback check) {
  callbacks.run = run;
  callbacks.check = check;
}

extern "C" void rematRegisterPass() {
  static bool registered = [] {
    mlir::PassRegistration<RematPass>();
    return true;
  }();
  (void)registered;
}

/// An option-parsing error handler that passes the message to `error`.
static auto reportTo(MlirStringCallback error, void *userData) {
  return [=](const llvm::Twine &message) {
    std::string text = message.str();
    if (error)
      error(MlirStringRef{text.data(), text.size()}, userData);
    return mlir::failure();
  };
}

/// A `remat` pass configured by `options` (the pipeline syntax, without
/// braces), or null after passing the reason to `error`.
extern "C" MlirPass rematCreatePassFromOptions(MlirStringRef options,
                                               MlirStringCallback error,
                                               void *userData) {
  auto pass = std::make_unique<RematPass>();
  auto report = reportTo(error, userData);
  if (mlir::failed(pass->initializeOptions(unwrap(options), report)))
    return MlirPass{nullptr};
  return wrap(static_cast<mlir::Pass *>(pass.release()));
}

/// Parses `options` like rematCreatePassFromOptions and hands the values to
/// `use` instead of making a pass (rematPlan in the C API).
extern "C" bool rematWithParsedOptions(
    MlirStringRef options, MlirStringCallback error, void *errorData,
    bool (*use)(const MlirStringRef *names, const MlirStringRef *values,
                intptr_t count, void *useData),
    void *useData) {
  RematPass pass;
  auto report = reportTo(error, errorData);
  if (mlir::failed(pass.initializeOptions(unwrap(options), report)))
    return false;
  return pass.withOptions([&](const MlirStringRef *names,
                              const MlirStringRef *values, intptr_t count) {
    return use(names, values, count, useData);
  });
}

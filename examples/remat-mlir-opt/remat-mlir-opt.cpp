//===- remat-mlir-opt.cpp - mlir-opt with the remat passes ------*- C++ -*-===//
//
// An MLIR 22 compiler driver in C++ that adds remat to MLIR's own passes:
// everything mlir-opt registers, plus the passes of libremat (the C API in
// remat-c/Remat.h). For example
//
//   remat-mlir-opt step.mlir --allow-unregistered-dialect
//     --pass-pipeline='builtin.module(func.func(remat{strategy=treewidth}))'
//
// (one command) rewrites the training step to the treewidth plan, byte for
// byte as `remat-opt step.mlir --pass-pipeline=...` does. The unregistered
// dialect is StableHLO, whose ops some linalg exports keep (scatter).
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "remat-c/Remat.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  // The remat passes go into the same registry, next to the upstream ones.
  rematRegisterPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "MLIR modular optimizer driver with the remat passes\n",
      registry));
}

// --legalize-stablehlo (and --lower, which implies it): an op the legalization cannot lower is
// an error at the op, exit 1, no output.
// RUN: not remat-opt %s --legalize-stablehlo -o %t.out 2>&1 | FileCheck %s
// RUN: not test -e %t.out
// RUN: not remat-opt %s --lower=cpu -o %t.out 2>&1 | FileCheck %s
// RUN: not test -e %t.out
// By default (no --legalize-stablehlo), the step is planned as StableHLO, with the reason as a
// warning.
// RUN: remat-opt %s -o %t.kept 2>&1 | FileCheck %s --check-prefix=WARN
// RUN: FileCheck %s --check-prefix=KEPT < %t.kept
// WARN: legalize.mlir:[[@LINE+6]]:8: warning: 'stablehlo.exponential' on i32 is not supported by the legalization
// WARN: warning: StableHLO is planned as it is (buffers of StableHLO ops, not of the program that runs); --legalize-stablehlo makes this an error
// KEPT: "stablehlo.exponential"

// CHECK: legalize.mlir:[[@LINE+2]]:8: error: 'stablehlo.exponential' on i32 is not supported by the legalization
func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
  %r = "stablehlo.exponential"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %r : tensor<4xi32>
}

// --legalize-stablehlo (and --lower, which implies it): an op the legalization cannot lower is
// an error at the op, exit 1, no output.
// RUN: not remat-opt %s --legalize-stablehlo -o %t.out 2>&1 | FileCheck %s
// RUN: not test -e %t.out
// RUN: not remat-opt %s --lower=cpu -o %t.out 2>&1 | FileCheck %s
// RUN: not test -e %t.out

// CHECK: legalize.mlir:[[@LINE+2]]:8: error: 'stablehlo.exponential' on i32 is not supported by the legalization
func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
  %r = "stablehlo.exponential"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %r : tensor<4xi32>
}

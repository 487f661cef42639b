// A module must have a function to plan; --function must name one.
// RUN: not remat-opt %s --split-input-file 2>&1 | FileCheck %s
// RUN: not remat-opt %s --split-input-file --function=missing 2>&1 | FileCheck %s --check-prefix=NAMED

// CHECK: no-function.mlir: error: the module has no public function with a body to plan
// NAMED: no-function.mlir: error: no function named 'missing' in the module
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// CHECK: no-function.mlir: error: several public functions (first, second); choose one with --function=NAME
func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @second(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

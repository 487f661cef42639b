// Dynamic shapes cannot be sized: the diagnostic names the op and its location.
// RUN: not remat-opt %s --split-input-file --remat=greedy 2>&1 | FileCheck %s

// CHECK: dynamic-shape.mlir:[[@LINE+1]]:1: error: argument #0 has a dynamic shape (tensor<?xf32>)
func.func @dynamic_argument(%x: tensor<?xf32>) -> tensor<?xf32> {
  %a = math.exp %x : tensor<?xf32>
  return %a : tensor<?xf32>
}

// -----

func.func @dynamic_result(%x: tensor<4xf32>) -> tensor<?xf32> {
  // CHECK: dynamic-shape.mlir:[[@LINE+1]]:8: error: result #0 of 'tensor.cast' has a dynamic shape
  %a = tensor.cast %x : tensor<4xf32> to tensor<?xf32>
  %b = math.exp %a : tensor<?xf32>
  return %b : tensor<?xf32>
}

// --remat=none keeps the input order and recomputes nothing; a destination-passing op moves
// together with its init ops, and a cse'd (shared) tensor.empty is untied so that it can.
// RUN: remat-opt %s --remat=none | FileCheck %s
// RUN: remat-opt %s --remat=none | mlir-opt > /dev/null
// As mlir-opt does, `-o -` is stdout; `-o /dev/null` discards the output and leaves the
// device as it was (a file renamed over it once replaced it).
// RUN: remat-opt %s --remat=none -o - | FileCheck %s
// RUN: remat-opt %s --remat=none -o /dev/null && test -c /dev/null

// CHECK-LABEL: func.func @matmuls
// CHECK-NOT:     remat.recompute
// CHECK:         %[[E1:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK:         %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4x4xf32>)
// CHECK:         %[[M1:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32>) outs(%[[F1]] : tensor<4x4xf32>)
// CHECK:         %[[E2:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK:         %[[F2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<4x4xf32>)
// CHECK:         %[[M2:.*]] = linalg.matmul ins(%[[M1]], %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32>) outs(%[[F2]] : tensor<4x4xf32>)
// CHECK:         return %[[M2]]
func.func @matmuls(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m1 = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%init : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m2 = linalg.matmul ins(%m1, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%init : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m2 : tensor<4x4xf32>
}

// The scatter lowering computes what StableHLO's scatter means: rows 1 and 3 of a 4x3 zero
// operand receive update rows 0 and 2 (added, both at row 1) and row 1 (at row 3); index 7 is
// out of bounds and its update is skipped.
//
// RUN: remat-run %s --save-io=%t
// RUN: python3 %S/Inputs/print_npy.py %t/result0.npy | FileCheck %s
// CHECK:      shape (4, 3)
// CHECK-NEXT: 0 0 0
// CHECK-NEXT: 8 10 12
// CHECK-NEXT: 0 0 0
// CHECK-NEXT: 4 5 6

func.func @main() -> tensor<4x3xf32> {
  %operand = arith.constant dense<0.0> : tensor<4x3xf32>
  %indices = arith.constant dense<[[1], [3], [1], [7]]> : tensor<4x1xi32>
  %updates = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [100.0, 100.0, 100.0]]> : tensor<4x3xf32>
  %e = tensor.empty() : tensor<f32>
  %r = "stablehlo.scatter"(%operand, %indices, %updates) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
        ins(%a, %b : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %z = arith.addf %x, %y : f32
      linalg.yield %z : f32
    } -> tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }) : (tensor<4x3xf32>, tensor<4x1xi32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// optax's softmax_cross_entropy_with_integer_labels in the linalg form jaxlib writes (the
// scatter left over in StableHLO): the gradient's scatter into the 2x3x1 operand at index 0 of
// its last dimension, `index_vector_dim` left out as StableHLO prints its default 0. Every
// update lands (index 0 is in bounds); an index of 1 would be past the end.
//
// RUN: remat-run %s --save-io=%t
// RUN: python3 %S/Inputs/print_npy.py %t/result0.npy | FileCheck %s
// CHECK:      shape (2, 3, 1)
// CHECK-NEXT: 1
// CHECK-NEXT: 2
// CHECK-NEXT: 3
// CHECK-NEXT: 4
// CHECK-NEXT: 5
// CHECK-NEXT: 6

func.func @main() -> tensor<2x3x1xf32> {
  %zeros = arith.constant dense<0.0> : tensor<2x3x1xf32>
  %label = arith.constant dense<[0]> : tensor<1xi32>
  %g = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %e = tensor.empty() : tensor<f32>
  %r = "stablehlo.scatter"(%zeros, %label, %g) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2]>, unique_indices = false}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
        ins(%a, %b : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %z = arith.addf %x, %y : f32
      linalg.yield %z : f32
    } -> tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }) : (tensor<2x3x1xf32>, tensor<1xi32>, tensor<2x3xf32>) -> tensor<2x3x1xf32>
  return %r : tensor<2x3x1xf32>
}

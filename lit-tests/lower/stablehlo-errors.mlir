// RUN: not remat-opt %s --split-input-file --pass-pipeline='builtin.module(remat-lower-stablehlo)' 2>&1 | FileCheck %s

// Other StableHLO ops are not lowered: the error names the op and its location.
// CHECK: stablehlo-errors.mlir:[[@LINE+2]]:{{[0-9]+}}: error: 'stablehlo.cholesky' is not supported by the CPU lowering
func.func @cholesky(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = "stablehlo.cholesky"(%a) <{lower = true}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

// A scatter with several inputs is not supported.
// CHECK: stablehlo-errors.mlir:[[@LINE+2]]:{{[0-9]+}}: error: stablehlo.scatter with several inputs is not supported by the CPU lowering
func.func @two_inputs(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<1x1xi32>, %u: tensor<1xf32>) -> tensor<4xf32> {
  %r:2 = "stablehlo.scatter"(%a, %b, %i, %u, %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>, %z: tensor<f32>, %w: tensor<f32>):
    "stablehlo.return"(%x, %y) : (tensor<f32>, tensor<f32>) -> ()
  }) : (tensor<4xf32>, tensor<4xf32>, tensor<1x1xi32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %r#0 : tensor<4xf32>
}

// -----

// A reduce body with an op it has no scalar form for says so at that op.
func.func @reduce_body(%a: tensor<4xi32>, %z: tensor<i32>) -> tensor<i32> {
  %r = "stablehlo.reduce"(%a, %z) <{dimensions = array<i64: 0>}> ({
  ^bb0(%x: tensor<i32>, %y: tensor<i32>):
    %c = "stablehlo.constant"() <{value = dense<2> : tensor<i32>}> : () -> tensor<i32>
    %s = "stablehlo.add"(%x, %y) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    // CHECK: stablehlo-errors.mlir:[[@LINE+1]]:{{[0-9]+}}: error: 'stablehlo.power' on i32 is not supported by the legalization
    %t = "stablehlo.power"(%s, %c) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    "stablehlo.return"(%t) : (tensor<i32>) -> ()
  }) : (tensor<4xi32>, tensor<i32>) -> tensor<i32>
  return %r : tensor<i32>
}

// -----

// An op on element types it has no decomposition for says which.
// CHECK: stablehlo-errors.mlir:[[@LINE+2]]:{{[0-9]+}}: error: 'stablehlo.exponential' on i32 is not supported by the legalization
func.func @int_exp(%a: tensor<4xi32>) -> tensor<4xi32> {
  %r = "stablehlo.exponential"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %r : tensor<4xi32>
}

// -----

// A known op on a type it has no decomposition for (abs of an unsigned integer) says so, not
// that the op is unknown.
// CHECK: stablehlo-errors.mlir:[[@LINE+2]]:{{[0-9]+}}: error: 'stablehlo.abs' on ui32 is not supported by the legalization
func.func @unsigned_abs(%a: tensor<4xui32>) -> tensor<4xui32> {
  %r = "stablehlo.abs"(%a) : (tensor<4xui32>) -> tensor<4xui32>
  return %r : tensor<4xui32>
}

// -----

// A CHLO op without a legalization (erf_inv) is an error naming it, not a failure later on.
// CHECK: stablehlo-errors.mlir:[[@LINE+2]]:{{[0-9]+}}: error: 'chlo.erf_inv' is not supported by the CPU lowering (supported: chlo.square, chlo.erf
func.func @erf_inv(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = "chlo.erf_inv"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

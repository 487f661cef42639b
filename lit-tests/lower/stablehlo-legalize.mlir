// RUN: remat-opt %s --pass-pipeline='builtin.module(remat-lower-stablehlo)' | FileCheck %s

// StableHLO ops become linalg, tensor, arith and math on tensors, decomposed as jaxlib's
// stablehlo-legalize-to-linalg decomposes them (passes/lower/src/stablehlo/legalize.rs).

// The affine maps are printed first (the module's aliases).
// CHECK-DAG: #[[EXPAND:.+]] = affine_map<(d0, d1, d2) -> (0, d2)>
// CHECK-DAG: #[[SCALAR:.+]] = affine_map<(d0, d1, d2) -> ()>
// CHECK-DAG: #[[LHS:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[RHS:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>

// Elementwise ops: one all-parallel linalg.generic with the scalar op in its body.
// CHECK-LABEL: func.func @elementwise
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}} ins(%arg0, %arg1 : tensor<2x3xf32>, tensor<2x3xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.maximumf
// CHECK: linalg.generic
// CHECK: math.rsqrt
// CHECK: linalg.generic
// CHECK: arith.subi
// CHECK-NOT: stablehlo.
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %i: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %0 = "stablehlo.add"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "stablehlo.maximum"(%0, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = "stablehlo.rsqrt"(%1) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = "stablehlo.negate"(%i) : (tensor<2x3xi32>) -> tensor<2x3xi32>
  return %2, %3 : tensor<2x3xf32>, tensor<2x3xi32>
}

// compare (the direction and type from the attributes), select, convert.
// CHECK-LABEL: func.func @compare_select_convert
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: arith.uitofp {{.*}} : i1 to f32
// CHECK: arith.cmpi slt
func.func @compare_select_convert(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<4xi32>, %j: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi1>) {
  %p = "stablehlo.compare"(%a, %b) <{compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %s = "stablehlo.select"(%p, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = "stablehlo.convert"(%p) : (tensor<4xi1>) -> tensor<4xf32>
  %q = "stablehlo.compare"(%i, %j) <{comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  return %s, %c, %q : tensor<4xf32>, tensor<4xf32>, tensor<4xi1>
}

// constant and broadcast_in_dim: a size-1 operand dimension of a larger result dimension is
// read at 0; a 0-d operand everywhere.
// CHECK-LABEL: func.func @broadcast
// CHECK: linalg.generic {indexing_maps = [#[[EXPAND]], #{{.+}}]
// CHECK: %[[C:.+]] = arith.constant dense<2.000000e+00> : tensor<f32>
// CHECK: linalg.generic {indexing_maps = [#[[SCALAR]], #{{.+}}]{{.*}} ins(%[[C]] : tensor<f32>)
func.func @broadcast(%a: tensor<1x3xf32>) -> (tensor<2x4x3xf32>, tensor<2x4x3xf32>) {
  %0 = "stablehlo.broadcast_in_dim"(%a) <{broadcast_dimensions = array<i64: 1, 2>}> : (tensor<1x3xf32>) -> tensor<2x4x3xf32>
  %c = "stablehlo.constant"() <{value = dense<2.0> : tensor<f32>}> : () -> tensor<f32>
  %1 = "stablehlo.broadcast_in_dim"(%c) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<2x4x3xf32>
  return %0, %1 : tensor<2x4x3xf32>, tensor<2x4x3xf32>
}

// reshape: collapse to one dimension, expand to the result; transpose.
// CHECK-LABEL: func.func @reshape_transpose
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1]] : tensor<2x6xf32> into tensor<12xf32>
// CHECK: tensor.expand_shape %{{.+}} {{\[\[}}0, 1, 2]] output_shape [3, 2, 2] : tensor<12xf32> into tensor<3x2x2xf32>
// CHECK: linalg.transpose ins(%arg0 : tensor<2x6xf32>) outs(%{{.+}} : tensor<6x2xf32>) permutation = [1, 0]
func.func @reshape_transpose(%a: tensor<2x6xf32>) -> (tensor<3x2x2xf32>, tensor<6x2xf32>) {
  %0 = "stablehlo.reshape"(%a) : (tensor<2x6xf32>) -> tensor<3x2x2xf32>
  %1 = "stablehlo.transpose"(%a) <{permutation = array<i64: 1, 0>}> : (tensor<2x6xf32>) -> tensor<6x2xf32>
  return %0, %1 : tensor<3x2x2xf32>, tensor<6x2xf32>
}

// A 0-d tensor reshaped to and from ones: no reassociation groups.
// CHECK-LABEL: func.func @reshape_scalar
// CHECK: tensor.expand_shape %arg0 [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
// CHECK: tensor.collapse_shape %{{.+}} [] : tensor<1x1xf32> into tensor<f32>
func.func @reshape_scalar(%a: tensor<f32>) -> tensor<f32> {
  %0 = "stablehlo.reshape"(%a) : (tensor<f32>) -> tensor<1x1xf32>
  %1 = "stablehlo.reshape"(%0) : (tensor<1x1xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// dot_general: batch dimensions, then the lhs's free dimensions, then the rhs's, then the
// contracting ones, accumulated from zero.
// CHECK-LABEL: func.func @batch_matmul
// CHECK: %[[ZERO:.+]] = linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}{{.*}} outs(%[[ZERO]]
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @batch_matmul(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = "stablehlo.dot_general"(%a, %b) <{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>}> : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// reduce: the init fills the result, linalg.reduce folds in index order.
// CHECK-LABEL: func.func @reduce
// CHECK: %[[INIT:.+]] = tensor.extract %arg1[] : tensor<f32>
// CHECK: %[[FILL:.+]] = linalg.fill ins(%[[INIT]] : f32)
// CHECK: linalg.reduce { arith.maximumf } ins(%arg0 : tensor<4x5xf32>) outs(%[[FILL]] : tensor<4xf32>) dimensions = [1]
func.func @reduce(%a: tensor<4x5xf32>, %init: tensor<f32>) -> tensor<4xf32> {
  %0 = "stablehlo.reduce"(%a, %init) <{dimensions = array<i64: 1>}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %m = "stablehlo.maximum"(%x, %y) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%m) : (tensor<f32>) -> ()
  }) : (tensor<4x5xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// iota: the index along iota_dimension, converted.
// CHECK-LABEL: func.func @iota
// CHECK: linalg.index 1 : index
// CHECK: arith.sitofp
func.func @iota() -> tensor<2x3xf32> {
  %0 = "stablehlo.iota"() <{iota_dimension = 1 : i64}> : () -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

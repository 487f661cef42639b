// RUN: remat-opt %s --pass-pipeline='builtin.module(remat-lower-stablehlo)' | FileCheck %s

// StableHLO ops become linalg, tensor, arith and math on tensors, decomposed as jaxlib's
// stablehlo-legalize-to-linalg decomposes them (passes/lower/src/stablehlo/legalize.rs).

// The affine maps are printed first (the module's aliases).
// CHECK-DAG: #[[EXPAND:.+]] = affine_map<(d0, d1, d2) -> (0, d2)>
// CHECK-DAG: #[[SCALAR:.+]] = affine_map<(d0, d1, d2) -> ()>
// CHECK-DAG: #[[LHS:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[RHS:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[REVERSE:.+]] = affine_map<(d0, d1) -> (d0, -d1 + 1)>
// CHECK-DAG: #[[DEPTHWISE:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 + d5, d3 floordiv 2 + d6)>
// CHECK-DAG: #[[BATCHGROUPS:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> ((d3 floordiv 2) * 3 + d0, d1 + d4, d2 + d5, d6)>

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

// slice: static offsets, sizes and strides.
// CHECK-LABEL: func.func @slice
// CHECK: tensor.extract_slice %arg0[1, 0] [2, 3] [2, 2] : tensor<6x5xf32> to tensor<2x3xf32>
func.func @slice(%a: tensor<6x5xf32>) -> tensor<2x3xf32> {
  %0 = "stablehlo.slice"(%a) <{start_indices = array<i64: 1, 0>, limit_indices = array<i64: 5, 5>, strides = array<i64: 2, 2>}> : (tensor<6x5xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// dynamic_slice and dynamic_update_slice: each start index clamped to [0, dim - size].
// CHECK-LABEL: func.func @dynamic_slices
// CHECK: %[[I:.+]] = arith.index_cast %{{.+}} : i32 to index
// CHECK: %[[M:.+]] = arith.constant 6 : index
// CHECK: %[[G:.+]] = arith.maxsi %[[I]], %{{.+}} : index
// CHECK: %[[L:.+]] = arith.minsi %[[G]], %[[M]] : index
// CHECK: tensor.extract_slice %arg0[%[[L]], %{{.+}}] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
// CHECK: tensor.insert_slice %arg3 into %arg0[%{{.+}}, %{{.+}}] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
func.func @dynamic_slices(%a: tensor<8x4xf32>, %i: tensor<i32>, %j: tensor<i32>, %u: tensor<1x4xf32>) -> (tensor<2x4xf32>, tensor<8x4xf32>) {
  %0 = "stablehlo.dynamic_slice"(%a, %i, %j) <{slice_sizes = array<i64: 2, 4>}> : (tensor<8x4xf32>, tensor<i32>, tensor<i32>) -> tensor<2x4xf32>
  %1 = "stablehlo.dynamic_update_slice"(%a, %u, %i, %j) : (tensor<8x4xf32>, tensor<1x4xf32>, tensor<i32>, tensor<i32>) -> tensor<8x4xf32>
  return %0, %1 : tensor<2x4xf32>, tensor<8x4xf32>
}

// concatenate: each operand inserted at its offset along the dimension; reverse: read from the end.
// CHECK-LABEL: func.func @concatenate_reverse
// CHECK: %[[E:.+]] = tensor.empty() : tensor<2x5xf32>
// CHECK: %[[A:.+]] = tensor.insert_slice %arg0 into %[[E]][0, 0] [2, 2] [1, 1]
// CHECK: tensor.insert_slice %arg1 into %[[A]][0, 2] [2, 3] [1, 1]
// CHECK: linalg.generic {indexing_maps = [#[[REVERSE]], #{{.+}}]
func.func @concatenate_reverse(%a: tensor<2x2xf32>, %b: tensor<2x3xf32>) -> (tensor<2x5xf32>, tensor<2x2xf32>) {
  %0 = "stablehlo.concatenate"(%a, %b) <{dimension = 1 : i64}> : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x5xf32>
  %1 = "stablehlo.reverse"(%a) <{dimensions = array<i64: 1>}> : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0, %1 : tensor<2x5xf32>, tensor<2x2xf32>
}

// pad: tensor.pad for edges alone; interior padding places elements apart in a filled result,
// a negative edge crops.
// CHECK-LABEL: func.func @pad
// CHECK: tensor.pad %arg0 low[1, 0] high[0, 2]
// CHECK: tensor.yield
// CHECK: %[[C:.+]] = tensor.extract_slice %arg0[0, 1] [3, 3] [1, 1] : tensor<3x4xf32> to tensor<3x3xf32>
// CHECK: %[[F:.+]] = linalg.fill
// CHECK: tensor.insert_slice %[[C]] into %[[F]][0, 0] [3, 3] [2, 1] : tensor<3x3xf32> into tensor<5x3xf32>
func.func @pad(%a: tensor<3x4xf32>, %v: tensor<f32>) -> (tensor<4x6xf32>, tensor<5x3xf32>) {
  %0 = "stablehlo.pad"(%a, %v) <{edge_padding_low = array<i64: 1, 0>, edge_padding_high = array<i64: 0, 2>, interior_padding = array<i64: 0, 0>}> : (tensor<3x4xf32>, tensor<f32>) -> tensor<4x6xf32>
  %1 = "stablehlo.pad"(%a, %v) <{edge_padding_low = array<i64: 0, -1>, edge_padding_high = array<i64: 0, 0>, interior_padding = array<i64: 1, 0>}> : (tensor<3x4xf32>, tensor<f32>) -> tensor<5x3xf32>
  return %0, %1 : tensor<4x6xf32>, tensor<5x3xf32>
}

// gather (an embedding lookup): one generic over the result whose body reads the start
// index, clamps it, and extracts the operand element.
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<8x16x32xf32>)
// CHECK: tensor.extract %arg1[%{{.+}}, %{{.+}}, %{{.+}}] : tensor<8x16x1xi32>
// CHECK: arith.minsi
// CHECK: tensor.extract %arg0[%{{.+}}, %{{.+}}] : tensor<64x32xf32>
func.func @gather(%table: tensor<64x32xf32>, %ids: tensor<8x16x1xi32>) -> tensor<8x16x32xf32> {
  %0 = "stablehlo.gather"(%table, %ids) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 32>}> : (tensor<64x32xf32>, tensor<8x16x1xi32>) -> tensor<8x16x32xf32>
  return %0 : tensor<8x16x32xf32>
}

// convolution, forward layout: padded input, then the result's dimensions, the window's and
// the input feature (linalg.conv_2d_nhwc_hwcf's order), reading input[o * stride + k].
// CHECK-LABEL: func.func @convolution
// CHECK: %[[P:.+]] = tensor.pad %arg0 low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: linalg.generic {indexing_maps = [#[[CIN:.+]], #[[CK:.+]], #[[COUT:.+]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[P]], %arg1 : tensor<1x6x6x2xf32>, tensor<3x3x2x4xf32>)
func.func @convolution(%x: tensor<1x4x4x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x2x2x4xf32> {
  %0 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, padding = dense<1> : tensor<2x2xi64>, window_strides = array<i64: 2, 2>}> : (tensor<1x4x4x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x2x2x4xf32>
  return %0 : tensor<1x2x2x4xf32>
}

// Any other layout (a weight gradient): jaxlib's general order — input feature, output
// feature, (output, window) per spatial dimension, batch.
// CHECK-LABEL: func.func @weight_gradient
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "parallel", "reduction", "parallel", "reduction", "parallel"]
func.func @weight_gradient(%x: tensor<2x4x4x3xf32>, %g: tensor<2x4x4x5xf32>) -> tensor<3x3x3x5xf32> {
  %0 = "stablehlo.convolution"(%x, %g) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>, feature_group_count = 1 : i64, padding = dense<1> : tensor<2x2xi64>}> : (tensor<2x4x4x3xf32>, tensor<2x4x4x5xf32>) -> tensor<3x3x3x5xf32>
  return %0 : tensor<3x3x3x5xf32>
}

// reduce_window (a max pool): the input padded with the init, a window-shaped tensor.empty
// giving the window's extent, the window folded in index order.
// CHECK-LABEL: func.func @max_pool
// CHECK: %[[INIT:.+]] = tensor.extract %arg1[] : tensor<f32>
// CHECK: tensor.pad %arg0 low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tensor.yield %[[INIT]] : f32
// CHECK: %[[W:.+]] = tensor.empty() : tensor<1x3x3x1xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%{{.+}}, %[[W]] :
// CHECK: arith.maximumf
func.func @max_pool(%x: tensor<1x4x4x2xf32>, %init: tensor<f32>) -> tensor<1x2x2x2xf32> {
  %0 = "stablehlo.reduce_window"(%x, %init) <{padding = dense<[[0, 0], [1, 1], [1, 1], [0, 0]]> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = "stablehlo.maximum"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%m) : (tensor<f32>) -> ()
  }) : (tensor<1x4x4x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  return %0 : tensor<1x2x2x2xf32>
}

// clamp (0-d bounds broadcast), sign (±0 and NaN kept), is_finite, bitcast_convert.
// CHECK-LABEL: func.func @clamp_sign
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK: math.copysign
// CHECK: arith.select
// CHECK: math.isfinite
// CHECK: arith.bitcast {{.*}} : f32 to i32
func.func @clamp_sign(%x: tensor<4xf32>, %lo: tensor<f32>, %hi: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi1>, tensor<4xi32>) {
  %0 = "stablehlo.clamp"(%lo, %x, %hi) : (tensor<f32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = "stablehlo.sign"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "stablehlo.is_finite"(%x) : (tensor<4xf32>) -> tensor<4xi1>
  %3 = "stablehlo.bitcast_convert"(%x) : (tensor<4xf32>) -> tensor<4xi32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xi1>, tensor<4xi32>
}

// reduce with several operands and a body of several ops (JAX's argmax: values and indices
// together): one linalg.reduce with both, the body's ops translated to scalars.
// CHECK-LABEL: func.func @argmax
// CHECK: linalg.reduce ins(%arg0, %arg1 : tensor<3x4xf32>, tensor<3x4xi32>) outs(%{{.+}}, %{{.+}} : tensor<3xf32>, tensor<3xi32>) dimensions = [1]
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf oeq
// CHECK: arith.cmpi slt
// CHECK: arith.andi
// CHECK: arith.ori
// CHECK: arith.select
// CHECK: arith.select
// CHECK: linalg.yield
func.func @argmax(%x: tensor<3x4xf32>, %i: tensor<3x4xi32>, %v0: tensor<f32>, %i0: tensor<i32>) -> (tensor<3xf32>, tensor<3xi32>) {
  %r:2 = "stablehlo.reduce"(%x, %i, %v0, %i0) <{dimensions = array<i64: 1>}> ({
  ^bb0(%av: tensor<f32>, %ai: tensor<i32>, %bv: tensor<f32>, %bi: tensor<i32>):
    %gt = "stablehlo.compare"(%av, %bv) <{comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %eq = "stablehlo.compare"(%av, %bv) <{comparison_direction = #stablehlo<comparison_direction EQ>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %lt = "stablehlo.compare"(%ai, %bi) <{comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = "stablehlo.and"(%eq, %lt) : (tensor<i1>, tensor<i1>) -> tensor<i1>
    %keep = "stablehlo.or"(%gt, %tie) : (tensor<i1>, tensor<i1>) -> tensor<i1>
    %v = "stablehlo.select"(%keep, %av, %bv) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
    %j = "stablehlo.select"(%keep, %ai, %bi) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    "stablehlo.return"(%v, %j) : (tensor<f32>, tensor<i32>) -> ()
  }) : (tensor<3x4xf32>, tensor<3x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<3xf32>, tensor<3xi32>)
  return %r#0, %r#1 : tensor<3xf32>, tensor<3xi32>
}

// select_and_scatter (JAX's max-pool gradient): one linalg.generic choosing each window's
// element (its value and its offset in the window, -1 before the first), then one over the
// operand adding the source values of the windows that chose each element.
// CHECK-LABEL: func.func @max_pool_gradient
// CHECK: %[[OFFSETS:.+]] = linalg.fill ins(%c-1_i32 : i32) outs(%{{.+}} : tensor<2x2xi32>)
// CHECK: %[[SELECTED:.+]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "reduction"]{{.*}} outs(%{{.+}}, %[[OFFSETS]] : tensor<2x2xf32>, tensor<2x2xi32>)
// CHECK: tensor.extract %arg0
// CHECK: arith.cmpf oge
// CHECK: linalg.yield %{{.+}}, %{{.+}} : f32, i32
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "reduction"]{{.*}} outs(%{{.+}} : tensor<4x2xf32>)
// CHECK: tensor.extract %[[SELECTED]]#1
// CHECK: tensor.extract %arg1
// CHECK: arith.addf
// CHECK-NOT: stablehlo.
func.func @max_pool_gradient(%x: tensor<4x2xf32>, %s: tensor<2x2xf32>) -> tensor<4x2xf32> {
  %init = "stablehlo.constant"() <{value = dense<0.0> : tensor<f32>}> : () -> tensor<f32>
  %r = "stablehlo.select_and_scatter"(%x, %s, %init) <{window_dimensions = array<i64: 3, 1>, window_strides = array<i64: 2, 1>, padding = dense<[[0, 1], [0, 0]]> : tensor<2x2xi64>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %c = "stablehlo.compare"(%a, %b) <{comparison_direction = #stablehlo<comparison_direction GE>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
    "stablehlo.return"(%c) : (tensor<i1>) -> ()
  }, {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %c = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%c) : (tensor<f32>) -> ()
  }) : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<f32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// Unsigned integers (JAX's threefry RNG): the program becomes signless, the function's type
// too; the ops whose meaning depends on the sign take the unsigned form, and shifts by the
// width or more give 0 as the specification says.
// CHECK-LABEL: func.func @unsigned(%arg0: tensor<4xi32>, %arg1: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xf32>, tensor<4xi1>, tensor<4xi64>)
// CHECK: arith.constant dense<-1640531527> : tensor<4xi32>
// CHECK: arith.cmpi uge
// CHECK: arith.shrui
// CHECK: arith.select
// CHECK: arith.shli
// CHECK: arith.uitofp {{.*}} : i32 to f32
// CHECK: arith.cmpi ult
// CHECK: arith.extui {{.*}} : i32 to i64
// CHECK: arith.maxui
// CHECK-NOT: stablehlo.
// CHECK-NOT: ui32
func.func @unsigned(%x: tensor<4xui32>, %n: tensor<4xui32>) -> (tensor<4xui32>, tensor<4xf32>, tensor<4xi1>, tensor<4xui64>) {
  %k = "stablehlo.constant"() <{value = dense<2654435769> : tensor<4xui32>}> : () -> tensor<4xui32>
  %0 = "stablehlo.shift_right_logical"(%x, %n) : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xui32>
  %1 = "stablehlo.shift_left"(%0, %n) : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xui32>
  %2 = "stablehlo.xor"(%1, %k) : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xui32>
  %3 = "stablehlo.convert"(%2) : (tensor<4xui32>) -> tensor<4xf32>
  %4 = "stablehlo.compare"(%2, %k) <{comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type UNSIGNED>}> : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xi1>
  %5 = "stablehlo.convert"(%2) : (tensor<4xui32>) -> tensor<4xui64>
  %6 = "stablehlo.maximum"(%2, %x) : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xui32>
  return %6, %3, %4, %5 : tensor<4xui32>, tensor<4xf32>, tensor<4xi1>, tensor<4xui64>
}

// Integer divide and remainder are total, as XLA makes them: the divisor is replaced by 1
// where it is 0 or where MIN / -1 would overflow, then the results there are fixed.
// CHECK-LABEL: func.func @integer_division
// CHECK: arith.cmpi eq
// CHECK: arith.divsi
// CHECK: arith.select
// CHECK: arith.remsi
// CHECK-NOT: stablehlo.
func.func @integer_division(%a: tensor<4xi32>, %b: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {
  %0 = "stablehlo.divide"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = "stablehlo.remainder"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0, %1 : tensor<4xi32>, tensor<4xi32>
}

// The CHLO ops JAX leaves in its StableHLO: square as a multiply (as jaxlib's
// chlo-legalize-to-stablehlo makes it), erf, erfc, sinh, cosh as the math ops.
// CHECK-LABEL: func.func @chlo
// CHECK: arith.mulf %[[X:.+]], %[[X]] : f32
// CHECK: math.erf
// CHECK: math.erfc
// CHECK: math.cosh
// CHECK: math.tan
// CHECK-NOT: chlo.
func.func @chlo(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = "chlo.square"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "chlo.erf"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "chlo.erfc"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "chlo.cosh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %4 = "stablehlo.tan"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// Grouped convolutions (a depthwise convolution: 4 feature groups of one input feature; its
// weight gradient: 4 batch groups): the output feature's group picks the input's block with
// a floordiv in the input's map.
// CHECK-LABEL: func.func @grouped
// CHECK: linalg.generic {indexing_maps = [#[[DEPTHWISE]],
// CHECK: linalg.generic {indexing_maps = [#[[BATCHGROUPS]],
func.func @grouped(%x: tensor<1x5x5x4xf32>, %w: tensor<3x3x1x8xf32>, %b: tensor<12x5x5x4xf32>, %g: tensor<3x3x4x8xf32>) -> (tensor<1x3x3x8xf32>, tensor<3x3x3x8xf32>) {
  %0 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 4 : i64}> : (tensor<1x5x5x4xf32>, tensor<3x3x1x8xf32>) -> tensor<1x3x3x8xf32>
  %1 = "stablehlo.convolution"(%b, %g) <{batch_group_count = 4 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64}> : (tensor<12x5x5x4xf32>, tensor<3x3x4x8xf32>) -> tensor<3x3x3x8xf32>
  return %0, %1 : tensor<1x3x3x8xf32>, tensor<3x3x3x8xf32>
}

// sort (JAX's argsort: values and an iota, compared in IEEE total order): one linalg.generic
// ranking each element in its row, then one placing every input's element at its rank.
// CHECK-LABEL: func.func @argsort
// CHECK: %[[RANKS:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} outs(%{{.+}} : tensor<2x5xi32>)
// CHECK: arith.bitcast {{.*}} : f32 to i32
// CHECK: arith.cmpi slt, %{{.+}}, %{{.+}} : index
// CHECK: linalg.generic {{.*}} ins(%[[RANKS]], %arg0, %{{.+}} : tensor<2x5xi32>, tensor<2x5xf32>, tensor<2x5xi32>)
// CHECK-NOT: stablehlo.
func.func @argsort(%x: tensor<2x5xf32>) -> (tensor<2x5xf32>, tensor<2x5xi32>) {
  %iota = "stablehlo.iota"() <{iota_dimension = 1 : i64}> : () -> tensor<2x5xi32>
  %r:2 = "stablehlo.sort"(%x, %iota) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
    %lt = "stablehlo.compare"(%a, %b) <{compare_type = #stablehlo<comparison_type TOTALORDER>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
    "stablehlo.return"(%lt) : (tensor<i1>) -> ()
  }) : (tensor<2x5xf32>, tensor<2x5xi32>) -> (tensor<2x5xf32>, tensor<2x5xi32>)
  return %r#0, %r#1 : tensor<2x5xf32>, tensor<2x5xi32>
}

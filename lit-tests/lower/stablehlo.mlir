// RUN: remat-opt %s --split-input-file --pass-pipeline='builtin.module(remat-lower-stablehlo)' | FileCheck %s
// RUN: remat-opt %s --split-input-file --pass-pipeline='builtin.module(remat-lower-stablehlo)' | mlir-opt --split-input-file -o /dev/null

// A barrier's results are its operands.
// CHECK-LABEL: func.func @barrier
// CHECK-NOT:     stablehlo
// CHECK:         return %arg0, %arg1
func.func @barrier(%a: tensor<4xf32>, %b: tensor<2xf32>) -> (tensor<4xf32>, tensor<2xf32>) {
  %r:2 = "stablehlo.optimization_barrier"(%a, %b) : (tensor<4xf32>, tensor<2xf32>) -> (tensor<4xf32>, tensor<2xf32>)
  return %r#0, %r#1 : tensor<4xf32>, tensor<2xf32>
}

// -----

// A while with a trip count known before the step runs → scf.for over its body, without the
// condition. The weights it returns unchanged are read from above (carried, bufferization
// would copy them before the loop); the stack it writes slices into stays in place; the
// values it replaces are copied into their own buffers at the end of the body, so that the
// loop's results are its inits' buffers.
// CHECK-LABEL: func.func @counted_loop
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK:         %[[R:.*]]:3 = scf.for %{{.*}} = %[[C0]] to %[[C3]] step %[[C1]] iter_args(%[[I:.*]] = %{{.*}}, %[[X:.*]] = %arg0, %[[T:.*]] = %arg2) -> (tensor<i32>, tensor<4xf32>, tensor<3x4xf32>) {
// CHECK:           %[[I1:.*]] = arith.addi %[[I]]
// CHECK:           %[[V:.*]] = arith.mulf %[[X]], %arg1 : tensor<4xf32>
// CHECK:           %[[T2:.*]] = tensor.insert_slice %{{.*}} into %[[T]]
// CHECK:           %[[I2:.*]] = linalg.copy ins(%[[I1]] : tensor<i32>) outs(%[[I]] : tensor<i32>)
// CHECK:           %[[V2:.*]] = linalg.copy ins(%[[V]] : tensor<4xf32>) outs(%[[X]] : tensor<4xf32>)
// CHECK:           scf.yield %[[I2]], %[[V2]], %[[T2]] : tensor<i32>, tensor<4xf32>, tensor<3x4xf32>
// CHECK:         return %[[R]]#1, %[[R]]#2
func.func @counted_loop(%x: tensor<4xf32>, %w: tensor<4xf32>, %s: tensor<3x4xf32>) -> (tensor<4xf32>, tensor<3x4xf32>) {
  %zero = arith.constant dense<0> : tensor<i32>
  %r:4 = "stablehlo.while"(%zero, %x, %w, %s) ({
  ^bb0(%i: tensor<i32>, %v: tensor<4xf32>, %u: tensor<4xf32>, %t: tensor<3x4xf32>):
    %n = arith.constant dense<3> : tensor<i32>
    %e = tensor.empty() : tensor<i1>
    %p = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
        ins(%i, %n : tensor<i32>, tensor<i32>) outs(%e : tensor<i1>) {
    ^bb0(%a: i32, %b: i32, %o: i1):
      %c = arith.cmpi slt, %a, %b : i32
      linalg.yield %c : i1
    } -> tensor<i1>
    "stablehlo.return"(%p) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>, %v: tensor<4xf32>, %u: tensor<4xf32>, %t: tensor<3x4xf32>):
    %one = arith.constant dense<1> : tensor<i32>
    %i1 = arith.addi %i, %one : tensor<i32>
    %v2 = arith.mulf %v, %u : tensor<4xf32>
    %row = tensor.expand_shape %v2 [[0, 1]] output_shape [1, 4] : tensor<4xf32> into tensor<1x4xf32>
    %k = tensor.extract %i[] : tensor<i32>
    %ki = arith.index_cast %k : i32 to index
    %t2 = tensor.insert_slice %row into %t[%ki, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<3x4xf32>
    "stablehlo.return"(%i1, %v2, %u, %t2) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>) -> ()
  }) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>) -> (tensor<i32>, tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>)
  return %r#1, %r#3 : tensor<4xf32>, tensor<3x4xf32>
}

// -----

// A counted loop that swaps two values (as a PRNG's rounds do): each is staged in a fresh
// buffer before the write-backs, which would otherwise overwrite one before it is read.
// CHECK-LABEL: func.func @swapping_loop
// CHECK:         scf.for %{{.*}} iter_args(%[[I:.*]] = %{{.*}}, %[[A:.*]] = %arg0, %[[B:.*]] = %arg1)
// CHECK-DAG:       %[[EA:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-DAG:       %[[EB:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-DAG:       %[[SA:.*]] = linalg.copy ins(%[[B]] : tensor<4xf32>) outs(%[[EA]] : tensor<4xf32>)
// CHECK-DAG:       %[[SB:.*]] = linalg.copy ins(%[[A]] : tensor<4xf32>) outs(%[[EB]] : tensor<4xf32>)
// CHECK:           linalg.copy ins(%[[SA]] : tensor<4xf32>) outs(%[[A]] : tensor<4xf32>)
// CHECK:           linalg.copy ins(%[[SB]] : tensor<4xf32>) outs(%[[B]] : tensor<4xf32>)
func.func @swapping_loop(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant dense<0> : tensor<i32>
  %r:3 = "stablehlo.while"(%zero, %x, %y) ({
  ^bb0(%i: tensor<i32>, %a: tensor<4xf32>, %b: tensor<4xf32>):
    %n = arith.constant dense<5> : tensor<i32>
    %e = tensor.empty() : tensor<i1>
    %p = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
        ins(%i, %n : tensor<i32>, tensor<i32>) outs(%e : tensor<i1>) {
    ^bb0(%u: i32, %v: i32, %o: i1):
      %c = arith.cmpi slt, %u, %v : i32
      linalg.yield %c : i1
    } -> tensor<i1>
    "stablehlo.return"(%p) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>, %a: tensor<4xf32>, %b: tensor<4xf32>):
    %one = arith.constant dense<1> : tensor<i32>
    %i1 = arith.addi %i, %one : tensor<i32>
    "stablehlo.return"(%i1, %b, %a) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>) -> ()
  }) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>, tensor<4xf32>)
  return %r#1, %r#2 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A while whose trip count depends on the step's inputs → scf.while: the condition's
// tensor<i1> is extracted for scf.condition; the body yields what it returned.
// CHECK-LABEL: func.func @data_dependent_loop
// CHECK:         %[[R:.*]]:2 = scf.while (%[[I:.*]] = %{{.*}}, %[[X:.*]] = %arg0) : (tensor<i32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>) {
// CHECK:           %[[P:.*]] = tensor.extract %{{.*}}[] : tensor<i1>
// CHECK-NEXT:      scf.condition(%[[P]]) %[[I]], %[[X]] : tensor<i32>, tensor<4xf32>
// CHECK:         } do {
// CHECK:           scf.yield %{{.*}}, %{{.*}} : tensor<i32>, tensor<4xf32>
// CHECK:         return %[[R]]#1
func.func @data_dependent_loop(%x: tensor<4xf32>, %n: tensor<i32>) -> tensor<4xf32> {
  %zero = arith.constant dense<0> : tensor<i32>
  %r:2 = "stablehlo.while"(%zero, %x) ({
  ^bb0(%i: tensor<i32>, %v: tensor<4xf32>):
    %e = tensor.empty() : tensor<i1>
    %p = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
        ins(%i, %n : tensor<i32>, tensor<i32>) outs(%e : tensor<i1>) {
    ^bb0(%a: i32, %b: i32, %o: i1):
      %c = arith.cmpi slt, %a, %b : i32
      linalg.yield %c : i1
    } -> tensor<i1>
    "stablehlo.return"(%p) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>, %v: tensor<4xf32>):
    %one = arith.constant dense<1> : tensor<i32>
    %i1 = arith.addi %i, %one : tensor<i32>
    %v2 = arith.addf %v, %v : tensor<4xf32>
    "stablehlo.return"(%i1, %v2) : (tensor<i32>, tensor<4xf32>) -> ()
  }) : (tensor<i32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>)
  return %r#1 : tensor<4xf32>
}

// -----

// scatter → a fresh copy of the operand, then one scf.for per update dimension; the index is
// read from the indices, bounds-checked, and the update computation (a 0-d linalg.generic
// after legalization) runs on scalars.
// CHECK-LABEL: func.func @scatter_add_rows
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<4x3xf32>
// CHECK-NEXT:    %[[COPY:.*]] = linalg.copy ins(%arg0 : tensor<4x3xf32>) outs(%[[E]] : tensor<4x3xf32>)
// CHECK:         scf.for %[[U0:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC0:.*]] = %[[COPY]]) -> (tensor<4x3xf32>) {
// CHECK:           scf.for %[[U1:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[ACC0]]) -> (tensor<4x3xf32>) {
// CHECK:             %[[RAW:.*]] = tensor.extract %arg1[%[[U0]], %{{.*}}] : tensor<3x1xi32>
// CHECK-NEXT:        %[[ROW:.*]] = arith.index_cast %[[RAW]] : i32 to index
// CHECK:             scf.if
// CHECK:               %[[OLD:.*]] = tensor.extract %[[ACC]]
// CHECK-NEXT:          %[[NEW:.*]] = tensor.extract %arg2[%[[U0]], %[[U1]]]
// CHECK-NEXT:          %[[SUM:.*]] = arith.addf %[[OLD]], %[[NEW]]
// CHECK-NEXT:          tensor.insert %[[SUM]] into %[[ACC]]
// CHECK-NOT:     stablehlo
func.func @scatter_add_rows(%operand: tensor<4x3xf32>, %indices: tensor<3x1xi32>, %updates: tensor<3x3xf32>) -> tensor<4x3xf32> {
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
  }) : (tensor<4x3xf32>, tensor<3x1xi32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// optax's softmax_cross_entropy_with_integer_labels: the gradient scatters a 2x3 update into
// a 2x3x1 operand at one index of the last dimension. StableHLO leaves
// `index_vector_dim = 0` out of the printed attribute, so the 1-element indices tensor is the
// index vector itself: the start index is read at [0], and the update's two dimensions are
// both window dimensions (no batch loop over the indices).
// CHECK-LABEL: func.func @optax_label_gradient
// CHECK:         scf.for %[[U0:.*]] = %{{.*}} to %{{.*}} step
// CHECK:           scf.for %[[U1:.*]] = %{{.*}} to %{{.*}} step
// CHECK:             %[[RAW:.*]] = tensor.extract %arg1[%c0{{(_[0-9]+)?}}] : tensor<1xi32>
// CHECK-NEXT:        %[[START:.*]] = arith.index_cast %[[RAW]] : i32 to index
// CHECK:             %[[D0:.*]] = arith.addi %{{.*}}, %[[U0]] : index
// CHECK-NEXT:        %[[D1:.*]] = arith.addi %{{.*}}, %[[U1]] : index
// CHECK:               %[[OLD:.*]] = tensor.extract %{{.*}}[%[[D0]], %[[D1]], %[[START]]] : tensor<2x3x1xf32>
// CHECK-NEXT:          %[[NEW:.*]] = tensor.extract %arg2[%[[U0]], %[[U1]]] : tensor<2x3xf32>
// CHECK-NEXT:          %[[SUM:.*]] = arith.addf %[[OLD]], %[[NEW]] : f32
// CHECK-NOT:     stablehlo
func.func @optax_label_gradient(%zeros: tensor<2x3x1xf32>, %label: tensor<1xi32>, %g: tensor<2x3xf32>) -> tensor<2x3x1xf32> {
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

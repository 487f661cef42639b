// A scan in StableHLO, as JAX writes it: the forward loop stacks its residuals with
// dynamic_update_slice, the backward loop reads them back in reverse with dynamic_slice at
// wrapped indices. Once both loops are unrolled, every read is forwarded to the value the
// forward wrote and the stack disappears; reads of the argument stay. (Generic op form, as
// JAX exports it: remat-opt reads StableHLO without registering the dialect.) The step stays
// StableHLO (--legalize-stablehlo=false): this tests the importer on StableHLO ops.
//
// RUN: remat-opt %s --legalize-stablehlo=false --remat=none --fusion=none --split-input-file 2>&1 | FileCheck %s
// RUN: remat-opt %s --legalize-stablehlo=false --remat=none --fusion=none --split-input-file --report 2>&1 -o /dev/null | FileCheck %s --check-prefix=REPORT

// CHECK-LABEL: func.func @scan
// CHECK-NOT:   "stablehlo.while"
// CHECK-NOT:   "stablehlo.dynamic_update_slice"
// CHECK:       %[[T0:.*]] = "stablehlo.tanh"
// CHECK:       %[[T1:.*]] = "stablehlo.tanh"
// CHECK:       %[[T2:.*]] = "stablehlo.tanh"
// CHECK-NOT:   "stablehlo.dynamic_slice"
// CHECK:       "stablehlo.multiply"(%[[T2]], %[[T2]])
// CHECK:       "stablehlo.multiply"(%[[T1]], %[[T1]])
// CHECK:       "stablehlo.multiply"(%[[T0]], %[[T0]])
// REPORT:      import            2 loops unrolled; 3 reads of stacked tensors forwarded
"builtin.module"() ({
  "func.func"() <{function_type = (tensor<3x4xf32>) -> tensor<4xf32>, sym_name = "scan"}> ({
  ^bb0(%arg0: tensor<3x4xf32>):
    %0 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %1 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<3x4xf32>}> : () -> tensor<3x4xf32>
    %2 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<1x4xf32>}> : () -> tensor<1x4xf32>
    %3:3 = "stablehlo.while"(%0, %2, %1) ({
    ^bb0(%arg8: tensor<i32>, %arg9: tensor<1x4xf32>, %arg10: tensor<3x4xf32>):
      %28 = "stablehlo.constant"() <{value = dense<3> : tensor<i32>}> : () -> tensor<i32>
      %29 = "stablehlo.compare"(%arg8, %28) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
      "stablehlo.return"(%29) : (tensor<i1>) -> ()
    }, {
    ^bb0(%arg5: tensor<i32>, %arg6: tensor<1x4xf32>, %arg7: tensor<3x4xf32>):
      %21 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
      %22 = "stablehlo.dynamic_slice"(%arg0, %arg5, %21) <{slice_sizes = array<i64: 1, 4>}> : (tensor<3x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
      %23 = "stablehlo.add"(%22, %arg6) : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
      %24 = "stablehlo.tanh"(%23) : (tensor<1x4xf32>) -> tensor<1x4xf32>
      %25 = "stablehlo.dynamic_update_slice"(%arg7, %24, %arg5, %21) : (tensor<3x4xf32>, tensor<1x4xf32>, tensor<i32>, tensor<i32>) -> tensor<3x4xf32>
      %26 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
      %27 = "stablehlo.add"(%arg5, %26) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%27, %24, %25) : (tensor<i32>, tensor<1x4xf32>, tensor<3x4xf32>) -> ()
    }) : (tensor<i32>, tensor<1x4xf32>, tensor<3x4xf32>) -> (tensor<i32>, tensor<1x4xf32>, tensor<3x4xf32>)
    %4 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<1x4xf32>}> : () -> tensor<1x4xf32>
    %5:2 = "stablehlo.while"(%0, %4) ({
    ^bb0(%arg3: tensor<i32>, %arg4: tensor<1x4xf32>):
      %19 = "stablehlo.constant"() <{value = dense<3> : tensor<i32>}> : () -> tensor<i32>
      %20 = "stablehlo.compare"(%arg3, %19) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
      "stablehlo.return"(%20) : (tensor<i1>) -> ()
    }, {
    ^bb0(%arg1: tensor<i32>, %arg2: tensor<1x4xf32>):
      %7 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
      %8 = "stablehlo.constant"() <{value = dense<2> : tensor<i32>}> : () -> tensor<i32>
      %9 = "stablehlo.constant"() <{value = dense<3> : tensor<i32>}> : () -> tensor<i32>
      %10 = "stablehlo.subtract"(%8, %arg1) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %11 = "stablehlo.compare"(%10, %7) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %12 = "stablehlo.add"(%10, %9) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %13 = "stablehlo.select"(%11, %12, %10) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      %14 = "stablehlo.dynamic_slice"(%3#2, %13, %7) <{slice_sizes = array<i64: 1, 4>}> : (tensor<3x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
      %15 = "stablehlo.multiply"(%14, %14) : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
      %16 = "stablehlo.add"(%arg2, %15) : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
      %17 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
      %18 = "stablehlo.add"(%arg1, %17) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%18, %16) : (tensor<i32>, tensor<1x4xf32>) -> ()
    }) : (tensor<i32>, tensor<1x4xf32>) -> (tensor<i32>, tensor<1x4xf32>)
    %6 = "stablehlo.reshape"(%5#1) : (tensor<1x4xf32>) -> tensor<4xf32>
    "func.return"(%6) : (tensor<4xf32>) -> ()
  }) : () -> ()
}) : () -> ()

// -----

// StableHLO clamps start indices into the tensor: a write at row 7 of 3 rows writes row 2,
// which a read at row 2 sees (and one at row -1, clamped to row 0, does not).
// CHECK-LABEL: func.func @clamped
// CHECK:       %[[T:.*]] = "stablehlo.tanh"
// CHECK:       "stablehlo.dynamic_update_slice"
// CHECK:       %[[R0:.*]] = "stablehlo.dynamic_slice"
// CHECK:       return %[[T]], %[[R0]]
// REPORT:      import            0 loops unrolled; 1 reads of stacked tensors forwarded
"builtin.module"() ({
  "func.func"() <{function_type = (tensor<1x4xf32>, tensor<3x4xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>), sym_name = "clamped"}> ({
  ^bb0(%arg0: tensor<1x4xf32>, %arg1: tensor<3x4xf32>):
    %0 = "stablehlo.tanh"(%arg0) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %1 = "stablehlo.constant"() <{value = dense<7> : tensor<i32>}> : () -> tensor<i32>
    %2 = "stablehlo.constant"() <{value = dense<2> : tensor<i32>}> : () -> tensor<i32>
    %3 = "stablehlo.constant"() <{value = dense<-1> : tensor<i32>}> : () -> tensor<i32>
    %4 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %5 = "stablehlo.dynamic_update_slice"(%arg1, %0, %1, %4) : (tensor<3x4xf32>, tensor<1x4xf32>, tensor<i32>, tensor<i32>) -> tensor<3x4xf32>
    %6 = "stablehlo.dynamic_slice"(%5, %2, %4) <{slice_sizes = array<i64: 1, 4>}> : (tensor<3x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
    %7 = "stablehlo.dynamic_slice"(%5, %3, %4) <{slice_sizes = array<i64: 1, 4>}> : (tensor<3x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
    "func.return"(%6, %7) : (tensor<1x4xf32>, tensor<1x4xf32>) -> ()
  }) : () -> ()
}) : () -> ()

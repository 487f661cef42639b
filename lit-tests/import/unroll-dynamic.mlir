// A loop whose trip count depends on the step's inputs stays one node, with a warning.
//
// RUN: remat-opt %s 2>&1 | FileCheck %s

#scalar = affine_map<() -> ()>

// CHECK: unroll-dynamic.mlir:[[@LINE+6]]:{{[0-9]+}}: warning: loop kept as one node (its trip count depends on values known only when the step runs)
// CHECK-LABEL: func.func @count_to
// CHECK:       stablehlo.while
func.func @count_to(%n: tensor<i32>) -> tensor<i32> {
  %c0 = arith.constant dense<0> : tensor<i32>
  %one = arith.constant 1 : i32
  %r = "stablehlo.while"(%c0) ({
  ^bb0(%i: tensor<i32>):
    %b = tensor.empty() : tensor<i1>
    %lt = linalg.generic {indexing_maps = [#scalar, #scalar, #scalar], iterator_types = []} ins(%i, %n : tensor<i32>, tensor<i32>) outs(%b : tensor<i1>) {
    ^bb0(%a: i32, %m: i32, %o: i1):
      %c = arith.cmpi slt, %a, %m : i32
      linalg.yield %c : i1
    } -> tensor<i1>
    "stablehlo.return"(%lt) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>):
    %bi = tensor.empty() : tensor<i32>
    %i1 = linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []} ins(%i : tensor<i32>) outs(%bi : tensor<i32>) {
    ^bb0(%a: i32, %o: i32):
      %n1 = arith.addi %a, %one : i32
      linalg.yield %n1 : i32
    } -> tensor<i32>
    "stablehlo.return"(%i1) : (tensor<i32>) -> ()
  }) : (tensor<i32>) -> tensor<i32>
  return %r : tensor<i32>
}

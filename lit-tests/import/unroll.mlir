// A loop with a static trip count (JAX's scan and fori_loop) is unrolled before planning:
// each iteration's ops become ordinary nodes, its counter a constant.
//
// RUN: remat-opt %s 2>&1 | FileCheck %s
// RUN: remat-opt %s --unroll-limit=3 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: remat-opt %s --pass-pipeline='builtin.module(func.func(remat{strategy=none unroll-limit=3}))' | FileCheck %s --check-prefix=PIPE
// RUN: remat-opt %s --pass-pipeline='builtin.module(func.func(remat{strategy=none}))' | FileCheck %s
//
// The unrolled step runs at exactly its planned peak, with the original's outputs:
// RUN: remat-opt %s --report-json=%t.json -o %t.mlir
// RUN: remat-run %t.mlir --compare-with=%s --json > %t.run
// RUN: cat %t.json %t.run | FileCheck %s --check-prefix=PEAK
// Kept whole (--unroll-limit below its trip count), the loop is in the model too, with no
// warning: the step runs at exactly its planned peak as well.
// RUN: remat-opt %s --unroll-limit=3 --report-json=%t.kept.json -o %t.kept.mlir
// RUN: remat-run %t.kept.mlir --compare-with=%s --json > %t.kept.run
// RUN: cat %t.kept.json %t.kept.run | FileCheck %s --check-prefix=PEAK
// PEAK:      "plan": {
// PEAK-NEXT:   "peak_bytes": [[PEAK:[0-9]+]],
// PEAK: {"peak_bytes":[[PEAK]],{{.*}}"outputs_match":true,

#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<() -> ()>

// CHECK-LABEL: func.func @scan
// CHECK-NOT:   stablehlo.while
// The initial accumulator is also returned, so the first update writes into a copy...
// CHECK:       %[[COPY:.*]] = bufferization.alloc_tensor() copy(%[[INIT:.*]]) : tensor<4x8xf32>
// CHECK:       %[[ACC1:.*]] = tensor.insert_slice %{{.*}} into %[[COPY]]
// ...and each later one in place into the previous accumulator, which nothing else reads.
// CHECK:       %[[ACC2:.*]] = tensor.insert_slice %{{.*}} into %[[ACC1]]
// CHECK:       %[[ACC3:.*]] = tensor.insert_slice %{{.*}} into %[[ACC2]]
// CHECK:       %[[ACC4:.*]] = tensor.insert_slice %{{.*}} into %[[ACC3]]
// CHECK-NOT:   tensor.insert_slice
// CHECK:       return %[[INIT]], %[[ACC4]]
// LIMIT-NOT:   warning
// LIMIT-LABEL: func.func @scan
// LIMIT:       stablehlo.while
// PIPE-LABEL:  func.func @scan
// PIPE:        stablehlo.while
func.func @scan(%xs: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c0 = arith.constant dense<0> : tensor<i32>
  %c4 = arith.constant 4 : i32
  %one = arith.constant 1 : i32
  %e = tensor.empty() : tensor<4x8xf32>
  %init = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%xs : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.addf %a, %a : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %r:2 = "stablehlo.while"(%c0, %init) ({
  ^bb0(%i: tensor<i32>, %acc: tensor<4x8xf32>):
    %b = tensor.empty() : tensor<i1>
    %lt = linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []} ins(%i : tensor<i32>) outs(%b : tensor<i1>) {
    ^bb0(%a: i32, %o: i1):
      %c = arith.cmpi slt, %a, %c4 : i32
      linalg.yield %c : i1
    } -> tensor<i1>
    "stablehlo.return"(%lt) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>, %acc: tensor<4x8xf32>):
    %iv = tensor.extract %i[] : tensor<i32>
    %ix = arith.index_cast %iv : i32 to index
    %row = tensor.extract_slice %xs[%ix, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
    %e2 = tensor.empty() : tensor<1x8xf32>
    %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%row : tensor<1x8xf32>) outs(%e2 : tensor<1x8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.mulf %a, %a : f32
      linalg.yield %m : f32
    } -> tensor<1x8xf32>
    %next = tensor.insert_slice %sq into %acc[%ix, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
    %bi = tensor.empty() : tensor<i32>
    %i1 = linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []} ins(%i : tensor<i32>) outs(%bi : tensor<i32>) {
    ^bb0(%a: i32, %o: i32):
      %n = arith.addi %a, %one : i32
      linalg.yield %n : i32
    } -> tensor<i32>
    "stablehlo.return"(%i1, %next) : (tensor<i32>, tensor<4x8xf32>) -> ()
  }) : (tensor<i32>, tensor<4x8xf32>) -> (tensor<i32>, tensor<4x8xf32>)
  return %init, %r#1 : tensor<4x8xf32>, tensor<4x8xf32>
}

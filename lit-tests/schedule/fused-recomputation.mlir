// A recomputation that the op right after it alone reads, and that op can compute itself
// (elementwise fusion), is fused into it: the recomputed value is never materialized, the
// memory model says so (report "fused", graph JSON "fuses"), and the run measures it.
//
// q (a reduction) feeds a = -q; b = exp(a) and c = a * b (as f64, so c writes no input's
// buffer) read a. Fusing a into c before planning would keep q alive beside a, so fusion
// leaves the pair, and the graph JSON says c may compute a (node 3) itself.
// RUN: remat-opt %s --emit=graph-json | FileCheck %s --check-prefix=GRAPH
// GRAPH: "name": "generic_5",
// GRAPH: "fuses": [
// GRAPH-NEXT: 3,
// GRAPH-NEXT: 4
//
// Recomputing a right before c: fused, so the clone is gone and c computes -q itself.
// RUN: echo '{"function": "main", "strategy": "given", "steps": [1, 2, 3, 4, 3, 5]}' > %t.json
// RUN: remat-opt %s --schedule=%t.json --report -o %t.mlir 2>&1 | FileCheck %s --check-prefix=REPORT
// REPORT:      plan                      64 B    100.0%      4.0000e1  +11.1% recompute, 1 ops recomputed
// REPORT-NEXT: fused             1 of them computed inside the op that reads them
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// IR-LABEL: func.func @main
// IR:       %[[Q:.*]] = linalg.generic {{.*}}"reduction"
// IR:       %[[A:.*]] = linalg.generic {{.*}} ins(%[[Q]] :
// IR:       arith.negf
// IR:       %[[B:.*]] = linalg.generic {{.*}} ins(%[[A]] :
// IR:       math.exp
// IR:       linalg.generic {{.*}} ins(%[[Q]], %[[B]] :
// IR-NEXT:  ^bb0
// IR-NEXT:  arith.negf
// IR-NOT:   remat.recompute
//
// The rewritten step runs at its planned 64 bytes, outputs identical to the original's.
// RUN: remat-run %t.mlir --compare-with=%s --json | FileCheck %s --check-prefix=MEASURED
// MEASURED: {"peak_bytes":64,"seconds":{{.*}},"outputs":2,"outputs_match":true,

#map = affine_map<(d0) -> (d0)>
#row = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
func.func @main(%x: tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4xf64>) {
  %z = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %f0 = linalg.fill ins(%z : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %q = linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x4xf32>) outs(%f0 : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %a = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%q : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %b = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e2 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e3 = tensor.empty() : tensor<4xf64>
  %c = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e3 : tensor<4xf64>) {
  ^bb0(%in: f32, %in2: f32, %out: f64):
    %p = arith.mulf %in, %in2 : f32
    %w = arith.extf %p : f32 to f64
    linalg.yield %w : f64
  } -> tensor<4xf64>
  return %b, %c : tensor<4xf32>, tensor<4xf64>
}

// Elementwise fusion before planning (--fusion, default auto): which producers are fused
// into their consumers, decided with the memory model. Each case prints the rewritten
// function with --remat=none.
// RUN: remat-opt %s --split-input-file --remat=none | FileCheck %s
// RUN: remat-opt %s --split-input-file --remat=none --fusion=elementwise | FileCheck %s --check-prefix=ALL
// RUN: remat-opt %s --split-input-file --remat=none --fusion=none | FileCheck %s --check-prefix=NONE
// RUN: remat-opt %s --split-input-file --remat=none --report-json=%t.json -o /dev/null
// RUN: FileCheck %s --check-prefix=REPORT < %t.json

#id = affine_map<(d0) -> (d0)>
#sum = affine_map<(d0) -> ()>

// A chain of single-use elementwise ops and the reduction that ends it become one op: each
// producer's input lives on to the consumer anyway, so nothing is held longer, and neither
// intermediate is ever materialized.
// CHECK-LABEL: func.func @chain
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]{{.*}} ins(%arg0 : tensor<256xf32>)
// CHECK:           math.exp
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      arith.addf
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[SUM]]
// NONE-LABEL:  func.func @chain
// NONE-COUNT-3:  linalg.generic
// REPORT:      "function": "chain",
// REPORT:      "baseline": {
// REPORT-NEXT:   "peak_bytes": 4,
// REPORT:      "fusion": {
// REPORT-NEXT:   "mode": "auto",
// REPORT-NEXT:   "fused": 2,
// REPORT-NEXT:   "unfused_nodes": 5,
// REPORT-NEXT:   "unfused_peak_bytes": 2048,
func.func @chain(%x: tensor<256xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %e1 = tensor.empty() : tensor<256xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<256xf32>) outs(%e1 : tensor<256xf32>) {
  ^bb0(%i: f32, %o: f32):
    %r = math.exp %i : f32
    linalg.yield %r : f32
  } -> tensor<256xf32>
  %e2 = tensor.empty() : tensor<256xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<256xf32>) outs(%e2 : tensor<256xf32>) {
  ^bb0(%i: f32, %o: f32):
    %r = arith.mulf %i, %two : f32
    linalg.yield %r : f32
  } -> tensor<256xf32>
  %s = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%s : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#id, #sum], iterator_types = ["reduction"]} ins(%b : tensor<256xf32>) outs(%z : tensor<f32>) {
  ^bb0(%i: f32, %acc: f32):
    %r = arith.addf %i, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %sum : tensor<f32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A producer whose two inputs both die at it is not fused into its later consumer by auto:
// fused, both inputs (2 KiB) would live on to the consumer in place of its own 1 KiB result.
// (The inputs are matmuls, which nothing fuses into.) elementwise fusion does it anyway.
// CHECK-LABEL: func.func @dying_inputs
// CHECK:         %[[A:.*]] = linalg.generic
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      arith.addf
// CHECK:         linalg.matmul
// CHECK:         linalg.generic {{.*}} ins(%[[A]], %{{.*}} : tensor<16x16xf32>, tensor<16x16xf32>)
// ALL-LABEL:   func.func @dying_inputs
// ALL:           linalg.matmul
// ALL:           linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>)
// ALL-NEXT:      ^bb0
// ALL-NEXT:        arith.addf
// ALL-NEXT:        arith.mulf
// NONE-LABEL:  func.func @dying_inputs
// NONE-COUNT-2:  linalg.generic
func.func @dying_inputs(%p: tensor<16x16xf32>, %q: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x16xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %x = linalg.matmul ins(%p, %q : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %e1 = tensor.empty() : tensor<16x16xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %y = linalg.matmul ins(%q, %p : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f1 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %e2 = tensor.empty() : tensor<16x16xf32>
  %a = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<16x16xf32>, tensor<16x16xf32>) outs(%e2 : tensor<16x16xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %r = arith.addf %i, %j : f32
    linalg.yield %r : f32
  } -> tensor<16x16xf32>
  %e3 = tensor.empty() : tensor<16x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %w = linalg.matmul ins(%p, %p : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f3 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %e4 = tensor.empty() : tensor<16x16xf32>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %w : tensor<16x16xf32>, tensor<16x16xf32>) outs(%e4 : tensor<16x16xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %r = arith.mulf %i, %j : f32
    linalg.yield %r : f32
  } -> tensor<16x16xf32>
  return %b : tensor<16x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A forward value read again at the end (a residual, as autodiff leaves them): its input is
// resident there anyway (an argument), so auto clones it into that last reader — computed
// twice, never held across the matmul — and it dies at its forward reader instead.
// CHECK-LABEL: func.func @residual
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      math.tanh
// CHECK:         linalg.matmul
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %arg0 : tensor<16x16xf32>, tensor<16x16xf32>)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      math.tanh
// CHECK-NEXT:      arith.mulf
// REPORT:      "function": "residual",
// REPORT:      "baseline": {
// REPORT-NEXT:   "peak_bytes": 2048,
// REPORT:      "fusion": {
// REPORT-NEXT:   "mode": "auto",
// REPORT-NEXT:   "fused": 1,
// REPORT-NEXT:   "unfused_nodes": 4,
// REPORT-NEXT:   "unfused_peak_bytes": 3072,
func.func @residual(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<16x16xf32>) outs(%e0 : tensor<16x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %t = math.tanh %i : f32
    linalg.yield %t : f32
  } -> tensor<16x16xf32>
  %e1 = tensor.empty() : tensor<16x16xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %h = linalg.matmul ins(%r, %r : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f1 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %e2 = tensor.empty() : tensor<16x16xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%h, %r : tensor<16x16xf32>, tensor<16x16xf32>) outs(%e2 : tensor<16x16xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %t = arith.mulf %i, %j : f32
    linalg.yield %t : f32
  } -> tensor<16x16xf32>
  return %g : tensor<16x16xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>

// A value read through two inputs with the same map (a broadcast constant, squared) is read
// through one once the consumer's inputs are deduplicated, and fused like a value read once:
// the broadcast is never materialized (it was, before: upstream's fusion takes one operand).
// CHECK-LABEL: func.func @read_twice
// CHECK:         %[[Y:.*]] = linalg.generic
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[Y]]
// NONE-LABEL:  func.func @read_twice
// NONE-COUNT-2:  linalg.generic
func.func @read_twice(%x: tensor<256xf32>) -> tensor<256xf32> {
  %c = arith.constant dense<3.0> : tensor<f32>
  %e1 = tensor.empty() : tensor<256xf32>
  %b = linalg.generic {indexing_maps = [#scalar, #id], iterator_types = ["parallel"]} ins(%c : tensor<f32>) outs(%e1 : tensor<256xf32>) {
  ^bb0(%i: f32, %o: f32):
    linalg.yield %i : f32
  } -> tensor<256xf32>
  %e2 = tensor.empty() : tensor<256xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]} ins(%b, %x, %b : tensor<256xf32>, tensor<256xf32>, tensor<256xf32>) outs(%e2 : tensor<256xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32, %o: f32):
    %m = arith.mulf %p, %r : f32
    %s = arith.addf %m, %q : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  return %y : tensor<256xf32>
}

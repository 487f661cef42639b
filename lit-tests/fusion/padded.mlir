// A padded tensor read by an elementwise consumer is fused into it: the consumer computes
// each padded element itself, `select(in the window, source[j], pad value)`, so the padded
// tensor is never materialized — the two forms JAX's steps have: `tensor.pad`, and an
// interior pad legalized as `tensor.insert_slice` with strides into a fill (JAX's max-pool
// gradient adds nine of them). The fused step computes the same values bit for bit.
// RUN: remat-opt %s --split-input-file --remat=none | FileCheck %s
// RUN: remat-opt %s --split-input-file --remat=none --fusion=none | FileCheck %s --check-prefix=NONE
// RUN: remat-opt %s --split-input-file --remat=none --report-json=%t.json -o /dev/null
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: split-file %s %t.d
// RUN: remat-opt %t.d/interior.mlir --remat=none -o %t.fused.mlir
// RUN: remat-run %t.fused.mlir --compare-with %t.d/interior.mlir | FileCheck %s --check-prefix=SAME
// RUN: remat-opt %t.d/edges.mlir --remat=none -o %t.fused-edges.mlir
// RUN: remat-run %t.fused-edges.mlir --compare-with %t.d/edges.mlir | FileCheck %s --check-prefix=SAME

// SAME: bit-identical to the original's

//--- interior.mlir
#id = affine_map<(d0, d1) -> (d0, d1)>
// An accumulator plus an interior-padded gradient (stride 2, offset 1): one op reading the
// accumulator and the 3x3 source; no fill, no insert_slice.
// CHECK-LABEL: func.func @interior
// CHECK-NOT:     linalg.fill
// CHECK-NOT:     tensor.insert_slice
// CHECK:         linalg.generic {{.*}} ins(%arg0 : tensor<8x8xf32>)
// CHECK:           linalg.index 0
// CHECK:           linalg.index 1
// CHECK:           tensor.extract %arg1[
// CHECK:           arith.select
// CHECK:           arith.addf
// NONE-LABEL:  func.func @interior
// NONE:          tensor.insert_slice
// REPORT:      "function": "interior",
// REPORT:      "baseline": {
// REPORT-NEXT:   "peak_bytes": 256,
// REPORT:      "fusion": {
// REPORT-NEXT:   "mode": "auto",
// REPORT-NEXT:   "fused": 1,
// REPORT-NEXT:   "unfused_nodes": 3,
// REPORT-NEXT:   "unfused_peak_bytes": 512,
func.func @interior(%acc: tensor<8x8xf32>, %g: tensor<3x3xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = tensor.insert_slice %g into %f[1, 1] [3, 3] [2, 2] : tensor<3x3xf32> into tensor<8x8xf32>
  %o = tensor.empty() : tensor<8x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc, %p : tensor<8x8xf32>, tensor<8x8xf32>) outs(%o : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

//--- edges.mlir
// tensor.pad with edge padding and a pad value yielded from inside its region; the
// consumer reads it transposed.
// CHECK-LABEL: func.func @edges
// CHECK-NOT:     tensor.pad
// CHECK:         linalg.generic {{.*}} ins(%arg0 : tensor<6x5xf32>)
// CHECK:           tensor.extract %arg1[
// CHECK:           arith.constant -1.000000e+00 : f32
// CHECK:           arith.select
// CHECK:           arith.mulf
// NONE-LABEL:  func.func @edges
// NONE:          tensor.pad
#t = affine_map<(d0, d1) -> (d1, d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @edges(%y: tensor<6x5xf32>, %x: tensor<3x4xf32>) -> tensor<6x5xf32> {
  %pp = tensor.pad %x low[1, 2] high[1, 0] {
  ^bb0(%i: index, %j: index):
    %minus = arith.constant -1.0 : f32
    tensor.yield %minus : f32
  } : tensor<3x4xf32> to tensor<5x6xf32>
  %o = tensor.empty() : tensor<6x5xf32>
  %r = linalg.generic {indexing_maps = [#id2, #t, #id2], iterator_types = ["parallel", "parallel"]} ins(%y, %pp : tensor<6x5xf32>, tensor<5x6xf32>) outs(%o : tensor<6x5xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<6x5xf32>
  return %r : tensor<6x5xf32>
}

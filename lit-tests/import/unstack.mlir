// A read of a stacked tensor (a scan's residuals, once its loops are unrolled) whose region is
// exactly an earlier write's becomes a direct use of the written value; a stack whose reads
// are all forwarded disappears, so each slice can be freed or recomputed on its own.
//
// (--fusion=none keeps the ops this test is about apart.)
// RUN: remat-opt %s --remat=none --fusion=none --split-input-file 2>&1 | FileCheck %s
// RUN: remat-opt %s --remat=none --fusion=none --split-input-file --report-json=%t.json -o /dev/null
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
//
// The unstacked steps run at exactly their planned peak, with the originals' outputs:
// RUN: remat-opt %s --function=forwarded --remat=none --fusion=none --report-json=%t.f.json -o %t.f.mlir
// RUN: remat-opt %s --function=escapes --remat=none --fusion=none --report-json=%t.e.json -o %t.e.mlir
// RUN: remat-run %t.f.mlir --function=forwarded --compare-with=%s --json > %t.f.run
// RUN: remat-run %t.e.mlir --function=escapes --compare-with=%s --json > %t.e.run
// RUN: cat %t.f.json %t.f.run %t.e.json %t.e.run | FileCheck %s --check-prefix=PEAK
// PEAK:      "plan": {
// PEAK-NEXT:   "peak_bytes": [[P1:[0-9]+]],
// PEAK:      {"peak_bytes":[[P1]],{{.*}}"outputs_match":true,
// PEAK:      "plan": {
// PEAK-NEXT:   "peak_bytes": [[P2:[0-9]+]],
// PEAK:      {"peak_bytes":[[P2]],{{.*}}"outputs_match":true,

#id = affine_map<(d0, d1) -> (d0, d1)>

// Two rows written at computed offsets (0 and 1 + 0, as JAX's clamped indices are), read back
// in reverse: both reads see their write, the stack and its writes are gone.
// CHECK-LABEL: func.func @forwarded
// CHECK-NOT:   tensor.insert_slice
// CHECK-NOT:   tensor.extract_slice
// CHECK:       %[[A:.*]] = linalg.generic
// CHECK:       %[[B:.*]] = linalg.generic {{.*}} ins(%[[A]] :
// CHECK:       linalg.generic {{.*}} ins(%[[B]], %[[A]] :
// REPORT:      "function": "forwarded",
// REPORT:      "import": {
// REPORT-NEXT:   "loops_unrolled": 0,
// REPORT-NEXT:   "forwarded_reads": 2,
// REPORT-NEXT:   "erased_ops": 12
func.func @forwarded(%x: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8xf32>
  %stack = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8xf32>) -> tensor<2x8xf32>
  %i0 = arith.constant 0 : i32
  %i1 = arith.constant 1 : i32
  %sum = arith.addi %i1, %i0 : i32
  %c0 = arith.index_cast %i0 : i32 to index
  %c1 = arith.index_cast %sum : i32 to index
  %ea = tensor.empty() : tensor<1x8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<1x8xf32>) outs(%ea : tensor<1x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<1x8xf32>
  %s1 = tensor.insert_slice %a into %stack[%c0, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<2x8xf32>
  %eb = tensor.empty() : tensor<1x8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<1x8xf32>) outs(%eb : tensor<1x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.mulf %v, %v : f32
    linalg.yield %r : f32
  } -> tensor<1x8xf32>
  %s2 = tensor.insert_slice %b into %s1[%c1, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<2x8xf32>
  %rb = tensor.extract_slice %s2[%c1, 0] [1, 8] [1, 1] : tensor<2x8xf32> to tensor<1x8xf32>
  %ra = tensor.extract_slice %s2[%c0, 0] [1, 8] [1, 1] : tensor<2x8xf32> to tensor<1x8xf32>
  %es = tensor.empty() : tensor<1x8xf32>
  %out = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%rb, %ra : tensor<1x8xf32>, tensor<1x8xf32>) outs(%es : tensor<1x8xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %r = arith.subf %u, %v : f32
    linalg.yield %r : f32
  } -> tensor<1x8xf32>
  return %out : tensor<1x8xf32>
}

// -----

// The stack is also returned: the read is forwarded, the writes stay.
// CHECK-LABEL: func.func @escapes
// CHECK:       %[[A:.*]] = linalg.generic
// CHECK:       %[[S:.*]] = tensor.insert_slice %[[A]] into
// CHECK-NOT:   tensor.extract_slice
// CHECK:       linalg.generic {{.*}} ins(%[[A]] :
// CHECK:       return %[[S]],
// REPORT:      "function": "escapes",
// REPORT:      "import": {
// REPORT-NEXT:   "loops_unrolled": 0,
// REPORT-NEXT:   "forwarded_reads": 1,
// REPORT-NEXT:   "erased_ops": 1
func.func @escapes(%x: tensor<1x8xf32>, %stack: tensor<3x8xf32>) -> (tensor<3x8xf32>, tensor<1x8xf32>) {
  %ea = tensor.empty() : tensor<1x8xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<1x8xf32>) outs(%ea : tensor<1x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<1x8xf32>
  %copy = bufferization.alloc_tensor() copy(%stack) : tensor<3x8xf32>
  %s = tensor.insert_slice %a into %copy[2, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<3x8xf32>
  %r = tensor.extract_slice %s[2, 0] [1, 8] [1, 1] : tensor<3x8xf32> to tensor<1x8xf32>
  %es = tensor.empty() : tensor<1x8xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<1x8xf32>) outs(%es : tensor<1x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %v : f32
    linalg.yield %m : f32
  } -> tensor<1x8xf32>
  return %s, %out : tensor<3x8xf32>, tensor<1x8xf32>
}


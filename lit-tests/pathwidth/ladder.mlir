// PWRemat (--remat=pathwidth) on a 16-layer ladder: a forward chain of exps f0..f15 whose
// activations the backward chain g16..g0 reads in reverse (it has a Hamiltonian path, so no
// spine is added). Every value is 1 KiB (arguments are not counted), every op costs 256.
//
// RUN: remat-opt %s --remat=pathwidth --report-json=%t.json -o %t.mlir
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// RUN: remat-run %t.mlir --compare-with=%s --json > %t.run
// RUN: cat %t.json %t.run | FileCheck %s
//
// The report: the input order peaks at g15 with f0..f15, g16 and g15 live (18 KiB). The plan
// halves that: 9 KiB at g15 (f0, f1, f8, f9, f12, f14, f15 kept, g16, g15) and again at g7
// (f0, f1, g8, the recomputed f3..f7, g7). The raw schedule, Algorithm 3's with its repeated
// prefixes, recomputes 33 ops (cost exactly twice the baseline's 33 × 256); polishing keeps
// its peak with 10 of them. The rewritten function runs at exactly the planned peak with the
// original's output.
// CHECK:      "strategy": "pathwidth",
// CHECK:      "baseline": {
// CHECK-NEXT:   "peak_bytes": 18432,
// CHECK-NEXT:   "cost": 8448.0
// CHECK:      "plan": {
// CHECK-NEXT:   "peak_bytes": [[PEAK:9216]],
// CHECK-NEXT:   "cost": 11008.0,
// CHECK-NEXT:   "recompute_overhead": 0.3030{{[0-9]*}},
// CHECK-NEXT:   "recomputed_ops": 10
// CHECK:      "raw_plan": {
// CHECK-NEXT:   "peak_bytes": 9216,
// CHECK-NEXT:   "cost": 16896.0,
// CHECK-NEXT:   "recompute_overhead": 1.0,
// CHECK-NEXT:   "recomputed_ops": 33
// CHECK:      {"peak_bytes":[[PEAK]],{{.*}}"outputs_match":true,
//
// The forward pass runs once, in program order, and nothing in it is a clone (a clone carries
// {remat.recompute} between `linalg.exp` and `ins`).
// IR-LABEL:  func.func @ladder(
// IR-SAME:   %[[X:[a-z0-9]+]]: tensor<256xf32>
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F0:.*]] = linalg.exp ins(%[[X]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F1:.*]] = linalg.exp ins(%[[F0]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F2:.*]] = linalg.exp ins(%[[F1]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F3:.*]] = linalg.exp ins(%[[F2]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F4:.*]] = linalg.exp ins(%[[F3]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F5:.*]] = linalg.exp ins(%[[F4]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F6:.*]] = linalg.exp ins(%[[F5]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F7:.*]] = linalg.exp ins(%[[F6]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F8:.*]] = linalg.exp ins(%[[F7]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F9:.*]] = linalg.exp ins(%[[F8]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F10:.*]] = linalg.exp ins(%[[F9]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F11:.*]] = linalg.exp ins(%[[F10]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F12:.*]] = linalg.exp ins(%[[F11]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F13:.*]] = linalg.exp ins(%[[F12]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F14:.*]] = linalg.exp ins(%[[F13]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[F15:.*]] = linalg.exp ins(%[[F14]] :
//
// g16..g14 read f15 and f14 kept from the forward pass; then f13 is recomputed from the kept
// f12 right before g13, its reader, and g12 reads the kept f12.
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G16:.*]] = linalg.mul ins(%[[F15]], %[[F15]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G15:.*]] = linalg.mul ins(%[[G16]], %[[F15]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G14:.*]] = linalg.mul ins(%[[G15]], %[[F14]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R13:.*]] = linalg.exp {remat.recompute} ins(%[[F12]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G13:.*]] = linalg.mul ins(%[[G14]], %[[R13]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G12:.*]] = linalg.mul ins(%[[G13]], %[[F12]] :
//
// f10 and f11 are recomputed from the kept f9 right before g11; g9 and g8 read the kept f9 and f8.
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R10:.*]] = linalg.exp {remat.recompute} ins(%[[F9]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R11:.*]] = linalg.exp {remat.recompute} ins(%[[R10]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G11:.*]] = linalg.mul ins(%[[G12]], %[[R11]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G10:.*]] = linalg.mul ins(%[[G11]], %[[R10]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G9:.*]] = linalg.mul ins(%[[G10]], %[[F9]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G8:.*]] = linalg.mul ins(%[[G9]], %[[F8]] :
//
// f2..f7 are recomputed from the kept f1 right before g7 and read by g7..g4. The clone of f2
// dies once f3 is recomputed, and f2 is recomputed a second time for g2: kept instead, it
// would be live at g7 beside g8 and f3..f7, a 10 KiB peak. g1 and g0 read the kept f1 and f0.
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R2:.*]] = linalg.exp {remat.recompute} ins(%[[F1]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R3:.*]] = linalg.exp {remat.recompute} ins(%[[R2]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R4:.*]] = linalg.exp {remat.recompute} ins(%[[R3]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R5:.*]] = linalg.exp {remat.recompute} ins(%[[R4]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R6:.*]] = linalg.exp {remat.recompute} ins(%[[R5]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R7:.*]] = linalg.exp {remat.recompute} ins(%[[R6]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G7:.*]] = linalg.mul ins(%[[G8]], %[[R7]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G6:.*]] = linalg.mul ins(%[[G7]], %[[R6]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G5:.*]] = linalg.mul ins(%[[G6]], %[[R5]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G4:.*]] = linalg.mul ins(%[[G5]], %[[R4]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[S2:.*]] = linalg.exp {remat.recompute} ins(%[[F1]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G3:.*]] = linalg.mul ins(%[[G4]], %[[R3]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G2:.*]] = linalg.mul ins(%[[G3]], %[[S2]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G1:.*]] = linalg.mul ins(%[[G2]], %[[F1]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G0:.*]] = linalg.mul ins(%[[G1]], %[[F0]] :
// IR-NEXT:   return %[[G0]] :
//
// The textual pipeline takes the same options: without polishing, the raw schedule's 33
// recomputations are all in the module.
// RUN: remat-opt %s --pass-pipeline='builtin.module(func.func(remat{strategy=pathwidth pw-stop=1 polish=false}))' | FileCheck %s --check-prefix=PIPE
// PIPE-LABEL:   func.func @ladder
// PIPE-COUNT-33: linalg.exp {remat.recompute}
// PIPE-NOT:     remat.recompute
// PIPE:         return
//
// RUN: not remat-opt %s --pass-pipeline='builtin.module(func.func(remat{strategy=pathwidth pw-stop=many}))' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: invalid pw-stop 'many'
func.func @ladder(%x: tensor<256xf32>) -> tensor<256xf32> {
  %e0 = tensor.empty() : tensor<256xf32>
  %f0 = linalg.exp ins(%x : tensor<256xf32>) outs(%e0 : tensor<256xf32>) -> tensor<256xf32>
  %e1 = tensor.empty() : tensor<256xf32>
  %f1 = linalg.exp ins(%f0 : tensor<256xf32>) outs(%e1 : tensor<256xf32>) -> tensor<256xf32>
  %e2 = tensor.empty() : tensor<256xf32>
  %f2 = linalg.exp ins(%f1 : tensor<256xf32>) outs(%e2 : tensor<256xf32>) -> tensor<256xf32>
  %e3 = tensor.empty() : tensor<256xf32>
  %f3 = linalg.exp ins(%f2 : tensor<256xf32>) outs(%e3 : tensor<256xf32>) -> tensor<256xf32>
  %e4 = tensor.empty() : tensor<256xf32>
  %f4 = linalg.exp ins(%f3 : tensor<256xf32>) outs(%e4 : tensor<256xf32>) -> tensor<256xf32>
  %e5 = tensor.empty() : tensor<256xf32>
  %f5 = linalg.exp ins(%f4 : tensor<256xf32>) outs(%e5 : tensor<256xf32>) -> tensor<256xf32>
  %e6 = tensor.empty() : tensor<256xf32>
  %f6 = linalg.exp ins(%f5 : tensor<256xf32>) outs(%e6 : tensor<256xf32>) -> tensor<256xf32>
  %e7 = tensor.empty() : tensor<256xf32>
  %f7 = linalg.exp ins(%f6 : tensor<256xf32>) outs(%e7 : tensor<256xf32>) -> tensor<256xf32>
  %e8 = tensor.empty() : tensor<256xf32>
  %f8 = linalg.exp ins(%f7 : tensor<256xf32>) outs(%e8 : tensor<256xf32>) -> tensor<256xf32>
  %e9 = tensor.empty() : tensor<256xf32>
  %f9 = linalg.exp ins(%f8 : tensor<256xf32>) outs(%e9 : tensor<256xf32>) -> tensor<256xf32>
  %e10 = tensor.empty() : tensor<256xf32>
  %f10 = linalg.exp ins(%f9 : tensor<256xf32>) outs(%e10 : tensor<256xf32>) -> tensor<256xf32>
  %e11 = tensor.empty() : tensor<256xf32>
  %f11 = linalg.exp ins(%f10 : tensor<256xf32>) outs(%e11 : tensor<256xf32>) -> tensor<256xf32>
  %e12 = tensor.empty() : tensor<256xf32>
  %f12 = linalg.exp ins(%f11 : tensor<256xf32>) outs(%e12 : tensor<256xf32>) -> tensor<256xf32>
  %e13 = tensor.empty() : tensor<256xf32>
  %f13 = linalg.exp ins(%f12 : tensor<256xf32>) outs(%e13 : tensor<256xf32>) -> tensor<256xf32>
  %e14 = tensor.empty() : tensor<256xf32>
  %f14 = linalg.exp ins(%f13 : tensor<256xf32>) outs(%e14 : tensor<256xf32>) -> tensor<256xf32>
  %e15 = tensor.empty() : tensor<256xf32>
  %f15 = linalg.exp ins(%f14 : tensor<256xf32>) outs(%e15 : tensor<256xf32>) -> tensor<256xf32>
  %eg = tensor.empty() : tensor<256xf32>
  %g16 = linalg.mul ins(%f15, %f15 : tensor<256xf32>, tensor<256xf32>) outs(%eg : tensor<256xf32>) -> tensor<256xf32>
  %d15 = tensor.empty() : tensor<256xf32>
  %g15 = linalg.mul ins(%g16, %f15 : tensor<256xf32>, tensor<256xf32>) outs(%d15 : tensor<256xf32>) -> tensor<256xf32>
  %d14 = tensor.empty() : tensor<256xf32>
  %g14 = linalg.mul ins(%g15, %f14 : tensor<256xf32>, tensor<256xf32>) outs(%d14 : tensor<256xf32>) -> tensor<256xf32>
  %d13 = tensor.empty() : tensor<256xf32>
  %g13 = linalg.mul ins(%g14, %f13 : tensor<256xf32>, tensor<256xf32>) outs(%d13 : tensor<256xf32>) -> tensor<256xf32>
  %d12 = tensor.empty() : tensor<256xf32>
  %g12 = linalg.mul ins(%g13, %f12 : tensor<256xf32>, tensor<256xf32>) outs(%d12 : tensor<256xf32>) -> tensor<256xf32>
  %d11 = tensor.empty() : tensor<256xf32>
  %g11 = linalg.mul ins(%g12, %f11 : tensor<256xf32>, tensor<256xf32>) outs(%d11 : tensor<256xf32>) -> tensor<256xf32>
  %d10 = tensor.empty() : tensor<256xf32>
  %g10 = linalg.mul ins(%g11, %f10 : tensor<256xf32>, tensor<256xf32>) outs(%d10 : tensor<256xf32>) -> tensor<256xf32>
  %d9 = tensor.empty() : tensor<256xf32>
  %g9 = linalg.mul ins(%g10, %f9 : tensor<256xf32>, tensor<256xf32>) outs(%d9 : tensor<256xf32>) -> tensor<256xf32>
  %d8 = tensor.empty() : tensor<256xf32>
  %g8 = linalg.mul ins(%g9, %f8 : tensor<256xf32>, tensor<256xf32>) outs(%d8 : tensor<256xf32>) -> tensor<256xf32>
  %d7 = tensor.empty() : tensor<256xf32>
  %g7 = linalg.mul ins(%g8, %f7 : tensor<256xf32>, tensor<256xf32>) outs(%d7 : tensor<256xf32>) -> tensor<256xf32>
  %d6 = tensor.empty() : tensor<256xf32>
  %g6 = linalg.mul ins(%g7, %f6 : tensor<256xf32>, tensor<256xf32>) outs(%d6 : tensor<256xf32>) -> tensor<256xf32>
  %d5 = tensor.empty() : tensor<256xf32>
  %g5 = linalg.mul ins(%g6, %f5 : tensor<256xf32>, tensor<256xf32>) outs(%d5 : tensor<256xf32>) -> tensor<256xf32>
  %d4 = tensor.empty() : tensor<256xf32>
  %g4 = linalg.mul ins(%g5, %f4 : tensor<256xf32>, tensor<256xf32>) outs(%d4 : tensor<256xf32>) -> tensor<256xf32>
  %d3 = tensor.empty() : tensor<256xf32>
  %g3 = linalg.mul ins(%g4, %f3 : tensor<256xf32>, tensor<256xf32>) outs(%d3 : tensor<256xf32>) -> tensor<256xf32>
  %d2 = tensor.empty() : tensor<256xf32>
  %g2 = linalg.mul ins(%g3, %f2 : tensor<256xf32>, tensor<256xf32>) outs(%d2 : tensor<256xf32>) -> tensor<256xf32>
  %d1 = tensor.empty() : tensor<256xf32>
  %g1 = linalg.mul ins(%g2, %f1 : tensor<256xf32>, tensor<256xf32>) outs(%d1 : tensor<256xf32>) -> tensor<256xf32>
  %d0 = tensor.empty() : tensor<256xf32>
  %g0 = linalg.mul ins(%g1, %f0 : tensor<256xf32>, tensor<256xf32>) outs(%d0 : tensor<256xf32>) -> tensor<256xf32>
  return %g0 : tensor<256xf32>
}

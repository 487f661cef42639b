// PWRemat (--remat=pathwidth) on a 16-layer ladder (a forward chain whose activations the
// backward chain reads in reverse; it has a Hamiltonian path, so no spine is added). The plan
// halves the peak; polishing keeps that peak at a third of the raw recomputations; the rewritten
// function runs at exactly the planned peak with the original's output.
//
// RUN: remat-opt %s --remat=pathwidth --report-json=%t.json -o %t.mlir
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// RUN: remat-run %t.mlir --compare-with=%s --json > %t.run
// RUN: cat %t.json %t.run | FileCheck %s
//
// CHECK:      "strategy": "pathwidth",
// CHECK:      "baseline": {
// CHECK-NEXT:   "peak_bytes": 18432,
// CHECK:      "plan": {
// CHECK-NEXT:   "peak_bytes": [[PEAK:9216]],
// CHECK:        "recomputed_ops": 10
// CHECK:      "raw_plan": {
// CHECK-NEXT:   "peak_bytes": 9216,
// CHECK:        "recomputed_ops": 33
// CHECK:      {"peak_bytes":[[PEAK]],{{.*}}"outputs_match":true,
//
// IR-LABEL: func.func @ladder
// IR-COUNT-10: linalg.exp {remat.recompute}
// IR-NOT:      remat.recompute
// IR:          return
//
// The textual pipeline takes the same options:
// RUN: remat-opt %s --pass-pipeline='builtin.module(func.func(remat{strategy=pathwidth pw-stop=1 polish=false}))' | FileCheck %s --check-prefix=PIPE
// PIPE-LABEL: func.func @ladder
// PIPE:       remat.recompute
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

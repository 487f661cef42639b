// Re-forwarding (--remat=acg, Feng & Huang) on a 16-layer training step: a forward chain of
// exps, a scalar loss, and a backward chain reading every forward value in reverse. The forward
// part is what the loss depends on; the ACG solver stores about √16 of the chain and the
// backward pass re-forwards each stretch from its stored start. The peak halves, and the
// rewritten step runs at exactly the planned peak with the original's outputs.
//
// RUN: remat-opt %s --remat=acg --report-json=%t.json -o %t.mlir
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// RUN: remat-run %t.mlir --compare-with=%s --json > %t.run
// RUN: cat %t.json %t.run | FileCheck %s
//
// CHECK:      "strategy": "acg",
// CHECK:      "baseline": {
// CHECK-NEXT:   "peak_bytes": 17412,
// CHECK:      "plan": {
// CHECK-NEXT:   "peak_bytes": [[PEAK:8196]],
// CHECK:        "recomputed_ops": 9
// CHECK:      "raw_plan": {
// CHECK-NEXT:   "peak_bytes": 8196,
// CHECK:        "recomputed_ops": 14
// CHECK:      {"peak_bytes":[[PEAK]],{{.*}}"outputs_match":true,
//
// IR-LABEL:    func.func @step
// IR-COUNT-9:  linalg.exp {remat.recompute}
// IR-NOT:      remat.recompute
// IR:          return
//
// Under a budget the cheapest plan within it is chosen (here with fewer recomputations):
// RUN: remat-opt %s --remat=acg --budget=75% --report-json=%t.b.json -o /dev/null
// RUN: FileCheck %s --check-prefix=BUDGET < %t.b.json
// BUDGET:      "strategy": "acg",
// BUDGET:      "plan": {
// BUDGET-NEXT:   "peak_bytes": {{[0-9]+}},
// BUDGET:        "recomputed_ops": {{[0-8]}}{{$}}
//
// The textual pipeline names the strategy the same way:
// RUN: remat-opt %s --pass-pipeline='builtin.module(func.func(remat{strategy=acg}))' | FileCheck %s --check-prefix=PIPE
// PIPE-LABEL: func.func @step
// PIPE:       remat.recompute
func.func @step(%x: tensor<256xf32>) -> (tensor<f32>, tensor<256xf32>) {
  %e1 = tensor.empty() : tensor<256xf32>
  %h1 = linalg.exp ins(%x : tensor<256xf32>) outs(%e1 : tensor<256xf32>) -> tensor<256xf32>
  %e2 = tensor.empty() : tensor<256xf32>
  %h2 = linalg.exp ins(%h1 : tensor<256xf32>) outs(%e2 : tensor<256xf32>) -> tensor<256xf32>
  %e3 = tensor.empty() : tensor<256xf32>
  %h3 = linalg.exp ins(%h2 : tensor<256xf32>) outs(%e3 : tensor<256xf32>) -> tensor<256xf32>
  %e4 = tensor.empty() : tensor<256xf32>
  %h4 = linalg.exp ins(%h3 : tensor<256xf32>) outs(%e4 : tensor<256xf32>) -> tensor<256xf32>
  %e5 = tensor.empty() : tensor<256xf32>
  %h5 = linalg.exp ins(%h4 : tensor<256xf32>) outs(%e5 : tensor<256xf32>) -> tensor<256xf32>
  %e6 = tensor.empty() : tensor<256xf32>
  %h6 = linalg.exp ins(%h5 : tensor<256xf32>) outs(%e6 : tensor<256xf32>) -> tensor<256xf32>
  %e7 = tensor.empty() : tensor<256xf32>
  %h7 = linalg.exp ins(%h6 : tensor<256xf32>) outs(%e7 : tensor<256xf32>) -> tensor<256xf32>
  %e8 = tensor.empty() : tensor<256xf32>
  %h8 = linalg.exp ins(%h7 : tensor<256xf32>) outs(%e8 : tensor<256xf32>) -> tensor<256xf32>
  %e9 = tensor.empty() : tensor<256xf32>
  %h9 = linalg.exp ins(%h8 : tensor<256xf32>) outs(%e9 : tensor<256xf32>) -> tensor<256xf32>
  %e10 = tensor.empty() : tensor<256xf32>
  %h10 = linalg.exp ins(%h9 : tensor<256xf32>) outs(%e10 : tensor<256xf32>) -> tensor<256xf32>
  %e11 = tensor.empty() : tensor<256xf32>
  %h11 = linalg.exp ins(%h10 : tensor<256xf32>) outs(%e11 : tensor<256xf32>) -> tensor<256xf32>
  %e12 = tensor.empty() : tensor<256xf32>
  %h12 = linalg.exp ins(%h11 : tensor<256xf32>) outs(%e12 : tensor<256xf32>) -> tensor<256xf32>
  %e13 = tensor.empty() : tensor<256xf32>
  %h13 = linalg.exp ins(%h12 : tensor<256xf32>) outs(%e13 : tensor<256xf32>) -> tensor<256xf32>
  %e14 = tensor.empty() : tensor<256xf32>
  %h14 = linalg.exp ins(%h13 : tensor<256xf32>) outs(%e14 : tensor<256xf32>) -> tensor<256xf32>
  %e15 = tensor.empty() : tensor<256xf32>
  %h15 = linalg.exp ins(%h14 : tensor<256xf32>) outs(%e15 : tensor<256xf32>) -> tensor<256xf32>
  %e16 = tensor.empty() : tensor<256xf32>
  %h16 = linalg.exp ins(%h15 : tensor<256xf32>) outs(%e16 : tensor<256xf32>) -> tensor<256xf32>
  %zero = arith.constant 0.0 : f32
  %acc0 = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.reduce ins(%h16 : tensor<256xf32>) outs(%acc : tensor<f32>) dimensions = [0]
    (%in: f32, %sum: f32) {
      %s = arith.addf %in, %sum : f32
      linalg.yield %s : f32
    }
  // d loss / d h16 = 1, and d exp(u) / du = exp(u): g16 = h16, g(i-1) = g(i) * h(i-1).
  %d15 = tensor.empty() : tensor<256xf32>
  %g15 = linalg.mul ins(%h16, %h15 : tensor<256xf32>, tensor<256xf32>) outs(%d15 : tensor<256xf32>) -> tensor<256xf32>
  %d14 = tensor.empty() : tensor<256xf32>
  %g14 = linalg.mul ins(%g15, %h14 : tensor<256xf32>, tensor<256xf32>) outs(%d14 : tensor<256xf32>) -> tensor<256xf32>
  %d13 = tensor.empty() : tensor<256xf32>
  %g13 = linalg.mul ins(%g14, %h13 : tensor<256xf32>, tensor<256xf32>) outs(%d13 : tensor<256xf32>) -> tensor<256xf32>
  %d12 = tensor.empty() : tensor<256xf32>
  %g12 = linalg.mul ins(%g13, %h12 : tensor<256xf32>, tensor<256xf32>) outs(%d12 : tensor<256xf32>) -> tensor<256xf32>
  %d11 = tensor.empty() : tensor<256xf32>
  %g11 = linalg.mul ins(%g12, %h11 : tensor<256xf32>, tensor<256xf32>) outs(%d11 : tensor<256xf32>) -> tensor<256xf32>
  %d10 = tensor.empty() : tensor<256xf32>
  %g10 = linalg.mul ins(%g11, %h10 : tensor<256xf32>, tensor<256xf32>) outs(%d10 : tensor<256xf32>) -> tensor<256xf32>
  %d9 = tensor.empty() : tensor<256xf32>
  %g9 = linalg.mul ins(%g10, %h9 : tensor<256xf32>, tensor<256xf32>) outs(%d9 : tensor<256xf32>) -> tensor<256xf32>
  %d8 = tensor.empty() : tensor<256xf32>
  %g8 = linalg.mul ins(%g9, %h8 : tensor<256xf32>, tensor<256xf32>) outs(%d8 : tensor<256xf32>) -> tensor<256xf32>
  %d7 = tensor.empty() : tensor<256xf32>
  %g7 = linalg.mul ins(%g8, %h7 : tensor<256xf32>, tensor<256xf32>) outs(%d7 : tensor<256xf32>) -> tensor<256xf32>
  %d6 = tensor.empty() : tensor<256xf32>
  %g6 = linalg.mul ins(%g7, %h6 : tensor<256xf32>, tensor<256xf32>) outs(%d6 : tensor<256xf32>) -> tensor<256xf32>
  %d5 = tensor.empty() : tensor<256xf32>
  %g5 = linalg.mul ins(%g6, %h5 : tensor<256xf32>, tensor<256xf32>) outs(%d5 : tensor<256xf32>) -> tensor<256xf32>
  %d4 = tensor.empty() : tensor<256xf32>
  %g4 = linalg.mul ins(%g5, %h4 : tensor<256xf32>, tensor<256xf32>) outs(%d4 : tensor<256xf32>) -> tensor<256xf32>
  %d3 = tensor.empty() : tensor<256xf32>
  %g3 = linalg.mul ins(%g4, %h3 : tensor<256xf32>, tensor<256xf32>) outs(%d3 : tensor<256xf32>) -> tensor<256xf32>
  %d2 = tensor.empty() : tensor<256xf32>
  %g2 = linalg.mul ins(%g3, %h2 : tensor<256xf32>, tensor<256xf32>) outs(%d2 : tensor<256xf32>) -> tensor<256xf32>
  %d1 = tensor.empty() : tensor<256xf32>
  %g1 = linalg.mul ins(%g2, %h1 : tensor<256xf32>, tensor<256xf32>) outs(%d1 : tensor<256xf32>) -> tensor<256xf32>
  return %loss, %g1 : tensor<f32>, tensor<256xf32>
}

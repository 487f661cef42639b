// Re-forwarding (--remat=acg, Feng & Huang) on a 16-layer training step: a forward chain of
// exps h1..h16, a scalar loss, and a backward chain g15..g1 reading every forward value in
// reverse. Every value is 1 KiB (the scalar loss 4 B; arguments are not counted), each op costs
// 256 (the fill 1). The forward part is what the loss depends on; the ACG solver stores about
// √16 of the chain and the backward pass re-forwards each stretch from its stored start.
//
// RUN: remat-opt %s --remat=acg --report-json=%t.json -o %t.mlir
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// RUN: remat-run %t.mlir --compare-with=%s --json > %t.run
// RUN: cat %t.json %t.run | FileCheck %s
//
// The report: the input order peaks at g15 with h1..h16 and g15 live (17 KiB + the loss). The
// least-memory plan (Eqn. 1's optimum is 7 KiB + the loss: two stored values and a largest
// segment of five) peaks at 8 KiB + the loss, twice: at g15 (h6, h11..h16 kept, and g15) and
// at g11 (h6, h11, g12, the re-forwarded h7..h10, and g11). Its 9 recomputations cost
// 9 × 256 on top of the baseline's 8193; the raw plan (stored h6 and h12, segments h1..h5,
// h7..h11 and h13..h16) had 14, and polishing drops the five the peak does not need. The
// rewritten step runs at exactly the planned peak with the original's outputs.
// CHECK:      "strategy": "acg",
// CHECK:      "baseline": {
// CHECK-NEXT:   "peak_bytes": 17412,
// CHECK-NEXT:   "cost": 8193.0
// CHECK:      "plan": {
// CHECK-NEXT:   "peak_bytes": [[PEAK:8196]],
// CHECK-NEXT:   "cost": 10497.0,
// CHECK-NEXT:   "recompute_overhead": 0.2812{{[0-9]*}},
// CHECK-NEXT:   "recomputed_ops": 9
// CHECK:      "raw_plan": {
// CHECK-NEXT:   "peak_bytes": 8196,
// CHECK-NEXT:   "cost": 11777.0,
// CHECK-NEXT:   "recompute_overhead": 0.4374{{[0-9]*}},
// CHECK-NEXT:   "recomputed_ops": 14
// CHECK:      {"peak_bytes":[[PEAK]],{{.*}}"outputs_match":true,
//
// The forward pass runs once, in program order, and nothing in it is a clone (a clone carries
// {remat.recompute} between `linalg.exp` and `ins`); the loss reads the forward's h16.
// IR-LABEL:  func.func @step(
// IR-SAME:   %[[X:[a-z0-9]+]]: tensor<256xf32>
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H1:.*]] = linalg.exp ins(%[[X]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H2:.*]] = linalg.exp ins(%[[H1]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H3:.*]] = linalg.exp ins(%[[H2]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H4:.*]] = linalg.exp ins(%[[H3]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H5:.*]] = linalg.exp ins(%[[H4]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H6:.*]] = linalg.exp ins(%[[H5]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H7:.*]] = linalg.exp ins(%[[H6]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H8:.*]] = linalg.exp ins(%[[H7]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H9:.*]] = linalg.exp ins(%[[H8]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H10:.*]] = linalg.exp ins(%[[H9]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H11:.*]] = linalg.exp ins(%[[H10]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H12:.*]] = linalg.exp ins(%[[H11]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H13:.*]] = linalg.exp ins(%[[H12]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H14:.*]] = linalg.exp ins(%[[H13]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H15:.*]] = linalg.exp ins(%[[H14]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[H16:.*]] = linalg.exp ins(%[[H15]] :
// IR-NEXT:   %[[ZERO:.*]] = arith.constant 0.0
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] :
// IR-NEXT:   %[[LOSS:.*]] = linalg.reduce ins(%[[H16]] : tensor<256xf32>) outs(%[[ACC]] :
//
// g15..g12 read h16..h12 kept from the forward pass: no recomputation yet.
// IR-NOT:    remat.recompute
// IR:        %[[G15:.*]] = linalg.mul ins(%[[H16]], %[[H15]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G14:.*]] = linalg.mul ins(%[[G15]], %[[H14]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G13:.*]] = linalg.mul ins(%[[G14]], %[[H13]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G12:.*]] = linalg.mul ins(%[[G13]], %[[H12]] :
//
// h7..h10 are re-forwarded from the stored h6, in one stretch, right before g11: the raw
// plan's segment (h7..h11, between the stored h6 and h12) is re-forwarded before g11, its
// first reader, and polishing dropped only h11's clone, so g11 reads the forward's h11.
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R7:.*]] = linalg.exp {remat.recompute} ins(%[[H6]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R8:.*]] = linalg.exp {remat.recompute} ins(%[[R7]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R9:.*]] = linalg.exp {remat.recompute} ins(%[[R8]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R10:.*]] = linalg.exp {remat.recompute} ins(%[[R9]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G11:.*]] = linalg.mul ins(%[[G12]], %[[H11]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G10:.*]] = linalg.mul ins(%[[G11]], %[[R10]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G9:.*]] = linalg.mul ins(%[[G10]], %[[R9]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G8:.*]] = linalg.mul ins(%[[G9]], %[[R8]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G7:.*]] = linalg.mul ins(%[[G8]], %[[R7]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G6:.*]] = linalg.mul ins(%[[G7]], %[[H6]] :
//
// h1..h5 are re-forwarded from the argument right before g5, their first reader; the
// forward's h1..h5 are never read again.
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R1:.*]] = linalg.exp {remat.recompute} ins(%[[X]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R2:.*]] = linalg.exp {remat.recompute} ins(%[[R1]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R3:.*]] = linalg.exp {remat.recompute} ins(%[[R2]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R4:.*]] = linalg.exp {remat.recompute} ins(%[[R3]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[R5:.*]] = linalg.exp {remat.recompute} ins(%[[R4]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G5:.*]] = linalg.mul ins(%[[G6]], %[[R5]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G4:.*]] = linalg.mul ins(%[[G5]], %[[R4]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G3:.*]] = linalg.mul ins(%[[G4]], %[[R3]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G2:.*]] = linalg.mul ins(%[[G3]], %[[R2]] :
// IR-NEXT:   tensor.empty
// IR-NEXT:   %[[G1:.*]] = linalg.mul ins(%[[G2]], %[[R1]] :
// IR-NEXT:   return %[[LOSS]], %[[G1]] :
//
// Under a budget the cheapest plan within it is chosen. At 75% (13059 bytes) at most 11 of the
// 16 forward values can be live at g15 (with h16, h15 and g15), so at least five are
// recomputed; re-forwarding h1..h5 from the argument costs exactly five, and the plan peaks at
// 12 KiB + the loss.
// RUN: remat-opt %s --remat=acg --budget=75% --report-json=%t.b.json -o %t.b.mlir
// RUN: FileCheck %s --check-prefix=BUDGET < %t.b.json
// BUDGET:      "strategy": "acg",
// BUDGET:      "budget_bytes": 13059,
// BUDGET:      "plan": {
// BUDGET-NEXT:   "peak_bytes": 12292,
// BUDGET-NEXT:   "cost": 9473.0,
// BUDGET:        "recomputed_ops": 5
//
// The forward pass and g15..g11 recompute nothing; h1..h5 are re-forwarded from the argument
// in one stretch after g11 (the raw plan's segment is re-forwarded before its first reader,
// and polishing kept the forward's h6..h10 for g10..g6); g5..g1 read the clones.
// RUN: FileCheck %s --check-prefix=BUDGET-IR < %t.b.mlir
// BUDGET-IR-LABEL: func.func @step(
// BUDGET-IR-SAME:  %[[X:[a-z0-9]+]]: tensor<256xf32>
// BUDGET-IR-NOT:   remat.recompute
// BUDGET-IR:       %[[G15:.*]] = linalg.mul ins(
// BUDGET-IR-NEXT:  tensor.empty
// BUDGET-IR-NEXT:  %[[G14:.*]] = linalg.mul ins(%[[G15]],
// BUDGET-IR-NEXT:  tensor.empty
// BUDGET-IR-NEXT:  %[[G13:.*]] = linalg.mul ins(%[[G14]],
// BUDGET-IR-NEXT:  tensor.empty
// BUDGET-IR-NEXT:  %[[G12:.*]] = linalg.mul ins(%[[G13]],
// BUDGET-IR-NEXT:  tensor.empty
// BUDGET-IR-NEXT:  %[[G11:.*]] = linalg.mul ins(%[[G12]],
// BUDGET-IR-NEXT:  tensor.empty
// BUDGET-IR-NEXT:  %[[R1:.*]] = linalg.exp {remat.recompute} ins(%[[X]] :
// BUDGET-IR-NEXT:  tensor.empty
// BUDGET-IR-NEXT:  %[[R2:.*]] = linalg.exp {remat.recompute} ins(%[[R1]] :
// BUDGET-IR-NEXT:  tensor.empty
// BUDGET-IR-NEXT:  %[[R3:.*]] = linalg.exp {remat.recompute} ins(%[[R2]] :
// BUDGET-IR-NEXT:  tensor.empty
// BUDGET-IR-NEXT:  %[[R4:.*]] = linalg.exp {remat.recompute} ins(%[[R3]] :
// BUDGET-IR-NEXT:  tensor.empty
// BUDGET-IR-NEXT:  %[[R5:.*]] = linalg.exp {remat.recompute} ins(%[[R4]] :
// BUDGET-IR-NEXT:  tensor.empty
// BUDGET-IR-NEXT:  %[[G10:.*]] = linalg.mul ins(%[[G11]], %{{.*}} :
// BUDGET-IR-NOT:   remat.recompute
// BUDGET-IR:       %[[G5:.*]] = linalg.mul ins(%{{.*}}, %[[R5]] :
// BUDGET-IR-NEXT:  tensor.empty
// BUDGET-IR-NEXT:  %[[G4:.*]] = linalg.mul ins(%[[G5]], %[[R4]] :
// BUDGET-IR-NEXT:  tensor.empty
// BUDGET-IR-NEXT:  %[[G3:.*]] = linalg.mul ins(%[[G4]], %[[R3]] :
// BUDGET-IR-NEXT:  tensor.empty
// BUDGET-IR-NEXT:  %[[G2:.*]] = linalg.mul ins(%[[G3]], %[[R2]] :
// BUDGET-IR-NEXT:  tensor.empty
// BUDGET-IR-NEXT:  %[[G1:.*]] = linalg.mul ins(%[[G2]], %[[R1]] :
// BUDGET-IR-NEXT:  return %{{.*}}, %[[G1]] :
//
// The textual pipeline names the strategy the same way and gives the same module.
// RUN: remat-opt %s --pass-pipeline='builtin.module(func.func(remat{strategy=acg}))' | FileCheck %s --check-prefix=IR
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

// A forward chain whose activations the backward chain reads in reverse. Under a budget of
// 4 KiB greedy evicts the oldest activation and recomputes it right before its use.
// RUN: remat-opt %s --remat=greedy --budget=4KiB --report 2> %t.report | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.report
// RUN: remat-opt %s --remat=greedy --budget=4KiB | mlir-opt > /dev/null

// CHECK-LABEL: func.func @chain
// CHECK-SAME:    (%[[X:.*]]: tensor<256xf32>)
// CHECK:         %[[A:.*]] = math.exp %[[X]] : tensor<256xf32>
// CHECK:         %[[B:.*]] = math.exp %[[A]] : tensor<256xf32>
// CHECK-NOT:     remat.recompute
// CHECK:         %[[GB:.*]] = arith.mulf %{{.*}}, %[[B]]
// CHECK:         %[[A2:.*]] = math.exp %[[X]] {remat.recompute} : tensor<256xf32>
// CHECK:         %[[GA:.*]] = arith.mulf %[[GB]], %[[A2]]
// CHECK:         return %[[GA]]

// REPORT: remat-opt report for @chain
// REPORT: strategy          greedy
// REPORT: budget            4.00 KiB (80.0%)
// REPORT: nodes             8
// REPORT: baseline              5.00 KiB    100.0%
// REPORT: plan                  4.00 KiB     80.0%  {{.*}} 1 ops recomputed
func.func @chain(%x: tensor<256xf32>) -> tensor<256xf32> {
  %a = math.exp %x : tensor<256xf32>
  %b = math.exp %a : tensor<256xf32>
  %c = math.exp %b : tensor<256xf32>
  %d = math.exp %c : tensor<256xf32>
  %gd = arith.mulf %d, %d : tensor<256xf32>
  %gc = arith.mulf %gd, %c : tensor<256xf32>
  %gb = arith.mulf %gc, %b : tensor<256xf32>
  %ga = arith.mulf %gb, %a : tensor<256xf32>
  return %ga : tensor<256xf32>
}

// Budgets that cannot be met name the smallest budget the strategy meets and, below the
// proven lower bound, say so. Nothing is written.
// RUN: not remat-opt %s --remat=greedy --budget=2KiB -o %t.out 2>&1 | FileCheck %s --check-prefix=BELOW
// RUN: not test -e %t.out
// RUN: not remat-opt %s --remat=none --budget=90% 2>&1 | FileCheck %s --check-prefix=NONE

// BELOW: budget.mlir:[[@LINE+3]]:1: error: budget 2.00 KiB is below 3.00 KiB, a lower bound on the peak of any schedule of this function; the smallest budget 'greedy' meets is 3.00 KiB (3072 bytes)

// NONE: error: strategy 'none' cannot meet the budget of 4.50 KiB: its plan peaks at 5.00 KiB; the smallest budget 'none' meets is 5.00 KiB (5120 bytes)
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

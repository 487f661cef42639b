// The remat pass in a textual pipeline, with its options, on a function or on the module.
// RUN: remat-opt %s --pass-pipeline='builtin.module(func.func(remat{strategy=greedy budget=80%}))' | FileCheck %s
// RUN: remat-opt %s --pass-pipeline='builtin.module(remat{strategy=greedy budget=4KiB function=chain})' | FileCheck %s
// RUN: not remat-opt %s --pass-pipeline='builtin.module(func.func(remat{strategy=magic}))' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not remat-opt %s --pass-pipeline='builtin.module(func.func(remat{strategy=greedy budget=1KiB}))' 2>&1 | FileCheck %s --check-prefix=INFEASIBLE
// RUN: not remat-opt %s --pass-pipeline='builtin.module(func.func(remat{strategy=ilp ilp-method=guess}))' 2>&1 | FileCheck %s --check-prefix=BAD-ILP
// RUN: remat-opt %s --pass-pipeline='builtin.module(func.func(remat{strategy=auto budget=80% auto-time-limit=5 ilp-time-limit=1 ilp-order=free ilp-stages=4 ilp-gap=0.01 ilp-warm-start=true ilp-seed=7}))' | FileCheck %s

// CHECK-LABEL: func.func @chain
// CHECK:         math.exp %{{.*}} {remat.recompute}
// BAD: error: unknown strategy 'magic' (available: none, {{(.*, )?}}greedy, {{.*}}auto{{(, .*)?}})
// BAD-ILP: error: invalid ilp-method 'guess' (expected milp, lp-rounding or round-then-milp)
// INFEASIBLE: pass-pipeline.mlir:[[@LINE+1]]:1: error: budget 1.00 KiB is below 3.00 KiB
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

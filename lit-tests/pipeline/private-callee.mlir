// On func.func the pass plans the public function, inlining the private function it calls,
// and leaves the private one alone: planning a helper on its own would change what its
// callers inline, depending on which a threaded pass manager ran first.
// RUN: remat-opt %s --pass-pipeline='builtin.module(func.func(remat{strategy=greedy budget=80%}))' | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-NOT:     call @forward
// CHECK:         math.exp %{{.*}} {remat.recompute}
// CHECK-LABEL: func.func private @forward
// CHECK-NOT:     remat.recompute
// CHECK:         return
func.func @main(%x: tensor<256xf32>) -> tensor<256xf32> {
  %a, %b, %c, %d = func.call @forward(%x) : (tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>)
  %gd = arith.mulf %d, %d : tensor<256xf32>
  %gc = arith.mulf %gd, %c : tensor<256xf32>
  %gb = arith.mulf %gc, %b : tensor<256xf32>
  %ga = arith.mulf %gb, %a : tensor<256xf32>
  return %ga : tensor<256xf32>
}

func.func private @forward(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>) {
  %a = math.exp %x : tensor<256xf32>
  %b = math.exp %a : tensor<256xf32>
  %c = math.exp %b : tensor<256xf32>
  %d = math.exp %c : tensor<256xf32>
  return %a, %b, %c, %d : tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>
}

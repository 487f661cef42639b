// --lower=cpu: the rewritten step comes out in the LLVM dialect, allocating through the
// generic functions a runner counts, with the tensor signature kept for it.
// RUN: remat-opt %s --remat=greedy --lower=cpu | FileCheck %s
// RUN: remat-opt %s --remat=greedy --lower=cpu | mlir-opt -o /dev/null
// RUN: remat-opt %s --remat=greedy --lower=cpu -o %t.ll.mlir && remat-run %t.ll.mlir --compare-with=%s --json | FileCheck %s --check-prefix=MEASURED
// RUN: remat-opt --print-lowering-pipeline | FileCheck %s --check-prefix=PIPELINE

// CHECK-DAG: llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
// CHECK: llvm.func @main({{.*}}) -> {{.*}} attributes {remat.signature = (tensor<4x8xf32>) -> tensor<f32>}
// CHECK-NOT: func.func
// CHECK-NOT: tensor.empty

// MEASURED: {"peak_bytes":{{[0-9]+}},"seconds":{{.*}},"outputs":1,"outputs_match":true,

// PIPELINE: builtin.module(remat-lower-stablehlo,inline{{.*}},one-shot-bufferize{{.*}}ownership-based-buffer-deallocation{{.*}}func.func(remat-place-deallocs){{.*}}finalize-memref-to-llvm{use-generic-functions=1}
// PIPELINE-NOT: cse

func.func @main(%x: tensor<4x8xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %sq = linalg.mul ins(%x, %x : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%s : tensor<f32>) -> tensor<f32>
  %sum = linalg.reduce ins(%sq : tensor<4x8xf32>) outs(%z : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  return %sum : tensor<f32>
}

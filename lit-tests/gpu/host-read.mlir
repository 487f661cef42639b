// Host code may not touch device memory. A scalar it reads (here the index of a dynamic
// slice) is staged through a pinned host buffer (counted as staging bytes, apart from the
// plan's host bytes) by a one-iteration kernel.
// RUN: remat-opt %s --pass-pipeline='builtin.module()' --lower=gpu --gpu-format=ptx | FileCheck %s

// CHECK-LABEL: llvm.func @slice(
// CHECK: llvm.call @remat_staging_alloc_next()
// CHECK: llvm.call @_mlir_memref_to_llvm_alloc
// CHECK: gpu.launch_func @slice_kernel_0::@slice_kernel
// CHECK-NEXT: llvm.load {{.*}} : !llvm.ptr -> i32
// CHECK-NEXT: llvm.call @_mlir_memref_to_llvm_free
func.func @slice(%t: tensor<8x4xf32>, %i: tensor<i32>) -> tensor<1x4xf32> {
  %one = arith.constant dense<1> : tensor<i32>
  %e = tensor.empty() : tensor<i32>
  %j = linalg.add ins(%i, %one : tensor<i32>, tensor<i32>) outs(%e : tensor<i32>) -> tensor<i32>
  %s = tensor.extract %j[] : tensor<i32>
  %k = arith.index_cast %s : i32 to index
  %r = tensor.extract_slice %t[%k, 0] [1, 4] [1, 1] : tensor<8x4xf32> to tensor<1x4xf32>
  return %r : tensor<1x4xf32>
}

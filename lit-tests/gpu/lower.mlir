// --lower=gpu: the rewritten step becomes host code in the LLVM dialect that allocates through
// the counting functions (as on the CPU) and launches kernels, and the kernels become
// gpu.binary modules for the NVVM target. Nothing on the host reads or writes a buffer.
// RUN: remat-opt %s --remat=none --lower=gpu --gpu-format=ptx | FileCheck %s
// RUN: remat-opt %s --remat=none --lower=gpu --gpu-format=ptx --gpu-chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: remat-opt --lower=gpu --gpu-format=ptx --print-lowering-pipeline | FileCheck %s --check-prefix=PIPELINE

// CHECK-DAG: llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
// CHECK-LABEL: llvm.func @main(
// CHECK-SAME: remat.signature = (tensor<4x8xf32>) -> tensor<f32>
// CHECK-NOT: llvm.load
// CHECK-NOT: llvm.store
// CHECK: llvm.call @_mlir_memref_to_llvm_alloc
// CHECK: gpu.launch_func @main_kernel::@main_kernel
// CHECK: gpu.launch_func @main_kernel_0::@main_kernel
// CHECK: gpu.launch_func @main_kernel_1::@main_kernel
// CHECK-NEXT: llvm.call @_mlir_memref_to_llvm_free
// CHECK-NEXT: llvm.return
// CHECK: gpu.binary @main_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">, {{.*}}assembly = "
// CHECK-NOT: llvm.call @malloc

// SM80: gpu.binary @main_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_80">

// PIPELINE: builtin.module(remat-lower-stablehlo,inline{{.*}},one-shot-bufferize{{.*}}func.func(remat-place-deallocs),remat-host-buffers,convert-bufferization-to-memref,remat-gpu-parallelize,func.func(convert-linalg-to-parallel-loops,scf-parallel-loop-tiling{parallel-loop-tile-sizes=32,8 no-min-max-bounds=1},sccp),func.func(gpu-map-parallel-loops,convert-parallel-loops-to-gpu,remat-gpu-check-host),gpu-kernel-outlining,nvvm-attach-target{chip=sm_90 O=3},gpu.module(convert-gpu-to-nvvm),{{.*}}finalize-memref-to-llvm{use-generic-functions=1}{{.*}}gpu-module-to-binary{format=isa
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

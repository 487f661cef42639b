// With ptxas (tools/setup.sh unpacks it), the kernels are assembled to cubins for the chip.
// REQUIRES: cuda-toolkit
// RUN: remat-opt %S/lower.mlir --remat=none --lower=gpu --gpu-format=cubin | FileCheck %s
// RUN: not remat-opt %S/lower.mlir --remat=none --lower=gpu --gpu-format=cubin --emit=ptx 2>&1 | FileCheck %s --check-prefix=NO-PTX

// CHECK: gpu.binary @main_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">, {{.*}}bin = "\7FELF
// CHECK-NOT: LLVMIRToISATimeInMs

// NO-PTX: error: kernel module @main_kernel is a cubin; lower with --gpu-format=ptx to see its PTX

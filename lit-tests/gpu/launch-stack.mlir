// Translating a launch puts its argument arrays on the stack where the launch is. In a host
// loop (a dimension the GPU mapping left sequential) each iteration would take more, until a
// large step overflows the stack: such launches get a stacksave/stackrestore of their own.
// One in the entry block is part of the fixed frame and is left as it is.
// RUN: remat-opt %s --pass-pipeline='builtin.module(remat-gpu-launch-stack)' | FileCheck %s

// CHECK-LABEL: llvm.func @main(
// CHECK-NOT:     llvm.intr.stacksave
// CHECK:         gpu.launch_func @kernels::@once
// CHECK-NEXT:    llvm.br
// CHECK:         %[[SP:.*]] = llvm.intr.stacksave : !llvm.ptr
// CHECK-NEXT:    gpu.launch_func @kernels::@each
// CHECK-NEXT:    llvm.intr.stackrestore %[[SP]] : !llvm.ptr
// CHECK-NEXT:    llvm.add
// CHECK-NOT:     llvm.intr.stacksave
// CHECK:         llvm.return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @once(%a: i64) kernel {
      gpu.return
    }
    gpu.func @each(%a: i64) kernel {
      gpu.return
    }
  }
  llvm.func @main(%n: i64) {
    %c0 = llvm.mlir.constant(0 : i64) : i64
    %c1 = llvm.mlir.constant(1 : i64) : i64
    gpu.launch_func @kernels::@once blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) : i64 args(%c0 : i64)
    llvm.br ^loop(%c0 : i64)
  ^loop(%i: i64):
    %done = llvm.icmp "sge" %i, %n : i64
    llvm.cond_br %done, ^exit, ^body
  ^body:
    gpu.launch_func @kernels::@each blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) : i64 args(%i : i64)
    %next = llvm.add %i, %c1 : i64
    llvm.br ^loop(%next : i64)
  ^exit:
    llvm.return
  }
}

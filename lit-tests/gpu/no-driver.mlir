// Without a CUDA driver, remat-gpu-run says so and exits before loading the step (whose
// constructors would load kernels).
// UNSUPPORTED: cuda-driver
// RUN: rm -rf %t && mkdir -p %t
// RUN: remat-opt %S/lower.mlir --remat=none --lower=gpu --gpu-format=ptx --emit=library -o %t/step.so
// RUN: not remat-gpu-run %t/step.so 2>&1 | FileCheck %s

// CHECK: remat-gpu-run: error: no CUDA driver (libcuda.so) on this machine

// A scalar the host reads from device memory is staged through a pinned buffer of its size.
// The runner counts that buffer as staging bytes, apart from the host bytes a plan's offloads
// hold (none here), so measured host bytes compare with the plan's exactly.
// REQUIRES: cuda-toolkit
// RUN: rm -rf %t && mkdir -p %t
// RUN: remat-opt %s --pass-pipeline='builtin.module()' --lower=gpu --emit=library -o %t/step.so
// RUN: cc -shared -fPIC -o %t/libcuda.so %fake-cuda
// RUN: env LD_LIBRARY_PATH=%t FAKE_CUDA_SKIP_KERNELS=1 remat-gpu-run %t/step.so --json --repeat 1 | FileCheck %s

// CHECK: "host_peak_bytes":0,"host_allocations":0,"staging_peak_bytes":4,"staging_allocations":1,
func.func @fill(%x: tensor<f32>) -> tensor<4xf32> {
  %s = tensor.extract %x[] : tensor<f32>
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.fill ins(%s : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// An op on the host that the GPU mapping cannot put in a kernel is an error at its location.
// RUN: not remat-opt %s --pass-pipeline='builtin.module()' --lower=gpu --gpu-format=ptx 2>&1 >/dev/null | FileCheck %s

// CHECK: host-errors.mlir:[[@LINE+4]]:8: error: 'vector.transfer_read' would touch device memory from host code
func.func @vectors(%t: tensor<8xf32>) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %t[%c0], %pad : tensor<8xf32>, vector<8xf32>
  return %v : vector<8xf32>
}

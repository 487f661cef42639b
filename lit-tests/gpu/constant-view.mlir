// A kernel that reads a slice of a constant table (threefry's rotation constants in a JAX
// dropout step) reads the kernel module's own copy: the view moves into the launch with the
// global, so the host never hands the device the address of its copy.
// REQUIRES: cuda-toolkit
// RUN: remat-opt %s --remat=none --lower=gpu --gpu-format=ptx | FileCheck %s

// CHECK-LABEL: llvm.func @main(
// CHECK-NOT:     llvm.mlir.addressof
// CHECK:         gpu.launch_func
// The kernel shifts by element 1 of the table, folded from its own copy.
// CHECK:         gpu.binary @main_kernel
// CHECK-SAME:    shl.b32 {{[^;]*}}, 15;
func.func @main(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = arith.constant dense<[13, 15, 26, 6]> : tensor<4xi32>
  %s = tensor.extract_slice %c[1] [1] [1] : tensor<4xi32> to tensor<1xi32>
  %k = tensor.collapse_shape %s [] : tensor<1xi32> into tensor<i32>
  %e = tensor.empty() : tensor<4xi32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%k, %x : tensor<i32>, tensor<4xi32>) outs(%e : tensor<4xi32>) {
  ^bb0(%a: i32, %b: i32, %o: i32):
    %y = arith.shli %b, %a : i32
    linalg.yield %y : i32
  } -> tensor<4xi32>
  return %r : tensor<4xi32>
}

// --emit=ptx: the kernels' PTX, one module per kernel, for the chip asked for. Three kernels:
// the square, the fill of the scalar and the full reduction (both have no
// parallel loop, so they run in a one-iteration loop: one useful thread).
// RUN: remat-opt %S/lower.mlir --remat=none --lower=gpu --emit=ptx | FileCheck %s
// RUN: remat-opt %S/lower.mlir --remat=none --lower=gpu --emit=ptx --gpu-chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: remat-opt %S/lower.mlir --remat=none --lower=gpu --emit=ptx | not grep -q __nv_

// CHECK-LABEL: // gpu.binary @main_kernel
// CHECK: .target sm_90
// CHECK: .visible .entry main_kernel(
// CHECK: mul.rn.f32
// CHECK: st.global.b32
// CHECK-LABEL: // gpu.binary @main_kernel_0
// CHECK: .visible .entry main_kernel(
// CHECK-LABEL: // gpu.binary @main_kernel_1
// CHECK: .visible .entry main_kernel(
// CHECK: add.rn.f32
// CHECK-NOT: gpu.binary

// SM80: .target sm_80

// A launch reading a constant through an op that remat-gpu-check-host cannot move into it
// would be handed the host's copy of the global: an error at that op, not a kernel that
// faults on the device. (Its views — subview, reshapes, casts — move with it.)
// RUN: not remat-opt %s --pass-pipeline='builtin.module(func.func(remat-gpu-check-host))' 2>&1 >/dev/null | FileCheck %s

// CHECK: host-constant-errors.mlir:[[@LINE+6]]:10: error: 'memref.assume_alignment' of a constant would give a kernel the host's copy
module attributes {gpu.container_module} {
  memref.global "private" constant @table : memref<4xi32> = dense<[13, 15, 26, 6]>
  func.func @aligned(%out: memref<4xi32>) {
    %c1 = arith.constant 1 : index
    %g = memref.get_global @table : memref<4xi32>
    %a = memref.assume_alignment %g, 16 : memref<4xi32>
    gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%u = %c1, %v = %c1, %w = %c1) {
      %e = memref.load %a[%tx] : memref<4xi32>
      memref.store %e, %out[%tx] : memref<4xi32>
      gpu.terminator
    }
    return
  }
}

// remat-run --compare-with runs both steps on the same seeded inputs and compares every
// output bit for bit; a difference is an error (exit 1) that says where.
//
// RUN: remat-run %s --compare-with=%S/Inputs/double.mlir --json | FileCheck %s --check-prefix=SAME
// SAME: {"peak_bytes":32,"seconds":{{.*}},"outputs":1,"outputs_match":true,
//
// RUN: not remat-run %s --compare-with=%S/Inputs/square.mlir --json 2>&1 | FileCheck %s --check-prefix=DIFFERENT
// DIFFERENT: "outputs_match":false
// DIFFERENT: error: output 0 (tensor<8xf32>): {{[0-9]+}} element(s) differ, first at index {{[0-9]+}}
//
// The table names the function, the peak and the comparison.
// RUN: remat-run %s --compare-with=%S/Inputs/double.mlir --seed=3 | FileCheck %s --check-prefix=TABLE
// TABLE: function          @main (1 inputs, seed 3)
// TABLE: peak_bytes        32 (32 B)
// TABLE: outputs           1, bit-identical to the original's
//
// Errors: no such device, no such file, mismatched signatures.
// RUN: not remat-run %s --device=cuda 2>&1 | FileCheck %s --check-prefix=DEVICE
// DEVICE: error: --device=cuda is not supported by this build (only cpu)
// RUN: not remat-run %S/Inputs/missing.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: missing.mlir: error: could not read
// RUN: not remat-run %s --compare-with=%S/../lower/place-deallocs.mlir 2>&1 | FileCheck %s --check-prefix=SIGNATURE
// SIGNATURE: error:

func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%i: f32, %o: f32):
    %r = arith.mulf %i, %two : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// Reads of stacked tensors that are not exactly one earlier write stay reads (see
// unstack.mlir for those that are).
//
// RUN: remat-opt %s --remat=none --fusion=none 2>&1 | FileCheck %s
// RUN: remat-opt %s --remat=none --fusion=none --report-json=%t.json -o /dev/null
// RUN: FileCheck %s --check-prefix=REPORT < %t.json

// A region two writes share, a region a
// later write overlaps partly, a smaller read inside a write, a rank-reduced read (another
// type), a read through a write at an offset not known statically.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-5: tensor.extract_slice
// CHECK-NOT:   tensor.extract_slice
// REPORT:      "function": "kept",
// REPORT-NOT:  "import"
// REPORT:      "stop":
func.func @kept(%a: tensor<1x8xf32>, %b: tensor<2x8xf32>, %stack: tensor<4x8xf32>, %i: index)
    -> (tensor<2x8xf32>, tensor<1x8xf32>, tensor<1x4xf32>, tensor<8xf32>, tensor<1x8xf32>) {
  %s1 = tensor.insert_slice %a into %stack[0, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
  %s2 = tensor.insert_slice %a into %s1[1, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
  %r1 = tensor.extract_slice %s2[0, 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32>
  %s3 = tensor.insert_slice %b into %s2[2, 0] [2, 8] [1, 1] : tensor<2x8xf32> into tensor<4x8xf32>
  %s4 = tensor.insert_slice %a into %s3[3, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
  %r2 = tensor.extract_slice %s4[2, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
  %r3 = tensor.extract_slice %s4[0, 0] [1, 4] [1, 1] : tensor<4x8xf32> to tensor<1x4xf32>
  %r4 = tensor.extract_slice %s4[0, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<8xf32>
  %s5 = tensor.insert_slice %a into %s4[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
  %r5 = tensor.extract_slice %s5[0, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
  return %r1, %r2, %r3, %r4, %r5 : tensor<2x8xf32>, tensor<1x8xf32>, tensor<1x4xf32>, tensor<8xf32>, tensor<1x8xf32>
}

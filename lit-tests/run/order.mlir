// Changing only the op order of a step changes its measured peak exactly as the simulator
// says. @wide_first keeps both 4 KiB branches alive at once; @narrow_first finishes one branch
// (reducing it to 4 bytes) before starting the other. Fusion is off: it would fuse each
// branch into its reduction, and the point here is the order of unfused ops.
//
// RUN: remat-opt %s --fusion=none --function=wide_first --report-json=%t.wide.json -o /dev/null
// RUN: FileCheck %s --check-prefix=PLAN-WIDE < %t.wide.json
// RUN: remat-run %s --function=wide_first --json | FileCheck %s --check-prefix=RUN-WIDE
// RUN: remat-opt %s --fusion=none --function=narrow_first --report-json=%t.narrow.json -o /dev/null
// RUN: FileCheck %s --check-prefix=PLAN-NARROW < %t.narrow.json
// RUN: remat-run %s --function=narrow_first --json | FileCheck %s --check-prefix=RUN-NARROW
//
// PLAN-WIDE:  "peak_bytes": 8196,
// RUN-WIDE:   {"peak_bytes":8196,
// PLAN-NARROW: "peak_bytes": 4104,
// RUN-NARROW: {"peak_bytes":4104,

#id = affine_map<(d0) -> (d0)>
#sum = affine_map<(d0) -> ()>

func.func @wide_first(%x: tensor<1024xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1024xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<1024xf32>) outs(%e1 : tensor<1024xf32>) {
  ^bb0(%i: f32, %o: f32):
    %r = arith.mulf %i, %i : f32
    linalg.yield %r : f32
  } -> tensor<1024xf32>
  %e2 = tensor.empty() : tensor<1024xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<1024xf32>) outs(%e2 : tensor<1024xf32>) {
  ^bb0(%i: f32, %o: f32):
    %r = arith.addf %i, %i : f32
    linalg.yield %r : f32
  } -> tensor<1024xf32>
  %s1 = tensor.empty() : tensor<f32>
  %f1 = linalg.fill ins(%zero : f32) outs(%s1 : tensor<f32>) -> tensor<f32>
  %sa = linalg.generic {indexing_maps = [#id, #sum], iterator_types = ["reduction"]} ins(%a : tensor<1024xf32>) outs(%f1 : tensor<f32>) {
  ^bb0(%i: f32, %acc: f32):
    %r = arith.addf %i, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %s2 = tensor.empty() : tensor<f32>
  %f2 = linalg.fill ins(%zero : f32) outs(%s2 : tensor<f32>) -> tensor<f32>
  %sb = linalg.generic {indexing_maps = [#id, #sum], iterator_types = ["reduction"]} ins(%b : tensor<1024xf32>) outs(%f2 : tensor<f32>) {
  ^bb0(%i: f32, %acc: f32):
    %r = arith.addf %i, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %s3 = tensor.empty() : tensor<f32>
  %t = linalg.add ins(%sa, %sb : tensor<f32>, tensor<f32>) outs(%s3 : tensor<f32>) -> tensor<f32>
  return %t : tensor<f32>
}

// The same ops; the second branch starts after the first is reduced.
func.func @narrow_first(%x: tensor<1024xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1024xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<1024xf32>) outs(%e1 : tensor<1024xf32>) {
  ^bb0(%i: f32, %o: f32):
    %r = arith.mulf %i, %i : f32
    linalg.yield %r : f32
  } -> tensor<1024xf32>
  %s1 = tensor.empty() : tensor<f32>
  %f1 = linalg.fill ins(%zero : f32) outs(%s1 : tensor<f32>) -> tensor<f32>
  %sa = linalg.generic {indexing_maps = [#id, #sum], iterator_types = ["reduction"]} ins(%a : tensor<1024xf32>) outs(%f1 : tensor<f32>) {
  ^bb0(%i: f32, %acc: f32):
    %r = arith.addf %i, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e2 = tensor.empty() : tensor<1024xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<1024xf32>) outs(%e2 : tensor<1024xf32>) {
  ^bb0(%i: f32, %o: f32):
    %r = arith.addf %i, %i : f32
    linalg.yield %r : f32
  } -> tensor<1024xf32>
  %s2 = tensor.empty() : tensor<f32>
  %f2 = linalg.fill ins(%zero : f32) outs(%s2 : tensor<f32>) -> tensor<f32>
  %sb = linalg.generic {indexing_maps = [#id, #sum], iterator_types = ["reduction"]} ins(%b : tensor<1024xf32>) outs(%f2 : tensor<f32>) {
  ^bb0(%i: f32, %acc: f32):
    %r = arith.addf %i, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %s3 = tensor.empty() : tensor<f32>
  %t = linalg.add ins(%sa, %sb : tensor<f32>, tensor<f32>) outs(%s3 : tensor<f32>) -> tensor<f32>
  return %t : tensor<f32>
}

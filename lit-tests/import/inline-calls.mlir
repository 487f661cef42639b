// Calls to private functions (as JAX exports them) are inlined before planning, with
// call-site locations; the callee stays in the module. Region ops stay single nodes. The step
// stays StableHLO (--legalize-stablehlo=false): this tests the importer on StableHLO ops.
// RUN: remat-opt %s --legalize-stablehlo=false --remat=none --report 2> %t.report | FileCheck %s
// RUN: remat-opt %s --legalize-stablehlo=false --remat=greedy | mlir-opt --allow-unregistered-dialect > /dev/null
// RUN: FileCheck %s --check-prefix=REPORT < %t.report

// CHECK-LABEL: func.func public @main
// CHECK-NOT:     func.call
// CHECK:         "stablehlo.maximum"
// CHECK:         "stablehlo.reduce"
// CHECK:         "stablehlo.return"
// CHECK:         return
// CHECK-LABEL: func.func private @relu
// REPORT: nodes             8
// REPORT: lower bound       48.0 KiB (100.0%)
module {
  func.func public @main(%x: tensor<64x64xf32>) -> (tensor<f32>, tensor<64x64xf32>) {
    %h = "stablehlo.exponential"(%x) : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %r = "func.call"(%h) <{callee = @relu}> : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %s = "stablehlo.multiply"(%r, %r) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    %zero = "stablehlo.constant"() <{value = dense<0.0> : tensor<f32>}> : () -> tensor<f32>
    %sum = "stablehlo.reduce"(%s, %zero) <{dimensions = array<i64: 0, 1>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %t = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%t) : (tensor<f32>) -> ()
    }) : (tensor<64x64xf32>, tensor<f32>) -> tensor<f32>
    %g = "stablehlo.multiply"(%s, %h) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    %u = "stablehlo.subtract"(%x, %g) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    return %sum, %u : tensor<f32>, tensor<64x64xf32>
  }
  func.func private @relu(%y: tensor<64x64xf32>) -> tensor<64x64xf32> {
    %zero = "stablehlo.constant"() <{value = dense<0.0> : tensor<64x64xf32>}> : () -> tensor<64x64xf32>
    %m = "stablehlo.maximum"(%y, %zero) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    return %m : tensor<64x64xf32>
  }
}

// Parse errors are reported at their location; nothing is written.
// RUN: not remat-opt %s --split-input-file -o %t.out 2>&1 | FileCheck %s
// RUN: not test -e %t.out

// CHECK: malformed.mlir:[[@LINE+3]]:23: error: use of undeclared SSA value name
func.func @undeclared(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = math.exp %x : tensor<4xf32>
  %b = arith.addf %a, %q : tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// CHECK: malformed.mlir:[[@LINE+2]]:{{[0-9]+}}: error: {{.*}}
func.func @type_mismatch(%x: tensor<4xf32>) -> tensor<8xf32> {
  return %x : tensor<4xf32>
}

// -----

// CHECK: malformed.mlir:[[@LINE+1]]:{{[0-9]+}}: error: {{.*}}
func.func @unterminated(%x: tensor<4xf32>) -> tensor<4xf32> {

// -----

// With unregistered dialects allowed, an unknown op may end a block; a function must still
// end in func.return to be planned.
func.func @no_return(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: malformed.mlir:[[@LINE+1]]:8: error: the function body must end in func.return
  %a = "stablehlo.exponential"(%x) : (tensor<4xf32>) -> tensor<4xf32>
}

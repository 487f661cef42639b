//! Helpers of this crate's unit tests.

/// The example of docs/memory-model.md, "Nodes from MLIR": six nodes, `matmul_3` is its
/// `tensor.empty`, `linalg.fill` and `linalg.matmul`, `collapse_shape_4` a view of it.
pub(crate) const MEMORY_MODEL_EXAMPLE: &str = r#"
    func.func @step(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>) -> tensor<32xf32> {
      %cst = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<4x8xf32>
      %z = linalg.fill ins(%cst : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
      %h = linalg.matmul ins(%x, %w : tensor<4x16xf32>, tensor<16x8xf32>)
                         outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
      %r = tensor.collapse_shape %h [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>
      %e2 = tensor.empty() : tensor<32xf32>
      %y = linalg.exp ins(%r : tensor<32xf32>) outs(%e2 : tensor<32xf32>) -> tensor<32xf32>
      return %y : tensor<32xf32>
    }
"#;

/// `expected`'s lines, trimmed, without blank ones.
pub(crate) fn lines(expected: &str) -> Vec<String> {
    expected.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect()
}

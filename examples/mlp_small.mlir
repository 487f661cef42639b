// A tiny MLP training step, hand-written in linalg-on-tensors (upstream MLIR 22).
//
//   h    = x @ W1                      4x8 @ 8x16 -> 4x16
//   a    = relu(h)
//   o    = a @ W2                      4x16 @ 16x4 -> 4x4
//   loss = 0.5 / B * sum((o - y)^2)    B = 4, a scalar tensor<f32>
//
// Backward (dL/do = (o - y) / B), then plain SGD with lr 0.1:
//   gW2 = a^T @ dout,  da = dout @ W2^T,  dh = da * (h > 0),  gW1 = x^T @ dh
//   W1' = W1 - 0.1 * gW1,  W2' = W2 - 0.1 * gW2
//
// Same calling convention as the JAX exports: parameters first, then the
// batch; results are (loss, new parameters...).

#id = affine_map<(d0, d1) -> (d0, d1)>
#to_scalar = affine_map<(d0, d1) -> ()>
#scalar = affine_map<() -> ()>

module {
  func.func @main(%w1: tensor<8x16xf32>, %w2: tensor<16x4xf32>,
                  %x: tensor<4x8xf32>, %y: tensor<4x4xf32>)
      -> (tensor<f32>, tensor<8x16xf32>, tensor<16x4xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %lr = arith.constant 1.000000e-01 : f32
    %half_over_b = arith.constant 1.250000e-01 : f32  // 0.5 / B
    %inv_b = arith.constant 2.500000e-01 : f32        // 1 / B

    // ---- forward ----------------------------------------------------------
    %h_init = tensor.empty() : tensor<4x16xf32>
    %h_zero = linalg.fill ins(%zero : f32) outs(%h_init : tensor<4x16xf32>) -> tensor<4x16xf32>
    %h = linalg.matmul ins(%x, %w1 : tensor<4x8xf32>, tensor<8x16xf32>)
                       outs(%h_zero : tensor<4x16xf32>) -> tensor<4x16xf32>

    %a_init = tensor.empty() : tensor<4x16xf32>
    %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%h : tensor<4x16xf32>) outs(%a_init : tensor<4x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %zero : f32
      linalg.yield %r : f32
    } -> tensor<4x16xf32>

    %o_init = tensor.empty() : tensor<4x4xf32>
    %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<4x4xf32>) -> tensor<4x4xf32>
    %o = linalg.matmul ins(%a, %w2 : tensor<4x16xf32>, tensor<16x4xf32>)
                       outs(%o_zero : tensor<4x4xf32>) -> tensor<4x4xf32>

    // ---- loss -------------------------------------------------------------
    %d_init = tensor.empty() : tensor<4x4xf32>
    %d = linalg.sub ins(%o, %y : tensor<4x4xf32>, tensor<4x4xf32>)
                    outs(%d_init : tensor<4x4xf32>) -> tensor<4x4xf32>

    %sum_init = tensor.empty() : tensor<f32>
    %sum_zero = linalg.fill ins(%zero : f32) outs(%sum_init : tensor<f32>) -> tensor<f32>
    %sum = linalg.generic {indexing_maps = [#id, #to_scalar], iterator_types = ["reduction", "reduction"]}
        ins(%d : tensor<4x4xf32>) outs(%sum_zero : tensor<f32>) {
    ^bb0(%in: f32, %acc: f32):
      %sq = arith.mulf %in, %in : f32
      %s = arith.addf %acc, %sq : f32
      linalg.yield %s : f32
    } -> tensor<f32>

    %loss_init = tensor.empty() : tensor<f32>
    %loss = linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []}
        ins(%sum : tensor<f32>) outs(%loss_init : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %l = arith.mulf %in, %half_over_b : f32
      linalg.yield %l : f32
    } -> tensor<f32>

    // ---- backward ---------------------------------------------------------
    // dL/do = (o - y) / B
    %dout_init = tensor.empty() : tensor<4x4xf32>
    %dout = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%d : tensor<4x4xf32>) outs(%dout_init : tensor<4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %g = arith.mulf %in, %inv_b : f32
      linalg.yield %g : f32
    } -> tensor<4x4xf32>

    // gW2 = a^T @ dout
    %aT_init = tensor.empty() : tensor<16x4xf32>
    %aT = linalg.transpose ins(%a : tensor<4x16xf32>) outs(%aT_init : tensor<16x4xf32>) permutation = [1, 0]
    %gw2_init = tensor.empty() : tensor<16x4xf32>
    %gw2_zero = linalg.fill ins(%zero : f32) outs(%gw2_init : tensor<16x4xf32>) -> tensor<16x4xf32>
    %gw2 = linalg.matmul ins(%aT, %dout : tensor<16x4xf32>, tensor<4x4xf32>)
                         outs(%gw2_zero : tensor<16x4xf32>) -> tensor<16x4xf32>

    // da = dout @ W2^T
    %w2T_init = tensor.empty() : tensor<4x16xf32>
    %w2T = linalg.transpose ins(%w2 : tensor<16x4xf32>) outs(%w2T_init : tensor<4x16xf32>) permutation = [1, 0]
    %da_init = tensor.empty() : tensor<4x16xf32>
    %da_zero = linalg.fill ins(%zero : f32) outs(%da_init : tensor<4x16xf32>) -> tensor<4x16xf32>
    %da = linalg.matmul ins(%dout, %w2T : tensor<4x4xf32>, tensor<4x16xf32>)
                        outs(%da_zero : tensor<4x16xf32>) -> tensor<4x16xf32>

    // dh = da * (h > 0)
    %dh_init = tensor.empty() : tensor<4x16xf32>
    %dh = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%da, %h : tensor<4x16xf32>, tensor<4x16xf32>) outs(%dh_init : tensor<4x16xf32>) {
    ^bb0(%g: f32, %pre: f32, %out: f32):
      %pos = arith.cmpf ogt, %pre, %zero : f32
      %r = arith.select %pos, %g, %zero : f32
      linalg.yield %r : f32
    } -> tensor<4x16xf32>

    // gW1 = x^T @ dh
    %xT_init = tensor.empty() : tensor<8x4xf32>
    %xT = linalg.transpose ins(%x : tensor<4x8xf32>) outs(%xT_init : tensor<8x4xf32>) permutation = [1, 0]
    %gw1_init = tensor.empty() : tensor<8x16xf32>
    %gw1_zero = linalg.fill ins(%zero : f32) outs(%gw1_init : tensor<8x16xf32>) -> tensor<8x16xf32>
    %gw1 = linalg.matmul ins(%xT, %dh : tensor<8x4xf32>, tensor<4x16xf32>)
                         outs(%gw1_zero : tensor<8x16xf32>) -> tensor<8x16xf32>

    // ---- SGD update: w - lr * g --------------------------------------------
    %w1n_init = tensor.empty() : tensor<8x16xf32>
    %w1n = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%w1, %gw1 : tensor<8x16xf32>, tensor<8x16xf32>) outs(%w1n_init : tensor<8x16xf32>) {
    ^bb0(%w: f32, %g: f32, %out: f32):
      %step = arith.mulf %g, %lr : f32
      %r = arith.subf %w, %step : f32
      linalg.yield %r : f32
    } -> tensor<8x16xf32>

    %w2n_init = tensor.empty() : tensor<16x4xf32>
    %w2n = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%w2, %gw2 : tensor<16x4xf32>, tensor<16x4xf32>) outs(%w2n_init : tensor<16x4xf32>) {
    ^bb0(%w: f32, %g: f32, %out: f32):
      %step = arith.mulf %g, %lr : f32
      %r = arith.subf %w, %step : f32
      linalg.yield %r : f32
    } -> tensor<16x4xf32>

    return %loss, %w1n, %w2n : tensor<f32>, tensor<8x16xf32>, tensor<16x4xf32>
  }
}

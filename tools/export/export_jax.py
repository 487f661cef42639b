#!/usr/bin/env python3
"""Export small JAX training steps as StableHLO and linalg-on-tensors MLIR.

For every model this writes, in MLIR generic op form:

  examples/<model>.stablehlo.mlir  StableHLO exactly as JAX lowers it (private
                                   helper functions and func.call kept).
  examples/<model>.linalg.mlir     the same step legalized with jaxlib's own
                                   MLIR bindings and passes: upstream MLIR
                                   (func, arith, math, linalg, tensor) plus, in
                                   some models, the StableHLO ops
                                   stablehlo-legalize-to-linalg leaves alone
                                   (LEFTOVER_STABLEHLO_OPS).

Each step is `step(params, x, y) -> (loss, new_params)`: softmax
cross-entropy, jax.value_and_grad, plain SGD (lr 0.1). No RNG, no
custom_calls. @main takes jax.tree_util.tree_leaves((params, x, y)) and
returns the loss then the new parameter leaves.

  model           x                    y                      leftover StableHLO ops
  mlp             f32 128x64           one-hot f32 128x10     none
  resnet          f32 NHWC 4x32x32x3   int32 labels [4]       scatter (loss backward)
  transformer     int32 tokens 8x16    int32 labels 8x16      scatter (loss, embedding backward)
  transformer12   the same, 12 blocks  int32 labels 8x16      scatter (loss, embedding backward)
  mlp_checkpoint  f32 128x64           one-hot f32 128x10     optimization_barrier (jax.checkpoint)
  rnn_scan        f32 8x8x16 (T,B,I)   one-hot f32 8x10       while (lax.scan, forward and backward)
  transformer_scan int32 tokens 4x64   int32 labels 4x64      while (lax.scan over 12 blocks), scatter

resnet is ResNet-18-shaped (stem conv + BatchNorm + relu + 3x3/2 max pool,
4 stages of 2 BasicBlocks, widths 8-64, projection shortcuts, global average
pool); its max pool is lax.reduce_window with a hand-written backward
(custom_vjp) equal to JAX's, because JAX's own, stablehlo.select_and_scatter,
has no linalg legalization. Integer inputs are valid for any value in [0, 8).
The ops inside the regions of leftover ops are legalized too (to 0-d
linalg.generic + arith); the final canonicalize/cse then hoists constants and
merges tensor.empty ops out of those regions, so the regions use values
defined in @main.

Only shapes matter for lowering, so parameters are jax.ShapeDtypeStruct and
no weights are ever initialised. The output is deterministic.

Usage: python export_jax.py [--out DIR] [--models mlp,resnet,...]
Normally run through tools/export/regen.sh; tools/export/check_examples.py
checks the files, tools/export/compare_jax.py checks a run of one against JAX.
"""

import argparse
import os
import re
import sys
from typing import Callable, NamedTuple

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jaxlib.mlir import ir, passmanager  # noqa: E402
from jaxlib.mlir._mlir_libs import _jax_mlir_ext, _stablehlo  # noqa: E402

LR = 0.1
F32 = jnp.float32
I32 = jnp.int32

# Passes that take StableHLO (plus CHLO) to upstream linalg-on-tensors.
LEGALIZE_PIPELINE = (
    "builtin.module("
    "func.func(chlo-legalize-to-stablehlo),"
    "stablehlo-legalize-to-linalg)"
)
# After inline_calls(): clean up and drop the now unused private functions.
CLEANUP_PIPELINE = "builtin.module(canonicalize,cse,symbol-dce)"

# Dialects allowed in a linalg file.
UPSTREAM_DIALECTS = {"builtin", "func", "arith", "math", "linalg", "tensor", "scf"}
# The only StableHLO ops stablehlo-legalize-to-linalg may leave in a linalg
# file (it has no pattern for them), with the terminator of their regions.
# The ops inside their regions are legalized like the rest (to 0-d
# linalg.generic on tensor<f32>/tensor<i32> plus arith), so the regions hold
# upstream ops and stablehlo.return only.
LEFTOVER_STABLEHLO_OPS = (
    "stablehlo.scatter",  # integer-label cross-entropy backward, embedding backward
    "stablehlo.while",  # lax.scan, forward and backward
    "stablehlo.optimization_barrier",  # jax.checkpoint
    "stablehlo.select_and_scatter",  # max-pool backward (lax.reduce_window max)
    "stablehlo.return",  # terminator of the regions of the three above
)


def spec(*shape):
    return jax.ShapeDtypeStruct(shape, F32)


def ispec(*shape):
    return jax.ShapeDtypeStruct(shape, I32)


def softmax_xent_onehot(logits, y_onehot):
    """Mean softmax cross-entropy against one-hot labels (no scatter)."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.sum(y_onehot * logp, axis=-1))


# How softmax_xent_int picks the labels' log-probabilities:
#   "take_along_axis"  optax's softmax_cross_entropy_with_integer_labels: a
#                      gather forward and a scatter (add) backward, both with
#                      batching dims (input_batching_dims = the label dims).
#   "flat"             the same loss as a 1-D gather at row * C + label of the
#                      flattened log-probabilities: scatter without batching
#                      dims (inserted_window_dims = [0], index_vector_dim = 1).
INT_LABEL_PICK = "take_along_axis"


def softmax_xent_int(logits, labels):
    """Mean softmax cross-entropy against int32 class labels.

    logits [..., C], labels [...] with values in [0, C). See INT_LABEL_PICK.
    """
    logp = jax.nn.log_softmax(logits, axis=-1)
    if INT_LABEL_PICK == "take_along_axis":
        picked = jnp.take_along_axis(logp, labels[..., None], axis=-1)[..., 0]
    else:
        flat = labels.reshape(-1)
        rows = jnp.arange(flat.shape[0], dtype=flat.dtype) * logp.shape[-1]
        picked = logp.reshape(-1)[rows + flat]
    return -jnp.mean(picked)


def make_step(forward, loss=softmax_xent_onehot):
    def loss_fn(params, x, y):
        return loss(forward(params, x), y)

    def step(params, x, y):
        value, grads = jax.value_and_grad(loss_fn)(params, x, y)
        new_params = jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)
        return value, new_params

    return step


# ---------------------------------------------------------------- mlp
# x: 128x64, 64 -> 128 -> 128 -> 10, relu. One-hot labels: pure upstream linalg.

MLP_BATCH, MLP_DIMS = 128, (64, 128, 128, 10)


def mlp_forward(params, x):
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i + 1 < len(params):
            h = jax.nn.relu(h)
    return h


def mlp_specs():
    params = [
        (spec(a, b), spec(b))
        for a, b in zip(MLP_DIMS[:-1], MLP_DIMS[1:])
    ]
    return params, spec(MLP_BATCH, MLP_DIMS[0]), spec(MLP_BATCH, MLP_DIMS[-1])


# ---------------------------------------------------------------- mlp_checkpoint
# The mlp with jax.checkpoint around each hidden layer (dense + relu): the
# backward pass recomputes them behind stablehlo.optimization_barrier.


def mlp_checkpoint_forward(params, x):
    def hidden(w, b, h):
        return jax.nn.relu(h @ w + b)

    h = x
    for w, b in params[:-1]:
        h = jax.checkpoint(hidden)(w, b, h)
    w, b = params[-1]
    return h @ w + b


# ---------------------------------------------------------------- resnet
# ResNet-18 layout at toy widths. x: NHWC 4x32x32x3, labels: int32 [4].
# Stem: 3x3 conv 3->8, BatchNorm, relu, 3x3/2 max pool (pad 1) -> 16x16.
# 4 stages of 2 BasicBlocks, widths 8, 16, 32, 64; the first block of
# stages 2-4 has stride 2 and a 1x1 conv + BN projection shortcut
# (16x16 -> 8x8 -> 4x4 -> 2x2). Global average pool, dense 64 -> 10.
# Convolutions have no bias (BN follows), padding 1 for 3x3, 0 for 1x1.
# BatchNorm in training mode: batch statistics over N, H, W, learnable scale
# and bias, no running averages.

RES_N, RES_HW, RES_CIN, NCLASS = 4, 32, 3, 10
RES_WIDTHS, RES_BLOCKS = (8, 16, 32, 64), 2
CONV_DN = ("NHWC", "HWIO", "NHWC")
BN_EPS = 1e-5
POOL_WINDOW, POOL_STRIDE, POOL_PAD = 3, 2, 1


def conv(x, w, stride=1):
    pad = (w.shape[0] - 1) // 2
    return lax.conv_general_dilated(
        x, w, window_strides=(stride, stride), padding=((pad, pad), (pad, pad)),
        dimension_numbers=CONV_DN,
    )


def batchnorm(x, scale, bias):
    """Training-mode BatchNorm over N, H, W (batch statistics, biased var)."""
    mu = jnp.mean(x, axis=(0, 1, 2), keepdims=True)
    xc = x - mu
    # xc * xc, not jnp.square: that lowers to chlo.square, and the StableHLO
    # files are meant to hold only stablehlo and func ops.
    var = jnp.mean(xc * xc, axis=(0, 1, 2), keepdims=True)
    return xc * lax.rsqrt(var + F32(BN_EPS)) * scale + bias


def _pool_pads():
    return ((0, 0), (POOL_PAD, POOL_PAD), (POOL_PAD, POOL_PAD), (0, 0))


def _max_pool_reduce_window(x):
    k, s = POOL_WINDOW, POOL_STRIDE
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, k, k, 1), (1, s, s, 1), _pool_pads())


@jax.custom_vjp
def max_pool(x):
    """3x3/2 max pool (pad 1), NHWC, as lax.reduce_window.

    The backward pass is written out by hand (custom_vjp) because JAX's own,
    stablehlo.select_and_scatter, is not legalized by
    stablehlo-legalize-to-linalg. It computes exactly what
    select_and_scatter(ge, add) does: each output's cotangent goes to the
    first maximum of its window in row-major window order (ties included),
    with strided slices, compares, selects and interior-padded pads.
    """
    return _max_pool_reduce_window(x)


def _max_pool_fwd(x):
    y = _max_pool_reduce_window(x)
    return y, (x, y)


def _max_pool_bwd(res, g):
    x, y = res
    n, h, w, c = x.shape
    _, ho, wo, _ = y.shape
    k, s, p = POOL_WINDOW, POOL_STRIDE, POOL_PAD
    neg_inf = jnp.array(-jnp.inf, x.dtype)
    zero = jnp.array(0, g.dtype)
    xp = lax.pad(x, neg_inf, [(lo, hi, 0) for lo, hi in _pool_pads()])
    hp, wp = h + 2 * p, w + 2 * p
    span_h, span_w = s * (ho - 1) + 1, s * (wo - 1) + 1
    taken = None
    dx = None
    for di in range(k):
        for dj in range(k):
            win = lax.slice(xp, (0, di, dj, 0), (n, di + span_h, dj + span_w, c), (1, s, s, 1))
            hit = win == y
            if taken is None:
                taken = hit
            else:
                hit = hit & ~taken
                taken = taken | hit
            part = lax.pad(
                jnp.where(hit, g, zero),
                zero,
                ((0, 0, 0), (di, hp - di - span_h, s - 1), (dj, wp - dj - span_w, s - 1), (0, 0, 0)),
            )
            dx = part if dx is None else dx + part
    return (lax.slice(dx, (0, p, p, 0), (n, p + h, p + w, c)),)


max_pool.defvjp(_max_pool_fwd, _max_pool_bwd)


def basic_block(p, x, stride):
    r = jax.nn.relu(batchnorm(conv(x, p["conv1"], stride), *p["bn1"]))
    r = batchnorm(conv(r, p["conv2"]), *p["bn2"])
    if "proj" in p:
        x = batchnorm(conv(x, p["proj"], stride), *p["proj_bn"])
    return jax.nn.relu(x + r)


def resnet_forward(params, x):
    stem = params["stem"]
    h = jax.nn.relu(batchnorm(conv(x, stem["conv"]), *stem["bn"]))
    h = max_pool(h)
    for si, stage in enumerate(params["stages"]):
        for bi, blk in enumerate(stage):
            h = basic_block(blk, h, 2 if si > 0 and bi == 0 else 1)
    pooled = jnp.mean(h, axis=(1, 2))
    w, b = params["head"]
    return pooled @ w + b


def resnet_specs():
    def bn(c):
        return (spec(c), spec(c))  # (scale, bias)

    def block(cin, cout):
        p = {
            "conv1": spec(3, 3, cin, cout), "bn1": bn(cout),
            "conv2": spec(3, 3, cout, cout), "bn2": bn(cout),
        }
        if cin != cout:
            p["proj"] = spec(1, 1, cin, cout)
            p["proj_bn"] = bn(cout)
        return p

    c0 = RES_WIDTHS[0]
    stages, cin = [], c0
    for c in RES_WIDTHS:
        stages.append([block(cin, c)] + [block(c, c) for _ in range(RES_BLOCKS - 1)])
        cin = c
    params = {
        "stem": {"conv": spec(3, 3, RES_CIN, c0), "bn": bn(c0)},
        "stages": stages,
        "head": (spec(RES_WIDTHS[-1], NCLASS), spec(NCLASS)),
    }
    return params, spec(RES_N, RES_HW, RES_HW, RES_CIN), ispec(RES_N)


# ---------------------------------------------------------------- transformer
# Language model. tokens, labels: int32 8x16 (batch, seq); vocab 64, d_model
# 32. Token embedding (jnp.take, as flax nn.Embed) + learned positional
# embedding, two pre-LN blocks (causal 2-head self-attention with wq/wk/wv/wo
# 32x32 and no biases; a 32 -> 64 -> 32 tanh-gelu MLP), final layernorm,
# dense 32 -> 64 to the vocabulary, integer-label cross-entropy averaged over
# all batch x seq positions (labels are the next tokens, given separately).
# The embedding's gradient and the loss's are stablehlo.scatter.

TF_B, TF_S, TF_D, TF_H, TF_MLP, TF_BLOCKS, TF_VOCAB = 8, 16, 32, 2, 64, 2, 64


def layernorm(x, g, b, eps=1e-5):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    var = jnp.mean(xc * xc, axis=-1, keepdims=True)  # not jnp.square (chlo)
    return xc * lax.rsqrt(var + eps) * g + b


def attention(p, x, n_heads=TF_H):
    b, s, d = x.shape
    hd = d // n_heads

    def heads(t):  # b s d -> b h s hd
        return t.reshape(b, s, n_heads, hd).transpose(0, 2, 1, 3)

    q = heads(x @ p["wq"])
    k = heads(x @ p["wk"])
    v = heads(x @ p["wv"])
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(F32(hd))
    causal = jnp.tril(jnp.ones((s, s), dtype=bool))
    scores = jnp.where(causal, scores, F32(-1e9))
    attn = jax.nn.softmax(scores, axis=-1)
    o = jnp.einsum("bhqk,bhkd->bhqd", attn, v)
    o = o.transpose(0, 2, 1, 3).reshape(b, s, d)
    return o @ p["wo"]


def transformer_forward(params, tokens):
    h = jnp.take(params["embed"], tokens, axis=0) + params["pos"]
    for blk in params["blocks"]:
        h = h + attention(blk["attn"], layernorm(h, *blk["ln1"]))
        m = layernorm(h, *blk["ln2"])
        m = jax.nn.gelu(m @ blk["w1"] + blk["b1"], approximate=True)
        h = h + (m @ blk["w2"] + blk["b2"])
    h = layernorm(h, *params["ln_f"])
    w, b = params["head"]
    return h @ w + b  # [batch, seq, vocab]


def transformer_specs(n_blocks=TF_BLOCKS):
    d = TF_D

    def ln():
        return (spec(d), spec(d))

    blocks = [
        {
            "ln1": ln(),
            "attn": {k: spec(d, d) for k in ("wq", "wk", "wv", "wo")},
            "ln2": ln(),
            "w1": spec(d, TF_MLP),
            "b1": spec(TF_MLP),
            "w2": spec(TF_MLP, d),
            "b2": spec(d),
        }
        for _ in range(n_blocks)
    ]
    params = {
        "embed": spec(TF_VOCAB, d),
        "pos": spec(TF_S, d),
        "blocks": blocks,
        "ln_f": ln(),
        "head": (spec(d, TF_VOCAB), spec(TF_VOCAB)),
    }
    return params, ispec(TF_B, TF_S), ispec(TF_B, TF_S)


# ---------------------------------------------------------------- transformer_scan
# A language model with its blocks under lax.scan, as Flax's nn.scan, MaxText
# and Equinox write deep models: the block parameters are stacked along a
# leading layer axis and one scan body runs every block. The forward scan
# stacks each block's residuals (attention probabilities, MLP activations, ...)
# into [layers, ...] buffers with dynamic_update_slice; the backward scan reads
# them back with dynamic_slice, in reverse. tokens, labels: int32 4x64; vocab
# 128, d_model 64, 4 heads, MLP 64 -> 256 -> 64, 12 pre-LN blocks (the
# transformer's block, wider and on longer sequences, so that activations
# outweigh parameters as in real training). The embedding, final layernorm and
# head stay outside the scan.

TFS_B, TFS_S, TFS_D, TFS_H, TFS_MLP, TFS_BLOCKS, TFS_VOCAB = 4, 64, 64, 4, 256, 12, 128


def transformer_scan_block(h, blk):
    h = h + attention(blk["attn"], layernorm(h, *blk["ln1"]), TFS_H)
    m = layernorm(h, *blk["ln2"])
    m = jax.nn.gelu(m @ blk["w1"] + blk["b1"], approximate=True)
    return h + (m @ blk["w2"] + blk["b2"])


def transformer_scan_forward(params, tokens, block=transformer_scan_block):
    h = jnp.take(params["embed"], tokens, axis=0) + params["pos"]
    h, _ = lax.scan(lambda h, blk: (block(h, blk), None), h, params["blocks"])
    h = layernorm(h, *params["ln_f"])
    w, b = params["head"]
    return h @ w + b


def scanned_lm_params(n, d, mlp, vocab, seq):
    """Parameters of an LM whose n pre-LN blocks are stacked along a leading layer axis."""

    def ln():
        return (spec(n, d), spec(n, d))

    blocks = {
        "ln1": ln(),
        "attn": {k: spec(n, d, d) for k in ("wq", "wk", "wv", "wo")},
        "ln2": ln(),
        "w1": spec(n, d, mlp),
        "b1": spec(n, mlp),
        "w2": spec(n, mlp, d),
        "b2": spec(n, d),
    }
    return {
        "embed": spec(vocab, d),
        "pos": spec(seq, d),
        "blocks": blocks,
        "ln_f": (spec(d), spec(d)),
        "head": (spec(d, vocab), spec(vocab)),
    }


def transformer_scan_specs(n_blocks=TFS_BLOCKS):
    params = scanned_lm_params(n_blocks, TFS_D, TFS_MLP, TFS_VOCAB, TFS_S)
    return params, ispec(TFS_B, TFS_S), ispec(TFS_B, TFS_S)


# ---------------------------------------------------------------- rnn_scan
# Elman RNN: h_t = tanh(x_t @ wx + h_{t-1} @ wh + b), h_0 = 0, as a lax.scan
# over 8 time steps (a stablehlo.while forward and one backward). xs: 8x8x16
# (time, batch, input), hidden 32; dense 32 -> 10 on the last state, one-hot
# labels 8x10.

RNN_T, RNN_B, RNN_IN, RNN_H = 8, 8, 16, 32


def rnn_forward(params, xs):
    p = params["rnn"]

    def cell(h, x):
        return jnp.tanh(x @ p["wx"] + h @ p["wh"] + p["b"]), None

    h, _ = lax.scan(cell, jnp.zeros((xs.shape[1], RNN_H), F32), xs)
    w, b = params["head"]
    return h @ w + b


def rnn_specs():
    params = {
        "rnn": {"wx": spec(RNN_IN, RNN_H), "wh": spec(RNN_H, RNN_H), "b": spec(RNN_H)},
        "head": (spec(RNN_H, NCLASS), spec(NCLASS)),
    }
    return params, spec(RNN_T, RNN_B, RNN_IN), spec(RNN_B, NCLASS)


# ---------------------------------------------------------------- cnn_pool
# A small CNN as people write it with plain JAX ops: two conv + BatchNorm +
# relu stages, a 3x3/2 max pool with "SAME" padding after the first and a 2x2/2
# average pool after the second, both lax.reduce_window; dense 256 -> 10 on the
# flattened features, integer labels. Unlike resnet, the max pool's gradient is
# JAX's own: stablehlo.select_and_scatter (with padding), and the average
# pool's is a pad + reduce_window. x: f32 NHWC 4x16x16x3, labels int32 [4].

CNN_N, CNN_HW, CNN_CIN, CNN_WIDTHS = 4, 16, 3, (8, 16)


def no_remat(f, **_):
    return f


def cnn_pool_stage1(p, h):
    h = jax.nn.relu(batchnorm(conv(h, p["conv"]), *p["bn"]))
    return lax.reduce_window(h, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")


def cnn_pool_stage2(p, h):
    h = jax.nn.relu(batchnorm(conv(h, p["conv"]), *p["bn"]))
    return lax.reduce_window(h, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / F32(4)


def cnn_pool_forward(params, x, remat=no_remat):
    """`remat` wraps each stage (alternatives.py: jax.checkpoint with a policy)."""
    h = remat(cnn_pool_stage1)(params["stage1"], x)
    h = remat(cnn_pool_stage2)(params["stage2"], h)
    h = h.reshape(h.shape[0], -1)
    w, b = params["head"]
    return h @ w + b


def cnn_pool_specs():
    c1, c2 = CNN_WIDTHS
    side = CNN_HW // 4
    params = {
        "stage1": {"conv": spec(3, 3, CNN_CIN, c1), "bn": (spec(c1), spec(c1))},
        "stage2": {"conv": spec(3, 3, c1, c2), "bn": (spec(c2), spec(c2))},
        "head": (spec(side * side * c2, NCLASS), spec(NCLASS)),
    }
    return params, spec(CNN_N, CNN_HW, CNN_HW, CNN_CIN), ispec(CNN_N)


# ---------------------------------------------------------------- attention_causal
# One pre-LN causal self-attention block written with jax.nn.dot_product_attention
# (is_causal=True, the XLA implementation: the mask is built from iotas and
# applied with a select), 4 heads with biases, token embedding in and a vocabulary
# head out. tokens, labels: int32 4x32; vocab 96, d_model 64.

ATT_B, ATT_S, ATT_D, ATT_H, ATT_VOCAB = 4, 32, 64, 4, 96


def attention_causal_block(params, h):
    b, s, d = h.shape
    x = layernorm(h, *params["ln"])

    def heads(w, bias):  # b s d -> b s h hd, the layout dot_product_attention takes
        return (x @ w + bias).reshape(b, s, ATT_H, d // ATT_H)

    q = heads(params["wq"], params["bq"])
    k = heads(params["wk"], params["bk"])
    v = heads(params["wv"], params["bv"])
    o = jax.nn.dot_product_attention(q, k, v, is_causal=True, implementation="xla")
    return h + o.reshape(b, s, d) @ params["wo"]


def attention_causal_forward(params, tokens, remat=no_remat):
    """`remat` wraps the block (embedding and head outside)."""
    h = jnp.take(params["embed"], tokens, axis=0)
    h = remat(attention_causal_block)(params, h)
    w, bias = params["head"]
    return h @ w + bias


def attention_causal_specs():
    d = ATT_D
    params = {"embed": spec(ATT_VOCAB, d), "ln": (spec(d), spec(d))}
    for name in ("q", "k", "v"):
        params["w" + name] = spec(d, d)
        params["b" + name] = spec(d)
    params["wo"] = spec(d, d)
    params["head"] = (spec(d, ATT_VOCAB), spec(ATT_VOCAB))
    return params, ispec(ATT_B, ATT_S), ispec(ATT_B, ATT_S)


# ---------------------------------------------------------------- lm_dropout
# A language model trained with dropout: its 4 pre-LN blocks under lax.scan
# (stacked parameters, as nn.scan), dropout (rate 0.1) on each block's attention
# and MLP outputs with keys split from a PRNG key input, so the step holds JAX's
# threefry2x32 RNG (uint32 arithmetic, shifts, bitcasts). x = (tokens int32 4x16,
# key uint32[2]: jax.random.PRNGKey's raw form), labels int32 4x16; vocab 64,
# d_model 32, 2 heads, MLP 32 -> 64 -> 32; embedding gather in, head out.

LMD_B, LMD_S, LMD_D, LMD_H, LMD_MLP, LMD_BLOCKS, LMD_VOCAB, LMD_RATE = 4, 16, 32, 2, 64, 4, 64, 0.1


def dropout(key, x, rate=LMD_RATE):
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / F32(1.0 - rate), F32(0))


def lm_dropout_block(h, blk_key):
    blk, key = blk_key
    k_attn, k_mlp = jax.random.split(key)
    h = h + dropout(k_attn, attention(blk["attn"], layernorm(h, *blk["ln1"]), LMD_H))
    m = layernorm(h, *blk["ln2"])
    m = jax.nn.gelu(m @ blk["w1"] + blk["b1"], approximate=True)
    return h + dropout(k_mlp, m @ blk["w2"] + blk["b2"]), None


def lm_dropout_forward(params, x, remat=no_remat, unroll=False):
    """`remat` wraps the scan body; `unroll` unrolls the scan (the same arithmetic)."""
    tokens, key = x
    h = jnp.take(params["embed"], tokens, axis=0) + params["pos"]
    keys = jax.random.split(key, LMD_BLOCKS)
    h, _ = lax.scan(remat(lm_dropout_block), h, (params["blocks"], keys), unroll=unroll)
    h = layernorm(h, *params["ln_f"])
    w, b = params["head"]
    return h @ w + b


def lm_dropout_specs():
    params = scanned_lm_params(LMD_BLOCKS, LMD_D, LMD_MLP, LMD_VOCAB, LMD_S)
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    return params, (ispec(LMD_B, LMD_S), key), ispec(LMD_B, LMD_S)


class Model(NamedTuple):
    forward: Callable
    specs: Callable  # () -> (params, x, y) as ShapeDtypeStructs
    loss: Callable
    inputs: tuple  # names of x and y, for the file header


MODELS = {
    "mlp": Model(mlp_forward, mlp_specs, softmax_xent_onehot, ("x", "y_onehot")),
    "resnet": Model(resnet_forward, resnet_specs, softmax_xent_int, ("x", "labels")),
    "transformer": Model(transformer_forward, transformer_specs, softmax_xent_int,
                         ("tokens", "labels")),
    # The same transformer, 12 blocks deep: the depth at which rematerialization pays.
    "transformer12": Model(transformer_forward, lambda: transformer_specs(12), softmax_xent_int,
                           ("tokens", "labels")),
    "mlp_checkpoint": Model(mlp_checkpoint_forward, mlp_specs, softmax_xent_onehot,
                            ("x", "y_onehot")),
    "rnn_scan": Model(rnn_forward, rnn_specs, softmax_xent_onehot, ("xs", "y_onehot")),
    # A wider transformer LM with its 12 blocks under lax.scan.
    "transformer_scan": Model(transformer_scan_forward, transformer_scan_specs, softmax_xent_int,
                              ("tokens", "labels")),
    "cnn_pool": Model(cnn_pool_forward, cnn_pool_specs, softmax_xent_int, ("x", "labels")),
    "attention_causal": Model(attention_causal_forward, attention_causal_specs, softmax_xent_int,
                              ("tokens", "labels")),
    "lm_dropout": Model(lm_dropout_forward, lm_dropout_specs, softmax_xent_int, ("(tokens, key)", "labels")),
}


def make_adam_step(forward, loss=softmax_xent_onehot, b1=0.9, b2=0.999, eps=1e-8):
    """The training step with an Adam update (no bias correction): step(params, m, v, x, y)
    -> (loss, new_params, new_m, new_v). Three step outputs per gradient where SGD has one."""
    def loss_fn(params, x, y):
        return loss(forward(params, x), y)

    def step(params, m, v, x, y):
        value, grads = jax.value_and_grad(loss_fn)(params, x, y)
        tree = jax.tree_util.tree_map
        m = tree(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = tree(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        params = tree(lambda p, m, v: p - LR * m / (jnp.sqrt(v) + eps), params, m, v)
        return value, params, m, v

    return step


def build_step(name):
    """(step, argument specs) of a model: step(params, x, y) -> (loss, new_params), or for
    MODEL_adam (`--adam`) step(params, m, v, x, y) -> (loss, new_params, new_m, new_v)."""
    if name.endswith("_adam"):
        m = MODELS[name[: -len("_adam")]]
        params, x, y = m.specs()
        return make_adam_step(m.forward, m.loss), (params, params, params, x, y)
    m = MODELS[name]
    return make_step(m.forward, m.loss), m.specs()


# ---------------------------------------------------------------- export

# Discardable attributes that only JAX/XLA understand (module-level
# mhlo.num_partitions/num_replicas, jax.result_info on results, sdy.* with
# shardy). MLIR 22 parses the ones JAX emits for these steps (their values
# are builtin attributes), so they are kept; --strip-jax-attrs removes them
# from the linalg files should a newer JAX add some that do not parse.
STRIP_PREFIXES = ("mhlo.", "jax.", "sdy.", "tf.")


def strip_attrs(module):
    """Remove JAX/XLA-only discardable attributes from the module and funcs."""
    removed = set()

    def scrub_dict_array(op, name):
        if name not in op.attributes:
            return
        arr = ir.ArrayAttr(op.attributes[name])
        new = []
        for d in arr:
            d = ir.DictAttr(d)
            kept = {
                d[i].name: d[i].attr
                for i in range(len(d))
                if not d[i].name.startswith(STRIP_PREFIXES)
            }
            removed.update(
                d[i].name for i in range(len(d)) if d[i].name.startswith(STRIP_PREFIXES)
            )
            new.append(ir.DictAttr.get(kept))
        if all(len(ir.DictAttr(x)) == 0 for x in new):
            del op.attributes[name]
        else:
            op.attributes[name] = ir.ArrayAttr.get(new)

    def scrub(op):
        for i in reversed(range(len(op.attributes))):
            na = op.attributes[i]
            if na.name.startswith(STRIP_PREFIXES):
                removed.add(na.name)
                del op.attributes[na.name]

    top = module.operation
    scrub(top)
    for op in module.body.operations:
        op = op.operation
        scrub(op)
        scrub_dict_array(op, "arg_attrs")
        scrub_dict_array(op, "res_attrs")
    return removed


def inline_calls(module):
    """Inline every func.call in the module; return how many were inlined.

    MLIR's `inline` pass is a no-op in jaxlib's context (the func/linalg/
    tensor inliner interfaces are not registered there), so use the helper
    JAX itself uses to inline its own lowerings: _jax_mlir_ext.
    inlined_func_call clones a single-block callee (with IRMapping, so nested
    regions are handled) at the current insertion point.
    """
    funcs = {}
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func":
            funcs[ir.StringAttr(op.attributes["sym_name"]).value] = op

    def calls(fn):
        found = []

        def visit(op):
            if op.name == "func.call":
                found.append(op)
            return ir.WalkResult.ADVANCE

        fn.walk(visit)
        return found

    count = 0
    while True:
        pending = [c for f in funcs.values() for c in calls(f)]
        if not pending:
            return count
        for call in pending:
            callee = funcs[ir.FlatSymbolRefAttr(call.attributes["callee"]).value]
            with ir.InsertionPoint(call), call.location:
                outs = _jax_mlir_ext.inlined_func_call(callee, list(call.operands))
            for old, new in zip(call.results, outs):
                old.replace_all_uses_with(new)
            call.erase()
            count += 1


def generic_asm(module):
    return module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)


def op_names(text):
    return sorted(set(re.findall(r'"([a-z_][a-z0-9_]*\.[a-z0-9_.]+)"\(', text)))


def check_linalg(text, model):
    """Reject anything but upstream ops and LEFTOVER_STABLEHLO_OPS, and dynamic shapes."""
    bad = [
        n for n in op_names(text)
        if n.split(".")[0] not in UPSTREAM_DIALECTS and n not in LEFTOVER_STABLEHLO_OPS
    ]
    if bad:
        raise SystemExit(f"{model}: ops left after legalization that are not allowed: {bad}")
    if re.search(r"tensor<[^>]*\?", text):
        raise SystemExit(f"{model}: dynamic tensor shape in linalg output")


def leftover_ops(text):
    """{op: count} of the StableHLO ops left in a linalg file (terminators aside)."""
    counts = {}
    for n in LEFTOVER_STABLEHLO_OPS:
        c = text.count(f'"{n}"(')
        if c and n != "stablehlo.return":
            counts[n] = c
    return counts


def linalg_form(shlo_text, ctx, strip=False):
    """The linalg-on-tensors form of a StableHLO module's generic text, parsed afresh in
    `ctx`, and the attributes `strip` removed."""
    with ctx:
        _stablehlo.register_stablehlo_passes()
        lin = ir.Module.parse(shlo_text)
        passmanager.PassManager.parse(LEGALIZE_PIPELINE).run(lin.operation)
        inline_calls(lin)
        passmanager.PassManager.parse(CLEANUP_PIPELINE).run(lin.operation)
        removed = strip_attrs(lin) if strip else set()
        return generic_asm(lin), removed


def export(name, out_dir, strip=False):
    step, specs = build_step(name)
    lowered = jax.jit(step).lower(*specs)
    module = lowered.compiler_ir("stablehlo")
    ctx = module.context

    # StableHLO as exported, generic form.
    shlo_text = generic_asm(module)
    if re.search(r"tensor<[^>]*\?", shlo_text):
        raise SystemExit(f"{name}: dynamic tensor shape in StableHLO output")
    bad = [n for n in op_names(shlo_text) if n.split(".")[0] not in ("builtin", "func", "stablehlo")]
    if bad or "custom_call" in shlo_text:
        raise SystemExit(f"{name}: unexpected ops in StableHLO output: {bad or 'custom_call'}")

    lin_text, removed = linalg_form(shlo_text, ctx, strip)
    check_linalg(lin_text, name)
    left = leftover_ops(lin_text)

    adam = name.endswith("_adam")
    x, y = MODELS[name[: -len("_adam")] if adam else name].inputs
    signature = (f"step(params, m, v, {x}, {y}) -> (loss, new_params, new_m, new_v), an Adam update" if adam
                 else f"step(params, {x}, {y}) -> (loss, new_params)")
    header = (
        f"// {name} training step: {signature}\n"
        f"// Generated by tools/export/export_jax.py (jax {jax.__version__}); do not edit.\n"
    )
    left_line = (
        "// Leftover StableHLO ops: " + ", ".join(f"{n} x{c}" for n, c in left.items()) + ".\n"
        if left else ""
    )
    paths = {}
    for kind, text in (("stablehlo", shlo_text), ("linalg", lin_text)):
        path = os.path.join(out_dir, f"{name}.{kind}.mlir")
        extra = left_line if kind == "linalg" else ""
        with open(path, "w") as f:
            f.write(header + f"// Form: {kind}, MLIR generic op form.\n" + extra + text)
        paths[kind] = path
    return paths, removed, left


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "examples"))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument(
        "--transformer-blocks",
        default="",
        help="comma-separated depths N: also export transformerN, the transformer at N blocks "
        "(steps deeper than the bundled ones, for checks on models not in the repo)",
    )
    ap.add_argument(
        "--scan-blocks",
        default="",
        help="comma-separated depths N: also export transformer_scanN, the scanned LM at N blocks "
        "(one lax.scan over N layers: deeper steps for the planners, not bundled)",
    )
    ap.add_argument(
        "--adam",
        action="store_true",
        help="export each model's step with an Adam update instead of SGD, as MODEL_adam "
        "(params and both moments in, their new values out: three step outputs per gradient)",
    )
    ap.add_argument(
        "--strip-jax-attrs",
        action="store_true",
        help="drop mhlo.*/jax.*/sdy.* attributes from the linalg files "
        "(MLIR 22 parses the ones JAX emits today, so they are kept by default)",
    )
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    names = args.models.split(",") if args.models else []
    for blocks in filter(None, args.transformer_blocks.split(",")):
        name = f"transformer{int(blocks)}"
        MODELS[name] = Model(transformer_forward, lambda n=int(blocks): transformer_specs(n), softmax_xent_int,
                             ("tokens", "labels"))
        names.append(name)
    for blocks in filter(None, args.scan_blocks.split(",")):
        name = f"transformer_scan{int(blocks)}"
        MODELS[name] = Model(transformer_scan_forward, lambda n=int(blocks): transformer_scan_specs(n),
                             softmax_xent_int, ("tokens", "labels"))
        names.append(name)
    if args.adam:
        names = [f"{n}_adam" for n in names]
    for name in names:
        paths, removed, left = export(name, args.out, args.strip_jax_attrs)
        for p in paths.values():
            print(f"wrote {os.path.relpath(p)}")
        if left:
            print(f"  left in {name}.linalg.mlir: " + ", ".join(f"{n} x{c}" for n, c in left.items()))
        if removed:
            print(f"  stripped from {name}.linalg.mlir: {', '.join(sorted(removed))}")


if __name__ == "__main__":
    sys.exit(main())

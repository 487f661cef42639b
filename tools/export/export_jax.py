#!/usr/bin/env python3
"""Export small JAX training steps as StableHLO and linalg-on-tensors MLIR.

For every model this writes, in MLIR generic op form:

  examples/<model>.stablehlo.mlir  StableHLO exactly as JAX lowers it (private
                                   helper functions and func.call kept).
  examples/<model>.linalg.mlir     the same step legalized to upstream MLIR
                                   (func, arith, math, linalg, tensor) with
                                   jaxlib's own MLIR bindings and passes.

Each step is `step(params, x, y_onehot) -> (loss, new_params)`: a one-hot
softmax cross-entropy loss, jax.value_and_grad, plain SGD (lr 0.1). No RNG,
no custom_calls, no integer labels (those would bring stablehlo.scatter).

Only shapes matter for lowering, so parameters are jax.ShapeDtypeStruct and
no weights are ever initialised. The output is deterministic.

Usage: python export_jax.py [--out DIR] [--models mlp,resnet,transformer]
Normally run through tools/export/regen.sh.
"""

import argparse
import os
import re
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jaxlib.mlir import ir, passmanager  # noqa: E402
from jaxlib.mlir._mlir_libs import _jax_mlir_ext, _stablehlo  # noqa: E402

LR = 0.1
F32 = jnp.float32

# Passes that take StableHLO (plus CHLO) to upstream linalg-on-tensors.
LEGALIZE_PIPELINE = (
    "builtin.module("
    "func.func(chlo-legalize-to-stablehlo),"
    "stablehlo-legalize-to-linalg)"
)
# After inline_calls(): clean up and drop the now unused private functions.
CLEANUP_PIPELINE = "builtin.module(canonicalize,cse,symbol-dce)"

# Dialects allowed in a linalg file.
UPSTREAM_DIALECTS = {"builtin", "func", "arith", "math", "linalg", "tensor"}


def spec(*shape):
    return jax.ShapeDtypeStruct(shape, F32)


def softmax_xent(logits, y_onehot):
    """Mean one-hot softmax cross-entropy (no integer labels, no scatter)."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.sum(y_onehot * logp, axis=-1))


def make_step(forward):
    def loss_fn(params, x, y_onehot):
        return softmax_xent(forward(params, x), y_onehot)

    def step(params, x, y_onehot):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y_onehot)
        new_params = jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)
        return loss, new_params

    return step


# ---------------------------------------------------------------- mlp
# x: 128x64, 64 -> 128 -> 128 -> 10, relu.

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


# ---------------------------------------------------------------- resnet
# x: NHWC 8x16x16x3. Stem 3x3 conv 3->8, two residual blocks of
# (3x3 conv 8->8, relu, 3x3 conv 8->8) + identity, relu; global average
# pool; dense 8 -> 10. No batchnorm.

RES_N, RES_HW, RES_CIN, RES_C, RES_BLOCKS, NCLASS = 8, 16, 3, 8, 2, 10
CONV_DN = ("NHWC", "HWIO", "NHWC")


def conv(x, w, b):
    y = lax.conv_general_dilated(
        x, w, window_strides=(1, 1), padding="SAME", dimension_numbers=CONV_DN
    )
    return y + b


def resnet_forward(params, x):
    h = jax.nn.relu(conv(x, *params["stem"]))
    for blk in params["blocks"]:
        r = jax.nn.relu(conv(h, *blk["conv1"]))
        r = conv(r, *blk["conv2"])
        h = jax.nn.relu(h + r)
    pooled = jnp.mean(h, axis=(1, 2))
    w, b = params["head"]
    return pooled @ w + b


def resnet_specs():
    def conv_p(cin, cout):
        return (spec(3, 3, cin, cout), spec(cout))

    params = {
        "stem": conv_p(RES_CIN, RES_C),
        "blocks": [
            {"conv1": conv_p(RES_C, RES_C), "conv2": conv_p(RES_C, RES_C)}
            for _ in range(RES_BLOCKS)
        ],
        "head": (spec(RES_C, NCLASS), spec(NCLASS)),
    }
    x = spec(RES_N, RES_HW, RES_HW, RES_CIN)
    return params, x, spec(RES_N, NCLASS)


# ---------------------------------------------------------------- transformer
# x: 16x16x32 (batch, seq, d_model) already-embedded inputs (no embedding
# table: its gradient is a scatter). Two pre-LN blocks: causal 2-head
# self-attention and a 32 -> 64 -> 32 gelu(tanh) MLP; final layernorm,
# mean-pool over the sequence, dense 32 -> 10.

TF_B, TF_S, TF_D, TF_H, TF_MLP, TF_BLOCKS = 16, 16, 32, 2, 64, 2


def layernorm(x, g, b, eps=1e-5):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    # xc * xc, not jnp.square: that lowers to chlo.square, and the StableHLO
    # files are meant to hold only stablehlo and func ops.
    var = jnp.mean(xc * xc, axis=-1, keepdims=True)
    return xc * lax.rsqrt(var + eps) * g + b


def attention(p, x):
    b, s, d = x.shape
    hd = d // TF_H

    def heads(t):  # b s d -> b h s hd
        return t.reshape(b, s, TF_H, hd).transpose(0, 2, 1, 3)

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


def transformer_forward(params, x):
    h = x
    for blk in params["blocks"]:
        h = h + attention(blk["attn"], layernorm(h, *blk["ln1"]))
        m = layernorm(h, *blk["ln2"])
        m = jax.nn.gelu(m @ blk["w1"] + blk["b1"], approximate=True)
        h = h + (m @ blk["w2"] + blk["b2"])
    h = layernorm(h, *params["ln_f"])
    pooled = jnp.mean(h, axis=1)
    w, b = params["head"]
    return pooled @ w + b


def transformer_specs():
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
        for _ in range(TF_BLOCKS)
    ]
    params = {"blocks": blocks, "ln_f": ln(), "head": (spec(d, NCLASS), spec(NCLASS))}
    return params, spec(TF_B, TF_S, d), spec(TF_B, NCLASS)


MODELS = {
    "mlp": (mlp_forward, mlp_specs),
    "resnet": (resnet_forward, resnet_specs),
    "transformer": (transformer_forward, transformer_specs),
}


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
    bad = [n for n in op_names(text) if n.split(".")[0] not in UPSTREAM_DIALECTS]
    if bad:
        raise SystemExit(f"{model}: non-upstream ops left after legalization: {bad}")
    if re.search(r"tensor<[^>]*\?", text):
        raise SystemExit(f"{model}: dynamic tensor shape in linalg output")


def export(name, out_dir, strip=False):
    forward, specs = MODELS[name]
    step = make_step(forward)
    lowered = jax.jit(step).lower(*specs())
    module = lowered.compiler_ir("stablehlo")
    ctx = module.context

    # StableHLO as exported, generic form.
    shlo_text = generic_asm(module)
    if re.search(r"tensor<[^>]*\?", shlo_text):
        raise SystemExit(f"{name}: dynamic tensor shape in StableHLO output")
    bad = [n for n in op_names(shlo_text) if n.split(".")[0] not in ("builtin", "func", "stablehlo")]
    if bad or "custom_call" in shlo_text:
        raise SystemExit(f"{name}: unexpected ops in StableHLO output: {bad or 'custom_call'}")

    # linalg-on-tensors, from a fresh copy of the module.
    with ctx:
        _stablehlo.register_stablehlo_passes()
        lin = ir.Module.parse(shlo_text)
        passmanager.PassManager.parse(LEGALIZE_PIPELINE).run(lin.operation)
        inline_calls(lin)
        passmanager.PassManager.parse(CLEANUP_PIPELINE).run(lin.operation)
        removed = strip_attrs(lin) if strip else set()
        lin_text = generic_asm(lin)
    check_linalg(lin_text, name)

    header = (
        f"// {name} training step: step(params, x, y_onehot) -> (loss, new_params)\n"
        f"// Generated by tools/export/export_jax.py (jax {jax.__version__}); do not edit.\n"
    )
    paths = {}
    for kind, text in (("stablehlo", shlo_text), ("linalg", lin_text)):
        path = os.path.join(out_dir, f"{name}.{kind}.mlir")
        with open(path, "w") as f:
            f.write(header + f"// Form: {kind}, MLIR generic op form.\n" + text)
        paths[kind] = path
    return paths, removed


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "examples"))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument(
        "--strip-jax-attrs",
        action="store_true",
        help="drop mhlo.*/jax.*/sdy.* attributes from the linalg files "
        "(MLIR 22 parses the ones JAX emits today, so they are kept by default)",
    )
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for name in args.models.split(","):
        paths, removed = export(name, args.out, args.strip_jax_attrs)
        for p in paths.values():
            print(f"wrote {os.path.relpath(p)}")
        if removed:
            print(f"  stripped from {name}.linalg.mlir: {', '.join(sorted(removed))}")


if __name__ == "__main__":
    sys.exit(main())

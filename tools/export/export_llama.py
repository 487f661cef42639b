#!/usr/bin/env python3
"""A LLaMA-style decoder training step, for checks on a model class the examples lack.

RMSNorm, rotary position embeddings, grouped-query causal attention, a SwiGLU MLP, a tied
embedding head, integer-label cross-entropy and an Adam update (no bias correction):
step(params, m, v, tokens, labels) -> (loss, new_params, new_m, new_v). Not bundled: the
figures in docs/bench ("A LLaMA-style step not in the repo") come from

  tools/export/.venv/bin/python tools/export/export_llama.py --out DIR --layers 8 --seq 128 --batch 8 --xla

which writes DIR/llamaL.{stablehlo,linalg}.mlir (as export_jax.py writes the examples) and,
with --xla, prints XLA's peak and FLOPs without and with jax.checkpoint policies around each
block (measured as alternatives.py measures them), writing each checkpointed step's linalg
form beside it for tools/export/our_cost_model.py's kind of count. With --scan, the blocks run
under one lax.scan over stacked parameters (DIR/llamaL_scan.*), as Flax's nn.scan and MaxText
run them.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import export_jax as E  # noqa: E402

WIDTH, HEADS, KV_HEADS, HIDDEN, VOCAB = 64, 4, 2, 172, 256
HEAD = WIDTH // HEADS
POLICIES = ("dots_saveable", "dots_with_no_batch_dims_saveable", "nothing_saveable")


def rms(x, w):
    return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * w


def rope(x, seq):
    pos = jnp.arange(seq, dtype=jnp.float32)[:, None]
    inv = 1.0 / (10000 ** (jnp.arange(0, HEAD, 2, dtype=jnp.float32) / HEAD))
    cos, sin = jnp.cos(pos * inv[None, :]), jnp.sin(pos * inv[None, :])
    x1, x2 = x[..., ::2], x[..., 1::2]
    return jnp.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).reshape(x.shape)


def block(p, h):
    batch, seq, _ = h.shape
    x = rms(h, p["n1"])
    q = (x @ p["wq"]).reshape(batch, seq, HEADS, HEAD).transpose(0, 2, 1, 3)
    k = (x @ p["wk"]).reshape(batch, seq, KV_HEADS, HEAD).transpose(0, 2, 1, 3)
    v = (x @ p["wv"]).reshape(batch, seq, KV_HEADS, HEAD).transpose(0, 2, 1, 3)
    q, k = rope(q, seq), rope(k, seq)
    k, v = jnp.repeat(k, HEADS // KV_HEADS, axis=1), jnp.repeat(v, HEADS // KV_HEADS, axis=1)
    s = (q @ k.transpose(0, 1, 3, 2)) / jnp.sqrt(jnp.float32(HEAD))
    s = jnp.where(jnp.tril(jnp.ones((seq, seq), bool)), s, jnp.float32(-1e9))
    o = (jax.nn.softmax(s, -1) @ v).transpose(0, 2, 1, 3).reshape(batch, seq, WIDTH) @ p["wo"]
    h = h + o
    x = rms(h, p["n2"])
    return h + (jax.nn.silu(x @ p["w1"]) * (x @ p["w3"])) @ p["w2"]


def make_step(blk, scan=False):
    def forward(params, tokens):
        h = params["emb"][tokens]
        if scan:
            # Stacked layer parameters under one lax.scan, as Flax's nn.scan and MaxText run them.
            h, _ = jax.lax.scan(lambda h, p: (blk(p, h), None), h, params["blocks"])
        else:
            for p in params["blocks"]:
                h = blk(p, h)
        return rms(h, params["nf"]) @ params["emb"].T

    def xent(logits, labels):
        picked = jnp.take_along_axis(logits, labels[..., None], -1)[..., 0]
        return jnp.mean(jax.nn.logsumexp(logits, -1) - picked)

    return E.make_adam_step(forward, xent)


def specs(layers, seq, batch, scan=False):
    f = lambda *shape: jax.ShapeDtypeStruct(shape, jnp.float32)  # noqa: E731
    blk = {"n1": f(WIDTH), "n2": f(WIDTH), "wq": f(WIDTH, WIDTH), "wk": f(WIDTH, KV_HEADS * HEAD),
           "wv": f(WIDTH, KV_HEADS * HEAD), "wo": f(WIDTH, WIDTH), "w1": f(WIDTH, HIDDEN),
           "w3": f(WIDTH, HIDDEN), "w2": f(HIDDEN, WIDTH)}
    blocks = {k: f(layers, *v.shape) for k, v in blk.items()} if scan else [blk] * layers
    params = {"emb": f(VOCAB, WIDTH), "nf": f(WIDTH), "blocks": blocks}
    tokens = jax.ShapeDtypeStruct((batch, seq), jnp.int32)
    return params, params, params, tokens, tokens


def write(step, args_specs, path_stem):
    module = jax.jit(step).lower(*args_specs).compiler_ir("stablehlo")
    shlo = E.generic_asm(module)
    lin, _ = E.linalg_form(shlo, module.context)
    for kind, text in (("stablehlo", shlo), ("linalg", lin)):
        with open(f"{path_stem}.{kind}.mlir", "w") as f:
            f.write(f"// {os.path.basename(path_stem)}: tools/export/export_llama.py; do not edit.\n" + text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--xla", action="store_true", help="also XLA's figures with checkpoint policies")
    ap.add_argument("--scan", action="store_true", help="run the blocks under one lax.scan over stacked parameters")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    s = specs(args.layers, args.seq, args.batch, args.scan)
    name = os.path.join(args.out, f"llama{args.layers}" + ("_scan" if args.scan else ""))
    write(make_step(block, args.scan), s, name)
    print(f"wrote {name}.stablehlo.mlir and {name}.linalg.mlir")
    if not args.xla:
        return 0
    base = None
    for policy in ("none",) + POLICIES:
        blk = block if policy == "none" else jax.checkpoint(block, policy=getattr(jax.checkpoint_policies, policy))
        compiled = jax.jit(make_step(blk, args.scan)).lower(*s).compile()
        mem, flops = compiled.memory_analysis(), compiled.cost_analysis()["flops"]
        base = base or flops
        peak = mem.output_size_in_bytes + mem.temp_size_in_bytes - mem.alias_size_in_bytes
        print(f"XLA {policy}: peak {peak} bytes, flops {flops:.4e} ({flops / base - 1:+.1%})")
        if policy != "none":
            write(make_step(blk, args.scan), s, f"{name}.{policy}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# The lit tests' checkpointed scan (lit-tests/import/Inputs/scan_checkpoint.linalg.mlir): a 4-layer tanh MLP whose layers run under one lax.scan over stacked weights, with
# jax.checkpoint(nothing_saveable) around the scan body; SGD step. Writes the linalg form
# (and the same step without checkpoint). Usage, in the export venv:
#   python tools/export/export_scan_checkpoint.py lit-tests/import/Inputs
# (writes scan_checkpoint.linalg.mlir and scan_checkpoint_nocse.linalg.mlir, which the lit
# tests use, and scan_plain.linalg.mlir).
import functools
import os
import sys
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax, jax.numpy as jnp
import export_jax as E

L, B, D = 4, 8, 16

def forward(params, x, remat):
    def layer(h, w):
        return jnp.tanh(h @ w), None
    body = remat(layer) if remat else layer
    h, _ = jax.lax.scan(body, x, params)
    return h

def step_of(remat):
    def loss_fn(params, x, y):
        return jnp.mean((forward(params, x, remat) - y) ** 2)
    def step(params, x, y):
        value, g = jax.value_and_grad(loss_fn)(params, x, y)
        return value, params - 0.1 * g
    return step

specs = (jax.ShapeDtypeStruct((L, D, D), jnp.float32), jax.ShapeDtypeStruct((B, D), jnp.float32),
         jax.ShapeDtypeStruct((B, D), jnp.float32))
ckpt = functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.nothing_saveable)
# prevent_cse=False, as MaxText checkpoints scanned layers: no optimization barriers.
ckpt_nocse = functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.nothing_saveable, prevent_cse=False)
for name, remat in [("scan_checkpoint", ckpt), ("scan_checkpoint_nocse", ckpt_nocse), ("scan_plain", None)]:
    module = jax.jit(step_of(remat)).lower(*specs).compiler_ir("stablehlo")
    linalg, _ = E.linalg_form(E.generic_asm(module), module.context, strip=True)
    with open(f"{sys.argv[1]}/{name}.linalg.mlir", "w") as f:
        f.write(linalg)
    print(name, len(linalg.splitlines()))

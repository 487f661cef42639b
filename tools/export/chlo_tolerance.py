#!/usr/bin/env python3
"""How far remat-opt's legalization of the CHLO ops (and stablehlo.tan) is from JAX.

The legalization (passes/lower/src/stablehlo/legalize.rs) lowers chlo.square to a multiply,
as jaxlib does, but chlo.erf, chlo.erfc, chlo.sinh, chlo.cosh and stablehlo.tan to the math
dialect's functions (libm), which jaxlib and XLA expand differently. This exports one JAX
function of each op on 4,096 f32 inputs as StableHLO, runs it with remat-run (which legalizes
it) on remat-run's seeded inputs (normal samples), runs JAX on the same inputs, and prints,
per op, the largest difference in f32 units in the last place and how many results are
bit-identical.

  python chlo_tolerance.py REMAT_RUN [--seed 0]

Run it in the venv of tools/export/requirements.txt (regen.sh makes it).
"""

import argparse
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

OPS = (
    ("chlo.square", jnp.square),
    ("chlo.erf", lax.erf),
    ("chlo.erfc", lax.erfc),
    ("chlo.sinh", lax.sinh),
    ("chlo.cosh", lax.cosh),
    ("stablehlo.tan", lambda x: lax.tan(x * 0.5)),  # inside (-pi/2, pi/2) for most samples
)
N = 4096


def step(x):
    return tuple(f(x) for _, f in OPS)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("remat_run")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        module = jax.jit(step).lower(jax.ShapeDtypeStruct((N,), jnp.float32)).compiler_ir("stablehlo")
        path = os.path.join(d, "chlo.stablehlo.mlir")
        with open(path, "w") as f:
            f.write(module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False))
        text = open(path).read()
        for name, _ in OPS:
            if f'"{name}"' not in text:
                raise SystemExit(f"JAX no longer emits {name} for this function")
        io = os.path.join(d, "io")
        subprocess.run([args.remat_run, path, f"--seed={args.seed}", f"--save-io={io}"], check=True,
                       stdout=subprocess.DEVNULL)
        x = np.load(os.path.join(io, "arg0.npy"))
        want = jax.jit(step)(x)
        print("| op | max ulps from JAX | bit-identical |")
        print("|---|---:|---:|")
        for i, ((name, _), w) in enumerate(zip(OPS, want)):
            got = np.load(os.path.join(io, f"result{i}.npy"))
            w = np.asarray(w)
            finite = np.isfinite(w)
            if not np.array_equal(np.isfinite(got), finite):
                raise SystemExit(f"{name}: finite results differ from JAX's")
            ulps = np.abs(got.view(np.int32).astype(np.int64) - w.view(np.int32).astype(np.int64))
            print(f"| `{name}` | {int(ulps[finite].max())} | {int((ulps == 0).sum())} of {N} |")


if __name__ == "__main__":
    sys.exit(main())

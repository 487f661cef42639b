#!/usr/bin/env python3
"""Check the files in examples/ with upstream MLIR 22 and against JAX.

For every example:
  * examples/<m>.stablehlo.mlir parses with `mlir-opt --allow-unregistered-dialect`;
  * examples/<m>.linalg.mlir and examples/mlp_small.mlir parse with plain
    `mlir-opt` (upstream dialects only) and have only static tensor shapes;
  * each linalg-on-tensors step is bufferized, lowered to the LLVM dialect and
    run with mlir-runner on seeded random inputs; its loss and parameter
    updates (old - new = lr * grad) must match JAX's run of the same step.

Needs the exporter's venv (jax) and LLVM/MLIR 22 (mlir-opt, mlir-runner and
libmlir_{c_,}runner_utils.so). Usage: python check_examples.py [--mlir DIR]
"""

import argparse
import os
import re
import subprocess
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_jax as E  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.normpath(os.path.join(HERE, "..", "..", "examples"))

LOWER = (
    "builtin.module("
    "one-shot-bufferize{bufferize-function-boundaries=1 "
    "function-boundary-type-conversion=identity-layout-map},"
    "expand-realloc,ownership-based-buffer-deallocation,canonicalize,"
    "buffer-deallocation-simplification,bufferization-lower-deallocations,canonicalize,"
    "convert-linalg-to-loops,convert-scf-to-cf,expand-strided-metadata,lower-affine,"
    "finalize-memref-to-llvm,convert-arith-to-llvm,convert-math-to-llvm,"
    "convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts)"
)
RTOL = 1e-4  # printMemrefF32 prints 6 significant digits


def tensor_type(a):
    return "tensor<" + "".join(f"{d}x" for d in a.shape) + "f32>"


def literal(a):
    if a.ndim == 0:
        return "%.9e" % a  # MLIR float literals need the '.'
    return "[" + ", ".join(literal(s) for s in a) + "]"


def inputs(specs, rng):
    """Seeded inputs for a flat list of shapes; the last one is y_onehot."""
    leaves = jax.tree_util.tree_leaves(specs)
    vals = []
    for i, leaf in enumerate(leaves):
        shape = leaf.shape
        if i == len(leaves) - 1:
            y = np.zeros(shape, np.float32)
            y[np.arange(shape[0]), rng.integers(0, shape[1], shape[0])] = 1
            vals.append(y)
            continue
        if i < len(leaves) - 2 and len(shape) >= 2:  # a weight: 1/sqrt(fan_in)
            scale = 1 / np.sqrt(np.prod(shape[:-1]))
        else:  # bias, layernorm gain/bias, or x
            scale = 1.0
        vals.append((rng.standard_normal(shape) * scale).astype(np.float32))
    return vals


def mlp_small_step(w1, w2, x, y):
    """JAX reference for examples/mlp_small.mlir."""

    def loss_fn(params):
        a = jax.nn.relu(x @ params[0])
        return 0.5 / x.shape[0] * jnp.sum(jnp.square(a @ params[1] - y))

    loss, g = jax.value_and_grad(loss_fn)((w1, w2))
    return loss, (w1 - 0.1 * g[0], w2 - 0.1 * g[1])


def run_mlir(path, vals, nparams, tools, libs):
    """Run @main of `path` on vals; return [loss, old - new for each param]."""
    src = subprocess.run(
        [f"{tools}/mlir-opt", path], capture_output=True, text=True, check=True
    ).stdout.rstrip()
    assert src.endswith("}")
    rtys = ["tensor<f32>"] + [tensor_type(vals[i]) for i in range(nparams)]
    lines = ["func.func private @printMemrefF32(tensor<*xf32>)", "func.func @entry() {"]
    for i, v in enumerate(vals):
        lines.append(f"  %a{i} = arith.constant dense<{literal(v)}> : {tensor_type(v)}")
    lines.append(
        f"  %r:{len(rtys)} = call @main({', '.join(f'%a{i}' for i in range(len(vals)))})"
        f" : ({', '.join(tensor_type(v) for v in vals)}) -> ({', '.join(rtys)})"
    )
    lines.append("  %l = tensor.cast %r#0 : tensor<f32> to tensor<*xf32>")
    lines.append("  call @printMemrefF32(%l) : (tensor<*xf32>) -> ()")
    for i in range(nparams):
        t = tensor_type(vals[i])
        lines += [
            f"  %e{i} = tensor.empty() : {t}",
            f"  %d{i} = linalg.sub ins(%a{i}, %r#{i + 1} : {t}, {t}) outs(%e{i} : {t}) -> {t}",
            f"  %u{i} = tensor.cast %d{i} : {t} to tensor<*xf32>",
            f"  call @printMemrefF32(%u{i}) : (tensor<*xf32>) -> ()",
        ]
    lines += ["  return", "}"]
    module = src[:-1] + "\n".join(lines) + "\n}\n"
    llvm = subprocess.run(
        [f"{tools}/mlir-opt", f"--pass-pipeline={LOWER}"],
        input=module, capture_output=True, text=True, check=True,
    ).stdout
    out = subprocess.run(
        [f"{tools}/mlir-runner", "-e", "entry", "-entry-point-result=void",
         f"-shared-libs={libs}/libmlir_runner_utils.so,{libs}/libmlir_c_runner_utils.so"],
        input=llvm, capture_output=True, text=True, check=True,
    ).stdout
    got = []
    for chunk in out.split("Unranked Memref")[1:]:
        data = chunk.split("data =", 1)[1]
        nums = re.findall(r"[-+]?(?:nan|inf|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)", data)
        got.append(np.array([float(t) for t in nums]))
    return got


def compare(name, got, ref):
    assert len(got) == len(ref), f"{name}: {len(got)} outputs printed, {len(ref)} expected"
    worst = 0.0
    for g, r in zip(got, ref):
        r = np.asarray(r, np.float64).reshape(-1)
        assert g.size == r.size, f"{name}: {g.size} values printed, {r.size} expected"
        worst = max(worst, float(np.max(np.abs(g - r)) / (np.max(np.abs(r)) + 1e-30)))
    ok = worst <= RTOL
    print(f"{'ok  ' if ok else 'FAIL'} {name}: loss {got[0][0]:.6g} (jax {float(ref[0]):.6g}), "
          f"{len(ref) - 1} parameter updates, worst relative error {worst:.1e}")
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mlir", default="/usr/lib/llvm-22", help="LLVM/MLIR 22 prefix")
    args = ap.parse_args(argv)
    tools, libs = f"{args.mlir}/bin", f"{args.mlir}/lib"
    ok = True

    def parses(path, *flags):
        r = subprocess.run([f"{tools}/mlir-opt", *flags, path], capture_output=True, text=True)
        good = r.returncode == 0 and not re.search(r"tensor<[^>]*\?", open(path).read())
        print(f"{'ok  ' if good else 'FAIL'} parse {os.path.relpath(path)} {' '.join(flags)}")
        if r.returncode:
            print(r.stderr[:2000])
        return good

    rng = np.random.default_rng(0)
    for name, (forward, specs) in E.MODELS.items():
        ok &= parses(f"{EXAMPLES}/{name}.stablehlo.mlir", "--allow-unregistered-dialect")
        path = f"{EXAMPLES}/{name}.linalg.mlir"
        ok &= parses(path)
        spec = specs()
        vals = inputs(spec, rng)
        tree = jax.tree_util.tree_structure(spec)
        args = jax.tree_util.tree_unflatten(tree, [jnp.asarray(v) for v in vals])
        loss, new = jax.jit(E.make_step(forward))(*args)
        new = [np.asarray(n) for n in jax.tree_util.tree_leaves(new)]
        ref = [np.asarray(loss)] + [o - n for o, n in zip(vals, new)]
        ok &= compare(f"{name}.linalg.mlir", run_mlir(path, vals, len(new), tools, libs), ref)

    path = f"{EXAMPLES}/mlp_small.mlir"
    ok &= parses(path)
    vals = [
        (rng.standard_normal((8, 16)) / np.sqrt(8)).astype(np.float32),
        (rng.standard_normal((16, 4)) / 4).astype(np.float32),
        rng.standard_normal((4, 8)).astype(np.float32),
        rng.standard_normal((4, 4)).astype(np.float32),
    ]
    loss, new = jax.jit(mlp_small_step)(*vals)
    ref = [np.asarray(loss)] + [o - np.asarray(n) for o, n in zip(vals, new)]
    ok &= compare("mlp_small.mlir", run_mlir(path, vals, 2, tools, libs), ref)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

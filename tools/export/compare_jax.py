#!/usr/bin/env python3
"""Compare a run of an exported training step with JAX running the same step.

remat-opt's runner writes, for one call of @main of examples/<model>.*.mlir,

  DIR/arg0.npy, arg1.npy, ...       the @main arguments, in order
  DIR/result0.npy, result1.npy, ... the @main results, in order

with dtypes following the MLIR types (f32 -> float32, i32 -> int32). The
arguments are the parameter leaves, then the step's two inputs
(jax.tree_util.tree_leaves((params, x, y))); the results are the loss, then
the updated parameters in the same order. This script rebuilds the step with
tools/export/export_jax.py, unflattens the arguments with the step's tree
structure, runs it with jax.jit on CPU and compares every result:

  * result0 (the loss) directly;
  * every parameter through its update, argument - result (= lr * grad), as
    check_examples.py does, since a new parameter differs from the old one by
    little and would hide a wrong gradient.

A result passes when max|got - jax| <= atol + rtol * scale + 2 ulp, with
scale the largest magnitude of JAX's loss or update and ulp the f32 spacing at
the result's largest magnitude (old - lr * grad is rounded to f32: a parameter
of magnitude 1 moved by 1e-4 differs by an ulp, 6e-8, in two correct runs).
For each result it prints the max absolute error of the result itself and
the relative error (max abs error / scale). Exit status 1 on any mismatch (or a missing / misshapen file), 0
otherwise.

  python compare_jax.py MODEL DIR [--rtol 1e-3] [--atol 1e-6]
  python compare_jax.py MODEL DIR --write [--seed 0]

--write makes such a directory from JAX itself (seeded inputs as
check_examples.py draws them: int32 inputs uniform in [0, 8)), to test this
script or to feed the same inputs to the runner.
"""

import argparse
import glob
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import jax  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_examples as C  # noqa: E402
import export_jax as E  # noqa: E402

ULPS = 2  # f32 ulps of a result's largest magnitude always allowed


def argument_names(name):
    _, specs = E.build_step(name)
    params, x_spec, _ = specs
    x, y = E.MODELS[name].inputs
    paths = jax.tree_util.tree_flatten_with_path(params)[0]
    x_paths = jax.tree_util.tree_flatten_with_path(x_spec)[0]
    # x may be several leaves (lm_dropout: tokens and a PRNG key).
    x_names = [x] if len(x_paths) == 1 else ["x" + jax.tree_util.keystr(p) for p, _ in x_paths]
    return ["params" + jax.tree_util.keystr(p) for p, _ in paths] + x_names + [y]


def parameter_count(name):
    _, (params, _, _) = E.build_step(name)
    return len(jax.tree_util.tree_leaves(params))


def expected_leaves(name):
    _, specs = E.build_step(name)
    return jax.tree_util.tree_leaves(specs)


def write_reference(name, out, seed):
    os.makedirs(out, exist_ok=True)
    stale = glob.glob(os.path.join(out, "arg*.npy")) + glob.glob(os.path.join(out, "result*.npy"))
    for f in stale:
        os.remove(f)
    vals = C.inputs(E.build_step(name)[1], np.random.default_rng(seed))
    loss, new = C.jax_reference(name, vals)
    for i, v in enumerate(vals):
        np.save(os.path.join(out, f"arg{i}.npy"), v)
    for i, r in enumerate([loss] + new):
        np.save(os.path.join(out, f"result{i}.npy"), r)
    print(f"wrote {len(vals)} arguments and {1 + len(new)} results of {name} to {out}")


def load_numbered(d, stem):
    files = {}
    for f in glob.glob(os.path.join(d, f"{stem}*.npy")):
        idx = os.path.basename(f)[len(stem):-len(".npy")]
        if idx.isdigit():
            files[int(idx)] = f
    if sorted(files) != list(range(len(files))):
        raise SystemExit(f"{d}: {stem}N.npy files are not numbered 0..{len(files) - 1}: "
                         f"{sorted(files)}")
    return [np.load(files[i]) for i in range(len(files))]


def compare(name, d, rtol, atol):
    specs = expected_leaves(name)
    names = argument_names(name)
    args = load_numbered(d, "arg")
    got = load_numbered(d, "result")
    nparams = parameter_count(name)
    ok = True

    if len(args) != len(specs):
        raise SystemExit(f"{name}: {len(args)} arguments in {d}, @main takes {len(specs)}")
    for i, (a, s) in enumerate(zip(args, specs)):
        # The runner writes unsigned integers as signed ones of the same width (MLIR's
        # signless types): the same bits.
        if np.dtype(s.dtype).kind == "u" and a.dtype.kind == "i" and a.dtype.itemsize == np.dtype(s.dtype).itemsize:
            a = args[i] = a.view(s.dtype)
        if a.shape != s.shape or a.dtype != np.dtype(s.dtype):
            raise SystemExit(f"{name}: arg{i}.npy ({names[i]}) is {a.dtype}{list(a.shape)}, "
                             f"@main wants {np.dtype(s.dtype)}{list(s.shape)}")
    for i in range(nparams, len(args)):
        a = args[i]
        if a.dtype == np.int32 and (a.min() < 0 or a.max() >= C.INT_HIGH):
            print(f"note: arg{i}.npy ({names[i]}) has values outside [0, {C.INT_HIGH})")

    loss, new = C.jax_reference(name, args)
    ref = [loss] + new
    if len(got) != len(ref):
        print(f"FAIL {name}: {len(got)} results in {d}, @main returns {len(ref)}")
        return False

    print(f"{name}: {len(args)} arguments, {len(ref)} results from {d} "
          f"(pass: max abs error <= {atol:g} + {rtol:g} * scale + {ULPS} ulp)")
    worst = 0.0
    for i, (g, r) in enumerate(zip(got, ref)):
        label = "loss" if i == 0 else names[i - 1]
        if g.shape != r.shape or g.dtype != r.dtype:
            print(f"FAIL result{i} {label}: {g.dtype}{list(g.shape)}, "
                  f"expected {r.dtype}{list(r.shape)}")
            ok = False
            continue
        g64, r64 = g.astype(np.float64), r.astype(np.float64)
        err = float(np.max(np.abs(g64 - r64))) if g.size else 0.0
        if i == 0:
            scale, what = float(np.max(np.abs(r64))), "value"
        else:
            old = args[i - 1].astype(np.float64)
            scale, what = float(np.max(np.abs(old - r64))), "update"
        rel = err / scale if scale > 0 else (0.0 if err == 0 else float("inf"))
        ulp = float(np.spacing(np.float32(np.max(np.abs(r))))) if r.size else 0.0
        good = err <= atol + rtol * scale + ULPS * ulp  # False for NaN
        worst = max(worst, rel) if good else worst
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} result{i} {label} {r.dtype}{list(r.shape)}: "
              f"max abs error {err:.3g}, rel error {rel:.3g} (of max |{what}| {scale:.3g})")
    print(f"{'ok' if ok else 'FAIL'}: {name}, {len(ref)} results"
          + (f", worst relative error {worst:.2g}" if ok else ""))
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", choices=sorted(E.MODELS))
    ap.add_argument("dir")
    ap.add_argument("--rtol", type=float, default=1e-3,
                    help="relative to the largest |loss| or |update| of the result (default 1e-3)")
    ap.add_argument("--atol", type=float, default=1e-6, help="absolute (default 1e-6)")
    ap.add_argument("--write", action="store_true",
                    help="write seeded arguments and JAX's results to DIR instead of comparing")
    ap.add_argument("--seed", type=int, default=0, help="seed of the inputs --write draws")
    args = ap.parse_args(argv)
    if args.write:
        write_reference(args.model, args.dir, args.seed)
        return 0
    return 0 if compare(args.model, args.dir, args.rtol, args.atol) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Check a run of examples/torch_mlp.linalg.mlir against PyTorch itself.

    python compare_torch.py DIR [--rtol R] [--atol A]

DIR holds NumPy .npy files written by whatever ran @main (the project's
runner, or check_torch.py):

    DIR/arg0.npy ... DIR/arg7.npy       @main's arguments, in order
    DIR/result0.npy ... DIR/result6.npy  @main's results, in order

For torch_mlp that is (see export_torch.py, examples/README.md):

    arg0 w1 (128, 64) float32    result0 loss ()          float32
    arg1 b1 (128,)    float32    result1 w1'  (128, 64)   float32
    arg2 w2 (128,128) float32    result2 b1'  (128,)      float32
    arg3 b2 (128,)    float32    result3 w2'  (128, 128)  float32
    arg4 w3 (10, 128) float32    result4 b2'  (128,)      float32
    arg5 b3 (10,)     float32    result5 w3'  (10, 128)   float32
    arg6 x  (32, 64)  float32    result6 b3'  (10,)       float32
    arg7 labels (32,) int64 (the dtype of the MLIR argument: i64 -> int64,
                             i32 -> int32; values must be class ids in [0, 10))

Shapes must match exactly; a result may also be stored flat (same number of
elements). This rebuilds the same step (export_torch.step: F.linear, relu,
F.cross_entropy, autograd, SGD lr 0.1) and runs it eagerly with PyTorch's own
CPU kernels on the arguments, then compares every result elementwise:
|got - want| <= atol + rtol * |want|. It prints, per result, the max absolute
error and the max relative error (max |got - want| / max |want|), and for the
parameters also the relative error of the update (arg - result, i.e. lr * grad),
which is what a wrong gradient shows in.

Exit status: 0 all results match, 1 a mismatch, 2 a missing/ill-shaped file.
The tolerances suit a CPU run in f32; raise them for a run with reduced-
precision matmuls (TF32).

    python compare_torch.py DIR --write [--seed 0]

instead makes such a directory from PyTorch itself: seeded arguments (weights
N(0, 1/fan_in), biases and x N(0, 1), labels uniform in [0, 8) as the
project's runner draws integers) and PyTorch's results, to test this script
or to feed the same inputs to the runner. check_torch.py tests it on a
directory written from an mlir-runner run of the example.

Needs only torch and numpy (not torch-mlir).
"""

import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_torch as E  # noqa: E402

LABEL_HIGH = 8  # the runner feeds integer inputs uniformly in [0, 8)
RTOL = 1e-5
ATOL = 1e-6
UPDATE_RTOL = 1e-3  # the update is a difference of two close floats


def inputs(seed=0):
    """Seeded @main arguments as numpy arrays, in order."""
    rng = np.random.default_rng(seed)
    vals = []
    for name, (shape, dtype) in zip(E.ARG_NAMES, E.arg_specs()):
        if not dtype.is_floating_point:
            vals.append(rng.integers(0, LABEL_HIGH, shape).astype(np.int64))
        elif name.startswith("w"):  # [out, in]
            vals.append((rng.standard_normal(shape) / np.sqrt(shape[1])).astype(np.float32))
        else:
            vals.append(rng.standard_normal(shape).astype(np.float32))
    return vals


def write(directory, args, results):
    """Write args and results as DIR/arg<i>.npy and DIR/result<i>.npy."""
    os.makedirs(directory, exist_ok=True)
    for i, a in enumerate(args):
        np.save(os.path.join(directory, f"arg{i}.npy"), a)
    for i, r in enumerate(results):
        np.save(os.path.join(directory, f"result{i}.npy"), np.asarray(r))


def load(directory):
    """(args, results) as numpy arrays, validated against export_torch."""
    specs = E.arg_specs()
    args = []
    for i, (shape, dtype) in enumerate(specs):
        path = os.path.join(directory, f"arg{i}.npy")
        if not os.path.exists(path):
            raise LayoutError(f"missing {path}")
        a = np.load(path)
        if tuple(a.shape) != tuple(shape):
            raise LayoutError(f"arg{i} ({E.ARG_NAMES[i]}): shape {a.shape}, expected {shape}")
        if dtype.is_floating_point:
            if a.dtype != np.float32:
                raise LayoutError(f"arg{i} ({E.ARG_NAMES[i]}): dtype {a.dtype}, expected float32")
        else:
            if a.dtype not in (np.int64, np.int32):
                raise LayoutError(f"arg{i} ({E.ARG_NAMES[i]}): dtype {a.dtype}, expected int64/int32")
            nclass = E.DIMS[-1]
            if a.size and (a.min() < 0 or a.max() >= nclass):
                raise LayoutError(
                    f"arg{i} ({E.ARG_NAMES[i]}): values in [{a.min()}, {a.max()}], "
                    f"expected class ids in [0, {nclass})"
                )
        args.append(a)
    extra = os.path.join(directory, f"arg{len(specs)}.npy")
    if os.path.exists(extra):
        raise LayoutError(f"{extra}: @main has only {len(specs)} arguments")

    results = []
    for i, name in enumerate(E.RESULT_NAMES):
        path = os.path.join(directory, f"result{i}.npy")
        if not os.path.exists(path):
            raise LayoutError(f"missing {path}")
        results.append(np.load(path))
    extra = os.path.join(directory, f"result{len(E.RESULT_NAMES)}.npy")
    if os.path.exists(extra):
        raise LayoutError(f"{extra}: @main has only {len(E.RESULT_NAMES)} results")
    return args, results


class LayoutError(Exception):
    pass


def reference(args):
    """Run the step with PyTorch on the given numpy arguments."""
    tensors = []
    for a, (_, dtype) in zip(args, E.arg_specs()):
        t = torch.from_numpy(np.ascontiguousarray(a))
        tensors.append(t.to(dtype))  # labels: cross_entropy wants int64
    out = E.step(*tensors)
    return [o.detach().numpy() for o in out]


def compare(directory, rtol=RTOL, atol=ATOL, out=sys.stdout):
    """Return True if every result in `directory` matches PyTorch."""
    args, got = load(directory)
    want = reference(args)
    ok = True
    nparams = len(E.PARAM_NAMES)
    for i, (g, w) in enumerate(zip(got, want)):
        name = E.RESULT_NAMES[i]
        if g.size != w.size:
            raise LayoutError(f"result{i} ({name}): {g.size} elements, expected {w.size} {w.shape}")
        if g.shape != w.shape and g.ndim != 1:
            raise LayoutError(f"result{i} ({name}): shape {g.shape}, expected {w.shape}")
        g = g.reshape(w.shape).astype(np.float64)
        w = w.astype(np.float64)
        diff = np.abs(g - w)
        abs_err = float(np.max(diff)) if diff.size else 0.0
        scale = float(np.max(np.abs(w))) if w.size else 0.0
        rel_err = abs_err / scale if scale > 0 else abs_err
        good = bool(np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=False))
        line = (
            f"result{i} {name:<5} {str(tuple(w.shape)):<11} "
            f"max abs err {abs_err:.3e}  max rel err {rel_err:.3e}"
        )
        if 1 <= i <= nparams:
            p = args[i - 1].astype(np.float64)
            upd_got, upd_want = p - g, p - w
            uscale = float(np.max(np.abs(upd_want)))
            uerr = float(np.max(np.abs(upd_got - upd_want)))
            urel = uerr / uscale if uscale > 0 else uerr
            line += f"  update rel err {urel:.3e}"
            good &= urel <= UPDATE_RTOL or uerr <= atol
        print(f"{'ok  ' if good else 'FAIL'} {line}", file=out)
        ok &= good
    print(
        f"{'ok' if ok else 'MISMATCH'}: {len(got)} results of {E.NAME} vs torch "
        f"{torch.__version__} (loss {float(got[0].reshape(())):.6g}, "
        f"torch {float(want[0]):.6g}; rtol {rtol:g}, atol {atol:g})",
        file=out,
    )
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", help="directory with arg<i>.npy and result<i>.npy")
    ap.add_argument("--rtol", type=float, default=RTOL)
    ap.add_argument("--atol", type=float, default=ATOL)
    ap.add_argument("--write", action="store_true",
                    help="write seeded arguments and PyTorch's results to DIR instead")
    ap.add_argument("--seed", type=int, default=0, help="with --write")
    a = ap.parse_args(argv)
    if a.write:
        args = inputs(a.seed)
        write(a.dir, args, reference(args))
        print(f"wrote {len(args)} arguments and {len(E.RESULT_NAMES)} results to {a.dir}")
        return 0
    try:
        return 0 if compare(a.dir, a.rtol, a.atol) else 1
    except LayoutError as e:
        print(f"compare_torch.py: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

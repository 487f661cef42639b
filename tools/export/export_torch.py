#!/usr/bin/env python3
"""Export a small PyTorch training step as linalg-on-tensors MLIR.

Writes examples/torch_mlp.linalg.mlir, in MLIR generic op form: one public
function @main holding an MLP classifier's whole training step (forward,
cross-entropy against integer labels, backward, plain SGD with lr 0.1) in
upstream MLIR only (builtin, func, arith, math, linalg, tensor), all shapes
static.

    step(w1, b1, w2, b2, w3, b3, x, labels) -> (loss, w1', b1', w2', b2', w3', b3')

x is 32x64 f32, labels 32 x i64 (class ids; any value in [0, 10) is valid),
layers are torch.nn.functional.linear (weights [out, in], y = x @ w.T + b):
64 -> 128 -> relu -> 128 -> relu -> 10, loss F.cross_entropy (mean).

Route (torch-mlir's FX importer):
  make_fx(functionalize(step, remove="mutations"), decomposition_table=...)
  -> torch_mlir.fx.stateless_fx_import(gm, output_type="linalg-on-tensors")
  -> canonicalize, cse, symbol-dce (torch-mlir's own MLIR bindings).

The decomposition table is torch_mlir.fx.get_decomposition_table() with two
entries replaced: aten.nll_loss_forward and aten.nll_loss_backward. PyTorch's
own decompositions use aten.gather (lowered with `cf.assert` bounds checks)
and aten.scatter (lowered to torch-mlir's `tm_tensor.scatter`, not an
upstream op). Ours compute the same values with a one-hot mask built by
comparing the labels with an iota (torch.arange), which lowers to plain
linalg.generic ops. The step itself is stock PyTorch: compare_torch.py runs
it eagerly with PyTorch's own kernels and autograd.

Only shapes matter for lowering: the step is traced on zeros. The output is
deterministic (no locations are printed).

Usage: python export_torch.py [--out DIR]
Normally run through tools/export/regen_torch.sh.
"""

import argparse
import os
import re
import sys

import torch
import torch.nn.functional as F
from torch.func import grad_and_value

LR = 0.1
BATCH = 32
DIMS = (64, 128, 128, 10)  # in -> hidden -> hidden -> classes
LABEL_DTYPE = torch.int64  # i64 in MLIR
NAME = "torch_mlp"

# Names of @main's arguments and results, in order.
PARAM_NAMES = ("w1", "b1", "w2", "b2", "w3", "b3")
ARG_NAMES = PARAM_NAMES + ("x", "labels")
RESULT_NAMES = ("loss",) + tuple(n + "'" for n in PARAM_NAMES)

# Dialects allowed in a linalg file.
UPSTREAM_DIALECTS = {"builtin", "func", "arith", "math", "linalg", "tensor"}
CLEANUP_PIPELINE = "builtin.module(canonicalize,cse,symbol-dce)"


# ---------------------------------------------------------------- the step


def param_shapes():
    """[(out, in), (out,)] for every layer, as torch.nn.Linear stores them."""
    shapes = []
    for a, b in zip(DIMS[:-1], DIMS[1:]):
        shapes += [(b, a), (b,)]
    return shapes


def arg_specs():
    """(shape, dtype) of every @main argument, in order."""
    specs = [(s, torch.float32) for s in param_shapes()]
    specs.append(((BATCH, DIMS[0]), torch.float32))
    specs.append(((BATCH,), LABEL_DTYPE))
    return specs


def forward(params, x):
    h = x
    layers = list(zip(params[0::2], params[1::2]))
    for i, (w, b) in enumerate(layers):
        h = F.linear(h, w, b)
        if i + 1 < len(layers):
            h = F.relu(h)
    return h


def loss_fn(params, x, labels):
    return F.cross_entropy(forward(params, x), labels)


def step(w1, b1, w2, b2, w3, b3, x, labels):
    """One SGD step; returns (loss, *new_params). Pure: inputs are not changed."""
    params = (w1, b1, w2, b2, w3, b3)
    grads, loss = grad_and_value(loss_fn)(params, x, labels)
    return (loss, *(p - LR * g for p, g in zip(params, grads)))


# ---------------------------------------------------------------- export

# torch.nn._reduction: 0 none, 1 mean, 2 sum.
_NONE, _MEAN, _SUM = 0, 1, 2


def _onehot(self, target, ignore_index):
    """[N, C] bool: target[n] == c (and target[n] != ignore_index)."""
    classes = torch.arange(self.shape[1], dtype=target.dtype, device=target.device)
    hit = target.unsqueeze(1) == classes.unsqueeze(0)
    return hit & (target != ignore_index).unsqueeze(1)


def nll_loss_forward(self, target, weight, reduction, ignore_index):
    """aten.nll_loss_forward for [N, C] inputs without class weights, no gather."""
    if weight is not None or self.dim() != 2 or target.dim() != 1:
        return NotImplemented
    hit = _onehot(self, target, ignore_index)
    picked = -torch.where(hit, self, torch.zeros_like(self)).sum(1)
    total = (target != ignore_index).sum().to(self.dtype)
    if reduction == _NONE:
        return picked, torch.zeros((), dtype=self.dtype)
    if reduction == _SUM:
        return picked.sum(), total
    return picked.sum() / total, total


def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight):
    """aten.nll_loss_backward for [N, C] inputs without class weights, no scatter."""
    if weight is not None or self.dim() != 2 or target.dim() != 1:
        return NotImplemented
    hit = _onehot(self, target, ignore_index)
    if reduction == _NONE:
        g = grad_output.unsqueeze(1)
    elif reduction == _SUM:
        g = grad_output
    else:
        g = grad_output / total_weight
    return torch.where(hit, -g, torch.zeros_like(self))


def decomposition_table():
    import torch_mlir.fx

    table = dict(torch_mlir.fx.get_decomposition_table())
    table[torch.ops.aten.nll_loss_forward.default] = nll_loss_forward
    table[torch.ops.aten.nll_loss_backward.default] = nll_loss_backward
    return table


def op_names(text):
    return re.findall(r'"([a-z_][a-z0-9_]*\.[a-z0-9_.]+)"\(', text)


def check_linalg(text):
    bad = sorted({n for n in op_names(text) if n.split(".")[0] not in UPSTREAM_DIALECTS})
    if bad:
        raise SystemExit(f"{NAME}: non-upstream ops left after lowering: {bad}")
    if re.search(r"tensor<[^>]*\?", text):
        raise SystemExit(f"{NAME}: dynamic tensor shape in linalg output")


def check_signature(module):
    """Exactly one func.func, public, named main; nothing else at top level."""
    from torch_mlir import ir

    tops = [op.operation for op in module.body.operations]
    funcs = [op for op in tops if op.name == "func.func"]
    others = [op.name for op in tops if op.name != "func.func"]
    if others or len(funcs) != 1:
        raise SystemExit(f"{NAME}: expected one func.func, got {len(funcs)} and {others}")
    fn = funcs[0]
    if ir.StringAttr(fn.attributes["sym_name"]).value != "main":
        raise SystemExit(f"{NAME}: the function is not named main")
    if "sym_visibility" in fn.attributes:
        vis = ir.StringAttr(fn.attributes["sym_visibility"]).value
        if vis != "public":
            raise SystemExit(f"{NAME}: @main is {vis}")
    fty = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    return [str(t) for t in fty.inputs], [str(t) for t in fty.results]


def export(out_dir):
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.func import functionalize
    import torch_mlir.fx
    from torch_mlir import passmanager

    args = [torch.zeros(shape, dtype=dtype) for shape, dtype in arg_specs()]
    gm = make_fx(
        functionalize(step, remove="mutations"),
        decomposition_table=decomposition_table(),
    )(*args)
    module = torch_mlir.fx.stateless_fx_import(
        gm, output_type="linalg-on-tensors", model_name="main"
    )
    with module.context:
        passmanager.PassManager.parse(CLEANUP_PIPELINE).run(module.operation)
    ins, outs = check_signature(module)
    text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
    check_linalg(text)

    import torch_mlir

    tm_version = _dist_version("torch-mlir") or getattr(torch_mlir, "__version__", "?")
    header = (
        f"// {NAME} training step: step(w1, b1, w2, b2, w3, b3, x, labels) -> (loss, new params)\n"
        f"// Generated by tools/export/export_torch.py (torch {torch.__version__}, "
        f"torch-mlir {tm_version}); do not edit.\n"
        "// Form: linalg, MLIR generic op form.\n"
    )
    path = os.path.join(out_dir, f"{NAME}.linalg.mlir")
    with open(path, "w") as f:
        f.write(header + text)
    return path, ins, outs


def _dist_version(name):
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return None


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "examples"))
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    path, ins, outs = export(args.out)
    print(f"wrote {os.path.relpath(path)}")
    print(f"  @main({', '.join(ins)})")
    print(f"    -> ({', '.join(outs)})")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Check examples/torch_mlp.linalg.mlir with upstream MLIR 22 and against PyTorch.

  * it parses with plain `mlir-opt` (no unregistered dialects), holds one
    public func.func @main and nothing else, only ops of builtin, func, arith,
    math, linalg and tensor, and only static tensor shapes; @main's signature
    is the one export_torch.py describes;
  * @main is bufferized, lowered to the LLVM dialect (the pipeline of
    check_examples.py) and run with mlir-runner on compare_torch.inputs(0)
    (weights N(0, 1/fan_in), biases and x N(0, 1), labels uniform in [0, 8)
    as the project's runner feeds integers). Results are printed bit-exactly (f32
    bitcast to i32, printMemrefI32) and written, with the arguments, as
    DIR/arg<i>.npy and DIR/result<i>.npy: the layout compare_torch.py reads;
  * compare_torch.py then checks every result against PyTorch running the
    same step, and must also reject a copy of DIR whose w1 update is off by 1 %.

Needs the torch venv (torch, numpy; not torch-mlir) and LLVM/MLIR 22.
Usage: python check_torch.py [--mlir PREFIX] [--keep DIR] [--file PATH]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_torch as E  # noqa: E402
import compare_torch as C  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.normpath(os.path.join(HERE, "..", "..", "examples", f"{E.NAME}.linalg.mlir"))

# The same CPU pipeline as check_examples.LOWER (not imported: that module needs jax).
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
NP_OF_MLIR = {"f32": np.float32, "i64": np.int64, "i32": np.int32}
MLIR_OF_NP = {v: k for k, v in NP_OF_MLIR.items()}


def mlir_elt(torch_dtype):
    return MLIR_OF_NP[torch.empty((), dtype=torch_dtype).numpy().dtype.type]


def tensor_type(shape, elt):
    return "tensor<" + "".join(f"{d}x" for d in shape) + elt + ">"


def parse_tensor_type(t):
    m = re.fullmatch(r"tensor<((?:\d+x)*)(\w+)>", t.strip())
    if not m:
        raise SystemExit(f"unexpected type {t}")
    return tuple(int(d) for d in m.group(1).split("x") if d), m.group(2)


def literal(a):
    if a.ndim == 0:
        return ("%.9e" % a) if a.dtype.kind == "f" else str(int(a))
    return "[" + ", ".join(literal(s) for s in a) + "]"


def structure(text, pretty):
    """Problems with the module's structure (empty list if none)."""
    bad = []
    names = re.findall(r'"([a-z_][a-z0-9_]*\.[a-z0-9_.]+)"\(', text)
    other = sorted({n for n in names if n.split(".")[0] not in E.UPSTREAM_DIALECTS})
    if other:
        bad.append(f"ops outside upstream dialects: {other}")
    if re.search(r"tensor<[^>]*\?", text):
        bad.append("dynamic tensor shape")
    funcs = re.findall(r"^\s*func\.func (?:(\w+) )?@(\w+)", pretty, re.M)
    if funcs != [("", "main")] and funcs != [("public", "main")]:
        bad.append(f"expected exactly one public func @main, got {funcs}")
    return bad


def signature(pretty):
    m = re.search(r"func\.func @main\((.*?)\)\s*->\s*\((.*?)\)\s*\{", pretty, re.S)
    ins = [parse_tensor_type(t.split(":", 1)[1]) for t in re.split(r",\s*(?=%)", m.group(1))]
    outs = [parse_tensor_type(t) for t in re.split(r",\s*(?=tensor)", m.group(2))]
    return ins, outs


def run_mlir(pretty, vals, outs, tools, libs):
    """Run @main on vals with mlir-runner; return its results, bit-exact."""
    src = pretty.rstrip()
    assert src.endswith("}")
    in_tys = [tensor_type(v.shape, MLIR_OF_NP[v.dtype.type]) for v in vals]
    out_tys = [tensor_type(s, e) for s, e in outs]
    lines = ["func.func private @printMemrefI32(tensor<*xi32>)", "func.func @entry() {"]
    for i, (v, t) in enumerate(zip(vals, in_tys)):
        lines.append(f"  %a{i} = arith.constant dense<{literal(v)}> : {t}")
    lines.append(
        f"  %r:{len(outs)} = call @main({', '.join(f'%a{i}' for i in range(len(vals)))})"
        f" : ({', '.join(in_tys)}) -> ({', '.join(out_tys)})"
    )
    for i, ((shape, elt), t) in enumerate(zip(outs, out_tys)):
        assert elt == "f32", f"result {i} is {elt}"
        ti = tensor_type(shape, "i32")
        rank = len(shape)
        maps = f"affine_map<({', '.join(f'd{k}' for k in range(rank))}) -> ({', '.join(f'd{k}' for k in range(rank))})>"
        iters = ", ".join(['"parallel"'] * rank)
        lines += [
            f"  %e{i} = tensor.empty() : {ti}",
            f"  %b{i} = linalg.generic {{indexing_maps = [{maps}, {maps}], iterator_types = [{iters}]}}"
            f" ins(%r#{i} : {t}) outs(%e{i} : {ti}) {{",
            "  ^bb0(%in: f32, %out: i32):",
            "    %c = arith.bitcast %in : f32 to i32",
            "    linalg.yield %c : i32",
            f"  }} -> {ti}",
            f"  %u{i} = tensor.cast %b{i} : {ti} to tensor<*xi32>",
            f"  call @printMemrefI32(%u{i}) : (tensor<*xi32>) -> ()",
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
    for chunk, (shape, _) in zip(out.split("Unranked Memref")[1:], outs):
        data = chunk.split("data =", 1)[1]
        bits = np.array([int(t) for t in re.findall(r"-?\d+", data)], dtype=np.int64)
        got.append(bits.astype(np.int32).view(np.float32).reshape(shape))
    if len(got) != len(outs):
        raise SystemExit(f"mlir-runner printed {len(got)} results, expected {len(outs)}")
    return got


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mlir", default="/usr/lib/llvm-22", help="LLVM/MLIR 22 prefix")
    ap.add_argument("--file", default=EXAMPLE)
    ap.add_argument("--keep", metavar="DIR", help="write the npy files here (else a temp dir)")
    args = ap.parse_args(argv)
    tools, libs = f"{args.mlir}/bin", f"{args.mlir}/lib"
    rel = os.path.relpath(args.file)

    r = subprocess.run([f"{tools}/mlir-opt", args.file], capture_output=True, text=True)
    if r.returncode:
        print(f"FAIL parse {rel}\n{r.stderr[:2000]}")
        return 1
    pretty = r.stdout
    bad = structure(open(args.file).read(), pretty)
    ins, outs = signature(pretty)
    want_ins = [(tuple(s), mlir_elt(d)) for s, d in E.arg_specs()]
    if ins != want_ins:
        bad.append(f"@main arguments {ins}, expected {want_ins}")
    if len(outs) != len(E.RESULT_NAMES):
        bad.append(f"@main has {len(outs)} results, expected {len(E.RESULT_NAMES)}")
    print(f"{'FAIL' if bad else 'ok  '} parse {rel} (upstream dialects only, static shapes, one @main)")
    for b in bad:
        print(f"     {b}")
    if bad:
        return 1

    vals = C.inputs(0)
    results = run_mlir(pretty, vals, outs, tools, libs)
    print(f"ok   ran {rel} with mlir-runner ({len(results)} results)")

    with tempfile.TemporaryDirectory(prefix="check_torch.") as tmp:
        directory = args.keep or os.path.join(tmp, "run")
        C.write(directory, vals, results)
        ok = C.compare(directory)
        # compare_torch must notice a 1 % error in a gradient.
        wrong = list(results)
        wrong[1] = (vals[0] - 1.01 * (vals[0] - results[1])).astype(np.float32)
        C.write(os.path.join(tmp, "perturbed"), vals, wrong)
        with open(os.devnull, "w") as devnull:
            caught = not C.compare(os.path.join(tmp, "perturbed"), out=devnull)
        print(f"{'ok  ' if caught else 'FAIL'} compare_torch.py rejects a 1 % error in the w1 update")
        ok &= caught
    if args.keep:
        print(f"kept {directory} (python compare_torch.py {directory})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

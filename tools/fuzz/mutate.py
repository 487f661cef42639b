#!/usr/bin/env python3
"""Mutation fuzzer for remat-opt's importer and driver.

Takes the bundled examples and lit inputs as seeds, applies random mutations (byte flips,
line deletion / duplication / swaps, truncation, dimension and type edits, token splices),
and runs remat-opt on each with a random strategy and budget. A run fails the fuzzer if it
panics (exit 101), dies by a signal, times out, exits with anything but 0 or 1, or leaves an
output file behind after a non-zero exit. Crashing inputs are saved under --crashes.

  python3 tools/fuzz/mutate.py --seconds 600 [--binary target/debug/remat-opt] [--seed 1]
"""
import argparse
import glob
import os
import random
import subprocess
import sys
import tempfile
import time

TOKENS = [b"tensor<?xf32>", b"tensor<4x4xf32>", b"tensor<*xf32>", b"%0", b"%arg0", b"{", b"}",
          b"(", b")", b"\"func.call\"", b"<{callee = @relu}>", b"linalg.matmul", b"tensor.empty()",
          b"func.func private @g()", b"return", b"// -----", b"\x00", b"\xff", b"loc(\"x\":1:2)",
          b"\"stablehlo.custom_call\"", b"tensor<0xi1>", b"tensor<3xcomplex<f32>>", b"index",
          b"tensor<2x!quant.uniform<i8:f32, 1.0>>", b"{remat.recompute}", b"9999999999999"]


def mutate(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(8)
        if kind == 0 and any(lines):
            b = bytearray(b"\n".join(lines))
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            lines = bytes(b).split(b"\n")
        elif kind == 1 and len(lines) > 1:
            del lines[rng.randrange(len(lines))]
        elif kind == 2 and lines:
            i = rng.randrange(len(lines))
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif kind == 3 and len(lines) > 1:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 4:
            joined = b"\n".join(lines)
            lines = joined[: rng.randrange(len(joined) + 1)].split(b"\n")
        elif kind == 5 and lines:
            i = rng.randrange(len(lines))
            for a, b in [(b"x", b"x?x"), (b"f32", b"f16"), (b"f32", b"i1"), (b"tensor<", b"memref<"),
                         (b"4", b"0"), (b"private", b"public"), (b"@", b"@x")]:
                if a in lines[i] and rng.random() < 0.5:
                    lines[i] = lines[i].replace(a, b, 1)
        elif kind == 6 and lines:
            i = rng.randrange(len(lines))
            pos = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:pos] + rng.choice(TOKENS) + lines[i][pos:]
        elif kind == 7 and lines:
            i = rng.randrange(len(lines))
            lines[i] = b""
    return b"\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--binary", default=os.environ.get("REMAT_OPT", "target/debug/remat-opt"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--crashes", default="target/fuzz-crashes")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    seeds = sorted(glob.glob(os.path.join(root, "examples", "*.mlir")) +
                   glob.glob(os.path.join(root, "lit-tests", "**", "*.mlir"), recursive=True) +
                   glob.glob(os.path.join(root, "lit-tests", "**", "*.json"), recursive=True))
    corpus = [open(p, "rb").read() for p in seeds]
    rng = random.Random(args.seed)
    os.makedirs(args.crashes, exist_ok=True)
    deadline = time.time() + args.seconds
    runs = failures = 0
    outcomes = {}
    with tempfile.TemporaryDirectory() as tmp:
        while time.time() < deadline:
            data = mutate(rng.choice(corpus), rng)
            inp = os.path.join(tmp, "input.mlir")
            out = os.path.join(tmp, "out.mlir")
            with open(inp, "wb") as f:
                f.write(data)
            if os.path.exists(out):
                os.remove(out)
            cmd = [args.binary, inp, "-o", out, "--remat=" + rng.choice(["none", "greedy"])]
            if rng.random() < 0.7:
                cmd.append("--budget=" + rng.choice(["50%", "70%", "90%", "1KiB", "0", "100%"]))
            if rng.random() < 0.3:
                cmd.append("--emit=" + rng.choice(["graph-json", "schedule-json"]))
            if rng.random() < 0.2:
                cmd.append("--split-input-file")
            try:
                p = subprocess.run(cmd, capture_output=True, timeout=60)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                rc, p = "timeout", None
            runs += 1
            outcomes[rc] = outcomes.get(rc, 0) + 1
            bad = rc not in (0, 1) or (rc == 1 and os.path.exists(out))
            if bad:
                failures += 1
                path = os.path.join(args.crashes, f"crash-{failures}.mlir")
                with open(path, "wb") as f:
                    f.write(data)
                err = p.stderr.decode(errors="replace")[-400:] if p else ""
                print(f"FAIL rc={rc} {' '.join(cmd[3:])} saved {path}\n{err}", file=sys.stderr)
    print(f"fuzz: {runs} runs in {args.seconds:.0f} s, exit codes {dict(sorted(outcomes.items(), key=str))}, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

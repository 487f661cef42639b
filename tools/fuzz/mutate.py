#!/usr/bin/env python3
"""Mutation fuzzer for remat-opt: every input kind and the option strings.

Seeds: every bundled example and lit input — MLIR modules (linalg and StableHLO), graph JSON
(examples/graphs, lit-tests), DTR operator logs (examples/dtr-logs) — and schedule JSON, made at
start by planning the smallest of them (`--emit=schedule-json`) and read back with `--schedule`
on its intact source. Each run picks an input kind (MLIR most often) and mutates one seed
(byte flips, line deletion / duplication / swaps, truncation, dimension and type edits, token
splices; JSON and DTR-log specific value edits) and runs remat-opt on it with a random strategy,
budget and options — sometimes as a mutated `--pass-pipeline` string or with mutated option
values — under `--time-limit`.

A run fails the fuzzer if it panics (exit 101), dies by a signal or reports one caught by its
last-resort handler ("remat-opt crashed (SIG…)"), runs past its time limit plus
5 s (plus import, bounded by --import-allowance), exits with anything but 0 or 1, or leaves an
output file behind after a non-zero exit. Failing inputs are saved under --crashes with the
command line beside them.

  python3 tools/fuzz/mutate.py --seconds 3600 [--binary target/debug/remat-opt] [--seed 1]
  python3 tools/fuzz/mutate.py --smoke      # 60 s, what tools/test.sh runs
"""
import argparse
import glob
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time

TOKENS = [b"tensor<?xf32>", b"tensor<4x4xf32>", b"tensor<*xf32>", b"%0", b"%arg0", b"{", b"}",
          b"(", b")", b"\"func.call\"", b"<{callee = @relu}>", b"linalg.matmul", b"tensor.empty()",
          b"func.func private @g()", b"return", b"// -----", b"\x00", b"\xff", b"loc(\"x\":1:2)",
          b"\"stablehlo.custom_call\"", b"tensor<0xi1>", b"tensor<3xcomplex<f32>>", b"index",
          b"tensor<2x!quant.uniform<i8:f32, 1.0>>", b"{remat.recompute}", b"9999999999999",
          b"\"stablehlo.while\"", b"-1", b"1e308", b"NaN", b"null", b"[]", b"\"\"", b"true"]

STRATEGIES = ["none", "greedy", "treewidth", "pathwidth", "acg", "dtr", "chain", "hierarchical", "ilp", "auto"]
BUDGETS = ["50%", "70%", "90%", "1KiB", "0", "100%", "20%", "40%", "60%", "30%", "80%", "0%", "1e3", "-5",
           "999999999999GiB", "abc"]

# Option names (pass option and flag spelling) and values to draw from, bad ones included.
OPTION_VALUES = {
    "cost-model": ["estimate", "unit", "flops"],
    "fusion": ["none", "elementwise", "auto", "all"],
    "unroll-limit": ["0", "1", "4", "-1", "x"],
    "tw-stop": ["1", "2", "8", "0", "1e9"],
    "td-heuristic": ["min-fill", "min-degree", "max"],
    "pw-stop": ["1", "4", "0"],
    "ilp-order": ["fixed", "free", "any"],
    "ilp-stages": ["1", "3", "0"],
    "ilp-method": ["milp", "lp-rounding", "lp"],
    "ilp-time-limit": ["1", "0.5", "0", "inf", "nan"],
    "ilp-gap": ["0.01", "0", "-1"],
    "ilp-warm-start": ["true", "false", "maybe"],
    "ilp-seed": ["0", "7", "-1"],
    "auto-time-limit": ["2", "0.1", "0"],
    "dtr-heuristic": ["dtr", "dtr-eq", "lru", "random", "estar", "size", "msps", "dtr-local", "x"],
    "dtr-dealloc": ["eager", "banish", "ignore", "never"],
    "dtr-seed": ["0", "3"],
    "bandwidth": ["10", "10GB/s", "0", "-1"],
    "compute-rate": ["1e13", "0", "1e-300"],
    "mem-slots": ["10", "50", "0"],
    "function": ["main", "nope", "", "@"],
}


def mutate_text(data: bytes, rng: random.Random) -> bytes:
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
                         (b"4", b"0"), (b"private", b"public"), (b"@", b"@x"), (b"true", b"false"),
                         (b"\"bytes\": ", b"\"bytes\": -"), (b"\"id\": ", b"\"id\": 9"), (b"0", b"1")]:
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


def mutate_json_value(value, rng: random.Random):
    """Replaces one scalar somewhere in a JSON document (structure-aware, keeps it parseable)."""
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        value[key] = mutate_json_value(value[key], rng)
    elif isinstance(value, list) and value:
        i = rng.randrange(len(value))
        if rng.random() < 0.1:
            del value[i]
        elif rng.random() < 0.1:
            value.insert(i, value[rng.randrange(len(value))])
        else:
            value[i] = mutate_json_value(value[i], rng)
    else:
        return rng.choice([0, -1, 1, 2**63, 1.5, -0.0, None, True, "", "x", [], {}, 10**30,
                           value if not isinstance(value, int) else value + rng.choice([-1, 1, 1000])])
    return value


def mutate(data: bytes, kind: str, rng: random.Random) -> bytes:
    if kind in ("json", "dtr") and rng.random() < 0.5:
        try:
            if kind == "json":
                doc = json.loads(data)
                for _ in range(rng.randint(1, 3)):
                    doc = mutate_json_value(doc, rng)
                return json.dumps(doc).encode()
            lines = data.split(b"\n")
            i = rng.randrange(len(lines))
            if lines[i].strip():
                lines[i] = json.dumps(mutate_json_value(json.loads(lines[i]), rng)).encode()
            return b"\n".join(lines)
        except (ValueError, RecursionError):
            pass
    return mutate_text(data, rng)


def options(rng: random.Random, time_limit: float, kind: str = "mlir", small: bool = False) -> list:
    """A random remat-opt option list: strategy, budget, emit, a few pass options (some as a
    mutated --pass-pipeline string), always under --time-limit."""
    strategy = rng.choice(STRATEGIES)
    args = ["--time-limit=%g" % time_limit]
    pairs = []
    if rng.random() < 0.7:
        pairs.append(("budget", rng.choice(BUDGETS)))
    for name in rng.sample(sorted(OPTION_VALUES), rng.randint(0, 3)):
        # Mostly valid values (the first ones listed), so that most runs reach the planner.
        values = OPTION_VALUES[name]
        value = rng.choice(values if rng.random() < 0.3 else values[: max(1, len(values) - 1)])
        if rng.random() < 0.05:
            value = mutate_text(value.encode(), rng).decode(errors="replace")
        pairs.append((name, value.replace("\0", "")))
    # The ILP and auto get their own limits within the run's (unless drawn above).
    for name, value in [("ilp-time-limit", "%g" % min(time_limit, 5)), ("auto-time-limit", "%g" % time_limit)]:
        if all(k != name for k, _ in pairs):
            pairs.append((name, value))
    if rng.random() < 0.15:
        inner = " ".join(["strategy=" + strategy] + [f"{k}={v}" for k, v in pairs] + ["time-limit=%g" % time_limit])
        pipeline = f"builtin.module(func.func(remat{{{inner}}}))"
        if rng.random() < 0.3:
            pipeline = mutate_text(pipeline.encode(), rng).decode(errors="replace").replace("\0", "")
        args.append("--pass-pipeline=" + pipeline)
    else:
        args.append("--remat=" + strategy)
        args += [f"--{k}={v}" for k, v in pairs if k != "polish"]
    # Graph JSON and DTR logs have no IR to rewrite: mostly ask for a schedule.
    if rng.random() < (0.9 if kind != "mlir" else 0.25):
        emits = ["graph-json", "schedule-json", "schedule-json", "mlir"] + (["ptx"] if rng.random() < 0.2 else [])
        args.append("--emit=" + rng.choice(emits))
    # StableHLO legalization before planning, and (on small inputs: lowering takes seconds on
    # the large ones, outside the planning time limit) the whole CPU lowering.
    if kind == "mlir" and rng.random() < 0.1:
        args.append("--legalize-stablehlo")
    if kind == "mlir" and small and rng.random() < 0.05:
        args.append("--lower=cpu")
    if rng.random() < 0.1:
        args.append("--split-input-file")
    if rng.random() < 0.1:
        args.append("--no-polish")
    if rng.random() < 0.2:
        args.append("--report")
    return args


# How often each input kind is fuzzed: (kinds, weights).
KIND_WEIGHTS = (["mlir", "json", "dtr", "schedule"], [0.6, 0.12, 0.08, 0.2])


def schedule_options(rng: random.Random, time_limit: float, kind: str) -> list:
    """Options for applying a saved schedule: mostly none but a budget and an emit, sometimes
    a strategy (which --schedule refuses) or an import option that changes the graph."""
    args = ["--time-limit=%g" % time_limit]
    if rng.random() < 0.6:
        args.append("--budget=" + rng.choice(BUDGETS))
    if rng.random() < 0.1:
        args.append("--remat=" + rng.choice(STRATEGIES))
    if rng.random() < 0.1:
        args.append("--fusion=" + rng.choice(["none", "elementwise", "auto"]))
    if kind != "mlir" or rng.random() < 0.3:
        args.append("--emit=" + rng.choice(["schedule-json", "graph-json", "mlir"]))
    if rng.random() < 0.2:
        args.append("--report")
    return args


def schedule_seeds(binary: str, sources: list, rng: random.Random) -> list:
    """Schedule JSON seeds: each source (MLIR, graph JSON, DTR log) planned by a few strategies
    and saved with --emit=schedule-json, so that --schedule reads valid schedules of real graphs
    before they are mutated."""
    seeds = []
    # The smallest sources of each kind, one plan each: making seeds must not eat the run.
    chosen = []
    for wanted, count in [("json", 4), ("dtr", 2), ("mlir", 8)]:
        # Bundled examples are whole steps; many lit inputs are meant to fail.
        of_kind = [p for p, k in sources if k == wanted and (k != "mlir" or "/examples/" in p)]
        chosen += sorted(of_kind, key=os.path.getsize)[:count]
    kind_of = dict(sources)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "schedule.json")
        for path in chosen:
            # No budget: each strategy's least-memory plan, which it always has.
            strategy = rng.choice(["greedy", "chain", "treewidth", "none"])
            cmd = [binary, path, "--remat=" + strategy, "--emit=schedule-json", "--time-limit=10", "-o", out]
            try:
                p = subprocess.run(cmd, capture_output=True, timeout=60)
                if p.returncode != 0:
                    print(f"fuzz: no schedule seed from {shlex.join(cmd)}: {p.stderr.decode(errors='replace')[-200:]}", file=sys.stderr)
                else:
                    seeds.append((open(out, "rb").read(), "schedule", path, kind_of[path]))
            except subprocess.TimeoutExpired:
                pass
    return seeds


def seed_files(root: str) -> list:
    found = []
    for pattern, kind in [("examples/*.mlir", "mlir"), ("lit-tests/**/*.mlir", "mlir"),
                          ("examples/graphs/*.json", "json"), ("lit-tests/**/*.json", "json"),
                          ("examples/dtr-logs/*.jsonl", "dtr"), ("lit-tests/**/*.jsonl", "dtr")]:
        for path in sorted(glob.glob(os.path.join(root, pattern), recursive=True)):
            # Graphs of 10^4+ nodes make each run slow without finding more.
            if os.path.getsize(path) <= 4 << 20:
                found.append((path, kind))
    return found


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--smoke", action="store_true", help="60 s (what tools/test.sh runs)")
    ap.add_argument("--binary", default=os.environ.get("REMAT_OPT", "target/debug/remat-opt"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--time-limit", type=float, default=10, help="each run's --time-limit")
    ap.add_argument("--import-allowance", type=float, default=20,
                    help="seconds a run may take beyond its time limit + 5 s (parsing, import, fusion, writing)")
    ap.add_argument("--crashes", default="target/fuzz-crashes")
    args = ap.parse_args()
    if args.smoke:
        args.seconds = 60
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    seeds = seed_files(root)
    kinds = {k: sum(1 for _, kk in seeds if kk == k) for k in ("mlir", "json", "dtr")}
    if not all(kinds.values()):
        print(f"fuzz: missing seeds of some kind: {kinds}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    made = time.time()
    corpus = [(open(p, "rb").read(), kind, p, kind) for p, kind in seeds]
    corpus += schedule_seeds(args.binary, seeds, rng)
    kinds["schedule"] = sum(1 for c in corpus if c[1] == "schedule")
    by_kind = {k: [c for c in corpus if c[1] == k] for k in kinds}
    print(f"fuzz: {len(corpus)} seeds {kinds} ready after {time.time() - made:.0f} s", file=sys.stderr)
    if not kinds["schedule"]:
        print("fuzz: no schedule JSON seeds could be made", file=sys.stderr)
        return 2
    os.makedirs(args.crashes, exist_ok=True)
    started = time.time()
    deadline = started + args.seconds
    runs = failures = 0
    outcomes = {}
    per_kind = {k: 0 for k in kinds}
    slowest, slowest_cmd = 0.0, ""

    with tempfile.TemporaryDirectory() as tmp:
        while time.time() < deadline:
            # The input kind first (MLIR most often), then a seed of it.
            kind = rng.choices(KIND_WEIGHTS[0], KIND_WEIGHTS[1])[0]
            text, kind, source, source_kind = rng.choice(by_kind[kind])
            # A third of the runs fuzz only the options, on an intact input.
            data = text if rng.random() < 0.33 else mutate(text, "json" if kind == "schedule" else kind, rng)
            ext = ".json" if kind == "schedule" else os.path.splitext(source)[1]
            inp = os.path.join(tmp, "input" + ext)
            out = os.path.join(tmp, "out.txt")
            with open(inp, "wb") as f:
                f.write(data)
            if os.path.exists(out):
                os.remove(out)
            if kind == "schedule":
                # The source stays intact; the saved schedule is the fuzzed input.
                cmd = [args.binary, source, "-o", out, "--schedule=" + inp]
                cmd += schedule_options(rng, args.time_limit, source_kind)
            else:
                cmd = [args.binary, inp, "-o", out] + options(rng, args.time_limit, kind, len(data) < 64 << 10)
            limit = args.time_limit + 5 + args.import_allowance
            t0 = time.time()
            try:
                p = subprocess.run(cmd, capture_output=True, timeout=limit)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                rc, p = "timeout", None
            if time.time() - t0 > slowest:
                shown = [os.path.basename(c) if c in (cmd[0], source) else c for c in cmd if c not in ("-o", out)]
                slowest, slowest_cmd = time.time() - t0, shlex.join(shown)
            runs += 1
            per_kind[kind] += 1
            outcomes[rc] = outcomes.get(rc, 0) + 1
            # Exit 2 is a command-line usage error (clap's), a fine answer to a mutated option.
            usage = rc == 2 and b"Usage:" in p.stderr
            # A fatal signal caught by remat-opt's last-resort handler exits 1, but is a crash.
            caught = p is not None and b"remat-opt crashed (" in p.stderr
            bad = (rc not in (0, 1) and not usage) or (rc != 0 and os.path.exists(out)) or caught
            if bad:
                failures += 1
                path = os.path.join(args.crashes, f"crash-{failures}{ext}")
                with open(path, "wb") as f:
                    f.write(data)
                with open(path + ".cmd", "w") as f:
                    f.write(shlex.join([c.replace(inp, path) for c in cmd if c not in ("-o", out)]) + "\n")
                err = p.stderr.decode(errors="replace")[-400:] if p else ""
                print(f"FAIL rc={rc} {shlex.join(cmd[1:])} saved {path}\n{err}", file=sys.stderr)
    elapsed = time.time() - started
    print(f"fuzz: {runs} runs in {elapsed:.0f} s ({runs / elapsed:.2f} runs/s), corpus {len(corpus)} seeds "
          f"{kinds}, runs per kind {per_kind}, exit codes {dict(sorted(outcomes.items(), key=str))}, "
          f"slowest run {slowest:.1f} s ({slowest_cmd}), {failures} failures")
    if runs == 0:
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

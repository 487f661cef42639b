#!/usr/bin/env python3
"""Each XLA row of alternatives.json, counted in remat-opt's own cost model.

XLA's cost analysis counts the FLOPs of the program XLA compiled, after its own
simplification and fusion, and the difference it shows between a checkpointed
step and the plain one is not only the recomputation: on the bundled
transformers it calls `dots_saveable` 0.3-3.3 % *cheaper* than no checkpointing
at all, although the checkpointed step does every op of the plain one and
recomputes the rest. remat-opt's overheads are its cost model's estimate
(docs/memory-model.md, "Cost"), so the two are not on one scale.

This script puts them on one: for every model with XLA rows it lowers each
policy's step to StableHLO and to linalg-on-tensors as export_jax.py exports
the examples (the checkpointed steps recompute explicitly; JAX keeps the
recomputation apart with optimization barriers, which remat-opt dissolves),
imports each linalg form with remat-opt, unfused and unplanned
(`--fusion=none --remat=none`), and adds to each row

  in_our_cost_model: {form, cost, recompute_overhead, peak_bytes}

where cost is the cost model's estimate of the step's work, recompute_overhead
that cost over the `none` step's, minus 1, and peak_bytes the peak remat-opt's
memory model gives the policy's step as it is written (no fusion, no plan).

Usage (normally through tools/export/alternatives.sh; jax venv):
  python our_cost_model.py --alternatives docs/benchmarks/alternatives.json \\
      --remat-opt target/release/remat-opt
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

HOW = ("the policy's step lowered as export_jax.py lowers the examples (linalg-on-tensors), imported by "
       "remat-opt --fusion=none --remat=none: cost is the cost model's estimate of its work, "
       "recompute_overhead that over the none step's minus 1, peak_bytes its memory model's peak")


def measure(remat_opt, path):
    """remat-opt's baseline (cost, peak bytes) of the step at `path`, unfused and unplanned."""
    report = path + ".report.json"
    subprocess.run([remat_opt, path, "--fusion=none", "--remat=none", f"--report-json={report}",
                    "-o", os.devnull], check=True)
    with open(report) as f:
        baseline = json.load(f)["baseline"]
    return float(baseline["cost"]), int(baseline["peak_bytes"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alternatives", required=True, help="alternatives.json, updated in place")
    ap.add_argument("--remat-opt", required=True)
    args = ap.parse_args(argv)

    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    import alternatives as A
    import export_jax as E

    with open(args.alternatives) as f:
        doc = json.load(f)
    rows = [r for r in doc["rows"] if r["framework"] == "XLA"]
    done = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in dict.fromkeys(r["model"] for r in rows):
            _, specs, steps = A.jax_steps(name)
            measured = {}
            for pname, (fn, _) in steps.items():
                module = jax.jit(fn).lower(*specs).compiler_ir("stablehlo")
                linalg, _ = E.linalg_form(E.generic_asm(module), module.context)
                path = os.path.join(tmp, f"{name}.{pname}.linalg.mlir")
                with open(path, "w") as f:
                    f.write(linalg)
                measured[pname] = measure(args.remat_opt, path)
            base_cost = measured["none"][0]
            for r in rows:
                if r["model"] == name and r["policy"] in measured:
                    cost, peak = measured[r["policy"]]
                    r["in_our_cost_model"] = {"form": "linalg", "cost": cost,
                                              "recompute_overhead": cost / base_cost - 1,
                                              "peak_bytes": peak, "how": HOW}
                    done += 1
                    print(f"{name} {r['policy']}: XLA {r['recompute_overhead']:+.1%}, "
                          f"our cost model {cost / base_cost - 1:+.1%}", file=sys.stderr)
    if done != len(rows):
        raise SystemExit(f"our_cost_model.py: counted {done} of {len(rows)} XLA rows")
    A.write_json(args.alternatives, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Plans each runnable example with each strategy, runs the rewritten step on the CPU against
# the original, and prints planned vs measured peak bytes as a Markdown table.
#
#   bash tools/measure-examples.sh [EXAMPLE.mlir ...]   (default: every runnable example)
#
# Strategies: none, and greedy at a 50% budget (greedy without a budget when 50% is below
# what greedy can reach); set STRATEGIES (comma-separated, e.g. STRATEGIES=acg,treewidth) to
# run others. Needs the debug build (tools/setup.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${CARGO_TARGET_DIR:-target}/debug
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
files=("$@")
[ ${#files[@]} -eq 0 ] && files=(examples/mlp_small.mlir examples/*.linalg.mlir)
printf "| example | strategy | planned peak | measured peak | measured − planned | recomputed ops | run seconds | outputs |\n|---|---|---|---|---|---|---|---|\n"
status=0
for f in "${files[@]}"; do
  IFS=, read -ra strategies <<<"${STRATEGIES:-none,greedy --budget=50%}"
  for strategy in "${strategies[@]}"; do
    label=${strategy/ --budget=/ @}
    if ! $bin/remat-opt "$f" --remat=$strategy --report-json=$tmp/r.json -o $tmp/out.mlir 2>$tmp/err; then
      if grep -q "smallest budget" $tmp/err && [ "$label" != none ]; then
        label="greedy (no budget; 50% infeasible)"
        $bin/remat-opt "$f" --remat=greedy --report-json=$tmp/r.json -o $tmp/out.mlir 2>$tmp/err || { echo "| $f | $label | planning failed: $(head -1 $tmp/err) |"; status=1; continue; }
      else
        echo "| $f | $label | planning failed: $(head -1 $tmp/err) |"; status=1; continue
      fi
    fi
    if ! $bin/remat-run $tmp/out.mlir --compare-with="$f" --json >$tmp/run.json 2>$tmp/err; then
      [ -s $tmp/run.json ] || { echo "| $f | $label | run failed: $(head -1 $tmp/err) |"; status=1; continue; }
      status=1
    fi
    python3 - "$f" "$label" "$tmp" <<'PY'
import json, sys
f, label, tmp = sys.argv[1:4]
r = json.load(open(tmp + "/r.json")); m = json.load(open(tmp + "/run.json"))
planned, measured = r["plan"]["peak_bytes"], m["peak_bytes"]
d = measured - planned
pct = 100.0 * d / planned if planned else 0.0
match = {True: "bit-identical", False: "DIFFER", None: "-"}[m["outputs_match"]]
print(f"| {f.split('/')[-1]} | {label} | {planned} | {measured} | {d:+d} ({pct:+.2f}%) | {r['plan']['recomputed_ops']} | {m['seconds']:.4f} | {match} |")
PY
  done
done
exit $status

#!/usr/bin/env bash
# Prints the per-example table of the issue-2 closing note: nodes, argument bytes, baseline peak,
# lower bound, greedy at 50% (or the diagnostic), and greedy without a budget. Run tools/setup.sh first.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${CARGO_TARGET_DIR:-target}/debug/remat-opt
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf "| example | nodes | argument bytes | baseline peak | lower bound | greedy @50%% | greedy, no budget: peak / overhead |\n|---|---|---|---|---|---|---|\n"
for f in examples/*.mlir; do
  $B $f --remat=none --report-json=$tmp/n.json -o /dev/null
  r50=$($B $f --remat=greedy --budget=50% --report-json=$tmp/g.json -o /dev/null 2>&1 | sed 's/.*error: //')
  if [ -z "$r50" ]; then r50=$(python3 -c "import json;r=json.load(open('$tmp/g.json'));print(r['plan']['peak_bytes'],'B /',round(100*r['plan']['recompute_overhead'],1),'%')"); else r50="infeasible: $(echo "$r50" | grep -o "smallest budget 'greedy' meets is [^(]*" | sed "s/smallest budget 'greedy' meets is/greedy's smallest budget/")"; fi
  $B $f --remat=greedy --report-json=$tmp/m.json -o /dev/null
  python3 - "$f" "$r50" "$tmp" <<'PY'
import json,sys
n=json.load(open(sys.argv[3]+'/n.json')); m=json.load(open(sys.argv[3]+'/m.json'))
print(f"| {sys.argv[1].split('/')[-1]} | {n['nodes']} | {n['argument_bytes']} | {n['baseline']['peak_bytes']} | {n['lower_bound_bytes']} | {sys.argv[2]} | {m['plan']['peak_bytes']} ({100*m['plan']['peak_bytes']/n['baseline']['peak_bytes']:.1f}%) / +{100*m['plan']['recompute_overhead']:.1f}% |")
PY
done

#!/usr/bin/env bash
# Rolled plans of scanned steps whose loops stay whole (--unroll-limit=2): at each budget (in %
# of the step kept whole) the plan's peak and overhead, how many residual stacks the backward
# loop recomputes, the peak remat-run measures and whether the outputs are bit-identical to the
# original's, and the whole remat-opt run in seconds. Prints Markdown table rows.
#
# usage: tools/rolled-table.sh [INPUT.mlir ...]   (budgets: $BUDGETS, default "70 50 40 30 25 20")
#   default inputs: both forms of examples/transformer_scan
# Needs the release build: cargo build --release -p remat-opt -p remat-run
set -euo pipefail
cd "$(dirname "$0")/.."
opt=target/release/remat-opt
run=target/release/remat-run
budgets=${BUDGETS:-"70 50 40 30 25 20"}
inputs=("$@")
[ ${#inputs[@]} -eq 0 ] && inputs=(examples/transformer_scan.linalg.mlir examples/transformer_scan.stablehlo.mlir)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "| step | budget | planned peak | overhead | residuals recomputed | measured peak | outputs | seconds |"
echo "|---|---:|---:|---:|---:|---:|---|---:|"
for input in "${inputs[@]}"; do
  name=$(basename "$input" .mlir)
  for b in $budgets; do
    start=$(date +%s.%N)
    if ! "$opt" "$input" --unroll-limit=2 --remat=none --budget="$b%" --report-json="$tmp/r.json" \
        -o "$tmp/out.mlir" 2> "$tmp/err"; then
      least=$(grep -o "meets is [^(]*([0-9]* bytes)" "$tmp/err" | head -1 | sed 's/meets is /least /')
      echo "| $name | $b% | no plan (${least:-see remat-opt}) | | | | | |"
      continue
    fi
    seconds=$(echo "$(date +%s.%N) - $start" | bc)
    read -r peak overhead recomputed residuals < <(python3 -c "
import json, sys
r = json.load(open(sys.argv[1])); s = r.get('scan_residuals', {})
print(r['plan']['peak_bytes'], '%+.1f%%' % (100 * r['plan']['recompute_overhead']), s.get('recomputed', 0), s.get('residuals', 0))
" "$tmp/r.json")
    read -r measured outputs < <("$run" "$tmp/out.mlir" --compare-with "$input" --json | python3 -c "
import json, sys
d = json.load(sys.stdin)
print(d['peak_bytes'], 'bit-identical' if d['outputs_match'] else 'DIFFER')")
    printf '| %s | %s%% | %s | %s | %s of %s | %s | %s | %.2f |\n' "$name" "$b" "$peak" "$overhead" \
      "$recomputed" "$residuals" "$measured" "$outputs" "$seconds"
  done
done

#!/usr/bin/env bash
# What `remat-opt` answers for one input at each strategy and budget: a plan (its overhead) or
# the infeasible diagnostic (the smallest budget the strategy meets, as a percentage of the
# input order's peak), and the wall-clock seconds of the slowest whole run, the diagnostic's
# search included. Prints Markdown table rows `| LABEL | strategy | cell per budget | slowest s |`
# (the caller prints the header).
#
# usage: tools/strategy-table.sh INPUT LABEL "STRATEGIES" "BUDGETS" [REMAT-OPT FLAGS...]
# Needs the release build: cargo build --release -p remat-opt
set -euo pipefail
cd "$(dirname "$0")/.."
input=$1 label=$2 strategies=$3 budgets=$4
shift 4
bin=${CARGO_TARGET_DIR:-target}/release/remat-opt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

$bin "$input" --remat=none --emit=schedule-json -o "$work/none.json" --report-json "$work/none-report.json" "$@" 2>/dev/null
baseline=$(python3 -c "import json;print(json.load(open('$work/none-report.json'))['baseline']['peak_bytes'])")
for strategy in $strategies; do
  printf '| %s | %s |' "$label" "$strategy"
  slowest=0
  for b in $budgets; do
    start=$(date +%s.%N)
    status=0
    $bin "$input" --remat="$strategy" --budget="$b%" --emit=schedule-json -o "$work/plan.json" --report "$@" \
      2>"$work/err" || status=$?
    end=$(date +%s.%N)
    if [ "$status" = 0 ]; then
      cell=$(grep -o '+[0-9.]*% recompute' "$work/err" | head -1 | sed 's/ recompute//')
    else
      # "... the smallest budget 'X' meets is 3.43 KiB (3515 bytes)": as a percentage.
      least=$(grep -o 'meets is [^(]*(\([0-9]*\) bytes)' "$work/err" | grep -o '([0-9]*' | tr -d '(' || true)
      if [ -n "$least" ]; then
        cell="no plan (least $(python3 -c "print(f'{100*$least/$baseline:.1f}')")%)"
      else
        cell="no plan ($(grep -o "error: .*" "$work/err" | cut -c8-60))"
      fi
    fi
    seconds=$(python3 -c "print(f'{$end-$start:.2f}')")
    slowest=$(python3 -c "print(max($slowest, $seconds))")
    printf ' %s |' "$cell"
  done
  printf ' %s |\n' "$slowest"
done

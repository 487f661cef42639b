#!/usr/bin/env bash
# The heuristics on random layered DAGs with long edges (remat_graph::random::RandomLayeredDag):
# for each seed, strategy and budget, what `remat-opt` answers — a plan (its overhead) or the
# infeasible diagnostic (the smallest budget the strategy meets) — and the wall-clock seconds
# of the whole run, diagnostic search included. Prints a Markdown table.
#
# usage: tools/layered-table.sh [OPS] [SEEDS] [STRATEGIES] [BUDGETS]
#   defaults: 1000 "0 1 2" "greedy dtr treewidth" "90 80 70 60 50"
# Needs release builds: cargo build --release -p remat-opt -p remat-bench
set -euo pipefail
cd "$(dirname "$0")/.."
ops=${1:-1000}
seeds=${2:-"0 1 2"}
strategies=${3:-"greedy dtr treewidth"}
budgets=${4:-"90 80 70 60 50"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

printf '| seed | strategy |'
for b in $budgets; do printf ' %s%% |' "$b"; done
printf ' slowest s |\n|---:|---|'
for _ in $budgets; do printf -- '---|'; done
printf -- '---:|\n'
for seed in $seeds; do
  graph="$work/layered-$ops-$seed.json"
  target/release/remat-bench export-graph layered-dag --stages "$ops,$seed" -o "$graph" >/dev/null
  for strategy in $strategies; do
    printf '| %s | %s |' "$seed" "$strategy"
    slowest=0
    for b in $budgets; do
      start=$(date +%s.%N)
      status=0
      target/release/remat-opt "$graph" --remat="$strategy" --budget="$b%" --emit=schedule-json \
        -o "$work/plan.json" --report 2>"$work/err" || status=$?
      end=$(date +%s.%N)
      if [ "$status" = 0 ]; then
        cell=$(grep -o '+[0-9.]*% recompute' "$work/err" | head -1 | sed 's/ recompute//')
      else
        # "... the smallest budget 'X' meets is 3.43 KiB (3515 bytes)": as a percentage.
        baseline=$(target/release/remat-opt "$graph" --remat=none --emit=schedule-json -o "$work/none.json" \
          --report-json "$work/none-report.json" 2>/dev/null && python3 -c \
          "import json;print(json.load(open('$work/none-report.json'))['baseline']['peak_bytes'])")
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
done

#!/usr/bin/env bash
# The heuristics on random layered DAGs with long edges (remat_graph::random::RandomLayeredDag):
# for each seed, strategy and budget, what `remat-opt` answers — a plan (its overhead) or the
# infeasible diagnostic (the smallest budget the strategy meets) — and the wall-clock seconds
# of the whole run, diagnostic search included (tools/strategy-table.sh). Prints a Markdown table.
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
  bash tools/strategy-table.sh "$graph" "$seed" "$strategies" "$budgets"
done

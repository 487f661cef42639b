#!/usr/bin/env bash
# Every strategy on scanned language models (examples/transformer_scan: 12 blocks under one
# lax.scan, whose loops the importer unrolls and whose residual stacks it unstacks) at falling
# budgets: a plan's overhead or the smallest budget met, and the slowest whole run in seconds
# (tools/strategy-table.sh). The ILP and auto run with 10 s time limits. Prints a Markdown table.
#
# usage: tools/scan-table.sh [STRATEGIES] [BUDGETS] [INPUT.mlir ...]
#   defaults: every strategy but none, "80 60 40 30 20", both forms of examples/transformer_scan
# Needs the release build: cargo build --release -p remat-opt
set -euo pipefail
cd "$(dirname "$0")/.."
strategies=${1:-"greedy treewidth pathwidth acg dtr chain hierarchical ilp auto"}
budgets=${2:-"80 60 40 30 20"}
shift $(( $# < 2 ? $# : 2 ))
inputs=("$@")
[ ${#inputs[@]} -eq 0 ] && inputs=(examples/transformer_scan.linalg.mlir examples/transformer_scan.stablehlo.mlir)

printf '| input | strategy |'
for b in $budgets; do printf ' %s%% |' "$b"; done
printf ' slowest s |\n|---|---|'
for _ in $budgets; do printf -- '---|'; done
printf -- '---:|\n'
for input in "${inputs[@]}"; do
  bash tools/strategy-table.sh "$input" "$(basename "$input" .mlir)" "$strategies" "$budgets" \
    --ilp-time-limit=10 --auto-time-limit=10
done

#!/usr/bin/env bash
# Every strategy under --time-limit on the largest generated steps: for each graph and
# strategy, the wall-clock seconds of the whole remat-opt run (reading the graph JSON
# included), the stop reason and the answer (a plan's overhead, or the diagnostic's first
# words). Prints a Markdown table; a run is marked "over" when it took longer than the limit
# plus 5 s.
#
# usage: tools/deadline-table.sh [LIMIT] [STRATEGIES]
#   defaults: 50 (the default --time-limit) "greedy treewidth pathwidth acg dtr chain
#   hierarchical ilp auto"
# Graphs, each at one budget: resnet-like (4 stages of 1390 blocks, 100,102 nodes),
# transformer-like (2300 layers, 98,910 nodes), VGG-like (4 stages of 4160 layers, 99,858
# nodes) and a plain MLP (depth 16,667, 100,004 nodes) at 50 % of their input order's peak; random layered DAGs with long edges (1,000 ops,
# seeds 0-2) at 90 %, where greedy still plans (docs/bench/README.md).
# Needs release builds: cargo build --release -p remat-opt -p remat-bench
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${1:-50}
strategies=${2:-"greedy treewidth pathwidth acg dtr chain hierarchical ilp auto"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

export_graph() {  # NAME ARCHITECTURE STAGES
  target/release/remat-bench export-graph "$2" --stages "$3" -o "$work/$1.json" | sed 's/.*: \([0-9]*\) nodes.*/\1/'
}
echo "| graph | nodes | budget | strategy | seconds | stop | answer |"
echo "|---|---:|---:|---|---:|---|---|"
for spec in "resnet resnet 1390,1390,1390,1390 50%" "transformer transformer 2300 50%" \
            "vgg vgg 4160,4160,4160,4160 50%" "ffn ffn 16667 50%" "layered-0 layered-dag 1000,0 90%" \
            "layered-1 layered-dag 1000,1 90%" "layered-2 layered-dag 1000,2 90%"; do
  set -- $spec
  budget=$4
  nodes=$(export_graph "$1" "$2" "$3")
  for strategy in $strategies; do
    report="$work/report.json"
    rm -f "$report"
    start=$(date +%s.%N)
    answer=$(target/release/remat-opt "$work/$1.json" --remat="$strategy" --budget="$budget" --time-limit="$limit" \
      --emit=schedule-json -o "$work/schedule.json" --report-json="$report" 2>&1 >/dev/null) && rc=0 || rc=$?
    seconds=$(echo "$(date +%s.%N) - $start" | bc)
    if [ "$rc" -eq 0 ]; then
      stop=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['stop']['reason'])" "$report")
      answer=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('plan, %+.1f%%' % (100*d['plan']['recompute_overhead']))" "$report")
    else
      stop="—"
      answer=$(echo "$answer" | head -1 | sed 's/^[^ ]*: error: //' | cut -c1-90)
    fi
    over=""
    [ "$(echo "$seconds > $limit + 5" | bc)" -eq 1 ] && over=" (over)"
    printf '| %s | %s | %s | %s | %.1f%s | %s | %s |\n' "$1" "$nodes" "$budget" "$strategy" "$seconds" "$over" "$stop" "$answer"
  done
done

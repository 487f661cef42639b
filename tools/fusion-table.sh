#!/usr/bin/env bash
# What fusion changes before planning, per bundled linalg example, as markdown tables (the
# "Fusion before planning" section of docs/bench/README.md):
#
#   bash tools/fusion-table.sh
#
# 1. ops, no-remat peak and the proven lower bound with --fusion=none and with the default
#    (auto), from remat-opt's report JSON;
# 2. remat-opt's whole wall time with no plan (parse, fuse, import, report), where fusion's own
#    time shows, and each heuristic's planner seconds (the report's plan_seconds), unfused →
#    fused, with no budget: each strategy plans for the least memory it reaches (a fixed
#    percentage is infeasible on some graphs and trivial on others).
# Uses the release remat-opt (built if missing) and jq. Run tools/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
opt=${CARGO_TARGET_DIR:-target}/release/remat-opt
[ -x "$opt" ] || cargo build --release --quiet -p remat-opt
command -v jq >/dev/null || { echo "fusion-table: needs jq (apt-get install jq)" >&2; exit 1; }
examples=(mlp rnn_scan transformer resnet transformer12 torch_mlp)
strategies=(greedy treewidth pathwidth acg dtr chain hierarchical)
report=$(mktemp)
trap 'rm -f "$report"' EXIT

# Wall seconds of one remat-opt run (the median of three).
wall() {
  local times=()
  for _ in 1 2 3; do
    local start end
    start=$(date +%s.%N)
    "$opt" "$@" -o /dev/null
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc)")
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n 2p
}

kib() { awk -v b="$1" 'BEGIN {printf "%.1f KiB", b / 1024}'; }

echo "| example | ops unfused → fused | no-remat peak unfused → fused | lower bound unfused → fused | remat-opt seconds, no plan, unfused → fused |"
echo "|---|---:|---:|---:|---:|"
for e in "${examples[@]}"; do
  input=examples/$e.linalg.mlir
  "$opt" "$input" --remat=none --report-json "$report" -o /dev/null
  read -r nodes unfused_nodes peak unfused_peak bound unfused_bound < <(jq -r \
    '[.nodes, .fusion.unfused_nodes, .baseline.peak_bytes, .fusion.unfused_peak_bytes, .lower_bound_bytes,
      .fusion.unfused_lower_bound_bytes] | @tsv' "$report")
  printf '| %s | %s → %s | %s → %s | %s → %s | %.3f → %.3f |\n' "$e" "$unfused_nodes" "$nodes" \
    "$(kib "$unfused_peak")" "$(kib "$peak")" "$(kib "$unfused_bound")" "$(kib "$bound")" \
    "$(wall "$input" --remat=none --fusion=none)" "$(wall "$input" --remat=none)"
done

echo
echo "Planner seconds with no budget (the least memory each strategy reaches), unfused → fused (\`-\`: no plan):"
echo
printf '| example |'; printf ' %s |' "${strategies[@]}"; echo
printf '|---|'; printf -- '---:|%.0s' "${strategies[@]}"; echo
for e in "${examples[@]}"; do
  printf '| %s |' "$e"
  for s in "${strategies[@]}"; do
    cells=()
    for fusion in none auto; do
      if "$opt" "examples/$e.linalg.mlir" --remat="$s" --fusion="$fusion" \
          --report-json "$report" -o /dev/null 2>/dev/null; then
        cells+=("$(jq -r '.plan_seconds' "$report" | awk '{printf "%.3f", $1}')")
      else
        cells+=("-")
      fi
    done
    printf ' %s → %s |' "${cells[0]}" "${cells[1]}"
  done
  echo
done

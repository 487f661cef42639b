#!/usr/bin/env bash
# Regenerates docs/benchmarks.md and its data and charts in docs/benchmarks/ in one go:
#
#   bash tools/benchmarks.sh
#
# 1. XLA's and PyTorch's own memory figures for the exported steps (tools/export/alternatives.sh;
#    keeps the committed alternatives.json when the Python environments cannot be made);
# 2. `remat-bench sweep`: every strategy at 100…30 % budgets over the examples, the example
#    graphs and the generated networks of Feng & Huang's Table 1, the cheapest plan at each
#    budget rewritten by remat-opt and run by remat-run on the CPU; then, for each step XLA or
#    PyTorch also ran, the fast strategies at every whole percent, and the least-peak plan
#    within each of their overheads rewritten and measured;
# 3. `remat-bench planner-time`: planning time on generated families of 1k–100k nodes;
# 4. `remat-opt --plot`: memory timelines before and after;
# 5. `remat-bench report`: docs/benchmarks.md.
#
# KEEP_ALTERNATIVES=1 skips step 1 (PyTorch's environment is 6 GB of wheels) and keeps the
# committed alternatives.json. TIME_LIMIT (seconds per plan, default 10) bounds steps 2 and 3; greedy, treewidth and dtr get
# longer in step 3 so their lines reach 100k nodes. 114 minutes on the project's 2-core machine
# (at 5ca5ed6).
# Run tools/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
limit=${TIME_LIMIT:-10}
out=docs/benchmarks
target=${CARGO_TARGET_DIR:-target}/release
mkdir -p "$out"

cargo build --release --quiet -p remat-bench -p remat-opt -p remat-run

if [ "${KEEP_ALTERNATIVES:-0}" = 1 ]; then
  echo "benchmarks: KEEP_ALTERNATIVES=1: keeping $out/alternatives.json" >&2
elif ! bash tools/export/alternatives.sh "$out/alternatives.json"; then
  echo "benchmarks: warning: could not rerun XLA and PyTorch; keeping $out/alternatives.json" >&2
fi

rm -f "$out"/pareto-*.svg "$out"/planner-time-*.svg "$out"/timeline-*.svg
inputs=(examples/mlp_small.mlir examples/{mlp,rnn_scan,transformer,resnet,transformer12,transformer_scan,cnn_pool,attention_causal,lm_dropout,torch_mlp}.linalg.mlir
        examples/{transformer12,resnet,cnn_pool,attention_causal,lm_dropout}.stablehlo.mlir examples/graphs/*.json
        vgg16 vgg19 resnet34 resnet152 densenet121 densenet201)
"$target/remat-bench" sweep "${inputs[@]}" --time-limit "$limit" \
  --remat-opt "$target/remat-opt" --remat-run "$target/remat-run" --alternatives "$out/alternatives.json" --out "$out"

"$target/remat-bench" planner-time --time-limit "$limit" \
  --sizes 1000,3000,10000,30000,100000 --strategy-time-limit greedy=60,treewidth=120,dtr=60 --out "$out"

plot() { "$target/remat-opt" "examples/$1.mlir" --remat="$2" --budget="$3" --plot="$out/timeline-$1-$2.svg" -o /dev/null; }
plot transformer12.linalg treewidth 30%
plot resnet.linalg greedy 60%
plot transformer.linalg dtr 50%

commit=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- crates passes tools || commit="$commit (with uncommitted changes)"
cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
memory=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
machine="$(nproc) cores of $cpu, $memory, Debian $(cat /etc/debian_version)"
minutes=$(awk -v s="$started" -v e="$(date +%s)" 'BEGIN {printf "%.1f", (e - s) / 60}')
"$target/remat-bench" report --dir "$out" -o docs/benchmarks.md --commit "$commit" --machine "$machine" --minutes "$minutes"
echo "benchmarks: wrote docs/benchmarks.md and $out/ in $minutes minutes"

#!/usr/bin/env bash
# Re-runs the planner benchmarks of docs/bench/README.md (tables to stdout, plots to
# docs/bench/). Release build; about two minutes on 2 cores, and about five more for the
# hierarchical planner's sweeps at the end. Run tools/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
cargo build --release -p remat-bench -p remat-opt -p remat-run
graphs=$(mktemp -d); trap 'rm -rf "$graphs"' EXIT
for name in mlp.linalg mlp.stablehlo torch_mlp.linalg rnn_scan.linalg transformer.linalg transformer.stablehlo resnet.linalg resnet.stablehlo transformer12.linalg transformer12.stablehlo; do
  "$target/release/remat-opt" "examples/$name.mlir" --remat=none --emit=graph-json -o "$graphs/$name.json"
done
bench="$target/release/remat-bench"
"$bench" depth --svg docs/bench/depth.svg
"$bench" depth --residual --svg docs/bench/depth-residual.svg
"$bench" compare "$graphs"/{mlp.linalg,rnn_scan.linalg,transformer.linalg,transformer.stablehlo,resnet.linalg,resnet.stablehlo,transformer12.linalg,transformer12.stablehlo}.json
"$bench" compare "$graphs"/transformer12.*.json --strategies treewidth,greedy --budget 28.7
"$bench" tradeoff "$graphs/resnet.linalg.json" --svg docs/bench/resnet-tradeoff.svg
"$bench" decompose "$graphs"/{mlp.linalg,rnn_scan.linalg,transformer.linalg,transformer.stablehlo,resnet.linalg,resnet.stablehlo,transformer12.linalg,transformer12.stablehlo}.json
"$bench" scale --strategies treewidth,pathwidth --svg docs/bench/scale.svg
"$bench" reforward "$graphs"/{mlp.linalg,mlp.stablehlo,torch_mlp.linalg,rnn_scan.linalg,resnet.linalg,resnet.stablehlo,transformer.linalg,transformer12.linalg,transformer12.stablehlo}.json \
  vgg11 vgg16 vgg19 resnet18 resnet34 resnet101 resnet152 densenet121 densenet169 densenet201
"$bench" reforward-time --svg docs/bench/reforward-time.svg
"$bench" ilp examples/graphs/{vgg-small,resnet-small,vgg-3stage,resnet-2stage}.json "$graphs"/{mlp_small,torch_mlp.linalg}.json --time-limit 60
"$bench" dtr-theorem --sizes 10,100,1000,3000,10000
"$bench" dtr "$graphs"/{transformer.linalg,resnet.linalg,transformer12.linalg}.json vgg16 resnet18 densenet121 --budgets 80,70,60,50,40,30
"$bench" chain --depths 8,16,32 --budgets 80,60,40 --betas 0.1,0.4,1
# The hierarchical planner beside the heuristics (docs/bench/README.md, "The hierarchical planner").
for name in transformer12.linalg transformer12.stablehlo; do
  "$target/release/remat-opt" "examples/$name.mlir" --sweep=80,60,50,40,30,25,20 \
    --sweep-strategies=greedy,treewidth,pathwidth,acg,dtr,chain,hierarchical
done
"$bench" export-graph transformer --stages 240 -o "$graphs/transformer240.json"
"$bench" sweep "$graphs/transformer240.json" --budgets 80,60,50,40,30,20 \
  --strategies greedy,treewidth,pathwidth,acg,dtr,chain,hierarchical --time-limit 60 --out "$graphs/sweep240"
# The heuristics on random layered DAGs with long edges (docs/bench/README.md, "Random layered
# DAGs with long edges").
bash tools/layered-table.sh 1000 "0 1 2" "greedy dtr treewidth pathwidth acg hierarchical"
# Every strategy on the scanned LM, unrolled and unstacked (docs/bench/README.md, "Scanned
# layers").
bash tools/scan-table.sh
# Every bundled StableHLO step from plan to binary (docs/bench/README.md, "StableHLO from plan
# to binary").
bash tools/stablehlo-table.sh

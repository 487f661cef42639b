#!/usr/bin/env bash
# The GPU lowering's compile-side figures, as a Markdown table: per example and strategy, the
# planned peak, the library's kernels and size, and the device peak its host side allocates
# when run by remat-gpu-run against the fake CUDA driver of remat-gpu-run's tests (real
# allocations, frees and launches; kernels that compute nothing). With GPU=1 it runs on the
# real driver instead and also compares outputs with the CPU run (remat-run --save-io).
#
#   bash tools/measure-gpu.sh [EXAMPLE.mlir ...]   (default: mlp, transformer, resnet)
#
# Strategies: none, treewidth, and auto at 50% of the baseline (at 90% when 50% is
# infeasible); set STRATEGIES (comma-separated) for others. Needs the debug build.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${CARGO_TARGET_DIR:-target}/debug
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
files=("$@")
[ ${#files[@]} -eq 0 ] && files=(examples/mlp.linalg.mlir examples/transformer.linalg.mlir examples/resnet.linalg.mlir)
run_env=()
if [ "${GPU:-0}" != 1 ]; then
  cc -shared -fPIC -o "$tmp/libcuda.so" tools/remat-gpu-run/tests/fake_cuda/libcuda.c || exit 1
  run_env=(env LD_LIBRARY_PATH="$tmp" FAKE_CUDA_SKIP_KERNELS=1)
fi
printf "| example | strategy | planned peak | measured device peak | host peak | kernels | library bytes | compile seconds | step seconds | outputs |\n|---|---|---|---|---|---|---|---|---|---|\n"
status=0
for f in "${files[@]}"; do
  IFS=, read -ra strategies <<<"${STRATEGIES:-none,treewidth,auto --budget=50%}"
  for strategy in "${strategies[@]}"; do
    name=$(basename "$f" .mlir)
    # shellcheck disable=SC2086
    if ! "$bin/remat-opt" "$f" --remat=$strategy -o "$tmp/step.mlir" --report-json="$tmp/report.json" 2>"$tmp/err"; then
      if [[ $strategy == *"--budget=50%"* ]]; then
        strategy=${strategy/--budget=50%/--budget=90%}
        # shellcheck disable=SC2086
        "$bin/remat-opt" "$f" --remat=$strategy -o "$tmp/step.mlir" --report-json="$tmp/report.json" 2>"$tmp/err" || { echo "| $name | $strategy | failed: $(tail -1 "$tmp/err") |"; status=1; continue; }
      else
        echo "| $name | $strategy | failed: $(tail -1 "$tmp/err") |"; status=1; continue
      fi
    fi
    start=$(date +%s.%N)
    "$bin/remat-opt" "$tmp/step.mlir" --pass-pipeline='builtin.module()' --lower=gpu --emit=library -o "$tmp/step.so" 2>"$tmp/err" || { echo "| $name | $strategy | lowering failed: $(tail -1 "$tmp/err") |"; status=1; continue; }
    seconds=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
    expect=()
    if [ "${GPU:-0}" = 1 ]; then
      "$bin/remat-run" "$tmp/step.mlir" --save-io "$tmp/io" --json >/dev/null && expect=(--inputs "$tmp/io" --expect "$tmp/io")
    fi
    "${run_env[@]}" "$bin/remat-gpu-run" "$tmp/step.so" --json --repeat 3 "${expect[@]}" >"$tmp/run.json" 2>"$tmp/err"
    python3 - "$name" "$strategy" "$tmp/report.json" "$tmp/run.json" "$tmp/step.so" "$seconds" <<'PY' || status=1
import json, subprocess, sys
name, strategy, report, run, library, seconds = sys.argv[1:]
plan = json.load(open(report))["plan"]["peak_bytes"]
try:
    r = json.load(open(run))
except ValueError:
    print(f"| {name} | {strategy} | {plan} | run failed | | | | | | |"); sys.exit(1)
symbols = subprocess.run(["/usr/lib/llvm-22/bin/llvm-nm", library], capture_output=True, text=True).stdout
kernels = sum(1 for line in symbols.splitlines() if line.endswith("_binary"))
outputs = {True: "match", False: "DIFFER"}.get(r.get("outputs_match"), "not compared")
print(f"| {name} | {strategy} | {plan} | {r['device_peak_bytes']} | {r['host_peak_bytes']} | {kernels} | {__import__('os').path.getsize(library)} | {seconds} | {r['seconds_median']:.4f} | {outputs} |")
sys.exit(0 if r["device_peak_bytes"] == plan and r.get("outputs_match", True) else 1)
PY
  done
done
exit $status

#!/usr/bin/env bash
# The GPU lowering's figures, as a Markdown table: per example and strategy, the planned peak,
# the library's kernels and size, and the device peak its host side allocates when run by
# remat-gpu-run against the fake CUDA driver of remat-gpu-run's tests (real allocations, frees
# and launches; kernels that compute nothing). Staging bytes (pinned buffers through which the
# host reads a scalar it needs) are outside the plan and shown apart. With GPU=1 it runs on the
# real driver instead and also compares outputs with the CPU run (remat-run --save-io).
#
#   bash tools/measure-gpu.sh [EXAMPLE.mlir ...]            plan, lower and run here
#   bash tools/measure-gpu.sh --prepare DIR [EXAMPLE.mlir ...]
#   bash tools/measure-gpu.sh --pack DIR                      DIR.tgz, to carry to the GPU host
#   GPU=1 bash tools/measure-gpu.sh --run-prepared DIR|DIR.tgz
#
# The two halves exist for GPU hosts without LLVM or MLIR: --prepare plans, lowers and saves the
# CPU run's inputs and outputs (needs the debug build), and copies remat-gpu-run (which links
# neither) into DIR; --run-prepared needs only DIR (or its archive), bash, tar, python3 and a
# CUDA driver. Packed, the rows shrink about fivefold (the 18 rows of docs/bench: 172 MB, 35 MB),
# which matters where what travels to the GPU host is limited.
#
# Strategies: none, treewidth, and auto at 50% of the baseline (at 90% when 50% is
# infeasible); set STRATEGIES (comma-separated) for others.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${CARGO_TARGET_DIR:-target}/debug
mode=all
case "${1:-}" in
  --prepare) mode=prepare; work=${2:?--prepare needs a directory}; shift 2 ;;
  --run-prepared) mode=run; work=${2:?--run-prepared needs a directory or its .tgz}; shift 2 ;;
  --pack) work=${2:?--pack needs a directory}; work=${work%/}
    tar czf "$work.tgz" -C "$(dirname "$work")" "$(basename "$work")" && echo "$work.tgz"; exit ;;
esac
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if [ "$mode" = run ] && [[ $work == *.tgz ]]; then
  # The archive --pack wrote holds one directory: the prepared rows.
  mkdir "$tmp/unpacked" && tar xzf "$work" -C "$tmp/unpacked" || exit 1
  work=$(find "$tmp/unpacked" -mindepth 1 -maxdepth 1 -type d | head -1)
fi
[ "$mode" = all ] && work="$tmp/prepared"
files=("$@")
[ ${#files[@]} -eq 0 ] && files=(examples/mlp.linalg.mlir examples/transformer.linalg.mlir examples/resnet.linalg.mlir)
status=0

# One prepared row: DIR/NN/{row.json,step.so,io/}. With SAVE_IO=1 the CPU run's inputs and
# outputs are saved for remat-gpu-run to compare against (what GPU=1 and --prepare need).
prepare() {
  mkdir -p "$work"
  cp "$bin/remat-gpu-run" "$work/" || return 1
  # Rows continue after any already prepared, so several --prepare runs share one DIR.
  local row f strategy name strategies
  row=$(find "$work" -mindepth 1 -maxdepth 1 -name '[0-9]*' | wc -l)
  for f in "${files[@]}"; do
    IFS=, read -ra strategies <<<"${STRATEGIES:-none,treewidth,auto --budget=50%}"
    for strategy in "${strategies[@]}"; do
      name=$(basename "$f" .mlir)
      row=$((row + 1))
      local dir; dir=$(printf '%s/%02d' "$work" "$row"); mkdir -p "$dir"
      # shellcheck disable=SC2086
      if ! "$bin/remat-opt" "$f" --remat=$strategy -o "$tmp/step.mlir" --report-json="$tmp/report.json" 2>"$tmp/err"; then
        if [[ $strategy == *"--budget=50%"* ]]; then
          strategy=${strategy/--budget=50%/--budget=90%}
          # shellcheck disable=SC2086
          "$bin/remat-opt" "$f" --remat=$strategy -o "$tmp/step.mlir" --report-json="$tmp/report.json" 2>"$tmp/err" || { failed_row "$dir" "$name" "$strategy" "failed: $(tail -1 "$tmp/err")"; continue; }
        else
          failed_row "$dir" "$name" "$strategy" "failed: $(tail -1 "$tmp/err")"; continue
        fi
      fi
      local start seconds
      start=$(date +%s.%N)
      "$bin/remat-opt" "$tmp/step.mlir" --pass-pipeline='builtin.module()' --lower=gpu --emit=library -o "$dir/step.so" 2>"$tmp/err" || { failed_row "$dir" "$name" "$strategy" "lowering failed: $(tail -1 "$tmp/err")"; continue; }
      seconds=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
      local saved=false
      if [ "${SAVE_IO:-0}" = 1 ]; then
        "$bin/remat-run" "$tmp/step.mlir" --save-io "$dir/io" --json >/dev/null 2>"$tmp/err" && saved=true
      fi
      local kernels
      kernels=$(/usr/lib/llvm-22/bin/llvm-nm "$dir/step.so" | grep -c '_binary$')
      python3 - "$name" "$strategy" "$tmp/report.json" "$dir" "$seconds" "$kernels" "$saved" <<'PY'
import json, os, sys
name, strategy, report, dir, seconds, kernels, saved = sys.argv[1:]
report = json.load(open(report))
row = {"example": name, "strategy": strategy,
       "planned_peak_bytes": report["plan"]["peak_bytes"],
       "planned_host_peak_bytes": (report.get("host") or {}).get("peak_bytes", 0),
       "kernels": int(kernels), "library_bytes": os.path.getsize(f"{dir}/step.so"),
       "compile_seconds": seconds, "io_saved": saved == "true"}
json.dump(row, open(f"{dir}/row.json", "w"))
PY
    done
  done
}

failed_row() {
  python3 -c 'import json, sys; json.dump({"example": sys.argv[2], "strategy": sys.argv[3], "failed": sys.argv[4]}, open(sys.argv[1] + "/row.json", "w"))' "$@"
  status=1
}

# Runs every prepared row with DIR's remat-gpu-run and prints the table; fails when a device
# peak differs from the planned peak or outputs differ.
run_prepared() {
  local run_env=()
  if [ "${GPU:-0}" != 1 ]; then
    cc -shared -fPIC -o "$tmp/libcuda.so" tools/remat-gpu-run/tests/fake_cuda/libcuda.c || return 1
    run_env=(env LD_LIBRARY_PATH="$tmp" FAKE_CUDA_SKIP_KERNELS=1)
  fi
  printf "| example | strategy | planned peak | measured device peak | planned host peak | measured host peak | staging bytes | kernels | library bytes | compile seconds | step seconds | outputs |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"
  local dir
  for dir in "$work"/[0-9]*/; do
    dir=${dir%/}
    local expect=()
    # The fake driver's kernels compute nothing: compare outputs on a real GPU only.
    [ "${GPU:-0}" = 1 ] && [ -d "$dir/io" ] && expect=(--inputs "$dir/io" --expect "$dir/io")
    [ -f "$dir/step.so" ] && "${run_env[@]}" "$work/remat-gpu-run" "$dir/step.so" --json --repeat 3 "${expect[@]}" >"$dir/run.json" 2>"$dir/run.err"
    python3 - "$dir" <<'PY' || status=1
import json, sys
dir = sys.argv[1]
row = json.load(open(f"{dir}/row.json"))
name, strategy = row["example"], row["strategy"]
if "failed" in row:
    print(f"| {name} | {strategy} | {row['failed']} |"); sys.exit(1)
plan = row["planned_peak_bytes"]
try:
    r = json.load(open(f"{dir}/run.json"))
except ValueError:
    err = open(f"{dir}/run.err").read().strip().splitlines()
    print(f"| {name} | {strategy} | {plan} | run failed: {err[-1] if err else ''} | | | | | | | | |"); sys.exit(1)
outputs = {True: "match", False: "DIFFER"}.get(r.get("outputs_match"), "not compared")
print(f"| {name} | {strategy} | {plan} | {r['device_peak_bytes']} | {row['planned_host_peak_bytes']} | {r['host_peak_bytes']} | {r.get('staging_peak_bytes', 0)} | {row['kernels']} | {row['library_bytes']} | {row['compile_seconds']} | {r['seconds_median']:.4f} | {outputs} |")
ok = r["device_peak_bytes"] == plan and r["host_peak_bytes"] == row["planned_host_peak_bytes"]
sys.exit(0 if ok and r.get("outputs_match", True) else 1)
PY
  done
}

case $mode in
  prepare) SAVE_IO=1 prepare ;;
  run) run_prepared ;;
  all) SAVE_IO=${GPU:-0} prepare && run_prepared ;;
esac
exit $status

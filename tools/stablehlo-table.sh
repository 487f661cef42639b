#!/usr/bin/env bash
# Every bundled StableHLO step from plan to binary: remat-opt legalizes it (by default) and
# plans it with auto at the first budget of BUDGETS it meets, remat-run runs the rewritten step
# beside the StableHLO original (measured peak, outputs bit for bit), the original runs beside
# jaxlib's linalg form of the same step, and the step lowers for the GPU (PTX, no device
# needed). Prints a Markdown table.
#
# usage: tools/stablehlo-table.sh [BUDGETS] [INPUT.stablehlo.mlir ...]
#   defaults: "60 80 100", every examples/*.stablehlo.mlir
# Needs the release build: cargo build --release -p remat-opt -p remat-run
set -euo pipefail
cd "$(dirname "$0")/.."
budgets=${1:-"60 80 100"}
shift $(( $# < 1 ? $# : 1 ))
inputs=("$@")
[ ${#inputs[@]} -eq 0 ] && inputs=(examples/*.stablehlo.mlir)
opt=target/release/remat-opt
run=target/release/remat-run
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A field of remat-run's --json line.
field() { python3 -c 'import json, sys; print(str(json.load(open(sys.argv[2]))[sys.argv[1]]).lower())' "$1" "$2"; }

echo '| step | budget | strategy | overhead | planned | measured | outputs vs StableHLO | StableHLO vs jaxlib linalg | --lower=gpu --emit=ptx |'
echo '|---|---:|---|---:|---:|---:|---|---|---|'
for input in "${inputs[@]}"; do
  name=$(basename "$input" .stablehlo.mlir)
  planned='—' budget='—' strategy='—' overhead='—' measured='—' same='—' jaxlib='—' gpu='fails'
  for b in $budgets; do
    if "$opt" "$input" --remat=auto --budget="$b%" --report-json="$work/report.json" \
        -o "$work/$name.mlir" 2>"$work/opt.err"; then
      budget="$b%"
      read -r planned strategy overhead < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["plan"]["peak_bytes"], r["strategy"], "%+.1f%%" % (100 * r["plan"]["recompute_overhead"]))
' "$work/report.json")
      break
    fi
  done
  if [ "$budget" != '—' ]; then
    if "$run" "$work/$name.mlir" --compare-with="$input" --json >"$work/run.json" 2>"$work/run.err"; then
      measured=$(field peak_bytes "$work/run.json")
      same=$([ "$(field outputs_match "$work/run.json")" = true ] && echo bit-identical || echo DIFFERENT)
    else
      measured="fails: $(head -1 "$work/run.err")"
    fi
  fi
  linalg=${input%.stablehlo.mlir}.linalg.mlir
  if [ -e "$linalg" ]; then
    if "$run" "$input" --compare-with="$linalg" --json >"$work/jax.json" 2>/dev/null; then
      jaxlib=$([ "$(field outputs_match "$work/jax.json")" = true ] && echo bit-identical || echo DIFFERENT)
    else
      jaxlib=fails
    fi
  fi
  "$opt" "$input" --lower=gpu --emit=ptx -o "$work/$name.ptx" 2>/dev/null && gpu=ok
  echo "| $name | $budget | $strategy | $overhead | $planned | $measured | $same | $jaxlib | $gpu |"
done

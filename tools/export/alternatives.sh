#!/usr/bin/env bash
# Record what XLA (through JAX) and PyTorch say about the memory and flops of
# the examples' training steps, without and with activation checkpointing, as
# docs/benchmarks/alternatives.json (see alternatives.py for what each field
# means and how it is measured), with each XLA row's step also counted by
# remat-opt's cost model (our_cost_model.py).
#
#   bash tools/export/alternatives.sh [OUT.json]
#
# Through regen-common.sh: creates (once) the JAX venv (tools/export/.venv) and
# the PyTorch one (tools/export/.venv-torch) from their pinned requirements,
# like regen.sh and regen_torch.sh. Without the PyTorch venv (it cannot be
# made, e.g. offline) the torch_mlp rows are left out. Everything runs on the
# CPU; the output is deterministic.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source "$here/regen-common.sh"

if (( $# > 1 )) || [[ "${1:-}" == -* ]]; then
  echo "usage: alternatives.sh [OUT.json]" >&2
  exit 2
fi
out="${1:-$root/docs/benchmarks/alternatives.json}"

torch_rows="$(mktemp)"
trap 'rm -f "$torch_rows"' EXIT
merge=()
if ensure_venv alternatives.sh "$here/.venv-torch" "$here/requirements-torch.txt"; then
  "$here/.venv-torch/bin/python" "$here/alternatives.py" --torch --out "$torch_rows"
  merge=(--torch-rows "$torch_rows")
else
  echo "alternatives.sh: no PyTorch venv at $here/.venv-torch; leaving out the torch_mlp rows" >&2
fi

ensure_venv alternatives.sh "$here/.venv" "$here/requirements.txt"
JAX_PLATFORMS=cpu "$here/.venv/bin/python" "$here/alternatives.py" --out "$out" "${merge[@]}"
# Each XLA row's step counted by our own cost model too (our_cost_model.py says why).
(cd "$root" && cargo build --release --quiet -p remat-opt)
JAX_PLATFORMS=cpu "$here/.venv/bin/python" "$here/our_cost_model.py" --alternatives "$out" \
  --remat-opt "${CARGO_TARGET_DIR:-$root/target}/release/remat-opt"
echo "wrote $out"

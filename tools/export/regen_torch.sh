#!/usr/bin/env bash
# Regenerate examples/torch_mlp.linalg.mlir from PyTorch (via torch-mlir).
#
#   bash tools/export/regen_torch.sh            # export, then check if MLIR 22 is installed
#   bash tools/export/regen_torch.sh --no-check # export only
#
# Creates (once) a venv at tools/export/.venv-torch with Python 3.12 and the
# pinned requirements-torch.txt from PyPI (torch pulls about 4 GB of CUDA
# wheels; the export itself runs on the CPU). Re-running reuses it and
# re-installs only when requirements-torch.txt changed. The export is
# deterministic: re-running leaves examples/ unchanged unless the model or the
# versions change. Kept apart from regen.sh (JAX) so neither venv needs the
# other's packages.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-torch"
req="$here/requirements-torch.txt"

check=1
for arg in "$@"; do
  case "$arg" in
    --no-check) check=0 ;;
    *) echo "usage: $0 [--no-check]" >&2; exit 2 ;;
  esac
done

find_python() {
  if [[ -n "${PYTHON:-}" ]]; then echo "$PYTHON"; return; fi
  for p in "${PYENV_ROOT:-/root/.pyenv}/versions/3.12.1/bin/python3" python3.12 python3; do
    if command -v "$p" >/dev/null 2>&1 &&
       "$p" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
      echo "$p"; return
    fi
  done
  echo "regen_torch.sh: no Python 3.12 found (set PYTHON=/path/to/python3.12)" >&2
  exit 1
}

if [[ ! -x "$venv/bin/python" ]] ||
   ! "$venv/bin/python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
  rm -rf "$venv"
  "$(find_python)" -m venv "$venv"
fi

stamp="$venv/.requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
  echo "$want" > "$stamp"
fi

"$venv/bin/python" "$here/export_torch.py"

if [[ $check == 1 ]]; then
  if [[ -x /usr/lib/llvm-22/bin/mlir-opt && -x /usr/lib/llvm-22/bin/mlir-runner ]]; then
    "$venv/bin/python" "$here/check_torch.py"
  else
    echo "regen_torch.sh: /usr/lib/llvm-22 (mlir-opt, mlir-runner) not found; skipped the checks" >&2
  fi
fi

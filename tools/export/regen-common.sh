# Shared by regen.sh (JAX), regen_torch.sh (PyTorch) and alternatives.sh;
# sourced, not run.
#
#   regen NAME VENV REQUIREMENTS EXPORTER CHECKER [--no-check]
#
# Creates (once) a Python 3.12 venv at VENV with the pinned REQUIREMENTS from PyPI
# (re-installing only when the file changed), runs EXPORTER, then CHECKER when
# MLIR 22's mlir-opt and mlir-runner are installed (unless --no-check).

regen() {
  local name=$1 venv=$2 req=$3 exporter=$4 checker=$5
  shift 5
  local check=1 arg
  for arg in "$@"; do
    case "$arg" in
      --no-check) check=0 ;;
      *) echo "usage: $name [--no-check]" >&2; exit 2 ;;
    esac
  done

  ensure_venv "$name" "$venv" "$req"

  "$venv/bin/python" "$exporter"

  if [[ $check == 1 ]]; then
    if [[ -x /usr/lib/llvm-22/bin/mlir-opt && -x /usr/lib/llvm-22/bin/mlir-runner ]]; then
      "$venv/bin/python" "$checker"
    else
      echo "$name: /usr/lib/llvm-22 (mlir-opt, mlir-runner) not found; skipped the checks" >&2
    fi
  fi
}

# ensure_venv NAME VENV REQUIREMENTS: create (once) a Python 3.12 venv at VENV
# with the pinned REQUIREMENTS, re-installing only when the file changed.
# Returns non-zero (and records nothing) when it cannot, e.g. without network.
ensure_venv() {
  local name=$1 venv=$2 req=$3 python
  if [[ ! -x "$venv/bin/python" ]] ||
     ! "$venv/bin/python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
    rm -rf "$venv"
    python="$(find_python "$name")" || return 1
    "$python" -m venv "$venv" || return 1
  fi

  local stamp="$venv/.requirements.sha256" want
  want="$(sha256sum < "$req")" || return 1
  want="${want%% *}"
  if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" || return 1
    echo "$want" > "$stamp"
  fi
}

find_python() {
  if [[ -n "${PYTHON:-}" ]]; then echo "$PYTHON"; return; fi
  local p
  for p in "${PYENV_ROOT:-/root/.pyenv}/versions/3.12.1/bin/python3" python3.12 python3; do
    if command -v "$p" >/dev/null 2>&1 &&
       "$p" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
      echo "$p"; return
    fi
  done
  echo "$1: no Python 3.12 found (set PYTHON=/path/to/python3.12)" >&2
  exit 1
}

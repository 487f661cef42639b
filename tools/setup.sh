#!/usr/bin/env bash
# Installs what remat-opt needs on Debian 12 and builds the remat-opt binary. Idempotent:
# packages already present are not reinstalled, and cargo rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(libmlir-22-dev llvm-22-dev libclang-22-dev libpolly-22-dev libzstd-dev zlib1g-dev
          mlir-22-tools llvm-22-tools cmake g++ python3 python3-jsonschema)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install a Rust toolchain (1.88 or newer, e.g. with rustup) and rerun" >&2
  exit 1
fi

# rustfmt and clippy: tools/test.sh checks the style first.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  if command -v rustup >/dev/null 2>&1; then
    rustup component add rustfmt clippy
  else
    echo "setup: warning: cargo fmt or cargo clippy is missing (tools/test.sh needs both)" >&2
  fi
fi

# ptxas and libdevice for `remat-opt --lower=gpu` (cubins, and kernels that call math
# functions), from NVIDIA's PyPI wheel; no GPU or CUDA install needed. Without network the GPU
# lowering still writes PTX for kernels without math functions.
cuda_dir="${REMAT_CUDA_PATH:-${XDG_CACHE_HOME:-$HOME/.cache}/remat-opt/cuda-nvcc}"
if [ ! -x "$cuda_dir/bin/ptxas" ] || [ ! -f "$cuda_dir/nvvm/libdevice/libdevice.10.bc" ]; then
  echo "setup: fetching ptxas and libdevice (PyPI nvidia-cuda-nvcc-cu12) into $cuda_dir"
  python3 tools/fetch_cuda_nvcc.py "$cuda_dir" ||
    echo "setup: warning: could not fetch ptxas and libdevice; --lower=gpu will emit PTX only" >&2
fi

echo "setup: building remat-opt"
cargo build --quiet -p remat-opt -p remat-run -p remat-gpu-run

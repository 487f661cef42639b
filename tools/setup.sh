#!/usr/bin/env bash
# Installs what remat-opt needs on Debian 12 and builds the remat-opt binary. Idempotent:
# packages already present are not reinstalled, and cargo rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(libmlir-22-dev llvm-22-dev libclang-22-dev libpolly-22-dev libzstd-dev zlib1g-dev
          mlir-22-tools llvm-22-tools cmake g++ python3)
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
  echo "setup: cargo not found; install a Rust toolchain (1.85 or newer, e.g. with rustup) and rerun" >&2
  exit 1
fi

echo "setup: building remat-opt"
cargo build --quiet -p remat-opt -p remat-run

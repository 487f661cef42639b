#!/usr/bin/env bash
# Installs the remat C API into PREFIX: lib/libremat.{so,a}, include/remat-c/Remat.h and
# lib/cmake/Remat/RematConfig.cmake, for `find_package(Remat CONFIG)` with
# -DCMAKE_PREFIX_PATH=PREFIX. Builds it first (release; PROFILE=debug for the test build).
#   bash tools/install-capi.sh PREFIX
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 1 ]; then
  echo "usage: $0 PREFIX" >&2
  exit 2
fi
prefix=$1
profile=${PROFILE:-release}
target_dir=${CARGO_TARGET_DIR:-target}
case "$profile" in
  release) cargo build --quiet --release -p remat-capi ;;
  debug) cargo build --quiet -p remat-capi ;;
  *) echo "install-capi: PROFILE must be release or debug, not '$profile'" >&2; exit 2 ;;
esac
install -d "$prefix/lib/cmake/Remat" "$prefix/include/remat-c"
# libremat.so finds libMLIR.so by its run path (/usr/lib/llvm-22/lib).
install -m 755 "$target_dir/$profile/libremat.so" "$prefix/lib/"
install -m 644 "$target_dir/$profile/libremat.a" "$prefix/lib/"
install -m 644 passes/capi/include/remat-c/Remat.h "$prefix/include/remat-c/"
install -m 644 passes/capi/cmake/RematConfig.cmake "$prefix/lib/cmake/Remat/"
echo "install-capi: installed the remat C API ($profile) in $prefix"

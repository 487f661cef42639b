#!/usr/bin/env bash
# The whole test suite: Rust unit, property and snapshot tests, then the lit tests that drive
# the remat-opt binary. Run tools/setup.sh first (the README's command does).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== style: rustfmt and clippy"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== cargo test"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --quiet 2>&1 | tee "$log"
rust_passed=$(grep -Eo 'test result: ok\. [0-9]+ passed' "$log" | awk '{s+=$4} END {print s+0}')

echo "== C API: libremat, its C test and the C++ example (CMake against MLIR 22)"
cargo build --quiet -p remat-opt -p remat-run -p remat-gpu-run -p remat-capi
target=$(realpath "${CARGO_TARGET_DIR:-target}")
# The C test links the library from the build tree; the C++ example an installed package.
PROFILE=debug bash tools/install-capi.sh "$target/capi-prefix"
cmake_build() {  # SOURCE BUILD-DIR CMAKE-ARGS...: configure quietly, build, show output on failure
  local source=$1 build=$2 out
  shift 2
  # A build directory configured from another source directory (a moved crate) starts over.
  if [ -f "$build/CMakeCache.txt" ] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$(realpath "$source")" "$build/CMakeCache.txt"; then
    rm -rf "$build"
  fi
  if ! out=$(cmake -S "$source" -B "$build" -DCMAKE_RUNTIME_OUTPUT_DIRECTORY="$target/cmake/bin" "$@" 2>&1 &&
             cmake --build "$build" 2>&1); then
    echo "$out" >&2
    return 1
  fi
}
cmake_build passes/capi/tests "$target/cmake/capi-test" \
  -DRemat_DIR="$PWD/passes/capi/cmake" -DREMAT_LIBRARY_DIR="$target/debug"
cmake_build examples/remat-mlir-opt "$target/cmake/remat-mlir-opt" -DCMAKE_PREFIX_PATH="$target/capi-prefix"

echo "== lit"
lit_out=$(/usr/lib/llvm-22/bin/lit -sv lit-tests 2>&1) && lit_rc=0 || lit_rc=$?
echo "$lit_out"
lit_passed=$(echo "$lit_out" | grep -Eo 'Passed *: *[0-9]+' | grep -Eo '[0-9]+' || echo 0)
lit_failed=$(echo "$lit_out" | grep -Eo 'Failed *: *[0-9]+' | grep -Eo '[0-9]+' || echo 0)

echo "== fuzz smoke run (60 s, tools/fuzz/mutate.py)"
fuzz_rc=0
python3 tools/fuzz/mutate.py --smoke --binary "$target/debug/remat-opt" --time-limit 5 \
  --crashes "$target/fuzz-crashes" || fuzz_rc=$?

echo "rust: ${rust_passed} passed; lit: ${lit_passed} passed, ${lit_failed} failed"
echo "$((rust_passed + lit_passed)) passed, ${lit_failed} failed"
[ "$fuzz_rc" -eq 0 ] || { echo "fuzz smoke run failed (inputs saved under $target/fuzz-crashes)"; exit 1; }
exit "$lit_rc"

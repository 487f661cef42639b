#!/usr/bin/env bash
# The whole test suite: Rust unit, property and snapshot tests, then the lit tests that drive
# the remat-opt binary. Run tools/setup.sh first (the README's command does).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo test"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --quiet 2>&1 | tee "$log"
rust_passed=$(grep -Eo 'test result: ok\. [0-9]+ passed' "$log" | awk '{s+=$4} END {print s+0}')

echo "== lit"
cargo build --quiet -p remat-opt -p remat-run -p remat-gpu-run
lit_out=$(/usr/lib/llvm-22/bin/lit -sv lit-tests 2>&1) && lit_rc=0 || lit_rc=$?
echo "$lit_out"
lit_passed=$(echo "$lit_out" | grep -Eo 'Passed *: *[0-9]+' | grep -Eo '[0-9]+' || echo 0)
lit_failed=$(echo "$lit_out" | grep -Eo 'Failed *: *[0-9]+' | grep -Eo '[0-9]+' || echo 0)

echo "rust: ${rust_passed} passed; lit: ${lit_passed} passed, ${lit_failed} failed"
echo "$((rust_passed + lit_passed)) passed, ${lit_failed} failed"
exit "$lit_rc"

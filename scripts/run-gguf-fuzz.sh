#!/usr/bin/env bash
# Builds the GGUF tests (test_gguf_*) with AddressSanitizer + UBSan in build-asan and runs them,
# the mutation test included: thousands of corrupt GGUF copies must parse or throw minfer::Error,
# with no out-of-bounds read, undefined behaviour, leak or huge allocation.
#
#   scripts/run-gguf-fuzz.sh                 # as CI runs it
#   MINFER_GGUF_MUTATIONS=200000 scripts/run-gguf-fuzz.sh   # a longer mutation run
#
# Env: MINFER_ASAN_BUILD (build folder, default build-asan), MINFER_JOBS (ninja -j, default 2),
#      MINFER_GGUF_MUTATIONS (mutants, default 20000), MINFER_GGUF_CRAFTED (crafted files with huge
#      metadata arrays, whole or then mutated, default 300), MINFER_GGUF_NONFINITE (crafted files whose
#      weights hold a NaN or Inf in a block scale or value, whole or then mutated, default 300).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MINFER_ASAN_BUILD:-$root/build-asan}"
jobs="${MINFER_JOBS:-2}"

tests=()
for src in "$root"/engine/tests/test_gguf_*.cpp; do
  name="$(basename "$src" .cpp)"
  tests+=("$name")
done
if [ ${#tests[@]} -eq 0 ]; then
  echo "run-gguf-fuzz: no engine/tests/test_gguf_*.cpp found" >&2
  exit 1
fi

source "$root/scripts/lib/asan-tests.sh"
asan_configure
echo "== build ${tests[*]}"
start=$SECONDS
ninja -C "$build" -j "$jobs" "${tests[@]}"
echo "   built in $((SECONDS - start)) s"

asan_run_tests run-gguf-fuzz 256 "${tests[@]}"
echo "run-gguf-fuzz: all ${#tests[@]} GGUF test programs passed under ASan+UBSan"

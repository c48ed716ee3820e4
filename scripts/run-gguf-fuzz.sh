#!/usr/bin/env bash
# Builds the GGUF tests (test_gguf_*) with AddressSanitizer + UBSan in build-asan and runs them,
# the mutation test included: thousands of corrupt GGUF copies must parse or throw minfer::Error,
# with no out-of-bounds read, undefined behaviour, leak or huge allocation.
#
#   scripts/run-gguf-fuzz.sh                 # as CI runs it
#   MINFER_GGUF_MUTATIONS=200000 scripts/run-gguf-fuzz.sh   # a longer mutation run
#
# Env: MINFER_ASAN_BUILD (build folder, default build-asan), MINFER_JOBS (ninja -j, default 2).
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

echo "== configure $build (MINFER_SANITIZE=ON)"
mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMINFER_SANITIZE=ON -DMINFER_CUDA=OFF >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log" >&2
  exit 1
}
echo "== build ${tests[*]}"
ninja -C "$build" -j "$jobs" "${tests[@]}"

# Any sanitizer report is fatal; an allocation above 256 MB is a failure, not a slow success.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:max_allocation_size_mb=256:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"

failed=()
for t in "${tests[@]}"; do
  echo "== run $t"
  start=$SECONDS
  if (cd "$build" && "$build/tests/$t" --gtest_brief=1); then
    echo "   $t passed in $((SECONDS - start)) s"
  else
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "run-gguf-fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "run-gguf-fuzz: all ${#tests[@]} GGUF test programs passed under ASan+UBSan"

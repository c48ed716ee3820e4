#!/usr/bin/env bash
# Builds the trace readers and the server with AddressSanitizer + UBSan and runs the trace
# mutation tests: damaged copies of a valid trace through minfer-trace's readers (validate,
# summary, diff, export-perfetto, in process and through the program) and through every
# minfer-viz route (list, fetch, compare). Each must answer or refuse with an error: no
# sanitizer report, crash, hang or runaway memory. Companion of scripts/run-gguf-fuzz.sh.
#
#   scripts/run-trace-fuzz.sh                                 # as CI runs it: 1,000 mutants
#   MINFER_TRACE_MUTATIONS=10000 scripts/run-trace-fuzz.sh    # a longer run (docs/trace-fuzzing.md)
#
# Env: MINFER_ASAN_BUILD (build folder, default build-asan), MINFER_JOBS (ninja -j, default 2),
#      MINFER_TRACE_MUTATIONS (default 1000), MINFER_TRACE_FUZZ_SEED (default 1).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MINFER_ASAN_BUILD:-$root/build-asan}"
jobs="${MINFER_JOBS:-2}"
export MINFER_TRACE_MUTATIONS="${MINFER_TRACE_MUTATIONS:-1000}"
export MINFER_TRACE_FUZZ_SEED="${MINFER_TRACE_FUZZ_SEED:-1}"

echo "== configure $build (MINFER_SANITIZE=ON)"
mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMINFER_SANITIZE=ON -DMINFER_CUDA=OFF >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log" >&2
  exit 1
}
tests=(recorder_test_trace_mutation)
# The server's test exists when cpp-httplib was found (viz-server/CMakeLists.txt).
if ninja -C "$build" -t targets all | grep -q "^viz_test_viz_mutation:"; then
  tests+=(viz_test_viz_mutation)
else
  echo "== minfer-viz is not built here (no cpp-httplib): its mutation test is skipped"
fi
echo "== build ${tests[*]} minfer-trace"
ninja -C "$build" -j "$jobs" "${tests[@]}" minfer-trace

# Any sanitizer report is fatal; an allocation above 1 GB is a failure, not a slow success.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:max_allocation_size_mb=1024:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"

failed=()
for t in "${tests[@]}"; do
  echo "== run $t ($MINFER_TRACE_MUTATIONS mutants, seed $MINFER_TRACE_FUZZ_SEED)"
  start=$SECONDS
  if (cd "$build" && "$build/tests/$t" --gtest_brief=1); then
    echo "   $t passed in $((SECONDS - start)) s"
  else
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "run-trace-fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "run-trace-fuzz: ${#tests[@]} trace mutation programs passed under ASan+UBSan"

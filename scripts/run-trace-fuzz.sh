#!/usr/bin/env bash
# Builds the trace readers and the server with AddressSanitizer + UBSan and runs the trace
# mutation tests: damaged copies of a valid trace through minfer-trace's readers (validate,
# summary, diff, export-perfetto, in process and through the program) and through every
# minfer-viz route (list, fetch, slices, compare), damaged trace journals through `minfer-trace
# recover` (recorder_test_journal) and crafted journal records through its decoder and step
# formatter (recorder_test_journal_invariants). Each must answer or refuse with an error: no
# sanitizer report, crash, hang or runaway memory. Companion of scripts/run-gguf-fuzz.sh.
#
#   scripts/run-trace-fuzz.sh                                 # as CI runs it: 1,000 mutants
#   MINFER_TRACE_MUTATIONS=10000 scripts/run-trace-fuzz.sh    # a longer run (docs/trace-fuzzing.md)
#
# Env: MINFER_ASAN_BUILD (build folder, default build-asan), MINFER_JOBS (ninja -j, default 2),
#      MINFER_TRACE_MUTATIONS (default 1000), MINFER_TRACE_FUZZ_SEED (default 1),
#      MINFER_JOURNAL_CRAFTED (crafted journal records, default 3000).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MINFER_ASAN_BUILD:-$root/build-asan}"
jobs="${MINFER_JOBS:-2}"
export MINFER_TRACE_MUTATIONS="${MINFER_TRACE_MUTATIONS:-1000}"
export MINFER_TRACE_FUZZ_SEED="${MINFER_TRACE_FUZZ_SEED:-1}"

source "$root/scripts/lib/asan-tests.sh"
asan_configure
tests=(recorder_test_trace_mutation recorder_test_journal recorder_test_journal_invariants)
# The server's test exists when cpp-httplib was found (viz-server/CMakeLists.txt). The target
# list is read whole first: `grep -q` on the pipe could exit before ninja has written it all,
# and under pipefail ninja's SIGPIPE made the test look absent (CI skipped it so).
targets=$(ninja -C "$build" -t targets all)
if grep -q "^viz_test_viz_mutation:" <<< "$targets"; then
  tests+=(viz_test_viz_mutation)
else
  echo "== minfer-viz is not built here (no cpp-httplib): its mutation test is skipped"
fi
echo "== build ${tests[*]} minfer-trace"
start=$SECONDS
ninja -C "$build" -j "$jobs" "${tests[@]}" minfer-trace
echo "   built in $((SECONDS - start)) s"

ASAN_RUN_NOTE="$MINFER_TRACE_MUTATIONS mutants, ${MINFER_JOURNAL_CRAFTED:-3000} crafted journal records, seed $MINFER_TRACE_FUZZ_SEED" asan_run_tests run-trace-fuzz 1024 "${tests[@]}"
echo "run-trace-fuzz: ${#tests[@]} trace mutation programs passed under ASan+UBSan"

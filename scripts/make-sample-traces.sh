#!/usr/bin/env bash
# Records sample traces: for each preset, the same prompt with the int8 MMQ prefill path and
# with the float path (MINFER_MMQ=0), on the CPU backend, then validates them.
#   scripts/make-sample-traces.sh BUILD_DIR OUT_DIR [PRESET...]   (default presets: tiny)
# The committed samples in traces/ were made with: scripts/make-sample-traces.sh build traces tiny qwen2.5-0.5b
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:?usage: make-sample-traces.sh BUILD_DIR OUT_DIR [PRESET...]}; OUT=${2:?}
shift 2
PRESETS=("${@:-tiny}")
[ ${#PRESETS[@]} -eq 0 ] && PRESETS=(tiny)
mkdir -p "$OUT" models
PROMPT=$'<|im_start|>user\nWhy is the sky blue? Explain briefly.<|im_end|>\n<|im_start|>assistant\n'
for preset in "${PRESETS[@]}"; do
  case $preset in tiny) N=24; W=q8_0 ;; *) N=16; W=q8_0 ;; esac
  M=models/$preset-$W.gguf
  [ -f "$M" ] || "$B/bin/minfer-gen" --preset "$preset" --weights "$W" --seed 1 -o "$M"
  for path in mmq f16; do
    T=$OUT/$preset-$W-$path.json
    if [ $path = f16 ]; then export MINFER_MMQ=0; else unset MINFER_MMQ; fi
    MINFER_TRACE=$T "$B/bin/minfer" "$M" "$PROMPT" -n $N --repeat-penalty 1.3 --quiet --backend "${MINFER_BACKEND:-cpu}"
    "$B/bin/minfer-trace" validate "$T"
    if [ "$preset" != tiny ]; then gzip -9 -f "$T"; fi
  done
  unset MINFER_MMQ
done

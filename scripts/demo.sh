#!/usr/bin/env bash
# The main job on a fresh machine: install, build, generate the default model, run a prompt
# with tracing on, build the web app and serve it with the recorded trace and the samples.
#   scripts/demo.sh ["PROMPT"]     env: MINFER_PRESET (qwen2.5-0.5b), MINFER_WEIGHTS (q8_0),
#                                       PORT (8080), N (32 tokens)
set -euo pipefail
cd "$(dirname "$0")/.."
PROMPT=${1:-"<|im_start|>user\nWhat does a trace of a transformer show?<|im_end|>\n<|im_start|>assistant\n"}
PRESET=${MINFER_PRESET:-qwen2.5-0.5b}
WEIGHTS=${MINFER_WEIGHTS:-q8_0}
PORT=${PORT:-8080}
N=${N:-32}
scripts/install-deps.sh
scripts/build.sh minfer minfer-gen minfer-trace minfer-viz
MODEL=models/$PRESET-$WEIGHTS.gguf
mkdir -p models traces/local
[ -f "$MODEL" ] || build/bin/minfer-gen --preset "$PRESET" --weights "$WEIGHTS" --seed 1 -o "$MODEL"
TRACE=traces/local/demo-$PRESET-$WEIGHTS.json
MINFER_TRACE=$TRACE build/bin/minfer "$MODEL" "$(printf '%b' "$PROMPT")" -n "$N" --repeat-penalty 1.3
build/bin/minfer-trace summary "$TRACE" | head -20
npm run --silent build:web
echo
echo "minfer-viz: open http://127.0.0.1:$PORT/?trace=$(basename "$TRACE")   (Ctrl-C stops it)"
exec build/bin/minfer-viz --host 127.0.0.1 --port "$PORT" --traces traces --traces traces/local --web web/dist

#!/usr/bin/env bash
# Recording overhead: decode tokens/s untraced and in each trace configuration (minfer-bench: a
# warm-up run, then the median of R runs of N decode tokens, every decode run recorded into a
# fresh trace), as ratios of the time per token to untraced. Prints JSON.
#   scripts/bench-trace-overhead.sh BUILD_DIR MODEL [N_DECODE=32] [R=3] [BACKEND=auto]
# Configurations: off (no trace); stats (statistics only); full (the default options: stats +
# grids + histograms, and on cuda CUPTI kernel records on steps 0-1); on cuda also
# full-no-cupti (MINFER_TRACE_KERNELS=none), cupti-all (kernel records on every step) and
# step-by-step (the default options, each step written before the next is launched).
set -euo pipefail
B=${1:?usage: bench-trace-overhead.sh BUILD_DIR MODEL [N] [R] [BACKEND]}; M=${2:?}; N=${3:-32}; R=${4:-3}
BACKEND=${5:-auto}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
MODES=(off stats full)
[ "$BACKEND" = cuda ] && MODES+=(full-no-cupti cupti-all step-by-step)
run() {  # $1 = mode; prints the median decode tokens/s
  local mode=$1 env=()
  case $mode in
    stats) env=(MINFER_TRACE="$T/t.json" MINFER_TRACE_STATS_ONLY=1 MINFER_TRACE_KERNELS=none) ;;
    full) env=(MINFER_TRACE="$T/t.json") ;;
    full-no-cupti) env=(MINFER_TRACE="$T/t.json" MINFER_TRACE_KERNELS=none) ;;
    cupti-all) env=(MINFER_TRACE="$T/t.json" MINFER_TRACE_KERNELS=all) ;;
    step-by-step) env=(MINFER_TRACE="$T/t.json" MINFER_TRACE_STEP_BY_STEP=1) ;;
  esac
  env "${env[@]}" "$B/bin/minfer-bench" "$M" -p 16 -n "$N" -r "$R" --backend "$BACKEND" --json > "$T/bench.json" 2> "$T/bench.err" ||
    { echo "bench-trace-overhead: minfer-bench failed in mode $mode:" >&2; cat "$T/bench.err" >&2; return 1; }
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tg"]["median_tok_s"])' "$T/bench.json"
}
declare -A tps size rec steps
for mode in "${MODES[@]}"; do
  echo "bench-trace-overhead: $mode ($(date +%T))" >&2
  tps[$mode]=$(run "$mode")
  [ -n "${tps[$mode]}" ] || { echo "bench-trace-overhead: no decode rate from mode $mode" >&2; exit 1; }
  size[$mode]=$( [ -f "$T/t.json" ] && stat -c %s "$T/t.json" || echo 0)
  # Where the recorder's time went in the last recorded run (run thread, queue wait, final drain).
  rec[$mode]=$( [ -f "$T/t.json" ] && python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["timings"].get("recorder")))' "$T/t.json" || echo null)
  # Where a decode step's time goes (medians over the last run's decode steps).
  steps[$mode]=$( [ -f "$T/t.json" ] && python3 "$(dirname "$0")/device/step_times.py" "$T/t.json" || echo null)
  rm -f "$T/t.json"
done
join() { local IFS=,; echo "$*"; }
fields() { local f=$1 out=() m; for m in "${MODES[@]}"; do out+=("\"$m\": $(eval "echo \${$f[$m]}")"); done; join "${out[@]}"; }
ratios() { local out=() m; for m in "${MODES[@]}"; do out+=("\"$m\": $(awk "BEGIN{print ${tps[off]}/${tps[$m]}}")"); done; join "${out[@]}"; }
cat <<JSON
{"model": "$(basename "$M")", "backend": "$BACKEND", "decode_tokens": $N, "repetitions": $R,
 "decode_tok_s": {$(fields tps)},
 "time_per_token_ratio_to_off": {$(ratios)},
 "trace_bytes": {$(fields size)},
 "recorder_timings_ms": {$(fields rec)},
 "decode_step_medians_ms": {$(fields steps)}}
JSON

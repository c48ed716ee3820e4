#!/usr/bin/env bash
# Recording overhead: decode tokens/s untraced and in each trace configuration, median of R runs
# each, as ratios to untraced. Prints JSON.
#   scripts/bench-trace-overhead.sh BUILD_DIR MODEL [N_DECODE=32] [R=3] [BACKEND=auto]
# Configurations: off (no trace); stats (statistics only); full (the default options: stats +
# grids + histograms, and on cuda CUPTI kernel records on steps 0-4); on cuda also
# full-no-cupti (MINFER_TRACE_KERNELS=none) and cupti-all (kernel records on every step).
set -euo pipefail
B=${1:?usage: bench-trace-overhead.sh BUILD_DIR MODEL [N] [R] [BACKEND]}; M=${2:?}; N=${3:-32}; R=${4:-3}
BACKEND=${5:-auto}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PROMPT="The quick brown fox jumps over the lazy dog because"
MODES=(off stats full)
[ "$BACKEND" = cuda ] && MODES+=(full-no-cupti cupti-all)
run() {  # $1 = mode; prints decode tokens/s
  local mode=$1 env=()
  case $mode in
    stats) env=(MINFER_TRACE="$T/t.json" MINFER_TRACE_STATS_ONLY=1 MINFER_TRACE_KERNELS=none) ;;
    full) env=(MINFER_TRACE="$T/t.json") ;;
    full-no-cupti) env=(MINFER_TRACE="$T/t.json" MINFER_TRACE_KERNELS=none) ;;
    cupti-all) env=(MINFER_TRACE="$T/t.json" MINFER_TRACE_KERNELS=all) ;;
  esac
  env "${env[@]}" "$B/bin/minfer" "$M" "$PROMPT" -n "$N" --quiet --backend "$BACKEND" 2>&1 >/dev/null |
    sed -n 's/.*decode: [0-9]* tokens, \([0-9.]*\) tokens\/s.*/\1/p'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
declare -A tps size rec steps
for mode in "${MODES[@]}"; do
  tps[$mode]=$(for i in $(seq "$R"); do run "$mode"; done | median)
  [ -n "${tps[$mode]}" ] || { echo "bench-trace-overhead: no decode rate from mode $mode" >&2; exit 1; }
  size[$mode]=$( [ -f "$T/t.json" ] && stat -c %s "$T/t.json" || echo 0)
  # Where the recorder's time went in the last run (run thread, queue wait, final drain).
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

#!/usr/bin/env bash
# Recording overhead: decode tokens/s with tracing off, stats only, and stats + grids +
# histograms (the default), median of R runs each, as ratios to "off". Prints JSON.
#   scripts/bench-trace-overhead.sh BUILD_DIR MODEL [N_DECODE=32] [R=3]
set -euo pipefail
B=${1:?usage: bench-trace-overhead.sh BUILD_DIR MODEL [N] [R]}; M=${2:?}; N=${3:-32}; R=${4:-3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PROMPT="The quick brown fox jumps over the lazy dog because"
run() {  # $1 = mode; prints decode tokens/s and the trace size
  local mode=$1 env=()
  case $mode in
    stats) env=(MINFER_TRACE="$T/t.json" MINFER_TRACE_STATS_ONLY=1) ;;
    full) env=(MINFER_TRACE="$T/t.json") ;;
  esac
  env "${env[@]}" "$B/bin/minfer" "$M" "$PROMPT" -n "$N" --quiet 2>&1 >/dev/null |
    sed -n 's/.*decode: [0-9]* tokens, \([0-9.]*\) tokens\/s.*/\1/p'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
declare -A tps size
for mode in off stats full; do
  tps[$mode]=$(for i in $(seq "$R"); do run $mode; done | median)
  size[$mode]=$( [ -f "$T/t.json" ] && stat -c %s "$T/t.json" || echo 0); rm -f "$T/t.json"
done
cat <<JSON
{"model": "$(basename "$M")", "decode_tokens": $N, "repetitions": $R,
 "decode_tok_s": {"off": ${tps[off]}, "stats": ${tps[stats]}, "full": ${tps[full]}},
 "ratio_to_off": {"stats": $(awk "BEGIN{print ${tps[stats]}/${tps[off]}}"), "full": $(awk "BEGIN{print ${tps[full]}/${tps[off]}}")},
 "trace_bytes": {"stats": ${size[stats]}, "full": ${size[full]}}}
JSON

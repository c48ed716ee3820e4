#!/usr/bin/env bash
# On the GPU machine (it has cuobjdump): the static opcode histogram of one kernel's SASS, e.g.
#   scripts/device/sass_histogram.sh build-device/engine/CMakeFiles/minfer_cuda.dir/cuda/mmq_async.cu.o WeightTypeE2E
# (FUNC_SUBSTR: a piece of the mangled name). Counts instructions in the code, not executed ones.
set -euo pipefail
cuobjdump -sass "${1:?usage: sass_histogram.sh OBJ FUNC_SUBSTR}" | awk -v f="${2:?usage: sass_histogram.sh OBJ FUNC_SUBSTR}" \
  '/Function :/ {on = index($0, f) > 0} on && /\/\*[0-9a-f]{4}\*\// {for (i = 1; i <= NF; i++) if ($i ~ /^[A-Z][A-Z0-9_.]+$/) {split($i, a, "."); print a[1]; break}}' |
  sort | uniq -c | sort -rn | head -40

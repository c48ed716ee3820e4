# usage: sasshist.sh OBJ FUNC_SUBSTR : opcode histogram of one function's SASS
cuobjdump -sass "$1" | awk -v f="$2" '/Function :/ {on = index($0, f) > 0} on && /\/\*[0-9a-f]{4}\*\// {for (i = 1; i <= NF; i++) if ($i ~ /^[A-Z][A-Z0-9_.]+$/) {split($i, a, "."); print a[1]; break}}' | sort | uniq -c | sort -rn | head -40

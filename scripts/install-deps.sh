#!/usr/bin/env bash
# Installs what minfer needs on a fresh Debian machine (idempotent; skips what is present):
# the C++ toolchain and libraries from Debian, Chromium for the browser tests, and the npm
# packages from package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
for p in cmake ninja-build g++ pkg-config nlohmann-json3-dev libcpp-httplib-dev libssl-dev libbrotli-dev libgtest-dev zlib1g-dev chromium; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
# Node.js may come from elsewhere than Debian (with its own npm): only install it when absent.
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "install-deps: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi

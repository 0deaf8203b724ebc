#!/usr/bin/env bash
# Sets mlaops up on a fresh Debian machine: installs the build dependencies that are missing
# (apt-get; needs root or sudo), then configures and builds the release preset (build/release).
# Usage: scripts/setup.sh            (idempotent; fast when everything is already there)
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for pkg in cmake ninja-build g++ gcc make pkg-config libgtest-dev libgmock-dev libbenchmark-dev libdnnl-dev; do
  have_pkg "$pkg" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need[@]}" >/dev/null
fi

cmake --preset release >/dev/null
cmake --build --preset release
echo "setup: built build/release (mlaops command: build/release/tools/mlaops)"

#!/usr/bin/env bash
# Sets mlaops up on a fresh Debian machine: installs the build dependencies that are missing
# (apt-get; needs root or sudo), then configures and builds the release preset (build/release).
# Usage: scripts/setup.sh            (idempotent; fast when everything is already there)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_packages.sh cmake ninja-build g++ gcc make pkg-config libgtest-dev libgmock-dev libbenchmark-dev \
  libdnnl-dev libpng-dev

cmake --preset release >/dev/null
cmake --build --preset release
echo "setup: built build/release (mlaops command: build/release/tools/mlaops)"

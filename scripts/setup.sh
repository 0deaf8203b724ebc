#!/usr/bin/env bash
# Sets mlaops up on a fresh Debian machine: installs the build dependencies that are missing
# (apt-get; needs root or sudo), then configures and builds the release preset (build/release),
# then installs the Python package (docs/python.md) into the virtual environment .venv made from
# python3: torch (the version pyproject.toml pins), numpy, ml_dtypes, pytest and mlaops, whose
# module links build/release's static library.
# Usage: scripts/setup.sh            (idempotent; fast when everything is already there)
#        MLAOPS_NO_PYTHON=1 scripts/setup.sh   skips the Python package
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_packages.sh cmake ninja-build g++ gcc make pkg-config libgtest-dev libgmock-dev libbenchmark-dev \
  libdnnl-dev libpng-dev python3-venv python3-dev

cmake --preset release >/dev/null
cmake --build --preset release
echo "setup: built build/release (mlaops command: build/release/tools/mlaops)"

if [ "${MLAOPS_NO_PYTHON:-0}" != 1 ]; then
  [ -x .venv/bin/python ] || python3 -m venv .venv
  # the build requirements of pyproject.toml, then the package with its test extra; the wheel is
  # built in build/python (kept, so a rerun only relinks what changed)
  .venv/bin/pip install -q --disable-pip-version-check "scikit-build-core>=0.10" "nanobind>=2.0"
  .venv/bin/pip install -q --disable-pip-version-check --no-build-isolation \
    -C cmake.define.MLAOPS_PYTHON_PREBUILT="$PWD/build/release/libmlaops.a" ".[test]"
  echo "setup: installed the Python package mlaops into .venv (.venv/bin/python -c 'import mlaops')"
fi

#!/usr/bin/env bash
# Sets mlaops up on a fresh Debian machine: installs the build dependencies that are missing
# (apt-get; needs root or sudo), then configures and builds the release preset (build/release),
# then installs the Python package (docs/python.md) into the virtual environment .venv made from
# python3: torch (the version pyproject.toml pins), numpy, ml_dtypes, pytest and mlaops, whose
# module links build/release's static library. The requirements install while the release build
# runs (docs/ci.md).
# Usage: scripts/setup.sh            (idempotent; fast when everything is already there)
#        MLAOPS_NO_PYTHON=1 scripts/setup.sh   skips the Python package
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_packages.sh cmake ninja-build g++ gcc make pkg-config libgtest-dev libgmock-dev libbenchmark-dev \
  libdnnl-dev libpng-dev python3-venv python3-dev

# The Python side's network and unpacking work (the venv, the build requirements, numpy,
# ml_dtypes, pytest and the ~3 GB torch of pyproject.toml) runs in the background while the
# release build uses the cores; the package itself (which links build/release) is built after.
py_pid=''
py_log=''
if [ "${MLAOPS_NO_PYTHON:-0}" != 1 ]; then
  py_log=$(mktemp)
  (
    [ -x .venv/bin/python ] || python3 -m venv .venv
    # the build requirements, the dependencies and those of the extra "test", read from pyproject.toml
    list=$(python3 scripts/pyproject_requirements.py pyproject.toml test)
    mapfile -t reqs <<<"$list"
    exec .venv/bin/pip install -q --disable-pip-version-check "${reqs[@]}"
  ) >"$py_log" 2>&1 &
  py_pid=$!
  trap '[ -n "$py_pid" ] && kill "$py_pid" 2>/dev/null; rm -f "$py_log"' EXIT
fi

cmake --preset release >/dev/null
cmake --build --preset release
echo "setup: built build/release (mlaops command: build/release/tools/mlaops)"

if [ -n "$py_pid" ]; then
  if ! wait "$py_pid"; then
    py_pid=''
    cat "$py_log" >&2
    echo "setup: installing the Python requirements into .venv failed" >&2
    exit 1
  fi
  py_pid=''
  # the package with its test extra (the requirements are there now); the wheel is built in
  # build/python (kept, so a rerun only relinks what changed)
  .venv/bin/pip install -q --disable-pip-version-check --no-build-isolation \
    -C cmake.define.MLAOPS_PYTHON_PREBUILT="$PWD/build/release/libmlaops.a" ".[test]"
  echo "setup: installed the Python package mlaops into .venv (.venv/bin/python -c 'import mlaops')"
fi

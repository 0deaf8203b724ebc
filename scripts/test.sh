#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs every test:
#   1. the release build's whole CTest suite (C++ unit and operator tests, the C API test, the
#      header tests, the examples, the install-tree test);
#   2. the C++ and C tests again in an ASan+UBSan build (build/asan-ubsan).
# Usage: scripts/test.sh [--no-sanitizers]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

scripts/setup.sh

echo "== release tests"
ctest --test-dir build/release --output-on-failure -j "$jobs"

if [ "${1:-}" != "--no-sanitizers" ]; then
  echo "== ASan+UBSan build and tests"
  cmake --preset asan-ubsan >/dev/null
  cmake --build --preset asan-ubsan
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build/asan-ubsan --output-on-failure -j "$jobs" -LE install
fi
echo "all tests passed"

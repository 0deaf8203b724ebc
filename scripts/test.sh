#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs every test:
#   1. the release build's whole CTest suite (C++ unit and operator tests, the C API test, the
#      header tests, the examples, the install-tree test, the kernel coverage test), then the
#      Python package's pytest suite (tests/python, against the mlaops installed in .venv);
#   2. the C++ and C tests again in an ASan+UBSan build (build/asan-ubsan);
#   3. the concurrency test and the object registry's test under ThreadSanitizer (build/tsan: the
#      library and those tests only; docs/reliability/concurrency.md);
#   4. the aarch64 cross build's tests under qemu without the operator tests
#      (scripts/test_aarch64.sh --quick; the stage's time and CI's 60-minute budget: docs/ci.md;
#      the full cross run: docs/testing.md);
#   5. the libFuzzer targets (scripts/fuzz.sh: clang ASan+UBSan build, the kept regression
#      inputs replayed, a short fuzz run per C entry point; docs/reliability/fuzz.md).
# Usage: scripts/test.sh [--no-sanitizers] [--no-tsan] [--no-aarch64] [--no-fuzz]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
sanitizers=1
tsan=1
aarch64=1
fuzz=1
for arg in "$@"; do
  case "$arg" in
    --no-sanitizers) sanitizers=0 ;;
    --no-tsan) tsan=0 ;;
    --aarch64) aarch64=1 ;;  # the default; kept for scripts that pass it
    --no-aarch64) aarch64=0 ;;
    --no-fuzz) fuzz=0 ;;
    *) echo "usage: scripts/test.sh [--no-sanitizers] [--no-tsan] [--no-aarch64] [--no-fuzz]" >&2; exit 2 ;;
  esac
done

start=$(date +%s)
# each stage's header names the time since the start (docs/ci.md: the 60-minute budget)
stage() { echo "== $1 [$(( $(date +%s) - start )) s]"; }

scripts/setup.sh

stage "release tests"
ctest --test-dir build/release --output-on-failure -j "$jobs"

if [ "${MLAOPS_NO_PYTHON:-0}" != 1 ]; then
  stage "Python tests (pytest, the mlaops package installed in .venv)"
  .venv/bin/python -m pytest -q -p no:cacheprovider tests/python
fi

if [ "$sanitizers" = 1 ]; then
  stage "ASan+UBSan build and tests"
  cmake --preset asan-ubsan >/dev/null
  cmake --build --preset asan-ubsan
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build/asan-ubsan --output-on-failure -j "$jobs" -LE install
fi
if [ "$tsan" = 1 ]; then
  stage "ThreadSanitizer build and concurrency test"
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan --target test_concurrency test_object_lifetime
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 timeout 900 build/tsan/tests/test_concurrency --gtest_brief=1
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 timeout 300 build/tsan/tests/test_object_lifetime --gtest_brief=1
fi
if [ "$aarch64" = 1 ]; then
  stage "aarch64 cross build and tests under qemu (without the operator tests)"
  scripts/test_aarch64.sh --quick
fi
if [ "$fuzz" = 1 ]; then
  # 2 s per target in CI (the 60-minute budget, docs/ci.md); scripts/fuzz.sh alone defaults to 8
  stage "libFuzzer targets (clang ASan+UBSan): regression inputs, ${FUZZ_SECONDS:-2}s per target"
  FUZZ_SECONDS=${FUZZ_SECONDS:-2} scripts/fuzz.sh
fi
echo "all tests passed [$(( $(date +%s) - start )) s]"

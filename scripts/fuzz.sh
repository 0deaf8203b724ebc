#!/usr/bin/env bash
# The libFuzzer stage (docs/reliability/fuzz.md): builds the library, the reference and one fuzz
# target per C entry point with clang under ASan+UBSan (the fuzz preset), replays every kept
# regression input (tests/fuzz/regressions/<target>/, -runs=0), then fuzzes each target for
# FUZZ_SECONDS (default 8) starting from its committed seed corpus (tests/fuzz/corpus/<target>/).
# New crash inputs land in build/fuzz/crashes/<target>/ and fail the stage.
# Usage: scripts/fuzz.sh [target...]     (default: every target)
#   FUZZ_SECONDS=600 scripts/fuzz.sh fuzz_fia_v4    a longer run of one target
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-8}
# clang and its libFuzzer / sanitizer runtimes (Debian 12: clang 14)
scripts/install_packages.sh clang libclang-rt-14-dev
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake --preset fuzz "${launcher[@]}" >/dev/null
cmake --build build/fuzz --target fuzz_targets -j "$(nproc)"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for t in build/fuzz/tests/fuzz/fuzz_*; do
    [ -x "$t" ] && targets+=("$(basename "$t")")
  done
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for t in "${targets[@]}"; do
  bin=build/fuzz/tests/fuzz/$t
  reg=tests/fuzz/regressions/$t
  if [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
    echo "== $t: replaying $(ls "$reg" | wc -l) regression inputs"
    "$bin" -runs=0 "$reg" 2>&1 | tail -n 2 || status=1
  fi
  work=build/fuzz/corpus/$t
  crashes=build/fuzz/crashes/$t
  mkdir -p "$work" "$crashes"
  seeds=()
  [ -d "tests/fuzz/corpus/$t" ] && seeds=("tests/fuzz/corpus/$t")
  echo "== $t: fuzzing ${seconds}s"
  if ! "$bin" -max_total_time="$seconds" -timeout=120 -rss_limit_mb=4096 -max_len=512 -len_control=0 -print_final_stats=1 \
      -artifact_prefix="$crashes/" "$work" "${seeds[@]}" >"build/fuzz/$t.log" 2>&1; then
    echo "FAILED: $t (log build/fuzz/$t.log, inputs in $crashes/)"
    tail -n 40 "build/fuzz/$t.log"
    # the inputs themselves, so that a CI log alone reproduces the failure (docs/reliability/fuzz.md)
    for f in "$crashes"/*; do
      [ -f "$f" ] && echo "input $(basename "$f") (base64): $(base64 -w0 "$f")"
    done
    status=1
  fi
  grep -E "^stat::number_of_executed_units|^#[0-9]+ *DONE" "build/fuzz/$t.log" | tail -n 2 || true
done
exit $status

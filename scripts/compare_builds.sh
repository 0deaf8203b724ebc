#!/usr/bin/env bash
# Proves that a change (a refactor) changes nothing (docs/performance.md, "Proving a change changes
# nothing"): builds the library of two revisions, compiles the same driver (bench/bench_identity.cpp
# and bench/identity_*.h, public headers only) against each, and compares
#   1. digests: `bench_identity digest` (every case under every ISA level the host runs, 1 and 2
#      threads) must print the same lines for both revisions (any difference fails);
#   2. instruction counts: `bench_identity callgrind CASE` under valgrind's callgrind
#      (--instr-atstart=no: only the measured call) must stay within TOLERANCE percent.
#
# Usage: scripts/compare_builds.sh BASE_REV [NEW_REV]
#   NEW_REV defaults to the working tree (tracked and untracked, not ignored, files).
# Environment:
#   COMPARE_DIR   scratch folder (default build/compare): <dir>/<label>/ holds each revision's tree
#                 and its release build (<dir>/<label>/build/release, as the release preset; the
#                 same relative paths as a checkout, so ccache hits)
#   RESULTS       where the digests, Ir lists, callgrind outputs and the table go
#                 (default <COMPARE_DIR>/results)
#   CASES         callgrind cases (default: every case of `bench_identity list`)
#   TOLERANCE     allowed |Ir after / Ir before - 1| in percent (default 1)
#   DIGEST_ARGS   extra arguments of `bench_identity digest` (e.g. "--isa avx2 --threads 1")
#   SKIP_DIGEST=1, SKIP_CALLGRIND=1   leave a part out
#   BASE_SAVED    a RESULTS folder of an earlier run whose base side (digest.base.txt,
#                 ir.base.txt) stands in for BASE_REV: nothing of the base is built or run
#                 (the driver must be the one that made them: the same cases)
#   REPORT_ONLY=1 nothing built or run: the verdict again from RESULTS' files
#   JOBS          build parallelism (default: nproc)
# Exit status: 0 all equal and within tolerance; 1 digests differ; 2 an Ir ratio is outside the
# tolerance (or a callgrind run failed); 3 usage or build errors.
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 3
}
[ $# -ge 1 ] && [ $# -le 2 ] || usage
base_rev=$1
new_rev=${2:-}

repo=$(git rev-parse --show-toplevel)
cd "$repo"
compare_dir=$(realpath -m "${COMPARE_DIR:-build/compare}")
results=$(realpath -m "${RESULTS:-$compare_dir/results}")
tolerance=${TOLERANCE:-1}
jobs=${JOBS:-$(nproc)}
driver="$repo/bench/bench_identity.cpp"
mkdir -p "$compare_dir" "$results"

# ---- a revision's tree, library and driver ----

# label_of REV: the short hash, or "worktree" for the working tree.
label_of() {
  if [ -z "$1" ]; then echo worktree; else git rev-parse --short=12 "$1^{commit}"; fi
}

# prepare LABEL REV: the revision's files in <compare_dir>/<label>/ (its build/ kept: unchanged
# files keep their times, so only what changed is rebuilt), the release library, the driver.
prepare() {
  local label=$1 rev=$2 tree="$compare_dir/$1"
  mkdir -p "$tree"
  find "$tree" -mindepth 1 -maxdepth 1 ! -name build -exec rm -rf {} +
  if [ -z "$rev" ]; then
    git ls-files -co --exclude-standard -z | tar --null --ignore-failed-read -T - -cf - 2>/dev/null |
      tar -xf - -C "$tree"
  else
    git archive "$rev" | tar -xf - -C "$tree"
  fi
  local launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  echo "== $label: configure and build the library (release, $tree/build/release)" >&2
  (cd "$tree" && cmake --preset release -DMLAOPS_BUILD_TESTS=OFF "${launcher[@]}" >/dev/null &&
     nice cmake --build build/release --target mlaops -j "$jobs" >"$tree/build/build.log" 2>&1) || {
    echo "compare_builds: the build of $label failed (see $tree/build/build.log)" >&2
    exit 3
  }
  echo "== $label: compile bench/bench_identity.cpp against it" >&2
  # the driver (bench/bench_identity.cpp and its bench/identity_*.h) is this checkout's, the
  # public headers and the library the revision's
  nice "${CXX:-c++}" -std=c++20 -O2 -g -Wall -Wextra -I "$tree/include" -I "$repo" "$driver" -o "$tree/build/bench_identity" \
    -L "$tree/build/release" -lmlaops -Wl,-rpath,"$tree/build/release" || {
    echo "compare_builds: the driver does not compile against $label" >&2
    exit 3
  }
}

# measure SIDE LABEL: the digests and the callgrind counts of one side into RESULTS.
measure() {
  local side=$1 label=$2 bin="$compare_dir/$2/build/bench_identity"
  if [ "${SKIP_DIGEST:-0}" != 1 ]; then
    echo "== $label: digest ${DIGEST_ARGS:-}" >&2
    # shellcheck disable=SC2086
    "$bin" digest ${DIGEST_ARGS:-} >"$results/digest.$side.txt"
  fi
  if [ "${SKIP_CALLGRIND:-0}" != 1 ]; then
    for c in $cases; do
      local out="$results/callgrind.$side.$c.out" log="$results/callgrind.$side.$c.log"
      local t0=$SECONDS
      rm -f "$out"
      valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" "$bin" callgrind "$c" \
        >"$log.stdout" 2>"$log" || echo "compare_builds: callgrind $c failed on $label (see $log)" >&2
      echo "   $c: $((SECONDS - t0)) s" >&2
    done
    collect "$side"
  fi
}

# collect SIDE: "case Ir digest" per case from the callgrind outputs into ir.<side>.txt (the
# totals line; summary: counts only what ran before the first dump, 0 with --instr-atstart=no).
collect() {
  local side=$1
  : >"$results/ir.$side.txt"
  for c in $cases; do
    local out="$results/callgrind.$side.$c.out" ir digest
    ir=$(awk '/^totals:/ {print $2; exit}' "$out" 2>/dev/null || true)
    digest=$(sed -n 's/.*digest=\([0-9a-f]*\).*/\1/p' "$results/callgrind.$side.$c.log.stdout" 2>/dev/null || true)
    echo "$c ${ir:-FAILED} ${digest:--}" >>"$results/ir.$side.txt"
  done
}

base_label=$(label_of "$base_rev")
new_label=$(label_of "$new_rev")
echo "base $base_rev = $base_label, new ${new_rev:-(working tree)} = $new_label" >&2
if [ "${REPORT_ONLY:-0}" = 1 ]; then
  # the verdict again from RESULTS' files (e.g. after a change of this script's parsing)
  cases=${CASES:-$(ls "$results"/callgrind.new.*.out | sed 's/.*callgrind\.new\.\(.*\)\.out/\1/')}
  [ -n "${BASE_SAVED:-}" ] || collect base
  collect new
else
  if [ -n "${BASE_SAVED:-}" ]; then
    for f in digest.base.txt ir.base.txt; do
      if [ "$(realpath "$BASE_SAVED")" != "$results" ]; then cp "$BASE_SAVED/$f" "$results/$f"; fi
    done
  else
    prepare "$base_label" "$base_rev"
  fi
  # the same revision on both sides (a determinism check): one tree, one build
  [ "$new_label" = "$base_label" ] && [ -z "${BASE_SAVED:-}" ] || prepare "$new_label" "$new_rev"
  # the cases and their order come from the driver (bench/bench_identity.cpp of this checkout)
  cases=${CASES:-$("$compare_dir/$new_label/build/bench_identity" list)}
  [ -n "${BASE_SAVED:-}" ] || measure base "$base_label"
  measure new "$new_label"
fi

# ---- the verdict ----
status=0
{
  echo "# compare_builds: base $base_label, new $new_label, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "# CPU: $(lscpu | sed -n 's/^Model name: *//p'); $(valgrind --version) (no AVX-512: the AVX2 kernels run under callgrind)"
} >"$results/summary.txt"
if [ "${SKIP_DIGEST:-0}" != 1 ]; then
  lines=$(wc -l <"$results/digest.new.txt")
  refused=$(grep -c ' ERR ' "$results/digest.new.txt" || true)
  if diff -u "$results/digest.base.txt" "$results/digest.new.txt" >"$results/digest.diff"; then
    echo "digests: identical ($lines lines; $refused refused calls, the same on both sides)" | tee -a "$results/summary.txt"
  else
    changed=$(grep -c '^+[^+]' "$results/digest.diff" || true)
    echo "digests: $changed of $lines lines DIFFER (see $results/digest.diff)" | tee -a "$results/summary.txt"
    status=1
  fi
fi
if [ "${SKIP_CALLGRIND:-0}" != 1 ]; then
  awk -v tol="$tolerance" '
    NR == FNR { before[$1] = $2; bdig[$1] = $3; next }
    FNR == 1 { printf "%-14s %15s %15s %9s  %s\n", "case", "Ir before", "Ir after", "ratio", "output" }
    {
      b = before[$1]; a = $2
      if (b == "" || b == "FAILED" || a == "FAILED" || b + 0 == 0) { printf "%-14s %15s %15s %9s  %s\n", $1, b, a, "-", "FAILED"; bad = 1; next }
      r = a / b
      flag = (r > 1 + tol / 100 || r < 1 - tol / 100) ? "  OUTSIDE " tol " %" : ""
      printf "%-14s %15d %15d %9.5f  %s%s\n", $1, b, a, r, (bdig[$1] == $3 ? "same" : "DIFFERS"), flag
      if (flag != "" || bdig[$1] != $3) bad = 1
    }
    END { exit bad }' "$results/ir.base.txt" "$results/ir.new.txt" | tee "$results/ir_table.txt" | tee -a "$results/summary.txt" ||
    { [ $status -ne 0 ] || status=2; }
fi
echo "results: $results" >&2
exit $status

// `mlaops bench --scaling`: how each case of the benchmark suite (suite.h) splits its work over
// more threads than this machine has, from the operators' plans alone (phase 1 made at 1, 2, 8,
// 32 and 128 threads with set_num_threads; nothing is run or timed). docs/performance.md
// "Thread scaling past two cores".
//
// A case is a list of parallel phases that run one after the other (per chunk of tokens for the
// projections). For each phase at a thread count the model takes from the plan the parallel
// units (FIA: tasks x KV splits; the projections: weight column panels, token rows, heads), how
// many threads get work and the busiest thread's share, which it finds by replaying the split the
// run does (parallel_for: contiguous static chunks; parallel_items: one unit at a time to the
// first free thread). Its time is max(compute, memory):
//   compute = (bf16 FLOPs / per-core bf16 rate + int8 OPs / per-core int8 rate) x the busiest
//             thread's share of the phase's work,
//   memory  = bytes / min(threads with work x per-core bandwidth, socket bandwidth).
// The rates are assumptions (ScalingAssumptions), not measurements; only the counts come from the
// plans.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace bench {

struct ScalingAssumptions {
  double core_bw = 12e9;     // bytes/s one core streams from DRAM
  double socket_bw = 300e9;  // bytes/s of the whole socket
  double core_bf16 = 235e9;  // bf16 FLOP/s of one core (vdpbf16ps, measured on this host)
  double core_int8 = 469e9;  // int8 OP/s of one core (vpdpbusd, measured on this host)
};

// One parallel phase of a call at one thread count.
struct ScalingPhase {
  std::string name;      // "x proj", "rows", "heads", "attention", ...
  int64_t units = 0;     // parallel units the phase hands out
  int64_t tasks = 0;     // FIA: the plan's tasks (groups of items); else = units
  int active = 0;        // threads that get at least one unit
  int64_t max_units = 0; // the most units one thread runs
  double work = 0;       // the phase's work (relative measure: columns, tokens, KV positions)
  double max_work = 0;   // the busiest thread's part of it
  int64_t repeats = 1;   // times the phase runs per call (chunks of tokens), one after the other
  // Per run of the phase: what the roofline model charges.
  double flops_bf16 = 0, ops_int8 = 0, bytes = 0;
};

// The model of one case at one thread count.
struct ScalingPoint {
  int threads = 1;
  std::string plan;  // the plan's decomposition in words
  std::vector<ScalingPhase> phases;
  double cmp_us = 0, mem_us = 0, us = 0;  // sums over the phases (us = sum of max(cmp, mem))
  double speedup_work = 1;   // compute time at 1 thread / at `threads` (work balance only)
  double speedup_model = 1;  // modelled time at 1 thread / at `threads`
  const char* limit = "-";   // what stops it: "units", "DRAM", or "-" (still scaling)
};

struct ScalingCase {
  std::string id, label;
  // Makes the plan at num_threads() = threads and fills the phases (and plan text); false and
  // *error on a failed plan.
  std::function<bool(int threads, ScalingPoint* out, std::string* error)> plan;
};

// The cases of the benchmark suite (the full set, at their DeepSeek-V3 shapes).
std::vector<ScalingCase> scaling_cases();

// Fills the phases of `c` at `threads` and the modelled times; the speed-ups against `one`
// (the same case at 1 thread; null: `threads` is 1). Restores the thread setting. False and
// *error when a plan fails.
bool scaling_point(const ScalingCase& c, int threads, const ScalingAssumptions& a, const ScalingPoint* one,
                   ScalingPoint* out, std::string* error);

// The busiest thread of parallel_for(n, min_chunk, threads) over units of the given work
// (core/parallel.cpp: min(threads, ceil(n / min_chunk)) contiguous chunks [n i / t, n (i+1) / t)).
void split_static(const std::vector<double>& unit_work, int64_t min_chunk, int threads, ScalingPhase* ph);
// The busiest thread of parallel_items(n, threads): units in index order, each to the thread
// that is free first (the lowest index on ties).
void split_dynamic(const std::vector<double>& unit_work, int threads, ScalingPhase* ph);

// `mlaops bench --scaling [options]` (args after "--scaling"); returns the exit status.
int scaling_main(const std::vector<std::string>& args);

}  // namespace bench

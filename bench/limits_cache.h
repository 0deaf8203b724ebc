// This host's limits, remembered between runs: `mlaops bench` saves the probes it measured (with
// the CPU model and the date) and `mlaops demo` bounds its calls by them, or by a quick probe of
// its own when there is no saved run for this CPU and thread count (limits.cpp). The file is
// $MLAOPS_CACHE_DIR/limits.txt, else $XDG_CACHE_HOME/mlaops/limits.txt, else
// $HOME/.cache/mlaops/limits.txt: one line per probe, "name threads best median unit".
#pragma once

#include <string>
#include <vector>

#include "bench/suite.h"

namespace bench {

// The CPU's model name (/proc/cpuinfo), "unknown" elsewhere.
std::string cpu_model();

std::string limits_cache_path();

// Writes `probes` with `cpu` and `date`; false (and nothing written) when the folder cannot be made.
bool save_limits_cache(const std::vector<Probe>& probes, const std::string& cpu, const std::string& date);

// The saved probes when the file exists and was written on a CPU of model `cpu`; `date` gets its date.
bool load_limits_cache(const std::string& cpu, std::vector<Probe>* probes, std::string* date);

// Limits for `threads` threads: from the saved run when it was written on this CPU and holds that
// thread count, else from a quick probe now (DRAM 3 x 256 MiB, compute 3 x 200k rounds: about a
// second). `source` says which, with the compute units measured. `noisy` (optional) receives why
// the limits cannot be trusted (probe_disagreement), empty when they can.
Limits host_limits(int threads, std::string* source, std::string* noisy = nullptr);

// A probe that disagrees with itself: at `threads` threads, a probe whose median rate is below
// kProbeSteadyMedian of its best (another process took the memory bus or a core while it ran).
// Returns what disagreed ("dram_read 2 threads: best 27.7, median 6.9 GB/s"), empty when every
// probe was steady.
constexpr double kProbeSteadyMedian = 0.75;
std::string probe_disagreement(const std::vector<Probe>& probes, int threads);

// A "% of bound" cell: 100 x bound / time as "71.3%", or "noisy" when the limits are not steady or
// the call beat its bound (the probe measured less than the machine does; a bound is never passed),
// which also sets `*any_noisy`; "-" when nothing ran (time 0).
std::string bound_cell(double bound_us, double us, bool limits_noisy, bool* any_noisy);

}  // namespace bench

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
// second). `source` says which, with the compute units measured.
Limits host_limits(int threads, std::string* source);

}  // namespace bench

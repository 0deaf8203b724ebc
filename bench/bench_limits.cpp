// bench_limits: the machine-limits probe of the benchmark suite (bench/limits.cpp) on its own —
// DRAM read bandwidth and the fp32 FMA, bf16 dot-product (vdpbf16ps) and int8 VNNI (vpdpbusd)
// throughput with 1..N threads, best and median of --reps runs. `mlaops bench` runs the same probe
// before its cases and takes the bounds from it. docs/performance.md.
//
//   bench_limits [--reps N] [--threads N] [--mib M] [--json FILE]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/suite.h"
#include "mlaops/runtime.h"

namespace {

[[noreturn]] void usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: bench_limits [--reps N] [--threads N] [--mib M] [--json FILE]\n"
               "  --reps N     timed runs per probe (default 7; best and median reported)\n"
               "  --threads N  the largest thread count (default 2; every count 1..N is measured)\n"
               "  --mib M      DRAM probe buffer in MiB (default 1024)\n"
               "  --json FILE  also write the results as JSON\n");
  std::exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  bench::ProbeOptions o;
  long mib = 1024;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(2);
      return argv[++i];
    };
    if (a == "--reps") o.reps = std::atoi(value());
    else if (a == "--threads") o.max_threads = std::atoi(value());
    else if (a == "--mib") mib = std::atol(value());
    else if (a == "--json") json = value();
    else if (a == "--help" || a == "-h") usage(0);
    else usage(2);
  }
  if (o.reps < 1 || o.max_threads < 1 || mib < 64) usage(2);
  o.dram_bytes = static_cast<size_t>(mib) << 20;
  std::printf("bench_limits: mlaops %s, detected isa %s, %d reps\n", mlaops::version(),
              mlaops::isa_name(mlaops::detected_isa()), o.reps);
  const auto probes = bench::measure_limits(o, [](const bench::Probe& p) {
    std::printf("%-22s %2d thread%s  best %8.1f  median %8.1f %s\n", p.name.c_str(), p.threads,
                p.threads == 1 ? " " : "s", p.best, p.median, p.unit.c_str());
    std::fflush(stdout);
  });
  if (!json.empty()) {
    bench::Report rep;
    rep.version = mlaops::version();
    rep.isa = mlaops::isa_name(mlaops::detected_isa());
    rep.threads = o.max_threads;
    rep.reps = o.reps;
    rep.size = "limits";
    rep.probes = probes;
    rep.lim1 = bench::limits_for(probes, 1);
    rep.lim2 = bench::limits_for(probes, o.max_threads);
    std::string err;
    if (!bench::write_json(rep, json, &err)) {
      std::fprintf(stderr, "bench_limits: %s\n", err.c_str());
      return 2;
    }
  }
  return 0;
}

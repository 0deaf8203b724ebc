// Running one case of the benchmark suite (suite.h): thread count, identity fields, the bound.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/bench_util.h"
#include "bench/suite.h"
#include "mlaops/runtime.h"

namespace bench {

void apply_bound(Row& r, const RunContext& ctx) {
  const Limits& l = r.threads == 1 ? ctx.lim1 : ctx.lim2;
  const double bracket = std::max(r.dram_before, r.dram_after);
  const double t_mem = r.bytes / (bracket > 0 ? bracket : l.bw);
  const double t_cmp = r.flops_bf16 / l.bf16 + r.ops_int8 / l.int8;
  r.bound_us = std::max(t_mem, t_cmp) * 1e6;
  r.mem_bound = t_mem >= t_cmp;
}

void add_dnnl_peer(Row& r, const RunContext& ctx, const char* name, int64_t T, const std::vector<PeerGemm>& gemms,
                   int copies, int reps, const std::function<bool()>& ours) {
  if (!ctx.peers) return;
#ifdef MLAOPS_HAVE_DNNL
  DnnlProjections peer(T, gemms, copies);
  const Times pt = time_it([&] { peer.run(); }, reps);
  double work = 0, work_int8 = 0, bytes = 0;
  for (const PeerGemm& g : gemms) {
    const double params = static_cast<double>(g.batch) * static_cast<double>(g.K) * static_cast<double>(g.N);
    work += 2.0 * static_cast<double>(T) * params;
    if (g.int8) work_int8 += 2.0 * static_cast<double>(T) * params;
    bytes += params * (g.int8 ? 1.0 : 2.0);
  }
  r.peers.push_back({name, pt.best * 1e6, pt.median * 1e6, "pre-packed weights, DRAM-streamed", work, work_int8, bytes});
  if (ours) {
    r.peers.back().pair_ratio = paired_ratio_median(reps, ours, [&] { peer.run(); });
    r.peers.back().pairs = reps;
  }
#else
  (void)T, (void)gemms, (void)copies, (void)reps, (void)ours;
  r.peers.push_back({name, 0, 0, "not built (install libdnnl-dev and rebuild)"});
#endif
}

std::vector<std::string> raise_dram_to_peers(Report& rep) {
  std::vector<std::string> notes;
  for (int one = 0; one < 2; ++one) {
    Limits& l = one ? rep.lim1 : rep.lim2;
    const Row* best_row = nullptr;
    const PeerTime* best_peer = nullptr;
    double best = l.bw;
    for (const Row& r : rep.rows) {
      if (!r.error.empty() || !r.mem_bound || (r.threads == 1) != (one == 1)) continue;
      for (const PeerTime& p : r.peers) {
        if (p.bytes <= 0 || p.best_us <= 0) continue;
        const double rate = p.bytes / (p.best_us * 1e-6);
        if (rate > best) best = rate, best_row = &r, best_peer = &p;
      }
    }
    if (best_peer == nullptr) continue;
    char b[256];
    std::snprintf(b, sizeof b, "DRAM bound (%s) raised from %.1f GB/s (probe) to %.1f GB/s: %s streamed its weights that fast in %s",
                  one ? "1 thread" : "run's threads", l.bw / 1e9, best / 1e9, best_peer->name.c_str(), best_row->id.c_str());
    notes.push_back(b);
    l.bw = best;
  }
  RunContext ctx;
  ctx.lim1 = rep.lim1;
  ctx.lim2 = rep.lim2;
  for (Row& r : rep.rows) apply_bound(r, ctx);
  return notes;
}

namespace {

// The DRAM read rate at `threads` threads from a short probe (3 runs of 256 MiB), bytes/s.
double dram_now(int threads) {
  ProbeOptions o;
  o.reps = 3;
  o.max_threads = threads;
  o.dram_bytes = size_t{256} << 20;
  o.dram_only = true;
  double best = 0;
  for (const Probe& p : measure_limits(o, [](const Probe&) {}))
    if (p.name == "dram_read" && p.threads == threads) best = p.best * 1e9;
  return best;
}

}  // namespace

bool filter_matches(const std::string& id, const std::string& filter) {
  if (filter.empty()) return true;
  size_t start = 0;
  while (start <= filter.size()) {
    const size_t comma = filter.find(',', start);
    const std::string part = filter.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty() && id.find(part) != std::string::npos) return true;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return false;
}

Row run_one(const Case& c, RunContext& ctx) {
  const bool bracket = c.bracket_dram && ctx.lim2.measured;
  const double before = bracket ? dram_now(c.threads) : 0;
  mlaops::set_num_threads(c.threads);
  omp_set_num_threads(c.threads);  // the oneDNN peer's pool
  Row r = c.run(ctx);
  if (bracket) {
    r.dram_before = before;
    r.dram_after = dram_now(c.threads);
  }
  mlaops::set_num_threads(ctx.threads);
  omp_set_num_threads(ctx.threads);
  r.id = c.id;
  r.op = c.op;
  r.label = c.label;
  r.threads = c.threads;
  apply_bound(r, ctx);
  return r;
}

int run_front(int argc, char** argv, const char* name, std::vector<Case> (*make)(Size, int)) {
  RunContext ctx;
  ctx.threads = mlaops::num_threads();
  Size size = Size::kFull;
  std::string filter;
  Limits lim;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--quick") size = Size::kQuick;
    else if (a == "--tiny") size = Size::kTiny;
    else if (a == "--no-peers") ctx.peers = false;
    else if (a == "--reps" && has) ctx.reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--filter" && has) filter = argv[++i];
    else if (a == "--bw" && has) lim.bw = std::atof(argv[++i]) * 1e9;
    else if (a == "--bf16" && has) lim.bf16 = std::atof(argv[++i]) * 1e9;
    else if (a == "--int8" && has) lim.int8 = std::atof(argv[++i]) * 1e9;
    else {
      std::fprintf(stderr,
                   "usage: %s [--quick | --tiny] [--reps N] [--filter TEXT] [--no-peers] [--bw GBs] [--bf16 GFLOPs]"
                   " [--int8 GOPs]\n(bounds from the given rates, else the roofline anchors; `mlaops bench` measures"
                   " them in the same run)\n",
                   name);
      return 2;
    }
  }
  const char* py = std::getenv("MLAOPS_PYTHON");
  ctx.python = py && *py ? py : "python3";
  ctx.vllm_python = default_vllm_python();
  ctx.size = size;
  if (size == Size::kTiny) ctx.pool_bytes = size_t{16} << 20;
  ctx.lim1 = ctx.lim2 = lim;
  std::printf("%s: mlaops %s, isa %s, %d threads; bounds: DRAM %.1f GB/s, bf16 %.0f GFLOP/s, int8 %.0f GOP/s\n", name,
              mlaops::version(), mlaops::isa_name(mlaops::active_isa()), ctx.threads, lim.bw / 1e9, lim.bf16 / 1e9,
              lim.int8 / 1e9);
  print_row_header();
  int failed = 0;
  for (const Case& c : make(size, ctx.threads)) {
    if (!filter.empty() && c.id.find(filter) == std::string::npos) continue;
    const Row r = run_one(c, ctx);
    failed += r.error.empty() ? 0 : 1;
    print_row(r);
  }
  return failed ? 1 : 0;
}

}  // namespace bench

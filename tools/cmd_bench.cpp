// `mlaops bench`: in one process and one run, measures this machine's limits (DRAM read rate,
// bf16 dot-product and int8 VNNI throughput, 1..N threads), then runs the operator cases of
// bench/suite.h with their peers, printing each row as it finishes, and writes the JSON report
// and the PNG roofline plot. A lock file keeps two runs (or any benchmark run under
// `flock <lock>`) from overlapping. docs/performance.md.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench/coverage.h"
#include "bench/limits_cache.h"
#include "bench/png.h"
#include "bench/scaling.h"
#include "bench/suite.h"
#include "mlaops/runtime.h"
#include "tools/commands.h"

namespace mlaops::tools {
namespace {

const char* kBenchUsage =
    "usage: mlaops bench [--quick | --tiny] [--reps N] [--filter TEXT[,TEXT...]] [--threads N]\n"
    "                    [--json FILE] [--png FILE] [--no-peers] [--python PATH] [--vllm-python PATH]\n"
    "                    [--no-limits] [--lock FILE] [--no-wait] [--list] [--coverage [--md FILE]]\n"
    "       mlaops bench --scaling [--help | options]   (plans only: thread scaling model, scaling.h)\n"
    "\n"
    "Measures this machine's limits (DRAM read GB/s; bf16 vdpbf16ps GFLOP/s and int8 vpdpbusd GOP/s,\n"
    "1..N threads), then times each case (MlaPrologV2, MlaPreprocess, FusedInferAttentionScoreV4 at\n"
    "DeepSeek shapes) as best and median of N calls, with GB/s, GFLOP/s and the % of its roofline\n"
    "bound max(bytes / DRAM rate, FLOPs / compute rate) from the limits just measured; peers in the\n"
    "same run: oneDNN's GEMMs with pre-packed weights (when built with libdnnl-dev) and PyTorch's\n"
    "scaled_dot_product_attention for GQA (when the Python given has torch) and vLLM's CPU MLA\n"
    "decode kernel for MLA decode (when scripts/setup_peers.sh made its venv). Ends with the\n"
    "target summary.\n"
    "\n"
    "  --quick          only the target cases (default: every case of the tables)\n"
    "  --tiny           small shapes, a few seconds: checks the driver, measures nothing useful\n"
    "  --reps N         timed calls per case (default 7, --coverage 5; large cases use half, at least 2)\n"
    "  --filter TEXT    run the cases whose id contains TEXT (comma: any of several)\n"
    "  --threads N      thread count of the run (default: the library's, MLAOPS_NUM_THREADS)\n"
    "  --json FILE      the JSON report (default mlaops_bench.json; '-' = none)\n"
    "  --png FILE       the roofline plot (default mlaops_bench_roofline.png; '-' = none)\n"
    "  --no-peers       skip oneDNN, torch and vLLM\n"
    "  --python PATH    the Python for the torch peer (default $MLAOPS_PYTHON, else python3)\n"
    "  --vllm-python PATH  the Python of the vLLM peer's venv (default $MLAOPS_VLLM_PYTHON, else\n"
    "                   .venv-peers/bin/python when scripts/setup_peers.sh made it)\n"
    "  --no-limits      skip the probe; bounds from the roofline anchors of docs/performance.md\n"
    "  --lock FILE      the lock file (default $MLAOPS_BENCH_LOCK, else /tmp/mlaops-bench.lock)\n"
    "  --no-wait        exit with status 3 when another run holds the lock (default: wait)\n"
    "  --list           print the case ids and exit\n"
    "  --coverage       the coverage case list instead (bench/coverage.h): every supported feature\n"
    "                   row of FusedInferAttentionScoreV4, MlaPrologV2 / V3 and MlaPreprocess at a\n"
    "                   serving-sized shape (--tiny: small ones), beside each operator's per-call\n"
    "                   floor (a minimal valid call) measured in the same run: % of the bound and\n"
    "                   % of bound + floor per row (docs/performance.md \"Performance coverage\")\n"
    "  --md FILE        with --coverage: write the coverage table as Markdown to FILE\n"
    "\n"
    "Exit status: 0 every case ran (targets met or not), 1 a case failed, 2 bad arguments,\n"
    "3 the lock is held (--no-wait).\n";

int bad(const std::string& msg) {
  std::fprintf(stderr, "mlaops bench: %s\n\n%s", msg.c_str(), kBenchUsage);
  return 2;
}

bool parse_int(const char* s, int lo, int hi, int* out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%d %H:%M UTC", &tm);
  return b;
}

// Holds an exclusive flock on `path` for the life of the process (released at exit).
int take_lock(const std::string& path, bool wait) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    std::fprintf(stderr, "mlaops bench: cannot open the lock file %s: %s\n", path.c_str(), std::strerror(errno));
    return 2;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char holder[32] = {};
    const ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    const std::string who = n > 0 ? std::string(" (pid ") + std::string(holder, static_cast<size_t>(n)) + ")" : "";
    if (!wait) {
      std::fprintf(stderr, "mlaops bench: another benchmark run holds %s%s\n", path.c_str(), who.c_str());
      return 3;
    }
    std::fprintf(stderr, "mlaops bench: waiting for another benchmark run holding %s%s ...\n", path.c_str(),
                 who.c_str());
    if (::flock(fd, LOCK_EX) != 0) {
      std::fprintf(stderr, "mlaops bench: cannot lock %s: %s\n", path.c_str(), std::strerror(errno));
      return 2;
    }
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // the pid is only informational
  }
  return 0;  // fd stays open (and locked) until exit
}

// The coverage summary (rows below the flag, the floors) and the Markdown table when `md` is set.
bool coverage_report(const bench::Report& rep, const std::vector<bench::CoverageEntry>& entries, const std::string& md,
                     std::string* error) {
  std::map<std::string, double> floors;
  for (const bench::Row& r : rep.rows)
    if (r.id.rfind("floor.", 0) == 0 && r.error.empty()) floors[r.op] = r.best_us;
  std::printf("\ncoverage: per-call floors:");
  for (const auto& [op, us] : floors) std::printf(" %s %.1f us", op.c_str(), us);
  int flagged = 0, untimed = 0;
  for (const bench::Row& r : rep.rows) {
    const auto f = floors.find(r.op);
    if (r.id.rfind("floor.", 0) == 0 || !r.error.empty() || r.best_us <= 0 || f == floors.end()) continue;
    if (100.0 * (r.bound_us + f->second) / r.best_us < bench::kCoverageFlagPct) {
      if (flagged++ == 0) std::printf("\nbelow %.0f %% of bound + floor:", bench::kCoverageFlagPct);
      std::printf("\n  %-56s %6.1f %% of bound, %6.1f %% of bound + floor", r.id.c_str(), 100.0 * r.bound_us / r.best_us,
                  100.0 * (r.bound_us + f->second) / r.best_us);
    }
  }
  for (const bench::CoverageEntry& e : entries) untimed += e.timed() ? 0 : 1;
  std::printf("\ncoverage: %zu entries, %d with a note instead of a time, %d below %.0f %% of bound + floor\n",
              entries.size(), untimed, flagged, bench::kCoverageFlagPct);
  if (md.empty()) return true;
  std::ofstream out(md);
  out << bench::coverage_markdown(rep, entries, rep.rows, floors);
  if (!out) {
    *error = "cannot write " + md;
    return false;
  }
  std::printf("wrote %s\n", md.c_str());
  return true;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  for (int i = 0; i < argc; ++i)
    if (std::strcmp(argv[i], "--scaling") == 0) {  // the thread-scaling model: plans only, no timing
      std::vector<std::string> rest;
      for (int j = 0; j < argc; ++j)
        if (j != i) rest.emplace_back(argv[j]);
      return bench::scaling_main(rest);
    }
  bench::Size size = bench::Size::kFull;
  int reps = 0, threads = num_threads();  // reps 0: the default (7, --coverage 5)
  std::string filter, json = "mlaops_bench.json", png = "mlaops_bench_roofline.png";
  const char* env_py = std::getenv("MLAOPS_PYTHON");
  const char* env_lock = std::getenv("MLAOPS_BENCH_LOCK");
  std::string python = env_py && *env_py ? env_py : "python3";
  std::string vllm_python = bench::default_vllm_python();
  std::string lock = env_lock && *env_lock ? env_lock : "/tmp/mlaops-bench.lock";
  bool peers = true, limits = true, wait = true, list = false, coverage = false;
  std::string md;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char** out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    const char* v = nullptr;
    if (a == "--help" || a == "-h") {
      std::fputs(kBenchUsage, stdout);
      return 0;
    } else if (a == "--quick") {
      size = bench::Size::kQuick;
    } else if (a == "--tiny") {
      size = bench::Size::kTiny;
    } else if (a == "--no-peers") {
      peers = false;
    } else if (a == "--no-limits") {
      limits = false;
    } else if (a == "--no-wait") {
      wait = false;
    } else if (a == "--list") {
      list = true;
    } else if (a == "--coverage") {
      coverage = true;
    } else if (a == "--reps" || a == "--threads") {
      int* dst = a == "--reps" ? &reps : &threads;
      if (!value(&v)) return bad("option '" + a + "' needs a value");
      if (!parse_int(v, 1, a == "--reps" ? 1000 : 256, dst)) return bad(a + ": '" + v + "' is not an integer in range");
    } else if (a == "--vllm-python") {
      if (!value(&v)) return bad("option '" + a + "' needs a value");
      vllm_python = v;
    } else if (a == "--filter" || a == "--json" || a == "--png" || a == "--python" || a == "--lock" || a == "--md") {
      if (!value(&v)) return bad("option '" + a + "' needs a value");
      (a == "--filter" ? filter : a == "--json" ? json : a == "--png" ? png : a == "--python" ? python : a == "--md" ? md : lock) = v;
    } else {
      return bad("unknown option '" + a + "'");
    }
  }

  if (!md.empty() && !coverage) return bad("--md needs --coverage");
  if (reps == 0) reps = coverage ? 5 : 7;
  std::vector<bench::Case> cases;
  std::vector<bench::CoverageEntry> entries;
  if (coverage) {  // the floors first (every operator's, whatever the filter), then the rows
    if (size == bench::Size::kQuick) size = bench::Size::kFull;
    entries = bench::coverage_entries(size, threads);
    cases = bench::coverage_floor_cases(threads);
    for (const bench::CoverageEntry& e : entries)
      if (e.timed() && bench::filter_matches(e.c.id, filter)) cases.push_back(e.c);
    if (cases.size() == 3 && !filter.empty()) return bad("--filter '" + filter + "' matches no case (see --list)");
  } else {
    for (auto* make : {bench::mla_prolog_cases, bench::mla_preprocess_cases, bench::fia_cases})
      for (bench::Case& c : make(size, threads))
        if (bench::filter_matches(c.id, filter)) cases.push_back(std::move(c));
  }
  if (list) {
    for (const bench::Case& c : cases) std::printf("%-46s %s (%d thread%s)\n", c.id.c_str(), c.label.c_str(), c.threads, c.threads == 1 ? "" : "s");
    for (const bench::CoverageEntry& e : entries)
      if (!e.timed()) std::printf("%-46s no time: %s\n", e.c.id.c_str(), e.note.c_str());
    return 0;
  }
  if (cases.empty()) return bad("--filter '" + filter + "' matches no case (see --list)");
  if (const int rc = take_lock(lock, wait); rc != 0) return rc;

  const auto t_start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(); };
  bench::Report rep;
  rep.version = version();
  rep.isa = isa_name(active_isa());
  rep.cpu = bench::cpu_model();
  rep.date = utc_now();
  rep.threads = threads;
  rep.reps = reps;
  rep.size = size == bench::Size::kTiny ? "tiny" : size == bench::Size::kQuick ? "quick" : "full";
  std::printf("mlaops bench: mlaops %s, %s, isa %s, %d threads, %s run, %d reps, %zu cases\n", rep.version.c_str(),
              rep.cpu.c_str(), rep.isa.c_str(), threads, rep.size.c_str(), reps, cases.size());
  if (limits) {
    bench::ProbeOptions po;
    po.max_threads = threads;
    po.reps = size == bench::Size::kTiny ? 2 : 7;
    if (size == bench::Size::kTiny) po.dram_bytes = size_t{64} << 20, po.iters = 100'000;
    std::printf("limits (best / median of %d):\n", po.reps);
    rep.probes = bench::measure_limits(po, [&](const bench::Probe& p) {
      std::printf("  %-10s %3d thread%s  best %8.1f  median %8.1f %s\n", p.name.c_str(), p.threads,
                  p.threads == 1 ? " " : "s", p.best, p.median, p.unit.c_str());
      std::fflush(stdout);
    });
  } else {
    std::printf("limits: not measured (--no-limits): the roofline anchors of docs/performance.md\n");
  }
  bench::RunContext ctx;
  ctx.size = size;
  ctx.reps = reps;
  ctx.peers = peers;
  ctx.python = python;
  ctx.vllm_python = vllm_python;
  ctx.threads = threads;
  if (size == bench::Size::kTiny) ctx.pool_bytes = size_t{16} << 20;
  ctx.lim1 = bench::limits_for(rep.probes, 1);
  ctx.lim2 = bench::limits_for(rep.probes, threads);
  rep.lim1 = ctx.lim1;
  rep.lim2 = ctx.lim2;
  std::printf("bounds (%d threads): DRAM %.1f GB/s, bf16 %.0f GFLOP/s, int8 %.0f GOP/s%s\n\n", threads, ctx.lim2.bw / 1e9,
              ctx.lim2.bf16 / 1e9, ctx.lim2.int8 / 1e9, ctx.lim2.measured ? " (measured above)" : " (anchors)");
  bench::print_row_header();
  int failed = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    std::fflush(stdout);
    std::fprintf(stderr, "[%3zu/%zu %6.1f s] %s ...\n", k + 1, cases.size(), elapsed(), cases[k].id.c_str());
    const bench::Row r = bench::run_one(cases[k], ctx);
    failed += r.error.empty() ? 0 : 1;
    bench::print_row(r);
    rep.rows.push_back(r);
  }
  ctx.release_state();
  // The limits again after the cases (DRAM read varies over minutes on this shared machine; the
  // best of both is the capability), then raised to any faster peer weight stream.
  if (limits) {
    bench::ProbeOptions po;
    po.max_threads = threads;
    po.dram_only = true;
    po.reps = size == bench::Size::kTiny ? 2 : 7;
    if (size == bench::Size::kTiny) po.dram_bytes = size_t{64} << 20;
    std::printf("\nDRAM read again after the cases:\n");
    for (const bench::Probe& p : bench::measure_limits(po, [&](const bench::Probe& pr) {
           std::printf("  %-10s %3d thread%s  best %8.1f  median %8.1f %s\n", pr.name.c_str(), pr.threads,
                       pr.threads == 1 ? " " : "s", pr.best, pr.median, pr.unit.c_str());
         })) {
      rep.probes.push_back(p);
      bench::Limits& l = p.threads == 1 ? rep.lim1 : rep.lim2;
      if (p.threads == 1 || p.threads == threads) l.bw = std::max(l.bw, p.best * 1e9);
    }
  }
  if (limits && ctx.lim2.measured && size != bench::Size::kTiny) {
    if (bench::save_limits_cache(rep.probes, rep.cpu, rep.date))
      std::printf("limits saved to %s (mlaops demo bounds its calls by them)\n", bench::limits_cache_path().c_str());
  }
  const std::vector<std::string> raised = bench::raise_dram_to_peers(rep);
  for (const std::string& n : raised) std::printf("%s\n", n.c_str());
  std::printf("\nbounds used (%d threads): DRAM %.1f GB/s, bf16 %.0f GFLOP/s, int8 %.0f GOP/s; %% of bound per case:\n",
              threads, rep.lim2.bw / 1e9, rep.lim2.bf16 / 1e9, rep.lim2.int8 / 1e9);
  for (const bench::Row& r : rep.rows)
    if (r.error.empty()) std::printf("  %-46s %2d thr %7.1f %% (%s)\n", r.id.c_str(), r.threads, 100.0 * r.bound_us / r.best_us, r.mem_bound ? "mem" : "cmp");
  // Which GEMM route each projection took, and why (docs/runtime.md "GEMM routes").
  const std::vector<GemmRouteInfo> routes = gemm_route_decisions();
  std::printf("\nGEMM routes (%s; setting %s), %zu decision%s:\n", onednn_info().c_str(),
              gemm_route_name(gemm_route_setting()), routes.size(), routes.size() == 1 ? "" : "s");
  for (const GemmRouteInfo& g : routes)
    std::printf("  %-14s %-20s %-4s m %4lld k %5lld n %6lld %d thr  %-12s %s\n", g.op.c_str(), g.what.c_str(),
                g.elem.c_str(), (long long)g.m, (long long)g.k, (long long)g.n, g.threads, g.route.c_str(), g.why.c_str());
  std::printf("\ntargets:\n");
  for (const std::string& line : bench::target_summary(rep)) std::printf("  %s\n", line.c_str());
  std::string err;
  if (coverage && !coverage_report(rep, entries, md, &err)) return bad(err);
  if (json != "-") {
    if (!bench::write_json(rep, json, &err)) return bad(err);
    std::printf("wrote %s\n", json.c_str());
  }
  if (png != "-" && !bench::Canvas::png_available()) {
    std::printf("no roofline plot: this build has no libpng (Debian libpng-dev)\n");
  } else if (png != "-") {
    if (!bench::write_roofline_png(rep, png, &err)) return bad(err);
    std::printf("wrote %s\n", png.c_str());
  }
  std::fprintf(stderr, "mlaops bench: %zu cases in %.1f s%s\n", cases.size(), elapsed(),
               failed ? (", " + std::to_string(failed) + " failed").c_str() : "");
  return failed ? 1 : 0;
}

}  // namespace mlaops::tools

// The thread-scaling model of `mlaops bench --scaling` (scaling.h): the splits the run does,
// replayed on the plan's counts, the roofline time of each phase under stated assumptions, and
// the command's table.
#include "bench/scaling.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/suite.h"
#include "mlaops/runtime.h"

namespace bench {

void split_static(const std::vector<double>& unit_work, int64_t min_chunk, int threads, ScalingPhase* ph) {
  const int64_t n = static_cast<int64_t>(unit_work.size());
  ph->units = n;
  if (ph->tasks == 0) ph->tasks = n;
  ph->work = 0;
  for (double w : unit_work) ph->work += w;
  ph->active = 0;
  ph->max_units = 0;
  ph->max_work = 0;
  if (n == 0) return;
  min_chunk = std::max<int64_t>(1, min_chunk);
  const int64_t t = std::max<int64_t>(1, std::min<int64_t>(std::max(1, threads), (n + min_chunk - 1) / min_chunk));
  for (int64_t i = 0; i < t; ++i) {
    const int64_t b = n * i / t, e = n * (i + 1) / t;
    if (b >= e) continue;
    double w = 0;
    for (int64_t u = b; u < e; ++u) w += unit_work[static_cast<size_t>(u)];
    ++ph->active;
    ph->max_units = std::max(ph->max_units, e - b);
    ph->max_work = std::max(ph->max_work, w);
  }
}

void split_dynamic(const std::vector<double>& unit_work, int threads, ScalingPhase* ph) {
  const int64_t n = static_cast<int64_t>(unit_work.size());
  ph->units = n;
  if (ph->tasks == 0) ph->tasks = n;
  ph->work = 0;
  for (double w : unit_work) ph->work += w;
  const int t = static_cast<int>(std::min<int64_t>(std::max(1, threads), std::max<int64_t>(n, 1)));
  std::vector<double> load(static_cast<size_t>(t), 0.0);
  std::vector<int64_t> count(static_cast<size_t>(t), 0);
  for (int64_t u = 0; u < n; ++u) {
    const size_t k = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[k] += unit_work[static_cast<size_t>(u)];
    ++count[k];
  }
  ph->active = n == 0 ? 0 : t;
  ph->max_units = n == 0 ? 0 : *std::max_element(count.begin(), count.end());
  ph->max_work = n == 0 ? 0 : *std::max_element(load.begin(), load.end());
}

namespace {

double cmp_us(const ScalingPhase& ph, const ScalingAssumptions& a) {
  const double whole = ph.flops_bf16 / a.core_bf16 + ph.ops_int8 / a.core_int8;
  return ph.work > 0 ? whole * ph.max_work / ph.work * 1e6 : 0.0;
}

double mem_us(const ScalingPhase& ph, const ScalingAssumptions& a) {
  if (ph.bytes <= 0) return 0.0;
  const double bw = std::min(std::max(1, ph.active) * a.core_bw, a.socket_bw);
  return ph.bytes / bw * 1e6;
}

}  // namespace

bool scaling_point(const ScalingCase& c, int threads, const ScalingAssumptions& a, const ScalingPoint* one,
                   ScalingPoint* out, std::string* error) {
  *out = ScalingPoint();
  out->threads = threads;
  // The model splits the library's own kernels: the plans take the own GEMM route (a plan on the
  // auto setting would time both routes, at thread counts this host may not have, and the choice
  // would move the model's phases), then the setting is restored.
  const mlaops::GemmRouteSetting route = mlaops::gemm_route_setting();
  mlaops::set_gemm_route("own");
  mlaops::set_num_threads(threads);
  const bool ok = c.plan(threads, out, error);
  mlaops::set_num_threads(0);
  mlaops::set_gemm_route(mlaops::gemm_route_name(route));
  if (!ok) return false;
  double mem_dominated = 0;
  for (const ScalingPhase& ph : out->phases) {
    const double cm = cmp_us(ph, a) * static_cast<double>(ph.repeats);
    const double me = mem_us(ph, a) * static_cast<double>(ph.repeats);
    out->cmp_us += cm;
    out->mem_us += me;
    out->us += std::max(cm, me);
    if (me > cm) mem_dominated += me;
  }
  if (one != nullptr) {
    out->speedup_work = out->cmp_us > 0 ? one->cmp_us / out->cmp_us : 1.0;
    out->speedup_model = out->us > 0 ? one->us / out->us : 1.0;
  }
  if (mem_dominated >= 0.5 * out->us && threads > 1)
    out->limit = "DRAM";
  else if (out->speedup_work < 0.8 * threads)
    out->limit = "units";
  else
    out->limit = "-";
  return true;
}

namespace {

const char* kUsage =
    "usage: mlaops bench --scaling [--threads-list N,N,...] [--filter TEXT[,TEXT...]] [--markdown]\n"
    "                              [--core-bw GB/s] [--socket-bw GB/s] [--core-bf16 GFLOP/s] [--core-int8 GOP/s]\n"
    "\n"
    "Makes each benchmark case's plan (phase 1 only: nothing runs, nothing is timed) at 1, 2, 8, 32 and\n"
    "128 threads and prints how its work splits: per parallel phase the units (FIA: tasks x KV splits;\n"
    "the projections: weight column panels, token rows, heads), the threads that get work, the most\n"
    "units one thread runs, and a model's speed-up over 1 thread: work balance alone (the busiest\n"
    "thread's share of the compute), and with each phase's time max(compute, bytes / min(threads x\n"
    "per-core bandwidth, socket bandwidth)). The rates are assumptions, not measurements.\n"
    "\n"
    "  --threads-list L   thread counts (default 1,2,8,32,128; 1 is always added)\n"
    "  --filter TEXT      the cases whose id contains TEXT (comma: any of several)\n"
    "  --markdown         one row per case: units, busiest thread, speed-ups at each count > 2\n"
    "  --core-bw X        DRAM GB/s one core streams (default 12)\n"
    "  --socket-bw X      DRAM GB/s of the socket (default 300)\n"
    "  --core-bf16 X      bf16 GFLOP/s of one core (default 235, this host's vdpbf16ps)\n"
    "  --core-int8 X      int8 GOP/s of one core (default 469, this host's vpdpbusd)\n";

int bad(const std::string& msg) {
  std::fprintf(stderr, "mlaops bench --scaling: %s\n\n%s", msg.c_str(), kUsage);
  return 2;
}

bool parse_pos(const std::string& s, double* out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end == s.c_str() || *end != '\0' || !(v > 0) || v > 1e9) return false;
  *out = v;
  return true;
}

// "132/17" : units and the most one thread runs, per phase.
std::string phase_cells(const ScalingPoint& p) {
  std::string s;
  for (const ScalingPhase& ph : p.phases) {
    if (ph.flops_bf16 + ph.ops_int8 + ph.bytes <= 0) continue;  // the row steps: not charged
    char b[96];
    if (ph.tasks != ph.units)
      std::snprintf(b, sizeof b, "%s%s %lld (%lld tasks) / %lld", s.empty() ? "" : ", ", ph.name.c_str(),
                    (long long)ph.units, (long long)ph.tasks, (long long)ph.max_units);
    else
      std::snprintf(b, sizeof b, "%s%s %lld / %lld", s.empty() ? "" : ", ", ph.name.c_str(), (long long)ph.units,
                    (long long)ph.max_units);
    s += b;
  }
  return s;
}

}  // namespace

int scaling_main(const std::vector<std::string>& args) {
  ScalingAssumptions a;
  std::vector<int> counts = {1, 2, 8, 32, 128};
  std::string filter;
  bool markdown = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& o = args[i];
    if (o == "--help" || o == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (o == "--markdown") {
      markdown = true;
      continue;
    }
    if (i + 1 >= args.size()) return bad("unknown option or missing value: '" + o + "'");
    const std::string v = args[++i];
    double x = 0;
    if (o == "--filter") {
      filter = v;
    } else if (o == "--threads-list") {
      counts = {1};
      size_t start = 0;
      while (start <= v.size()) {
        const size_t comma = v.find(',', start);
        const std::string part = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!parse_pos(part, &x) || x > 4096 || x != static_cast<double>(static_cast<int>(x)))
          return bad("--threads-list: '" + part + "' is not a thread count in 1..4096");
        if (x > 1) counts.push_back(static_cast<int>(x));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (o == "--core-bw" || o == "--socket-bw" || o == "--core-bf16" || o == "--core-int8") {
      if (!parse_pos(v, &x)) return bad(o + ": '" + v + "' is not a positive number");
      (o == "--core-bw" ? a.core_bw : o == "--socket-bw" ? a.socket_bw : o == "--core-bf16" ? a.core_bf16 : a.core_int8) =
          x * 1e9;
    } else {
      return bad("unknown option '" + o + "'");
    }
  }
  std::vector<ScalingCase> cases;
  for (ScalingCase& c : scaling_cases())
    if (bench::filter_matches(c.id, filter)) cases.push_back(std::move(c));
  if (cases.empty()) return bad("--filter '" + filter + "' matches no case");
  std::printf("mlaops bench --scaling: a model from the plans' work counts, not a measurement (isa %s). Assumed: "
              "%.0f GB/s per core, %.0f GB/s per socket, %.0f GFLOP/s bf16 and %.0f GOP/s int8 per core.\n",
              mlaops::isa_name(mlaops::active_isa()), a.core_bw / 1e9, a.socket_bw / 1e9, a.core_bf16 / 1e9,
              a.core_int8 / 1e9);
  std::printf("Per phase: units / the most units one thread runs. 'work x': speed-up from the work balance alone; "
              "'model x': with each phase's time max(compute, DRAM).\n\n");
  if (markdown) {
    std::string head = "| case |", rule = "|---|";
    for (int n : counts) {
      if (n <= 2) continue;
      char b[80];
      std::snprintf(b, sizeof b, " %d threads: units / busiest; work x, model x |", n);
      head += b;
      rule += "---|";
    }
    std::printf("%s\n%s\n", head.c_str(), rule.c_str());
  }
  int failed = 0;
  for (const ScalingCase& c : cases) {
    ScalingPoint one;
    std::string err;
    if (!scaling_point(c, 1, a, nullptr, &one, &err)) {
      std::printf("%-44s plan failed: %s\n", c.id.c_str(), err.c_str());
      ++failed;
      continue;
    }
    std::string md = "| ";
    md += c.label;
    md += " |";
    for (int n : counts) {
      ScalingPoint p;
      if (n == 1) {
        p = one;
      } else if (!scaling_point(c, n, a, &one, &p, &err)) {
        std::printf("%-44s %3d thr: plan failed: %s\n", c.id.c_str(), n, err.c_str());
        ++failed;
        continue;
      }
      char b[160];
      if (markdown) {
        if (n <= 2) continue;
        std::snprintf(b, sizeof b, "; %.1fx, %.1fx (%s) |", p.speedup_work, p.speedup_model, p.limit);
        md += ' ';
        md += phase_cells(p);
        md += b;
        continue;
      }
      std::printf("%-44s %3d thr  %-58s  work %6.1fx  cmp %9.1f us  mem %9.1f us  model %6.1fx  %s\n", c.id.c_str(), n,
                  phase_cells(p).c_str(), p.speedup_work, p.cmp_us, p.mem_us, p.speedup_model, p.limit);
      std::printf("%-44s          plan: %s\n", "", p.plan.c_str());
    }
    if (markdown) std::printf("%s\n", md.c_str());
  }
  return failed ? 1 : 0;
}

}  // namespace bench

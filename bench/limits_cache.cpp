// The saved limits of this host (limits_cache.h).
#include "bench/limits_cache.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace bench {

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t c = line.find(':');
      return c == std::string::npos ? line : line.substr(c + 2);
    }
  return "unknown";
}

namespace {

std::string cache_dir() {
  const char* own = std::getenv("MLAOPS_CACHE_DIR");
  if (own != nullptr && *own) return own;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg) return std::string(xdg) + "/mlaops";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home ? home : "/tmp") + "/.cache/mlaops";
}

// mkdir -p
bool make_dirs(const std::string& dir) {
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at < dir.size() && dir[at] != '/') continue;
    const std::string part = dir.substr(0, at);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

}  // namespace

std::string limits_cache_path() { return cache_dir() + "/limits.txt"; }

bool save_limits_cache(const std::vector<Probe>& probes, const std::string& cpu, const std::string& date) {
  if (probes.empty() || !make_dirs(cache_dir())) return false;
  const std::string path = limits_cache_path(), tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) return false;
    f << "cpu " << cpu << "\ndate " << date << "\n";
    for (const Probe& p : probes) f << p.name << " " << p.threads << " " << p.best << " " << p.median << " " << p.unit << "\n";
    if (!f) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

bool load_limits_cache(const std::string& cpu, std::vector<Probe>* probes, std::string* date) {
  std::ifstream f(limits_cache_path());
  std::string line;
  if (!f || !std::getline(f, line) || line != "cpu " + cpu) return false;
  if (!std::getline(f, line) || line.rfind("date ", 0) != 0) return false;
  *date = line.substr(5);
  probes->clear();
  while (std::getline(f, line)) {
    std::istringstream in(line);
    Probe p;
    if (!(in >> p.name >> p.threads >> p.best >> p.median >> p.unit) || p.best <= 0) return false;
    probes->push_back(p);
  }
  return !probes->empty();
}

std::string probe_disagreement(const std::vector<Probe>& probes, int threads) {
  std::string out;
  for (const Probe& p : probes) {
    if (p.threads != threads || p.best <= 0 || p.median >= kProbeSteadyMedian * p.best) continue;
    char b[160];
    std::snprintf(b, sizeof b, "%s%s %d thread%s: best %.1f, median %.1f %s", out.empty() ? "" : "; ", p.name.c_str(),
                  p.threads, p.threads == 1 ? "" : "s", p.best, p.median, p.unit.c_str());
    out += b;
  }
  return out;
}

std::string bound_cell(double bound_us, double us, bool limits_noisy, bool* any_noisy) {
  if (!(us > 0)) return "-";
  const double pct = 100.0 * bound_us / us;
  if (limits_noisy || !(pct <= 100.0)) {
    *any_noisy = true;
    return "noisy";
  }
  char c[32];
  std::snprintf(c, sizeof c, "%.1f%%", pct);
  return c;
}

Limits host_limits(int threads, std::string* source, std::string* noisy) {
  std::vector<Probe> probes;
  std::string date;
  auto has = [&](const char* name) {
    for (const Probe& p : probes)
      if (p.name == name && p.threads == threads) return true;
    return false;
  };
  if (load_limits_cache(cpu_model(), &probes, &date) && has("dram_read") && has("bf16_dot")) {
    *source = "saved by mlaops bench on " + date + " (" + limits_cache_path() + ")";
  } else {
    ProbeOptions o;
    o.reps = 3;
    o.max_threads = threads;
    o.dram_bytes = size_t{256} << 20;
    o.iters = 200'000;
    probes = measure_limits(o, [](const Probe&) {});
    *source = "a quick probe just now; `mlaops bench` measures them fully and saves them";
  }
  Limits l = limits_for(probes, threads);
  if (!l.measured) *source = "not measurable on this CPU: the anchors of docs/performance.md";
  if (noisy != nullptr) *noisy = l.measured ? probe_disagreement(probes, threads) : std::string();
  return l;
}

}  // namespace bench

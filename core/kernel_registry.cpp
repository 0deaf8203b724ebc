// Kernel registry selection, the kernel override and kernel_list (core/kernel_registry.h,
// include/mlaops/runtime.h).
#include "core/kernel_registry.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace mlaops {
namespace {

struct Override {
  std::mutex mu;
  bool loaded = false;
  std::vector<std::string> names;
  std::atomic<int> any{-1};  // -1 not loaded yet, 0 no names, 1 some names
};

Override& state() {
  static Override o;
  return o;
}

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    std::string n = s.substr(at, end - at);
    while (!n.empty() && n.front() == ' ') n.erase(n.begin());
    while (!n.empty() && n.back() == ' ') n.pop_back();
    if (!n.empty()) out.push_back(n);
    at = end + 1;
  }
  return out;
}

// What keeps the override from naming `name`, worded to follow the name ("is not a kernel row
// ..."); "" when it is a row of this build that this CPU can run.
std::string override_problem(const std::string& name) {
  int n = 0;
  const KernelFamily* const* fams = kernel_families(&n);
  for (int f = 0; f < n; ++f) {
    const int i = fams[f]->find(name.c_str());
    if (i < 0) continue;
    const KernelRowInfo& r = fams[f]->info(i);
    return r.runnable(cpu_features()) ? "" : std::string("needs ") + r.needs + ", which this CPU lacks";
  }
  return "is not a kernel row of this build (`mlaops info` lists them)";
}

// The override's names (loading MLAOPS_KERNEL on first use), copied under the lock.
std::vector<std::string> names() {
  Override& o = state();
  std::lock_guard<std::mutex> lock(o.mu);
  if (!o.loaded) {
    o.loaded = true;
    const char* env = std::getenv("MLAOPS_KERNEL");
    if (env != nullptr)
      for (const std::string& n : split_names(env)) {
        const std::string why = override_problem(n);
        if (why.empty()) {
          o.names.push_back(n);
        } else {
          std::fprintf(stderr, "mlaops: MLAOPS_KERNEL: %s %s; ignored\n", n.c_str(), why.c_str());
        }
      }
    o.any.store(o.names.empty() ? 0 : 1);
  }
  return o.names;
}

}  // namespace

std::string kernel_override() {
  std::string s;
  for (const std::string& n : names()) s += (s.empty() ? "" : ",") + n;
  return s;
}

void set_kernel_override_unchecked(const std::string& list) {
  Override& o = state();
  std::lock_guard<std::mutex> lock(o.mu);
  o.loaded = true;
  o.names = split_names(list);
  o.any.store(o.names.empty() ? 0 : 1);
}

bool set_kernel_override(const char* list) {
  const std::string s = list == nullptr ? "" : list;
  for (const std::string& n : split_names(s))
    if (!override_problem(n).empty()) return false;
  set_kernel_override_unchecked(s);
  return true;
}

bool kernel_override_names(const char* row) {
  for (const std::string& n : names())
    if (n == row) return true;
  return false;
}

bool kernel_override_names_family(const KernelFamily& f) {
  if (state().any.load() == 0) return false;  // the common case: no override, no lock
  for (const std::string& n : names())
    if (f.find(n.c_str()) >= 0) return true;
  return false;
}

std::vector<KernelInfo> kernel_list() {
  std::vector<KernelInfo> out;
  int n = 0;
  const KernelFamily* const* fams = kernel_families(&n);
  for (int f = 0; f < n; ++f)
    for (int i = 0; i < fams[f]->size(); ++i) {
      const KernelRowInfo& r = fams[f]->info(i);
      out.push_back({fams[f]->name(), r.name, r.isa, r.runnable(cpu_features()), r.needs, fams[f]->uses(i)});
    }
  return out;
}

bool KernelFamily::allowed(int i, Isa isa, std::string* why) const {
  const KernelRowInfo& r = info(i);
  if (!r.runnable(cpu_features())) {
    if (why != nullptr) *why = std::string("needs ") + r.needs;
    return false;
  }
  if (kernel_override_names_family(*this)) {
    if (kernel_override_names(r.name)) return true;
    if (why != nullptr) *why = "not named by the kernel override";
    return false;
  }
  if (static_cast<int>(r.isa) > static_cast<int>(isa)) {
    if (why != nullptr) *why = std::string("above the active level ") + isa_name(isa);
    return false;
  }
  return true;
}

int KernelFamily::select(Isa isa) const {
  for (int i = 0; i < n_; ++i)
    if (allowed(i, isa)) return i;
  return n_ - 1;
}

int KernelFamily::find(const char* name) const {
  for (int i = 0; i < n_; ++i)
    if (std::strcmp(info(i).name, name) == 0) return i;
  return -1;
}

}  // namespace mlaops

// The kernel families of this build (core/kernel_registry.h): one list, used by kernel_list(),
// set_kernel_override() and the kernel coverage test.
#include <cstring>
#include <string>
#include <vector>

#include "core/kernel_registry.h"
#include "mlaops/runtime.h"

namespace mlaops {

const KernelFamily* const* kernel_families(int* count) {
  static const KernelFamily* const* list = nullptr;
  *count = 0;
  return list;
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

bool set_kernel_override(const char* names) {
  const std::string list = names == nullptr ? "" : names;
  size_t at = 0;
  while (at <= list.size()) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    std::string name = list.substr(at, end - at);
    while (!name.empty() && name.front() == ' ') name.erase(name.begin());
    while (!name.empty() && name.back() == ' ') name.pop_back();
    at = end + 1;
    if (name.empty()) continue;
    bool found = false;
    for (const KernelInfo& k : kernel_list())
      if (name == k.name) {
        if (!k.runnable) return false;
        found = true;
      }
    if (!found) return false;
  }
  set_kernel_override_unchecked(list);
  return true;
}

std::vector<Isa> runnable_isas() {
  std::vector<Isa> out;
  for (int i = 0; i <= static_cast<int>(detected_isa()); ++i) out.push_back(static_cast<Isa>(i));
  return out;
}

}  // namespace mlaops

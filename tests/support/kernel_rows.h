// The rows of one kernel family that this host can run, each picked as MLAOPS_KERNEL=<row> picks
// it (so each counts as used for the kernel coverage test), for kernel tests that must reach rows
// no ISA level selects on this host (e.g. gemm_avx512_vnni beside gemm_avx512; docs/testing.md).
#pragma once

#include <string>
#include <vector>

#include "core/kernel_registry.h"

namespace mlaops {

template <class T>
struct PickedRow {
  std::string name;
  T value;
};

template <class T>
std::vector<PickedRow<T>> runnable_rows(const KernelTable<T>& table) {
  std::vector<PickedRow<T>> out;
  const std::string saved = kernel_override();
  for (int i = 0; i < table.size(); ++i) {
    const KernelRowInfo& r = table.info(i);
    if (!r.runnable(cpu_features())) continue;
    set_kernel_override_unchecked(r.name);
    out.push_back({r.name, table.pick(active_isa())});
  }
  set_kernel_override_unchecked(saved);
  return out;
}

}  // namespace mlaops

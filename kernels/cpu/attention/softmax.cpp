// The online-softmax family (softmax.h): its rows, best first, and the pick.
#include "kernels/cpu/attention/softmax.h"

namespace mlaops::kernels {

const KernelTable<const SoftmaxKernels*>& softmax_family() {
  using Table = KernelTable<const SoftmaxKernels*>;
  static const Table::Row rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"softmax_avx512", Isa::kAvx512, gate_avx512, kNeedsAvx512}, &softmax_avx512},
      {{"softmax_avx2", Isa::kAvx2, gate_avx2, kNeedsAvx2}, &softmax_avx2},
#endif
      {{"softmax_scalar", Isa::kScalar, gate_always, ""}, &softmax_scalar},
  };
  static const Table table("softmax", rows);
  return table;
}

const SoftmaxKernels& softmax_kernels(Isa isa) { return *softmax_family().pick(isa); }

}  // namespace mlaops::kernels

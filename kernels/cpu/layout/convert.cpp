// The epilogue-conversion family (convert.h): its rows, best first, and the pick.
#include "kernels/cpu/layout/convert.h"

namespace mlaops::kernels {

const KernelTable<const ConvertKernels*>& convert_family() {
  using Table = KernelTable<const ConvertKernels*>;
  static const Table::Row rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"convert_avx512", Isa::kAvx512, gate_avx512, kNeedsAvx512}, &convert_avx512},
      {{"convert_avx2", Isa::kAvx2, gate_avx2, kNeedsAvx2}, &convert_avx2},
#endif
      {{"convert_scalar", Isa::kScalar, gate_always, ""}, &convert_scalar},
  };
  static const Table table("convert", rows);
  return table;
}

const ConvertKernels& convert_kernels(Isa isa) { return *convert_family().pick(isa); }

}  // namespace mlaops::kernels

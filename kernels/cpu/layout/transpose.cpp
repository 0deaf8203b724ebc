// The portable 16 x 16 transpose, and the family (transpose.h): its rows, best first, and the pick.
#include "kernels/cpu/layout/transpose.h"

namespace mlaops::kernels {

void transpose16_scalar(const uint16_t* const src[16], uint16_t* dst) {
  for (int k = 0; k < 16; ++k)
    for (int c = 0; c < 16; ++c) dst[c * 16 + k] = src[k][c];
}

const KernelTable<Transpose16Fn>& transpose16_family() {
  using Table = KernelTable<Transpose16Fn>;
  static const Table::Row rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"transpose16_avx512", Isa::kAvx512, gate_avx512, kNeedsAvx512}, transpose16_avx512},
#endif
      {{"transpose16_scalar", Isa::kScalar, gate_always, ""}, transpose16_scalar},
  };
  static const Table table("transpose16", rows);
  return table;
}

Transpose16Fn transpose16_kernel(Isa isa) { return transpose16_family().pick(isa); }

}  // namespace mlaops::kernels

// The MlaPreprocess row-kernel family (mla_preprocess_rows.h): its rows, best first, and the pick.
#include "kernels/cpu/rows/mla_preprocess_rows.h"

namespace mlaops::kernels {

const KernelTable<const MlaPreprocessRowKernels*>& mla_preprocess_rows_family() {
  using Table = KernelTable<const MlaPreprocessRowKernels*>;
  static const Table::Row rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"mla_preprocess_rows_avx512", Isa::kAvx512, gate_avx512, kNeedsAvx512}, &mla_preprocess_rows_avx512},
      {{"mla_preprocess_rows_avx2", Isa::kAvx2, gate_avx2, kNeedsAvx2}, &mla_preprocess_rows_avx2},
#endif
      {{"mla_preprocess_rows_scalar", Isa::kScalar, gate_always, ""}, &mla_preprocess_rows_scalar},
  };
  static const Table table("mla_preprocess_rows", rows);
  return table;
}

const MlaPreprocessRowKernels& mla_preprocess_row_kernels(Isa isa) { return *mla_preprocess_rows_family().pick(isa); }

}  // namespace mlaops::kernels

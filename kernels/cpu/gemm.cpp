// The GEMM family (gemm.h): its rows, best first, and the pick.
#include "kernels/cpu/gemm.h"

namespace mlaops::kernels {

const KernelTable<const GemmKernels*>& gemm_family() {
#if defined(MLAOPS_ARCH_X86_64)
  // vdpbf16ps (bf16, bf16_t) needs AVX512_BF16, vpdpbusd (s8, s8_t) AVX512_VNNI; the fp16 kernels
  // need neither. Ice Lake / Cascade Lake have VNNI without BF16, Skylake-SP has neither.
  static const GemmKernels avx512_vnni{gemm_avx2.bf16,   gemm_avx512.s8,   gemm_avx512.f16,
                                       gemm_avx2.bf16_t, gemm_avx512.s8_t, gemm_avx512.f16_t};
  static const GemmKernels avx512_f16{gemm_avx2.bf16,   gemm_avx2.s8,   gemm_avx512.f16,
                                      gemm_avx2.bf16_t, gemm_avx2.s8_t, gemm_avx512.f16_t};
#endif
  using Table = KernelTable<const GemmKernels*>;
  static const Table::Row rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"gemm_avx512", Isa::kAvx512, gate_avx512_bf16_vnni, kNeedsAvx512Bf16Vnni}, &gemm_avx512},
      {{"gemm_avx512_vnni", Isa::kAvx512, gate_avx512_vnni, kNeedsAvx512Vnni}, &avx512_vnni},
      {{"gemm_avx512_f16", Isa::kAvx512, gate_avx512, kNeedsAvx512}, &avx512_f16},
      {{"gemm_avx2", Isa::kAvx2, gate_avx2, kNeedsAvx2}, &gemm_avx2},
#endif
      {{"gemm_scalar", Isa::kScalar, gate_always, ""}, &gemm_scalar},
  };
  static const Table table("gemm", rows);
  return table;
}

const GemmKernels& gemm_kernels(Isa isa) { return *gemm_family().pick(isa); }

}  // namespace mlaops::kernels

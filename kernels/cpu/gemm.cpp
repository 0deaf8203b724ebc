// The GEMM family (gemm.h): its rows, best first, and the pick.
#include "kernels/cpu/gemm.h"

#include <algorithm>

namespace mlaops::kernels {

const KernelTable<const GemmKernels*>& gemm_family() {
#if defined(MLAOPS_ARCH_X86_64)
  // vdpbf16ps (bf16, bf16_t) needs AVX512_BF16, vpdpbusd (s8, s8_t) AVX512_VNNI; the fp16 kernels
  // need neither. Ice Lake / Cascade Lake have VNNI without BF16, Skylake-SP has neither.
  static const GemmKernels avx512_vnni{gemm_avx2.bf16,   gemm_avx512.s8,   gemm_avx512.f16,
                                       gemm_avx2.bf16_t, gemm_avx512.s8_t, gemm_avx512.f16_t,
                                       gemm_avx512.s8_rowsum};
  static const GemmKernels avx512_f16{gemm_avx2.bf16,   gemm_avx2.s8,   gemm_avx512.f16,
                                      gemm_avx2.bf16_t, gemm_avx2.s8_t, gemm_avx512.f16_t,
                                      gemm_avx512.s8_rowsum};
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


namespace {
int64_t round64(int64_t b) { return (b + 63) / 64 * 64; }

// For exactly M rows. Each term is the largest block one row's kernel carves from the scratch (their K blocks kc:
// gemm_avx2.cpp, gemm_avx512.cpp, gemm_t_avx512.cpp; a row count up to the tile height uses the
// whole of K).
int64_t scratch_for(GemmKind kind, int64_t M, int64_t K, int64_t n_cols) {
  if (M <= 0) return 0;
  K = std::max<int64_t>(K, 0);
  switch (kind) {
    case GemmKind::kBf16:
      return 0;
    case GemmKind::kS8:  // AVX-512: int32 row sums [M]; AVX2: int16 pairs of A [M][(K + 1) / 2] as int32
      return round64(M * std::max<int64_t>(1, (K + 1) / 2) * 4);
    case GemmKind::kF16:  // fp32 A block [M][min(kc, K)], kc >= 256 (all of K up to 8 rows)
      return round64(M * (M <= 8 ? K : std::min<int64_t>(K, 384)) * 4);
    case GemmKind::kBf16T:
    case GemmKind::kS8T:
    case GemmKind::kF16T: {
      // [int32 row sums [M] (AVX-512 int8)] then the larger of: AVX2's converted A block
      // [M][kc padded to c0] (4-byte elements at most, kc <= 1024, all of K up to 3 rows) and
      // AVX-512's folded sums of the W-streaming path [tiles][M][4] x 64 bytes.
      const int64_t kc = M <= 3 ? K : std::min<int64_t>(K, 1024);
      const int64_t abuf = M * ((kc + 31) / 32 * 32) * 4;
      const int64_t sums = M <= kGemmTStreamMaxM ? (std::max<int64_t>(n_cols, 0) + 15) / 16 * M * 4 * 64 : 0;
      return round64(M * 4 + 64) + round64(std::max(abuf, sums));  // + 64: gemm_t_block aligns
    }
  }
  return 0;
}
}  // namespace

// scratch_for grows with M within 1..3, 4..8 and 9.. (the blocking changes at 3 and 8 rows).
int64_t gemm_scratch_bytes(GemmKind kind, int64_t M, int64_t K, int64_t n_cols) {
  return std::max({scratch_for(kind, M, K, n_cols), scratch_for(kind, std::min<int64_t>(M, 8), K, n_cols),
                   scratch_for(kind, std::min<int64_t>(M, 3), K, n_cols)});
}

}  // namespace mlaops::kernels

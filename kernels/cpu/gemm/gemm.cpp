// The GEMM families, one per data type (gemm.h): their rows, best first, and the scratch rule.
#include "kernels/cpu/gemm/gemm.h"

#include <algorithm>

namespace mlaops::kernels {

namespace {

#if defined(MLAOPS_ARCH_X86_64)
// The calls the SIMD rows run: their tiles load whole panels of the width they were written for
// (16 columns of 2-byte elements, 32 of int8), and the AVX-512 int8 tiles 32-byte panel rows
// (ldb 32, FRACTAL_NZ). Any other call runs on the next row that takes it, at the end the scalar row.
bool panels16(const GemmArgs& g) { return g.panel_width == 16; }
bool panels32(const GemmArgs& g) { return g.panel_width == 32; }
bool panels32_nz(const GemmArgs& g) { return g.panel_width == 32 && g.ldb == 32; }
constexpr char kPanels16[] = "16-column panels";
constexpr char kPanels32[] = "32-column panels";
constexpr char kPanels32Nz[] = "32-column panels, ldb 32";
#endif

using GemmTable = GemmFamily::Row;
using GemmTTable = GemmTFamily::Row;

}  // namespace

// vdpbf16ps (bf16, bf16_t) needs AVX512_BF16, vpdpbusd (s8, s8_t) AVX512_VNNI; the fp16 kernels
// and the row sums neither. On an AVX-512 CPU without one of them (Ice Lake / Cascade Lake have
// VNNI without BF16, Skylake-SP neither) that family's AVX2 row runs.
const GemmFamily& gemm_bf16_family() {
  static const GemmTable rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"gemm_bf16_avx512", Isa::kAvx512, gate_avx512_bf16, kNeedsAvx512Bf16, kPanels16}, {gemm_avx512.bf16, panels16}},
      {{"gemm_bf16_avx2", Isa::kAvx2, gate_avx2, kNeedsAvx2, kPanels16}, {gemm_avx2.bf16, panels16}},
#endif
      {{"gemm_bf16_scalar", Isa::kScalar, gate_always, ""}, {gemm_scalar.bf16, nullptr}},
  };
  static const GemmFamily table("gemm_bf16", rows);
  return table;
}

const GemmFamily& gemm_s8_family() {
  static const GemmTable rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"gemm_s8_avx512", Isa::kAvx512, gate_avx512_vnni, kNeedsAvx512Vnni, kPanels32Nz}, {gemm_avx512.s8, panels32_nz}},
      {{"gemm_s8_avx2", Isa::kAvx2, gate_avx2, kNeedsAvx2, kPanels32}, {gemm_avx2.s8, panels32}},
#endif
      {{"gemm_s8_scalar", Isa::kScalar, gate_always, ""}, {gemm_scalar.s8, nullptr}},
  };
  static const GemmFamily table("gemm_s8", rows);
  return table;
}

const GemmFamily& gemm_f16_family() {
  static const GemmTable rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"gemm_f16_avx512", Isa::kAvx512, gate_avx512, kNeedsAvx512, kPanels16}, {gemm_avx512.f16, panels16}},
      {{"gemm_f16_avx2", Isa::kAvx2, gate_avx2, kNeedsAvx2, kPanels16}, {gemm_avx2.f16, panels16}},
#endif
      {{"gemm_f16_scalar", Isa::kScalar, gate_always, ""}, {gemm_scalar.f16, nullptr}},
  };
  static const GemmFamily table("gemm_f16", rows);
  return table;
}

const GemmTFamily& gemm_bf16_t_family() {
  static const GemmTTable rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"gemm_bf16_t_avx512", Isa::kAvx512, gate_avx512_bf16, kNeedsAvx512Bf16}, {gemm_avx512.bf16_t, nullptr}},
      {{"gemm_bf16_t_avx2", Isa::kAvx2, gate_avx2, kNeedsAvx2}, {gemm_avx2.bf16_t, nullptr}},
#endif
      {{"gemm_bf16_t_scalar", Isa::kScalar, gate_always, ""}, {gemm_scalar.bf16_t, nullptr}},
  };
  static const GemmTFamily table("gemm_bf16_t", rows);
  return table;
}

const GemmTFamily& gemm_s8_t_family() {
  static const GemmTTable rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"gemm_s8_t_avx512", Isa::kAvx512, gate_avx512_vnni, kNeedsAvx512Vnni}, {gemm_avx512.s8_t, nullptr}},
      {{"gemm_s8_t_avx2", Isa::kAvx2, gate_avx2, kNeedsAvx2}, {gemm_avx2.s8_t, nullptr}},
#endif
      {{"gemm_s8_t_scalar", Isa::kScalar, gate_always, ""}, {gemm_scalar.s8_t, nullptr}},
  };
  static const GemmTFamily table("gemm_s8_t", rows);
  return table;
}

const GemmTFamily& gemm_f16_t_family() {
  static const GemmTTable rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"gemm_f16_t_avx512", Isa::kAvx512, gate_avx512, kNeedsAvx512}, {gemm_avx512.f16_t, nullptr}},
      {{"gemm_f16_t_avx2", Isa::kAvx2, gate_avx2, kNeedsAvx2}, {gemm_avx2.f16_t, nullptr}},
#endif
      {{"gemm_f16_t_scalar", Isa::kScalar, gate_always, ""}, {gemm_scalar.f16_t, nullptr}},
  };
  static const GemmTFamily table("gemm_f16_t", rows);
  return table;
}

const KernelTable<S8RowSumFn>& gemm_s8_rowsum_family() {
  using Table = KernelTable<S8RowSumFn>;
  static const Table::Row rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"gemm_s8_rowsum_avx512", Isa::kAvx512, gate_avx512, kNeedsAvx512}, gemm_avx512.s8_rowsum},
      {{"gemm_s8_rowsum_avx2", Isa::kAvx2, gate_avx2, kNeedsAvx2}, gemm_avx2.s8_rowsum},
#endif
      {{"gemm_s8_rowsum_scalar", Isa::kScalar, gate_always, ""}, gemm_scalar.s8_rowsum},
  };
  static const Table table("gemm_s8_rowsum", rows);
  return table;
}

S8RowSumFn gemm_s8_rowsum(Isa isa, bool used) {
  const auto& fam = gemm_s8_rowsum_family();
  const int row = fam.select(isa);
  if (used) fam.note_use(row);
  return fam.value(row);
}

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

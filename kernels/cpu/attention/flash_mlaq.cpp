// The portable MLA full quant row and the family (flash_mlaq.h).
#include "kernels/cpu/attention/flash_mlaq.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/attention/attn_combine.h"
#include "mlaops/numeric.h"

namespace mlaops::kernels {

int64_t flash_mlaq_scratch_bytes(int64_t M, int64_t D, int64_t DR) {
  const int64_t B = kFlashMlaqBlock;
  // AVX-512 row: packed K dwords and their sums (B * D + 4 * B), packed rope pairs (B * DR * 2),
  // packed V pairs (B / 2 * D * 4), scores, BF16 P pairs, the row rescale and the biased query per
  // row (M * (B * 4 + B * 2 + 4 + D)), plus alignment slack. The portable row uses the scores only.
  const int64_t bytes = B * D + 4 * B + B * DR * 2 + B / 2 * D * 4 + M * (B * 4 + B * 2 + 4 + D) + 12 * 64;
  return (bytes + 63) / 64 * 64;
}

void flash_mlaq_scalar(const MlaqArgs& a, void* scratch) {
  const int64_t M = a.M, D = a.D, DR = a.DR, B = kFlashMlaqBlock;
  const MlaqCache& c = a.kv;
  float* s = static_cast<float*>(scratch);  // [M][B] scores
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t m = 0; m < M; ++m) {
    a.m[m] = ninf;
    a.l[m] = 0.0f;
    std::fill(a.o + m * D, a.o + (m + 1) * D, 0.0f);
  }
  for (int64_t p = a.p0; p < a.p1; p += B) {
    const int64_t nb = std::min(B, a.p1 - p);
    int64_t krow[kFlashMlaqBlock], vrow[kFlashMlaqBlock], rrow[kFlashMlaqBlock];
    for (int64_t j = 0; j < nb; ++j) {
      const int64_t blk = c.block_ids[(p + j) / c.block_size], slot = (p + j) % c.block_size;
      krow[j] = blk * c.k_blk + slot * c.k_slot;
      vrow[j] = blk * c.v_blk + slot * c.v_slot;
      rrow[j] = blk * c.kr_blk + slot * c.kr_slot;
    }
    for (int64_t m = 0; m < M; ++m) {
      const int8_t* q = a.q + m * D;
      const uint16_t* qr = a.qr + m * DR;
      float* sm = s + m * B;
      float mx = ninf;
      bool nan = false;  // a NaN score makes the row NaN (never the empty row; docs/reliability/numerics.md)
      bool valid = false;  // a valid position in this block (its scores may all be -inf)
      for (int64_t j = 0; j < nb; ++j) {
        if (p + j < a.jlo[m] || p + j >= a.jhi[m] || (a.mask.on() && a.mask.masked(m % a.mask_rows, p + j))) {
          sm[j] = ninf;
          continue;
        }
        int32_t dot = 0;  // exact: |sum| <= D * 2^14 < 2^31
        for (int64_t d = 0; d < D; ++d)
          dot += static_cast<int32_t>(q[d]) * static_cast<int32_t>(c.k[krow[j] + (d / 32) * c.k_c1 + d % 32]);
        float rd = 0.0f;
        for (int64_t r = 0; r < DR; ++r)
          rd += bf16_to_float(qr[r]) * bf16_to_float(c.kr[rrow[j] + (r / 16) * c.kr_c1 + r % 16]);
        sm[j] = a.fac[m] * (static_cast<float>(dot) + rd);
        valid = true;
        mx = std::max(mx, sm[j]);
        nan = nan || sm[j] != sm[j];
      }
      if (nan) mx = std::numeric_limits<float>::quiet_NaN();
      if (mx == ninf) {  // no valid position in this block, or all its scores -inf
        if (valid && a.m[m] == ninf) a.l[m] = kAllNegInfL;  // the all -inf state (attn_combine.h)
        continue;
      }
      const float mnew = a.m[m] > mx ? a.m[m] : mx;  // NaN when mx is
      const float alpha = a.m[m] == ninf ? 0.0f : std::exp(a.m[m] - mnew);
      float* o = a.o + m * D;
      if (alpha != 1.0f)
        for (int64_t d = 0; d < D; ++d) o[d] *= alpha;
      float l = a.l[m] * alpha;
      for (int64_t j = 0; j < nb; ++j) {
        if (sm[j] == ninf) continue;
        const float pj = std::exp(sm[j] - mnew);
        l += pj;
        const int8_t* v = c.v + vrow[j];
        for (int64_t d = 0; d < D; ++d) o[d] += pj * static_cast<float>(v[(d / 32) * c.v_c1 + d % 32]);
      }
      a.l[m] = l;
      a.m[m] = mnew;
    }
  }
}

const KernelTable<FlashMlaqFn>& flash_mlaq_family() {
  using Table = KernelTable<FlashMlaqFn>;
  static const Table::Row rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"mlaq_avx512", Isa::kAvx512, gate_avx512_bf16_vnni, kNeedsAvx512Bf16Vnni}, flash_mlaq_avx512},
#endif
      {{"mlaq_scalar", Isa::kScalar, gate_always, ""}, flash_mlaq_scalar},
  };
  static const Table table("mlaq", rows);
  return table;
}

}  // namespace mlaops::kernels

// The AVX-512 MLA full quant row (flash_mlaq.h). Per block of kFlashMlaqBlock positions:
//   * the block's rows are packed from the NZ caches: K as dwords of 4 channels [D / 4][64
//     positions] (16 x 16 dword transposes of each row's chunk pairs) with the per-position sums
//     of K, the rope as BF16 pairs [DR / 2][64] (likewise), V as BF16 position pairs [32][D]
//     (INT8 -> BF16 is exact: the top half of the exact fp32);
//   * scores: the INT8 dot product on vpdpbusd with the query biased to unsigned (q + 128):
//     sum (q + 128) k - 128 sum k, exact in int32; the rope part on vdpbf16ps in fp32;
//     s = fac * (float(dot) + rope); positions outside a row's range are -inf;
//   * online softmax in fp32 per row (l sums the fp32 P); P rounded to BF16 for P V;
//   * o = o * alpha + P V on vdpbf16ps, 6 rows x 64 channels per register tile.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/attention/attn_combine.h"
#include "kernels/cpu/attention/flash_mlaq.h"
#include "kernels/cpu/common/simd_avx512.h"
#include "kernels/cpu/attention/softmax_avx512.h"

namespace mlaops::kernels {
namespace {

using avx512::dpbf16;
using avx512::dpbusd;
using avx512::exp512;
using avx512::transpose16x16;

constexpr int64_t kB = kFlashMlaqBlock;

char* align64(char* p) { return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t{63}); }

// Rows j of 16 positions (null: a position past the block, zeros), 64 bytes each: the 32-byte
// NZ chunks 2q and 2q + 1 (chunk stride c1 bytes).
void load_rows(const uint8_t* const* rows, int64_t q, int64_t c1, __m512i (&r)[16]) {
  for (int j = 0; j < 16; ++j) {
    if (rows[j] == nullptr) {
      r[j] = _mm512_setzero_si512();
      continue;
    }
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[j] + 2 * q * c1));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[j] + (2 * q + 1) * c1));
    r[j] = _mm512_inserti64x4(_mm512_zextsi256_si512(lo), hi, 1);
  }
}

struct Bufs {
  int32_t* kq;    // [D / 4][kB]
  int32_t* ksum;  // [kB]
  int32_t* rq;    // [DR / 2][kB]
  int32_t* vp;    // [kB / 2][D]
  float* s;       // [M][kB]
  int32_t* pp;    // [M][kB / 2]
  float* alpha;   // [M]
  uint8_t* qb;    // [M][D] q + 128
};

constexpr int kH = static_cast<int>(kB / 16);  // zmm of 16 positions per block

// Scores of rows m0 .. m0 + R - 1 for the block at position p (nb positions): the INT8 part in
// int32, converted once to fp32, then the rope part accumulated on top in fp32.
template <int R>
void scores_tile(const MlaqArgs& a, const Bufs& b, int64_t m0, int64_t p, int64_t nb) {
  const int64_t D = a.D, DR = a.DR;
  __m512 acc[R][kH];
  {
    __m512i ai[R][kH];
    for (int r = 0; r < R; ++r)
      for (int h = 0; h < kH; ++h) ai[r][h] = _mm512_setzero_si512();
    for (int64_t u = 0; u < D / 4; ++u) {
      __m512i k[kH];
      for (int h = 0; h < kH; ++h) k[h] = _mm512_load_si512(b.kq + u * kB + 16 * h);
      for (int r = 0; r < R; ++r) {
        int32_t qd;
        std::memcpy(&qd, b.qb + (m0 + r) * D + 4 * u, 4);
        const __m512i qv = _mm512_set1_epi32(qd);
        for (int h = 0; h < kH; ++h) ai[r][h] = dpbusd(ai[r][h], qv, k[h]);
      }
    }
    for (int h = 0; h < kH; ++h) {
      const __m512i ks = _mm512_slli_epi32(_mm512_load_si512(b.ksum + 16 * h), 7);
      for (int r = 0; r < R; ++r) acc[r][h] = _mm512_cvtepi32_ps(_mm512_sub_epi32(ai[r][h], ks));
    }
  }
  for (int64_t t = 0; t < DR / 2; ++t) {
    __m512i k[kH];
    for (int h = 0; h < kH; ++h) k[h] = _mm512_load_si512(b.rq + t * kB + 16 * h);
    for (int r = 0; r < R; ++r) {
      int32_t qd;
      std::memcpy(&qd, a.qr + (m0 + r) * DR + 2 * t, 4);
      const __m512i qv = _mm512_set1_epi32(qd);
      for (int h = 0; h < kH; ++h) acc[r][h] = dpbf16(acc[r][h], k[h], qv);
    }
  }
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int r = 0; r < R; ++r) {
    const int64_t m = m0 + r;
    const int64_t lo = std::max<int64_t>(a.jlo[m] - p, 0), hi = std::min<int64_t>(a.jhi[m] - p, nb);
    const __m512 fac = _mm512_set1_ps(a.fac[m]);
    for (int h = 0; h < kH; ++h) {
      const __m512 s = _mm512_mul_ps(fac, acc[r][h]);
      const __m512i j = _mm512_add_epi32(lane, _mm512_set1_epi32(16 * h));
      __mmask16 valid = 0;
      if (lo < hi)
        valid = _mm512_cmpge_epi32_mask(j, _mm512_set1_epi32(static_cast<int32_t>(lo))) &
                _mm512_cmplt_epi32_mask(j, _mm512_set1_epi32(static_cast<int32_t>(hi)));
      const int64_t t0 = p + 16 * h - a.mask.j0;  // tree mask column of lane 0, from its first column
      if (a.mask.on() && valid != 0 && t0 + 15 >= 0) {
        const int c0 = std::max<int>(0, static_cast<int>(-t0));  // the first lane the mask covers
        const uint8_t* mrow = a.mask.at(m % a.mask_rows, p + 16 * h + c0);
        for (int c = c0; c < 16; ++c)
          if ((valid >> c & 1) && mrow[(c - c0) * a.mask.j_stride] != 0)
            valid = static_cast<__mmask16>(valid & ~(1u << c));
      }
      _mm512_store_ps(b.s + m * kB + 16 * h, _mm512_mask_mov_ps(ninf, valid, s));
    }
  }
}

// Whether row m has a valid position among [p, p + nb) (the rule of scores_tile).
bool row_has_valid(const MlaqArgs& a, int64_t m, int64_t p, int64_t nb) {
  const int64_t lo = std::max<int64_t>(a.jlo[m], p), hi = std::min<int64_t>(a.jhi[m], p + nb);
  for (int64_t j = lo; j < hi; ++j) {
    if (!a.mask.on() || !a.mask.masked(m % a.mask_rows, j)) return true;
  }
  return false;
}

// o[m] = o[m] * alpha[m] + P[m] V for rows m0 .. m0 + R - 1, channels [c0, c0 + 64), npair pairs.
template <int R>
void pv_tile(const MlaqArgs& a, const Bufs& b, int64_t m0, int64_t c0, int64_t npair) {
  const int64_t D = a.D;
  __m512 acc[R][4];
  for (int r = 0; r < R; ++r) {
    const __m512 al = _mm512_set1_ps(b.alpha[m0 + r]);
    for (int c = 0; c < 4; ++c) acc[r][c] = _mm512_mul_ps(_mm512_loadu_ps(a.o + (m0 + r) * D + c0 + 16 * c), al);
  }
  for (int64_t t = 0; t < npair; ++t) {
    __m512i v[4];
    for (int c = 0; c < 4; ++c) v[c] = _mm512_load_si512(b.vp + t * D + c0 + 16 * c);
    for (int r = 0; r < R; ++r) {
      const __m512i pv = _mm512_set1_epi32(b.pp[(m0 + r) * (kB / 2) + t]);
      for (int c = 0; c < 4; ++c) acc[r][c] = dpbf16(acc[r][c], v[c], pv);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < 4; ++c) _mm512_storeu_ps(a.o + (m0 + r) * D + c0 + 16 * c, acc[r][c]);
}

}  // namespace

void flash_mlaq_avx512(const MlaqArgs& a, void* scratch) {
  const int64_t M = a.M, D = a.D, DR = a.DR;
  const MlaqCache& c = a.kv;
  char* w = align64(static_cast<char*>(scratch));
  auto take = [&w](int64_t bytes) {
    char* r = w;
    w = align64(w + bytes);
    return r;
  };
  Bufs b;
  b.kq = reinterpret_cast<int32_t*>(take(kB * D));
  b.ksum = reinterpret_cast<int32_t*>(take(kB * 4));
  b.rq = reinterpret_cast<int32_t*>(take(kB * DR * 2));
  b.vp = reinterpret_cast<int32_t*>(take(kB / 2 * D * 4));
  b.s = reinterpret_cast<float*>(take(M * kB * 4));
  b.pp = reinterpret_cast<int32_t*>(take(M * kB * 2));
  b.alpha = reinterpret_cast<float*>(take(M * 4));
  b.qb = reinterpret_cast<uint8_t*>(take(M * D));
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t m = 0; m < M; ++m) {
    a.m[m] = ninf;
    a.l[m] = 0.0f;
    for (int64_t d = 0; d < D; ++d) {
      a.o[m * D + d] = 0.0f;
      b.qb[m * D + d] = static_cast<uint8_t>(static_cast<int32_t>(a.q[m * D + d]) + 128);
    }
  }
  const __m512i ones = _mm512_set1_epi8(1);
  const __m512i hi_mask = _mm512_set1_epi32(static_cast<int32_t>(0xFFFF0000u));
  for (int64_t p = a.p0; p < a.p1; p += kB) {
    const int64_t nb = std::min(kB, a.p1 - p);
    // 1. the block's rows (positions >= nb: none, read as zeros)
    const uint8_t* krow[kB];
    const uint8_t* vrow[kB];
    const uint8_t* rrow[kB];
    for (int64_t j = 0; j < kB; ++j) {
      krow[j] = vrow[j] = rrow[j] = nullptr;
      if (j >= nb) continue;
      const int64_t blk = c.block_ids[(p + j) / c.block_size], slot = (p + j) % c.block_size;
      krow[j] = reinterpret_cast<const uint8_t*>(c.k + blk * c.k_blk + slot * c.k_slot);
      vrow[j] = reinterpret_cast<const uint8_t*>(c.v + blk * c.v_blk + slot * c.v_slot);
      rrow[j] = reinterpret_cast<const uint8_t*>(c.kr + blk * c.kr_blk + slot * c.kr_slot);
    }
    // 2. pack K dwords (and their sums) and rope pairs (16 x 16 dword transposes of the rows'
    //    chunk pairs), V position pairs
    for (int h = 0; h < kH; ++h) {
      __m512i r[16];
      __m512i ks = _mm512_setzero_si512();
      for (int64_t q = 0; q < D / 64; ++q) {
        load_rows(krow + 16 * h, q, c.k_c1, r);
        transpose16x16(r);
        for (int x = 0; x < 16; ++x) {
          _mm512_store_si512(b.kq + (16 * q + x) * kB + 16 * h, r[x]);
          ks = dpbusd(ks, ones, r[x]);
        }
      }
      _mm512_store_si512(b.ksum + 16 * h, ks);
      for (int64_t q = 0; q < DR / 32; ++q) {
        load_rows(rrow + 16 * h, q, 2 * c.kr_c1, r);
        transpose16x16(r);
        for (int x = 0; x < 16; ++x) _mm512_store_si512(b.rq + (16 * q + x) * kB + 16 * h, r[x]);
      }
    }
    const int64_t npair = (nb + 1) / 2;
    for (int64_t t = 0; t < npair; ++t) {
      const uint8_t* v0 = vrow[2 * t];
      const uint8_t* v1 = vrow[2 * t + 1];
      for (int64_t d = 0; d < D; d += 16) {
        const int64_t off = (d / 32) * c.v_c1 + d % 32;
        const __m512i x0 = _mm512_castps_si512(_mm512_cvtepi32_ps(
            _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v0 + off)))));
        const __m512i x1 =
            v1 == nullptr ? _mm512_setzero_si512()
                          : _mm512_castps_si512(_mm512_cvtepi32_ps(
                                _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v1 + off)))));
        _mm512_store_si512(b.vp + t * D + d, _mm512_or_si512(_mm512_srli_epi32(x0, 16), _mm512_and_si512(x1, hi_mask)));
      }
    }
    // 3. scores
    int64_t m = 0;
    for (; m + 4 <= M; m += 4) scores_tile<4>(a, b, m, p, nb);
    for (; m < M; ++m) scores_tile<1>(a, b, m, p, nb);
    // 4. online softmax, P to BF16 pairs
    for (m = 0; m < M; ++m) {
      const __m512 vninf = _mm512_set1_ps(ninf);
      __m512 sv[kH];
      __mmask16 vm[kH];
      __mmask16 any = 0, nan = 0;
      __m512 mxv = vninf;
      for (int h = 0; h < kH; ++h) {
        sv[h] = _mm512_load_ps(b.s + m * kB + 16 * h);
        vm[h] = _mm512_cmp_ps_mask(sv[h], vninf, _CMP_NEQ_UQ);  // a NaN score is a valid position
        nan = static_cast<__mmask16>(nan | _mm512_cmp_ps_mask(sv[h], sv[h], _CMP_UNORD_Q));
        any = static_cast<__mmask16>(any | vm[h]);
        mxv = _mm512_max_ps(mxv, sv[h]);
      }
      int32_t* pp = b.pp + m * (kB / 2);
      if (any == 0) {
        for (int h = 0; h < kH / 2; ++h) _mm512_store_si512(pp + 16 * h, _mm512_setzero_si512());
        b.alpha[m] = 1.0f;
        // valid positions, all -inf, nothing finite before: the all -inf state (attn_combine.h)
        if (a.m[m] == ninf && a.l[m] == 0.0f && row_has_valid(a, m, p, nb)) a.l[m] = kAllNegInfL;
        continue;
      }
      // vmaxps drops a NaN of its first operand: a NaN score makes the row NaN (never the empty row)
      const float mx = nan != 0 ? std::numeric_limits<float>::quiet_NaN() : _mm512_reduce_max_ps(mxv);
      const float mnew = a.m[m] > mx ? a.m[m] : mx;  // NaN when mx is
      const float alpha = a.m[m] == ninf ? 0.0f : std::exp(a.m[m] - mnew);
      const __m512 mn = _mm512_set1_ps(mnew);
      __m512 sum = _mm512_setzero_ps();
      for (int h = 0; h < kH; h += 2) {
        const __m512 p0 = _mm512_maskz_mov_ps(vm[h], exp512(_mm512_sub_ps(sv[h], mn)));
        const __m512 p1 = _mm512_maskz_mov_ps(vm[h + 1], exp512(_mm512_sub_ps(sv[h + 1], mn)));
        _mm512_store_si512(pp + 8 * h, (__m512i)_mm512_cvtne2ps_pbh(p1, p0));  // positions 16h.. low, 16h+16.. high
        sum = _mm512_add_ps(sum, _mm512_add_ps(p0, p1));
      }
      a.l[m] = a.l[m] * alpha + _mm512_reduce_add_ps(sum);
      a.m[m] = mnew;
      b.alpha[m] = alpha;
    }
    // 5. P V
    for (int64_t c0 = 0; c0 < D; c0 += 64) {
      for (m = 0; m + 6 <= M; m += 6) pv_tile<6>(a, b, m, c0, npair);
      for (; m < M; ++m) pv_tile<1>(a, b, m, c0, npair);
    }
  }
}

}  // namespace mlaops::kernels

// AVX-512 BF16 lane-major flash attention: the KV tiles of one work item (layouts and math:
// attn_lanes.h). Per tile of up to kTile positions:
//   1. valid bits of each query row (band by a bit range, explicit mask by 64-byte loads); a tile
//      where no row sees any position is skipped, a tile where every row sees every position
//      runs without masks
//   2. S^T = K . QT: vdpbf16ps with the key's channel pair broadcast straight from the cache row
//      (bf16 rows, channels contiguous, rows dense) or from rows packed into KB (fp16 hi/lo
//      split, NZ chunks, odd channel counts, rows far apart); register tile NK keys x MV row
//      vectors; the rows of the next key block are prefetched meanwhile (rows read in place:
//      one line per channel pair step inside the tile, spread over its arithmetic; packed rows:
//      before it) and, for dense rows, those of the next tile
//   4. during the last group's S^T calls: VB, V rows 2kp and 2kp+1 interleaved into bf16 pairs
//      (vpermt2w) while they are in cache (MLA: V is the K row just read)
//   3. online softmax per lane (scale, mask, max, alpha, exp, sum), P rounded to bf16 pairs
//   5. O^T = O^T * alpha + VB . PT: register tile ND channels x MV row vectors
// After the last tile O^T is transposed into the rows O [M][dvp] (16 x 16 blocks). Key rows far
// apart (many heads per slot; geo.copy_rows > 0) are first copied, 512 positions at a time, into
// dense rows that the tiles read instead; run_group_avx512 runs up to kMaxGroupItems items of
// adjacent heads chunk by chunk, copying their rows together (one contiguous run per position).
// The register tiles, the per-lane softmax and the final transpose are attn_lanes_tiles_avx512.cpp's;
// this file holds the rows, the masks, the V pairs and the driver.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/cpu/attention/attn_combine.h"
#include "kernels/cpu/attention/attn_variant.h"
#include "kernels/cpu/attention/attn_lanes.h"
#include "kernels/cpu/attention/attn_lanes_tiles_avx512.h"
#include "kernels/cpu/common/simd_avx512.h"
#include "kernels/cpu/attention/softmax_avx512.h"

namespace mlaops::kernels::lanes {
namespace {

using namespace avx512;

// ------------------------------------------------------------------ rows of the KV cache

// Row pointers of positions [p0, p0 + n) (one block lookup per cache block).
void fill_rows(const FlashKv& kv, int64_t p0, int64_t n, const uint16_t** out) {
  int64_t off[kTile];
  kv.rows(p0, n, off);
  for (int64_t i = 0; i < n; ++i) out[i] = kv.base + off[i];
}

// Channels [0, D) of n rows towards L2 (prefetcht1; prefetcht0 measured slower here).
void prefetch_rows(const FlashKv& kv, const uint16_t* const* rows, int64_t n, int64_t D) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d0 = 0; d0 < D; d0 += kv.c0) {
      const char* src = reinterpret_cast<const char*>(rows[i] + (d0 / kv.c0) * kv.c0_stride);
      const int64_t bytes = std::min(kv.c0, D - d0) * 2;
      for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(src + b, 0, 2);
    }
}

// Rows a multiple of 4 KiB apart (one head of a cache with many heads per slot) all map to the
// same two L2 sets per line offset: at most ~32 of them stay in L2, so they are prefetched one
// key block ahead only, never a whole tile ahead (measured on Zen 5: whole-tile prefetches of
// such rows are evicted before use and only cost issue slots).
inline bool far_prefetch(const FlashKv& kv) { return (kv.slot_stride * 2) % 4096 != 0; }

// Channels [0, D) of one row as bf16 into hi[0, D); FP16: the exact split x = hi + lo, lo into
// lo[0, D).
void load_row(const FlashKv& kv, const uint16_t* row, int64_t D, bool fp16, uint16_t* hi, uint16_t* lo) {
  for (int64_t d0 = 0; d0 < D; d0 += kv.c0) {
    const uint16_t* src = row + (d0 / kv.c0) * kv.c0_stride;
    const int64_t n = std::min(kv.c0, D - d0);
    if (!fp16) {
      for (int64_t d = 0; d < n; d += 32) {
        const __mmask32 m = mask32(n - d);
        _mm512_mask_storeu_epi16(hi + d0 + d, m, _mm512_maskz_loadu_epi16(m, src + d));
      }
      continue;
    }
    for (int64_t d = 0; d < n; d += 16) {
      const __mmask16 m = mask16(n - d);
      const __m512 x = cvtph(_mm256_maskz_loadu_epi16(m, src + d));
      const __m512i h = bf16_bits(x);
      const __m512 hf = _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));  // lo 0 where hi is +-inf
      const __mmask16 fin = _mm512_cmp_ps_mask(_mm512_abs_ps(hf), _mm512_set1_ps(__builtin_huge_valf()), _CMP_NEQ_UQ);
      const __m512i l = bf16_bits(_mm512_maskz_sub_ps(fin, x, hf));
      _mm256_mask_storeu_epi16(hi + d0 + d, m, _mm512_cvtepi32_epi16(h));
      _mm256_mask_storeu_epi16(lo + d0 + d, m, _mm512_cvtepi32_epi16(l));
    }
  }
}

// Positions [p0, p0 + n) of `src` (channels contiguous) into the dense rows `dst` [n][D]; the
// source rows are prefetched kCopyAhead rows ahead (a gather of rows far apart: the loop issues
// nothing else, so many misses are in flight).
constexpr int64_t kCopyAhead = 16;
constexpr int64_t kMaxPfRuns = 64;  // NZ chunk runs prefetched inside an S^T tile (D + D_R <= 1024)
void copy_rows(const FlashKv& src, int64_t p0, int64_t n, int64_t D, uint16_t* dst) {
  const uint16_t* rows[kTile];
  for (int64_t q0 = 0; q0 < n; q0 += kTile) {
    const int64_t m = std::min(kTile, n - q0);
    fill_rows(src, p0 + q0, m, rows);
    prefetch_rows(src, rows, std::min(m, kCopyAhead), D);
    for (int64_t r = 0; r < m; ++r) {
      if (r + kCopyAhead < m) prefetch_rows(src, rows + r + kCopyAhead, 1, D);
      uint16_t* out = dst + (q0 + r) * D;
      for (int64_t d = 0; d < D; d += 32) {
        const __mmask32 k = mask32(D - d);
        _mm512_mask_storeu_epi16(out + d, k, _mm512_maskz_loadu_epi16(k, rows[r] + d));
      }
    }
  }
}

// Positions [p0, p0 + n) of `items` adjacent heads (head i's row = head 0's row + i * D, channels
// contiguous) into each head's dense rows dst[i] [n][D]: every position is one contiguous run of
// items * D channels, so the gather reads whole runs of the row instead of one head's slice.
void copy_rows_group(const FlashKv& src0, int64_t items, int64_t p0, int64_t n, int64_t D, uint16_t* const* dst) {
  const uint16_t* rows[kTile];
  const int64_t run_bytes = items * D * 2;
  for (int64_t q0 = 0; q0 < n; q0 += kTile) {
    const int64_t m = std::min(kTile, n - q0);
    fill_rows(src0, p0 + q0, m, rows);
    for (int64_t r = 0; r < std::min(m, kCopyAhead); ++r) prefetch_range_l2(rows[r], run_bytes);
    for (int64_t r = 0; r < m; ++r) {
      if (r + kCopyAhead < m) prefetch_range_l2(rows[r + kCopyAhead], run_bytes);
      for (int64_t i = 0; i < items; ++i) {
        const uint16_t* src = rows[r] + i * D;
        uint16_t* out = dst[i] + (q0 + r) * D;
        for (int64_t d = 0; d < D; d += 32) {
          const __mmask32 k = mask32(D - d);
          _mm512_mask_storeu_epi16(out + d, k, _mm512_maskz_loadu_epi16(k, src + d));
        }
      }
    }
  }
}

// ------------------------------------------------------------------ masks

// Bits of positions [base, base + 64) inside [a, b] (relative to base).
inline uint64_t range_word(int64_t a, int64_t b, int64_t base) {
  const int64_t lo = std::max(a, base), hi = std::min(b, base + 63);
  if (lo > hi) return 0;
  const int64_t n = hi - lo + 1;
  return (n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1) << (lo - base);
}

struct TileRows {
  bool any = false, full = true;
};

// bits[2r + w]: bit c of word w = position j0 + 64w + c valid for row r (c < nb).
TileRows tile_rows(const FlashItem& it, int64_t j0, int64_t nb, uint64_t* bits) {
  TileRows t;
  const uint64_t full0 = range_word(0, nb - 1, 0), full1 = range_word(0, nb - 1, 64);
  const AttnMask mask = attn_mask(it);
  for (int64_t r = 0; r < it.R; ++r) {
    const int64_t i = it.row0 + r;
    const AttnSpan band = attn_band(it, i, j0, nb);
    uint64_t w[2] = {range_word(band.begin, band.end - 1, 0), range_word(band.begin, band.end - 1, 64)};
    if (mask.on() && (w[0] | w[1]) != 0) {
      for (int64_t h = 0; h < 2; ++h) {
        // the positions of word h the mask covers (j >= its first column) start at bit c0
        const int64_t c0 = std::max<int64_t>(mask.j0 - j0 - 64 * h, 0);
        if (c0 >= 64) continue;
        const uint64_t cov = w[h] >> c0;
        if (cov == 0) continue;
        const uint8_t* mrow = mask.at(i, j0 + 64 * h + c0);
        uint64_t ok = cov;
        if (mask.j_stride == 1) {
          const __m512i x = _mm512_maskz_loadu_epi8(cov, mrow);  // only the in-range bytes
          ok &= _mm512_testn_epi8_mask(x, x);
        } else {
          for (int64_t c = 0; c < 64 - c0; ++c)
            if ((cov >> c & 1) && mrow[c * mask.j_stride] != 0) ok &= ~(uint64_t{1} << c);
        }
        w[h] &= ~((cov & ~ok) << c0);
      }
    }
    bits[2 * r] = w[0];
    bits[2 * r + 1] = w[1];
    t.any = t.any || (w[0] | w[1]) != 0;
    t.full = t.full && w[0] == full0 && w[1] == full1;
  }
  return t;
}

// LM[c * nv + v]: lanes of row vector v valid at position c (rows m >= M never). Per row vector,
// the 16 lanes' two bit words (row m % R) sit in four zmm of qwords and one vptestmq per half
// tests position c for 8 lanes at a time (a bit loop over rows and positions cost as much as the
// tile's S^T product for 128 rows).
void lane_masks(int64_t M, int64_t R, int64_t nv, int64_t nb, const uint64_t* bits, uint16_t* LM) {
  if (R == 1) {
    for (int64_t c = 0; c < nb; ++c) {
      const bool on = bits[c >> 6] >> (c & 63) & 1;
      for (int64_t v = 0; v < nv; ++v) LM[c * nv + v] = on ? mask16(M - 16 * v) : 0;
    }
    return;
  }
  for (int64_t v = 0; v < nv; ++v) {
    alignas(64) uint64_t w[2][16];  // word h of lane i's row (0 past M)
    for (int64_t i = 0; i < 16; ++i) {
      const int64_t m = 16 * v + i;
      w[0][i] = m < M ? bits[2 * (m % R)] : 0;
      w[1][i] = m < M ? bits[2 * (m % R) + 1] : 0;
    }
    for (int64_t h = 0; h < 2; ++h) {
      const __m512i lo = _mm512_load_si512(w[h]), hi = _mm512_load_si512(w[h] + 8);
      for (int64_t c = 64 * h; c < std::min(nb, 64 * h + 64); ++c) {
        const __m512i bit = _mm512_set1_epi64(static_cast<long long>(uint64_t{1} << (c & 63)));
        LM[c * nv + v] = static_cast<uint16_t>(_mm512_test_epi64_mask(lo, bit) |
                                               (static_cast<unsigned>(_mm512_test_epi64_mask(hi, bit)) << 8));
      }
    }
  }
}

// 16 bias values of one row (operand dtype) as fp32; positions past n read as 0.
inline __m512 load_bias16(const uint16_t* p, int64_t n, bool fp16) {
  const __m256i v = _mm256_maskz_loadu_epi16(mask16(n), p);
  if (fp16) return cvtph(v);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}

// ------------------------------------------------------------------ VB: V rows in pairs

// dst[d] = (a[d], b[d]) for d < dvp; a, b read below `n` (b null: zeros).
inline void interleave(const uint16_t* a, const uint16_t* b, int64_t n, int64_t dvp, uint32_t* dst, __m512i ilo,
                       __m512i ihi) {
  for (int64_t d = 0; d < dvp; d += 32) {
    const __mmask32 m = mask32(n - d);
    const __m512i x = _mm512_maskz_loadu_epi16(m, a + d);
    const __m512i y = b != nullptr ? _mm512_maskz_loadu_epi16(m, b + d) : _mm512_setzero_si512();
    _mm512_store_si512(dst + d, _mm512_permutex2var_epi16(x, ilo, y));
    if (d + 16 < dvp) _mm512_store_si512(dst + d + 16, _mm512_permutex2var_epi16(x, ihi, y));
  }
}

// VB rows [sp * kpn][dvp] of pairs [kp0, kp1): segment 0 = V (fp16: hi), segment 1 = lo,
// segment 2 = hi.
void pack_v(const FlashItem& it, const uint16_t* const* vrows, int64_t nb, int64_t kpn, int64_t kp0, int64_t kp1,
            int64_t dvp, bool direct, uint32_t* VB, uint16_t* VT) {
  alignas(64) static constexpr uint16_t kLo[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                                   8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static constexpr uint16_t kHi[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
                                                   24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i ilo = _mm512_load_si512(kLo), ihi = _mm512_load_si512(kHi);
  const int64_t VD = it.VD;
  for (int64_t kp = kp0; kp < kp1; ++kp) {
    const int64_t c0 = 2 * kp, c1 = c0 + 1;
    uint32_t* dst = VB + kp * dvp;
    if (direct) {
      interleave(vrows[c0], c1 < nb ? vrows[c1] : nullptr, VD, dvp, dst, ilo, ihi);
      continue;
    }
    uint16_t *hi0 = VT, *lo0 = VT + dvp, *hi1 = VT + 2 * dvp, *lo1 = VT + 3 * dvp;
    std::memset(VT, 0, static_cast<size_t>(4 * dvp) * 2);
    load_row(it.v, vrows[c0], VD, it.fp16, hi0, lo0);
    if (c1 < nb) load_row(it.v, vrows[c1], VD, it.fp16, hi1, lo1);
    interleave(hi0, hi1, dvp, dvp, dst, ilo, ihi);
    if (it.fp16) {
      interleave(lo0, lo1, dvp, dvp, VB + (kpn + kp) * dvp, ilo, ihi);
      copy_hi_for_lo(reinterpret_cast<const uint16_t*>(dst), reinterpret_cast<uint16_t*>(VB + (2 * kpn + kp) * dvp),
                     2 * dvp);  // meets P's lo
    }
  }
}

// BT[c][m] = bias of row m (g = m / R, i = row0 + m % R) at position j0 + c, c < nb; rows m >= M
// zero. 16 x 16 blocks: 16 rows' contiguous positions loaded, transposed, stored as lanes.
void bias_tile(const FlashItem& it, int64_t j0, int64_t nb, int64_t mp, float* BT) {
  const int64_t M = it.G * it.R;
  for (int64_t m0 = 0; m0 < mp; m0 += 16)
    for (int64_t c0 = 0; c0 < nb; c0 += 16) {
      __m512i r[16];
      for (int64_t i = 0; i < 16; ++i) {
        const int64_t m = m0 + i;
        if (m >= M) {
          r[i] = _mm512_setzero_si512();
          continue;
        }
        const uint16_t* row = attn_bias_row(it, m / it.R, it.row0 + m % it.R) + j0;
        r[i] = _mm512_castps_si512(load_bias16(row + c0, nb - c0, it.fp16));
      }
      transpose16x16(r);
      for (int64_t j = 0; j < 16 && c0 + j < nb; ++j) _mm512_store_si512(BT + (c0 + j) * mp + m0, r[j]);
    }
}

// One item's pass over its KV tiles: the running state (OT, Mx, L) and the tile temporaries live in
// the item's scratch `base` (QT written by the caller). tile() runs keys [j0, j0 + nb) read through
// `w`, the item's own cache or a dense copy whose position 0 is pos0, and prefetches the next
// tile's rows below range_end.
class ItemTiles {
 public:
  void init(const FlashItem& item, const Geo& g, char* b, const FlashItem& rows) {
    it_ = &item;
    geo_ = &g;
    base_ = b;
    w_ = rows;
    bits_ = reinterpret_cast<uint64_t*>(base_ + geo_->off_bits);
    const int64_t mp = (it_->G * it_->R + 15) / 16 * 16;
    float* OT = reinterpret_cast<float*>(base_ + geo_->off_ot);
    float* Mx = reinterpret_cast<float*>(base_ + geo_->off_m);
    float* L = reinterpret_cast<float*>(base_ + geo_->off_l);
    std::memset(OT, 0, static_cast<size_t>(geo_->dvp * mp) * 4);
    for (int64_t m = 0; m < mp; ++m) {
      Mx[m] = -std::numeric_limits<float>::infinity();
      L[m] = 0.0f;
    }
  }
  uint64_t* bits() const { return bits_; }
  void tile(int64_t j0, int64_t nb, const TileRows& tr, int64_t pos0, int64_t range_end);
  void finish() const {
    const int64_t M = it_->G * it_->R, mp = (M + 15) / 16 * 16;
    transpose_out(reinterpret_cast<const float*>(base_ + geo_->off_ot), mp, M, geo_->dvp,
                  reinterpret_cast<float*>(base_ + geo_->off_o));
  }

 private:
  const FlashItem* it_ = nullptr;
  const Geo* geo_ = nullptr;
  char* base_ = nullptr;
  FlashItem w_;
  uint64_t* bits_ = nullptr;
};

// Rows of D contiguous channels that lie next to each other in memory.
inline bool dense(const FlashKv& kv, int64_t D) { return kv.c0 >= D && kv.slot_stride <= 2 * D; }

// K / rope-K / V rows far apart but channels contiguous (bf16): the tiles read dense copies.
bool wants_copy(const FlashItem& it, const Geo& geo) {
  return geo.copy_rows > 0 && !it.fp16 && it.k.c0 >= it.QD && (it.DR == 0 || it.kr.c0 >= it.DR) &&
         it.v.c0 >= it.VD && !(dense(it.k, it.QD) && (it.DR == 0 || dense(it.kr, it.DR)));
}

// The dense copy rows in an item's scratch: [copy_rows][QD] K, [copy_rows][DR] rope K,
// [copy_rows][VD] V.
struct CopyRows {
  uint16_t *k, *kr, *v;
};
CopyRows copy_rows_of(const FlashItem& it, const Geo& geo, char* base) {
  uint16_t* k = reinterpret_cast<uint16_t*>(base + geo.off_copy);
  return {k, k + geo.copy_rows * it.QD, k + geo.copy_rows * (it.QD + it.DR)};
}

// `it` reading its dense copy.
FlashItem copy_view(const FlashItem& it, const CopyRows& c) {
  FlashItem w = it;
  w.k = FlashKv{c.k, nullptr, 1, 0, it.QD, it.QD, 0};
  w.kr = FlashKv{c.kr, nullptr, 1, 0, it.DR, it.DR, 0};
  w.v = FlashKv{c.v, nullptr, 1, 0, it.VD, it.VD, 0};
  return w;
}

void ItemTiles::tile(int64_t j0, int64_t nb, const TileRows& tr, int64_t pos0, int64_t range_end) {
  const FlashItem& it = *it_;
  const Geo& geo = *geo_;
  const FlashItem& w = w_;
  char* base = base_;
  uint64_t* bits = bits_;
  const int64_t M = it.G * it.R, nv = (M + 15) / 16, mp = nv * 16, ng = group_count(nv);
  const int64_t QD = it.QD, DR = it.DR, sp = geo.sp, kseg = geo.kseg, kq = geo.kq, kpq = geo.kpq, dvp = geo.dvp;
  const uint32_t* QT = reinterpret_cast<const uint32_t*>(base + geo.off_qt);
  uint16_t* KB = reinterpret_cast<uint16_t*>(base + geo.off_kb);
  float* ST = reinterpret_cast<float*>(base + geo.off_st);
  uint32_t* PT = reinterpret_cast<uint32_t*>(base + geo.off_pt);
  uint32_t* VB = reinterpret_cast<uint32_t*>(base + geo.off_vb);
  float* OT = reinterpret_cast<float*>(base + geo.off_ot);
  float* Mx = reinterpret_cast<float*>(base + geo.off_m);
  float* L = reinterpret_cast<float*>(base + geo.off_l);
  float* Alpha = reinterpret_cast<float*>(base + geo.off_alpha);
  uint16_t* LM = reinterpret_cast<uint16_t*>(base + geo.off_lm);
  uint16_t* VT = reinterpret_cast<uint16_t*>(base + geo.off_vt);
  // K channel pairs straight from the cache rows: bf16, channels contiguous, even counts, and
  // rows dense in memory. Rows far apart (e.g. one head of a BSH cache with many heads: a
  // multiple of 4 KiB between rows) all fall into the same few L1/L2 sets, so they are copied
  // into KB, one key block at a time just before its S^T call, and read from there by every
  // row-vector group.
  const bool k_direct =
      !it.fp16 && QD % 2 == 0 && dense(w.k, QD) && (DR == 0 || (DR % 2 == 0 && dense(w.kr, DR)));
  const bool v_direct = !it.fp16 && w.v.c0 >= it.VD;
  const bool v_is_k = w.v.base == w.k.base && w.v.slot_stride == w.k.slot_stride && w.v.blk_stride == w.k.blk_stride;
  const int64_t kpn = (nb + 1) / 2;
  const uint16_t* krows[kTile];
  const uint16_t* rrows[kTile];
  const uint16_t* vrows[kTile];
  const uint16_t* kbrows[kTile];
  const uint16_t* nk_rows[kTile];
  const uint16_t* nr_rows[kTile];
  const uint16_t* nv_rows[kTile];
  for (int64_t c = 0; c < kTile; ++c) kbrows[c] = KB + c * kq;
  fill_rows(w.k, j0 - pos0, nb, krows);
  if (DR > 0) fill_rows(w.kr, j0 - pos0, nb, rrows);
  fill_rows(w.v, j0 - pos0, nb, vrows);
  // The next tile's rows (dense layouts): prefetched a few keys at a time during the S^T calls
  // below (a burst of a whole tile's prefetches at once stalls on the miss queues).
  const int64_t nn = std::min(kTile, range_end - j0 - nb);
  const bool far_k = nn > 0 && far_prefetch(w.k) && (DR == 0 || far_prefetch(w.kr));
  const bool far_v = nn > 0 && !v_is_k && far_prefetch(w.v);
  if (far_k) {
    fill_rows(w.k, j0 + nb - pos0, nn, nk_rows);
    if (DR > 0) fill_rows(w.kr, j0 + nb - pos0, nn, nr_rows);
  }
  if (far_v) fill_rows(w.v, j0 + nb - pos0, nn, nv_rows);
  auto prefetch_next = [&](int64_t c0, int64_t n) {
    n = std::min(n, nn - c0);
    if (n <= 0) return;
    if (far_k) {
      prefetch_rows(w.k, nk_rows + c0, n, QD);
      if (DR > 0) prefetch_rows(w.kr, nr_rows + c0, n, DR);
    }
    if (far_v) prefetch_rows(w.v, nv_rows + c0, n, it.VD);
  };
  // NZ K (and rope K) rows: the chunk runs of n keys that lie in one cache block (rows
  // slot_stride apart, both tensors with the same slot bytes), pointers into out; -1 otherwise.
  const uint16_t* pf_runs[kMaxPfRuns];
  auto nz_runs = [&](const uint16_t* const* kr0, const uint16_t* const* rr0, int64_t n, const uint16_t** out) {
    const FlashKv& k = w.k;
    const FlashKv& r = w.kr;
    const int64_t nk = (QD + k.c0 - 1) / k.c0, nr = DR > 0 ? (DR + r.c0 - 1) / r.c0 : 0;
    if (k.c0 >= QD || nk + nr > kMaxPfRuns || kr0[n - 1] - kr0[0] != (n - 1) * k.slot_stride) return int64_t{-1};
    if (DR > 0 && (r.c0 >= DR || r.slot_stride != k.slot_stride || rr0[n - 1] - rr0[0] != (n - 1) * r.slot_stride))
      return int64_t{-1};
    for (int64_t c = 0; c < nk; ++c) out[c] = kr0[0] + c * k.c0_stride;
    for (int64_t c = 0; c < nr; ++c) out[nk + c] = rr0[0] + c * r.c0_stride;
    return nk + nr;
  };
  // 2. S^T [nb][mp]
  const uint16_t* const* r0 = krows;
  int64_t kl0 = QD / 2, kl1 = DR / 2;
  auto pack_k = [&](int64_t c0, int64_t c1) {  // KB rows of keys [c0, c1)
    // BF16 NZ rows of keys in one cache block: chunk by chunk, each chunk's pieces of the keys one
    // contiguous run (key by key, a key's 36 pieces lie a chunk stride apart, often a multiple of
    // 4 KiB: one L1 set)
    const uint16_t* runs[kMaxPfRuns];
    const int64_t nr = !it.fp16 && QD % w.k.c0 == 0 && (DR == 0 || DR % w.kr.c0 == 0) && w.k.c0 == 16 &&
                               (DR == 0 || w.kr.c0 == 16)
                           ? nz_runs(krows + c0, rrows + c0, c1 - c0, runs)
                           : -1;
    if (nr > 0) {
      const int64_t ss = w.k.slot_stride;
      for (int64_t c = c0; c < c1; ++c)
        std::memset(KB + c * kq + QD + DR, 0, static_cast<size_t>(kq - QD - DR) * 2);
      for (int64_t r = 0; r < nr; ++r) {  // run r = channels [16r, 16r + 16) of [K | rope K]
        const uint16_t* src = runs[r];
        uint16_t* dst = KB + c0 * kq + 16 * r;
        for (int64_t c = c0; c < c1; ++c, src += ss, dst += kq)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
      }
      return;
    }
    for (int64_t c = c0; c < c1; ++c) {
      uint16_t* row = KB + c * kq;
      std::memset(row, 0, static_cast<size_t>(kq) * 2);
      load_row(w.k, krows[c], QD, it.fp16, row, row + kseg);
      if (DR > 0) load_row(w.kr, rrows[c], DR, it.fp16, row + QD, row + kseg + QD);
      if (it.fp16) {  // [hi | lo | hi | lo]
        copy_hi_for_lo(row, row + 2 * kseg, kseg);
        std::memcpy(row + 3 * kseg, row + kseg, static_cast<size_t>(kseg) * 2);
      }
    }
  };
  // V = K (MLA's latent) packed into KB as BF16: the V pairs are interleaved from the packed rows
  // (contiguous channels) instead of gathered again from the cache
  const bool v_from_kb = v_is_k && !k_direct && !it.fp16 && it.VD <= QD;
  if (!k_direct) {
    r0 = kbrows;
    kl0 = kpq;
    kl1 = 0;
  }
  for (int64_t g = 0; g < ng; ++g) {
    int64_t v0, mv;
    group_of(nv, g, &v0, &mv);
    const int64_t blk = kKeys[mv - 1];
    SArgs a;
    a.qt = QT + v0 * 16 * kpq;
    a.kl0 = kl0;
    a.kl1 = kl1;
    a.mp = mp;
    for (int64_t key0 = 0; key0 < nb; key0 += blk) {
      const int64_t n1 = std::min(blk, nb - key0 - blk);  // keys of the next block
      a.pf0 = a.pf1 = nullptr;
      a.pfn = a.pf_bytes0 = 0;
      if (g == 0) {
        prefetch_next(key0 * kTile / nb, (key0 + blk) * kTile / nb - key0 * kTile / nb);
        if (k_direct) {  // the next block's rows (the next tile's first: the first keys of nk_rows)
          const int64_t s0 = key0 + blk;
          if (s0 < nb) {
            a.pf0 = krows + s0;
            a.pf1 = rrows + s0;
            a.pfn = std::min(blk, nb - s0);
          } else if (far_k) {
            a.pf0 = nk_rows;
            a.pf1 = nr_rows;
            a.pfn = std::min(blk, nn);
          }
        } else if (n1 > 0) {
          // NZ rows (c0-channel chunks): the next block's keys in one cache block are one run of
          // n1 slots in every chunk, prefetched inside the tile; otherwise row by row, before it
          const int64_t runs = nz_runs(krows + key0 + blk, rrows + key0 + blk, n1, pf_runs);
          if (runs > 0) {
            a.pf0 = pf_runs;
            a.pfn = runs;
            a.pf_bytes0 = n1 * w.k.slot_stride * 2;
          } else {
            prefetch_rows(w.k, krows + key0 + blk, n1, QD);
            if (DR > 0) prefetch_rows(w.kr, rrows + key0 + blk, n1, DR);
          }
        }
        if (!k_direct) pack_k(key0, std::min(key0 + blk, nb));
      }
      if (g == ng - 1 && !v_is_k && n1 > 0) prefetch_rows(w.v, vrows + key0 + blk, n1, it.VD);
      a.rows0 = r0 + key0;
      a.rows1 = rrows + key0;
      a.st = ST + key0 * mp + v0 * 16;
      s_fn(mv, std::min(blk, nb - key0), a.pfn > 0)(a);
      // 4. VB of these keys (blk is even: whole pairs), while their rows are in cache
      if (g == ng - 1) pack_v(w, v_from_kb ? kbrows : vrows, nb, kpn, key0 / 2, (std::min(key0 + blk, nb) + 1) / 2, dvp,
                              v_direct || v_from_kb, VB, VT);
    }
  }

  // 3. softmax, P pairs
  if (!tr.full) lane_masks(M, it.R, nv, nb, bits, LM);
  SoftmaxArgs sa;
  sa.st = ST;
  sa.mp = mp;
  sa.nv = nv;
  sa.nb = nb;
  sa.kpn = kpn;
  sa.lm = tr.full ? nullptr : LM;
  sa.scale = it.scale;
  sa.mx = Mx;
  sa.l = L;
  sa.alpha = Alpha;
  sa.pt = PT;
  sa.kpv = geo.kpv;
  sa.bt = reinterpret_cast<const float*>(base + geo.off_bt);
  if (it.bias != nullptr) bias_tile(it, j0, nb, mp, reinterpret_cast<float*>(base + geo.off_bt));
  softmax_fn(!tr.full, it.bias != nullptr, it.fp16)(sa);

  // 5. O^T
  for (int64_t g = 0; g < ng; ++g) {
    int64_t v0, mv;
    group_of(nv, g, &v0, &mv);
    const int64_t blk = kChannels[mv - 1];
    PvArgs a;
    a.pt = PT + v0 * 16 * geo.kpv;
    a.dvp = dvp;
    a.kl = sp * kpn;
    a.mp = mp;
    a.alpha = Alpha + v0 * 16;
    for (int64_t d0 = 0; d0 < dvp; d0 += blk) {
      a.vb = VB + d0;
      a.ot = OT + d0 * mp + v0 * 16;
      pv_fn(mv, std::min(blk, dvp - d0))(a);
    }
  }
}

// Group copies: positions per chunk (all heads of the group copied, then each head's tiles run).
constexpr int64_t kGroupChunk = 128;

bool same_rows(const FlashKv& a, const FlashKv& b, int64_t head_offset) {
  return b.base == a.base + head_offset && b.block_ids == a.block_ids && b.block_size == a.block_size &&
         b.blk_stride == a.blk_stride && b.slot_stride == a.slot_stride && b.c0 == a.c0 &&
         b.c0_stride == a.c0_stride;
}

}  // namespace

bool run_group_avx512(const FlashItem* items, int64_t n, const Geo& geo, char* const* bases) {
  if (n < 2 || n > kMaxGroupItems) return false;
  const FlashItem& a = items[0];
  for (int64_t i = 0; i < n; ++i) {
    const FlashItem& b = items[i];
    if (!wants_copy(b, geo) || b.G != a.G || b.R != a.R || b.QD != a.QD || b.DR != a.DR || b.VD != a.VD ||
        b.kv_begin != a.kv_begin || b.kv_end != a.kv_end || !attn_same_masks(a, b) || !same_rows(a.k, b.k, i * a.QD) ||
        (a.DR > 0 && !same_rows(a.kr, b.kr, i * a.DR)) || !same_rows(a.v, b.v, i * a.VD))
      return false;
  }
  ItemTiles t[kMaxGroupItems];
  uint16_t* dk[kMaxGroupItems];
  uint16_t* dr[kMaxGroupItems];
  uint16_t* dv[kMaxGroupItems];
  for (int64_t i = 0; i < n; ++i) {
    const CopyRows cr = copy_rows_of(items[i], geo, bases[i]);
    dk[i] = cr.k;
    dr[i] = cr.kr;
    dv[i] = cr.v;
    t[i].init(items[i], geo, bases[i], copy_view(items[i], cr));
  }
  const int64_t chunk = std::min(geo.copy_rows, kGroupChunk);
  for (int64_t p0 = a.kv_begin; p0 < a.kv_end; p0 += chunk) {
    const int64_t p1 = std::min(a.kv_end, p0 + chunk);
    bool any = false;  // the items share their rows and masks: skip chunks none of them sees
    for (int64_t j0 = p0; j0 < p1 && !any; j0 += kTile) any = tile_rows(a, j0, std::min(kTile, p1 - j0), t[0].bits()).any;
    if (!any) continue;
    copy_rows_group(a.k, n, p0, p1 - p0, a.QD, dk);
    if (a.DR > 0) copy_rows_group(a.kr, n, p0, p1 - p0, a.DR, dr);
    copy_rows_group(a.v, n, p0, p1 - p0, a.VD, dv);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j0 = p0; j0 < p1; j0 += kTile) {
        const int64_t nb = std::min(kTile, p1 - j0);
        const TileRows tr = tile_rows(items[i], j0, nb, t[i].bits());
        if (tr.any) t[i].tile(j0, nb, tr, p0, p1);
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) t[i].finish();
  return true;
}

void run_avx512(const FlashItem& it, const Geo& geo, char* base) {
  // Dense copy (geo.copy_rows > 0, BF16): rows far apart but channels contiguous are copied chunk
  // by chunk into [copy_rows][QD + DR + VD] and the tiles read the copy (positions relative to the
  // chunk). Measured on the MLA prefill case (128 heads per slot, rows 32 KiB apart, 4 KiB
  // pages): 163-169 ms -> 146-148 ms; the same data with per-head rows (BnNBsD) takes 128 ms. The
  // copy itself (~28 % of the time) is a gather of rows on different pages (run_group_avx512
  // copies adjacent heads together).
  const bool copy = wants_copy(it, geo);
  const CopyRows cr = copy_rows_of(it, geo, base);
  ItemTiles t;
  t.init(it, geo, base, copy ? copy_view(it, cr) : it);
  int64_t pos0 = 0, chunk_end = it.kv_begin;  // copy positions are j - pos0 for j in [pos0, chunk_end)
  for (int64_t j0 = it.kv_begin; j0 < it.kv_end; j0 += kTile) {
    const int64_t nb = std::min(kTile, it.kv_end - j0);
    const TileRows tr = tile_rows(it, j0, nb, t.bits());
    if (!tr.any) continue;
    if (copy && j0 >= chunk_end) {  // the chunk of this tile (tiles never straddle chunks: kTile | copy_rows)
      pos0 = j0;
      chunk_end = std::min(it.kv_end, j0 + geo.copy_rows);
      copy_rows(it.k, pos0, chunk_end - pos0, it.QD, cr.k);
      if (it.DR > 0) copy_rows(it.kr, pos0, chunk_end - pos0, it.DR, cr.kr);
      copy_rows(it.v, pos0, chunk_end - pos0, it.VD, cr.v);
    }
    t.tile(j0, nb, tr, copy ? pos0 : 0, copy ? chunk_end : it.kv_end);
  }
  t.finish();
}

}  // namespace mlaops::kernels::lanes

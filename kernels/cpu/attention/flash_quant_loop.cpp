// The INT8 full-quantisation online softmax (flash_quant_loop.h) over the flash_quant rows.
#include "kernels/cpu/attention/flash_quant_loop.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/checked_math.h"
#include "core/workspace.h"
#include "kernels/cpu/attention/attn_combine.h"
#include "kernels/cpu/attention/attn_variant.h"
#include "mlaops/numeric.h"

namespace mlaops::kernels {

namespace {

constexpr int64_t kSubRows = 32;  // rows whose chunk scores are held at once

// Scratch of an item of M rows (64-byte aligned parts).
struct Scratch {
  int64_t q8 = 0, kp = 0, vp = 0, s = 0, p = 0, acc = 0, psum = 0, alpha = 0, o = 0, mx = 0, l = 0, total = 0;
};
Scratch scratch_layout(int64_t M, int64_t D, int64_t VD) {
  Scratch s;
  int64_t at = 0;
  auto take = [&](int64_t bytes) {
    const int64_t off = at;
    at += round_up(bytes, kWorkspaceAlign);
    return off;
  };
  const int64_t mb = std::min(M, kSubRows);
  s.q8 = take(M * D);
  s.kp = take(kFqChunk * D);
  s.vp = take(kFqChunk * VD);
  s.s = take(mb * kFqChunk * 4);
  s.p = take(mb * kFqChunk);
  s.acc = take(mb * VD * 4);
  s.psum = take(mb * 4);
  s.alpha = take(mb * 4);
  s.o = take(M * VD * 4);
  s.mx = take(M * 4);
  s.l = take(M * 4);
  s.total = at;
  return s;
}

}  // namespace

int64_t flash_full_quant_scratch(int64_t M, int64_t D, int64_t VD) {
  return round_up(scratch_layout(M, D, VD).total, kWorkspaceAlign);
}

void flash_full_quant_item(const FlashQuantKernels& fk, const FullQuantArgs& a, const FlashItem& it, int64_t max_m,
                           void* scratch) {
  const int64_t G = it.G, R = it.R, M = G * R, D = it.QD, VD = it.VD;
  const Scratch L = scratch_layout(max_m, D, VD);
  char* base = static_cast<char*>(scratch);
  int8_t* q8 = reinterpret_cast<int8_t*>(base + L.q8);
  uint8_t* kp = reinterpret_cast<uint8_t*>(base + L.kp);
  uint8_t* vp = reinterpret_cast<uint8_t*>(base + L.vp);
  float* s = reinterpret_cast<float*>(base + L.s);
  int8_t* pq = reinterpret_cast<int8_t*>(base + L.p);
  int32_t* acc = reinterpret_cast<int32_t*>(base + L.acc);
  int32_t* psum = reinterpret_cast<int32_t*>(base + L.psum);
  float* alpha = reinterpret_cast<float*>(base + L.alpha);
  float* o = reinterpret_cast<float*>(base + L.o);
  float* mx = reinterpret_cast<float*>(base + L.mx);
  float* l = reinterpret_cast<float*>(base + L.l);
  constexpr int64_t C = kFqChunk;

  // Query rows (g, r) -> row m = g * R + r, dense.
  for (int64_t g = 0; g < G; ++g)
    for (int64_t r = 0; r < R; ++r)
      std::memcpy(q8 + (g * R + r) * D, a.q + g * a.q_n_stride + r * a.q_s_stride, static_cast<size_t>(D));
  std::fill(o, o + M * VD, 0.0f);
  std::fill(mx, mx + M, -std::numeric_limits<float>::infinity());
  std::fill(l, l + M, 0.0f);

  const AttnMask mask = attn_mask(it);
  const int64_t kv = it.kv_end;
  const int64_t i_first = it.row0, i_last = it.row0 + R - 1;  // batch-relative query rows of the item
  for (int64_t c0 = 0; c0 < kv; c0 += C) {
    const int64_t n = std::min(C, kv - c0);
    // The band of every row misses this chunk: nothing to do.
    if (attn_band_misses(it, i_first, i_last, c0, n)) continue;
    fk.pack_k(a.k + c0 * a.k_stride, a.k_stride, n, D, kp);
    fk.pack_v(a.v + c0 * a.v_stride, a.v_stride, n, VD, vp);
    for (int64_t mb0 = 0; mb0 < M; mb0 += kSubRows) {
      const int64_t mb = std::min(kSubRows, M - mb0);
      // Positions past the band's upper edge of every row of the block are skipped.
      int64_t r_max = 0;
      for (int64_t mm = 0; mm < mb; ++mm) r_max = std::max(r_max, (mb0 + mm) % R);
      const int64_t upto = attn_band_end(it, it.row0 + r_max, c0, n);
      if (upto == 0) continue;
      const int64_t n16 = fq_pad(upto, 16), n4 = fq_pad(upto, 4);
      fk.scores(q8 + mb0 * D, D, mb, kp, n16, D, a.deq1, a.scale_h, s, C);
      for (int64_t mm = 0; mm < mb; ++mm) {
        const int64_t m = mb0 + mm, g = m / R, i = it.row0 + m % R;
        float* sr = s + mm * C;
        if (it.bias != nullptr) {
          const uint16_t* bp = attn_bias_row(it, g, i) + c0;
          for (int64_t j = 0; j < upto; ++j) sr[j] += fp16_to_float(bp[j]);
        }
        // The band relative to the chunk, then the explicit mask.
        const AttnSpan band = attn_band(it, i, c0, upto);
        const int64_t jlo = band.begin, jhi = band.end;
        const float ninf = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < jlo; ++j) sr[j] = ninf;
        for (int64_t j = std::max(jhi, jlo); j < upto; ++j) sr[j] = ninf;
        if (mask.on())
          for (int64_t j = jlo; j < jhi; ++j)
            if (mask.masked(i, c0 + j)) sr[j] = ninf;
        const float m_old = mx[m];
        float esum = 0.0f;
        int8_t* pr = pq + mm * C;
        fk.row_quant(sr, upto, a.qs1_h, &mx[m], pr, &esum, &psum[mm]);
        std::memset(pr + upto, 0, static_cast<size_t>(n4 - upto));
        if (mx[m] == ninf && l[m] == 0.0f) {  // a valid position whose score is -inf (pseShift): the
          for (int64_t j = jlo; j < jhi; ++j)  // all -inf state of attn_combine.h
            if (!mask.on() || !mask.masked(i, c0 + j)) {
              l[m] = kAllNegInfL;
              break;
            }
        }
        const float al = mx[m] == m_old ? 1.0f : (m_old == ninf ? 0.0f : std::exp(m_old - mx[m]));
        alpha[mm] = al;
        l[m] = l[m] * al + esum;
      }
      fk.pv(pq, C, psum, mb, vp, n4, VD, acc, VD);
      for (int64_t mm = 0; mm < mb; ++mm) {
        float* orow = o + (mb0 + mm) * VD;
        const int32_t* arow = acc + mm * VD;
        const float al = alpha[mm];
        for (int64_t d = 0; d < VD; ++d) orow[d] = orow[d] * al + static_cast<float>(arow[d]) * a.deq2;
      }
    }
  }
  attn_finish(it, o, VD, mx, l);
}

}  // namespace mlaops::kernels

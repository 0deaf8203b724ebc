// The combine step of every attention path (attn_combine.h).
#include "kernels/cpu/attention/attn_combine.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/attention/attn_fp16_softmax.h"
#include "kernels/cpu/attention/attn_variant.h"
#include "mlaops/numeric.h"

namespace mlaops::kernels {
namespace {

// Row (g, r) of `it` from o [VD] (unnormalised), max m and sum l.
// Row (g, r) quantised to INT8 (post-quant output) from x [VD] times inv (null x: zeros).
void quant_row(const FlashItem& it, int64_t g, int64_t r, const float* x, float inv) {
  int8_t* dst = it.out8 + g * it.out_n_stride + r * it.out_s_stride;
  const float* sc = it.pq_scale + g * it.VD;
  const float* of = it.pq_offset + g * it.VD;
  if (x == nullptr)
    for (int64_t d = 0; d < it.VD; ++d) dst[d] = attn_post_quant(0.0f, sc[d], of[d]);
  else
    for (int64_t d = 0; d < it.VD; ++d) dst[d] = attn_post_quant(x[d] * inv, sc[d], of[d]);
}

void finish_row(const FlashItem& it, int64_t g, int64_t r, const float* o, float m, float l) {
  float* lse = it.lse != nullptr ? it.lse + g * it.lse_n_stride + r * it.lse_s_stride : nullptr;
  if (l == 0.0f) {  // no valid position (a NaN l, from a NaN or inf score or value, gives a NaN row)
    if (it.pq_scale != nullptr)
      quant_row(it, g, r, nullptr, 0.0f);
    else
      std::memset(it.out + g * it.out_n_stride + r * it.out_s_stride, 0, static_cast<size_t>(it.VD) * 2);
    if (lse != nullptr) *lse = std::numeric_limits<float>::infinity();
    return;
  }
  // Valid positions, all scores -inf (m = -inf, l = kAllNegInfL): exp(-inf - -inf) = NaN
  // without a sink; with one, exp(-inf - t) = 0 leaves the sink term alone (out 0, lse t).
  if (m == -std::numeric_limits<float>::infinity() && it.sink == nullptr) l = std::numeric_limits<float>::quiet_NaN();
  if (it.fp16_softmax) {  // out = fp16(o / fp16(l)) (attn_fp16_softmax.h; no sink on this path)
    if (lse != nullptr) *lse = m + std::log(l);
    if (it.pq_scale != nullptr) {
      int8_t* q8 = it.out8 + g * it.out_n_stride + r * it.out_s_stride;
      for (int64_t d = 0; d < it.VD; ++d)
        q8[d] = attn_post_quant(fp16_softmax_final(o[d], l), it.pq_scale[g * it.VD + d], it.pq_offset[g * it.VD + d]);
    } else {
      uint16_t* dst = it.out + g * it.out_n_stride + r * it.out_s_stride;
      for (int64_t d = 0; d < it.VD; ++d) dst[d] = float_to_fp16(fp16_softmax_final(o[d], l));
    }
    return;
  }
  float scale = 1.0f;  // applied to o
  if (it.sink != nullptr) {
    const float t = attn_sink(it, g), mx = std::max(m, t), a = std::exp(m - mx);
    l = l * a + std::exp(t - mx);
    scale = a;
    m = mx;
  }
  const float inv = scale / l;
  if (lse != nullptr) *lse = m + std::log(l);
  if (it.pq_scale != nullptr) {
    quant_row(it, g, r, o, inv);
    return;
  }
  uint16_t* dst = it.out + g * it.out_n_stride + r * it.out_s_stride;
  if (it.fp16)
    for (int64_t d = 0; d < it.VD; ++d) dst[d] = float_to_fp16(o[d] * inv);
  else
    for (int64_t d = 0; d < it.VD; ++d) dst[d] = float_to_bf16(o[d] * inv);
}

}  // namespace

void attn_finish(const FlashItem& it, const float* o, int64_t ldo, const float* mx, const float* l) {
  const int64_t M = it.G * it.R;
  if (it.partial_o != nullptr) {
    for (int64_t m = 0; m < M; ++m) {
      std::memcpy(it.partial_o + m * it.VD, o + m * ldo, static_cast<size_t>(it.VD) * 4);
      it.partial_m[m] = mx[m];
      it.partial_l[m] = l[m];
    }
    return;
  }
  for (int64_t m = 0; m < M; ++m) finish_row(it, m / it.R, m % it.R, o + m * ldo, mx[m], l[m]);
}

void attn_merge_splits(const FlashItem& it, int64_t splits, float* o, const float* m, const float* l,
                       int64_t o_stride, int64_t ml_stride) {
  const int64_t M = it.G * it.R, VD = it.VD;
  for (int64_t row = 0; row < M; ++row) {
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t s = 0; s < splits; ++s)
      if (l[s * ml_stride + row] != 0.0f) mx = std::max(mx, m[s * ml_stride + row]);
    float* acc = o + row * VD;  // split 0's row, overwritten with the merged one
    if (mx == -std::numeric_limits<float>::infinity()) {  // every split empty or all -inf (attn_combine.h)
      float lt = 0.0f;
      for (int64_t s = 0; s < splits; ++s)
        if (l[s * ml_stride + row] != 0.0f) lt = kAllNegInfL;
      std::fill(acc, acc + VD, 0.0f);
      finish_row(it, row / it.R, row % it.R, acc, mx, lt);
      continue;
    }
    const float w0 = l[row] != 0.0f ? std::exp(m[row] - mx) : 0.0f;
    for (int64_t d = 0; d < VD; ++d) acc[d] = l[row] != 0.0f ? acc[d] * w0 : 0.0f;
    float lt = l[row] != 0.0f ? l[row] * w0 : 0.0f;
    for (int64_t s = 1; s < splits; ++s) {
      const float ls = l[s * ml_stride + row];
      if (ls == 0.0f) continue;  // an empty split; a NaN one poisons the row
      const float w = std::exp(m[s * ml_stride + row] - mx);
      lt += ls * w;
      const float* os = o + s * o_stride + row * VD;
      for (int64_t d = 0; d < VD; ++d) acc[d] += os[d] * w;
    }
    finish_row(it, row / it.R, row % it.R, acc, mx, lt);
  }
}

void attn_merge_state(float* o, float* m, float* l, const float* o2, const float* m2, const float* l2, int64_t M,
                      int64_t VD) {
  for (int64_t r = 0; r < M; ++r) {
    if (l2[r] == 0.0f) continue;  // an empty chunk; a NaN one poisons the row
    if (m2[r] == -std::numeric_limits<float>::infinity()) {  // all -inf (attn_combine.h): adds nothing
      if (l[r] == 0.0f) {
        std::fill(o + r * VD, o + (r + 1) * VD, 0.0f);
        m[r] = m2[r];
        l[r] = kAllNegInfL;
      }
      continue;
    }
    if (l[r] == 0.0f) {
      std::copy(o2 + r * VD, o2 + (r + 1) * VD, o + r * VD);
      m[r] = m2[r];
      l[r] = l2[r];
      continue;
    }
    const float mx = std::max(m[r], m2[r]), a = std::exp(m[r] - mx), c = std::exp(m2[r] - mx);
    for (int64_t d = 0; d < VD; ++d) o[r * VD + d] = o[r * VD + d] * a + o2[r * VD + d] * c;
    l[r] = l[r] * a + l2[r] * c;
    m[r] = mx;
  }
}

int8_t attn_post_quant(float x, float scale_h, float offset_h) {
  const float prod = round_fp16(round_fp16(x) * scale_h);
  const double y = round_fp16(static_cast<double>(prod) + static_cast<double>(offset_h));
  if (std::isnan(y)) return 0;
  const double r = std::nearbyint(std::clamp(y, -256.0, 255.0));  // the default mode: ties to even
  return static_cast<int8_t>(std::clamp(r, -128.0, 127.0));
}

void attn_write_empty(const FlashItem& it) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t g = 0; g < it.G; ++g)
    for (int64_t r = 0; r < it.R; ++r) {
      if (it.pq_scale != nullptr)
        quant_row(it, g, r, nullptr, 0.0f);
      else if (it.out != nullptr)
        std::memset(it.out + g * it.out_n_stride + r * it.out_s_stride, 0, static_cast<size_t>(it.VD) * 2);
      if (it.lse != nullptr) it.lse[g * it.lse_n_stride + r * it.lse_s_stride] = inf;
    }
}

}  // namespace mlaops::kernels

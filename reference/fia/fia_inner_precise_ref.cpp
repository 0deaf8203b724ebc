// Float64 reference of the innerPrecise numerics (fia_inner_precise_ref.h).
#include "reference/fia/fia_inner_precise_ref.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/common/ref_util.h"

namespace mlaops {

bool fia_ref_fp16_softmax(const FiaParams& p, bool decode_rule) {
  const DType f16 = DType::kFloat16;
  if ((p.inner_precise & 1) == 0 || p.query.dtype != f16 || p.key.empty() || p.value.empty()) return false;
  if (p.key[0].dtype != f16 || p.value[0].dtype != f16) return false;  // INT8 / INT4 KV: high precision (no emulation)
  return !decode_rule && p.query_rope == nullptr && p.pse_shift == nullptr && p.learnable_sink == nullptr &&
         p.key_shared_prefix == nullptr && p.dequant_scale_query == nullptr;
}

bool fia_ref_legacy_rows(const FiaParams& p, bool explicit_mask, bool left_padding) {
  const bool half_kv = !p.key.empty() && (p.key[0].dtype == DType::kFloat16 || p.key[0].dtype == DType::kBFloat16);
  return p.legacy_uniform_invalid_rows && (p.inner_precise & 2) == 0 && explicit_mask && p.sparse_mode != 9 &&
         !(p.sparse_mode == 0 && left_padding) && p.learnable_sink == nullptr && half_kv &&
         p.key_shared_prefix == nullptr;
}

double fia_ref_fp16_softmax_row(const double* dots, const char* valid, int64_t s2, const double* v, int64_t vd,
                                double scale, double* acc) {
  constexpr int64_t kBlock = 128;
  const double inf = std::numeric_limits<double>::infinity();
  const double scale_h = ref::to_fp16(scale);
  std::vector<double> o(static_cast<size_t>(vd), 0.0), pv(static_cast<size_t>(vd)), s(kBlock);
  double m = -inf, l = 0.0;
  for (int64_t j0 = 0; j0 < s2; j0 += kBlock) {
    const int64_t j1 = std::min(s2, j0 + kBlock);
    double bm = -inf;
    for (int64_t j = j0; j < j1; ++j) {
      if (!valid[j]) continue;
      s[static_cast<size_t>(j - j0)] = ref::to_fp16(ref::to_fp16(dots[j]) * scale_h);  // fp16(fp16(q.k) * fp16(scale))
      const double sj = s[static_cast<size_t>(j - j0)];
      if (std::isnan(sj) || sj > bm) bm = std::isnan(bm) ? bm : sj;  // a NaN score makes the row NaN
    }
    if (bm == -inf) continue;  // no valid position in this block: the state stays
    const double mn = std::isnan(m) || m > bm ? m : bm;  // NaN propagates
    const double a = m == -inf ? 0.0 : std::exp(m - mn);
    double sum = 0.0;
    std::fill(pv.begin(), pv.end(), 0.0);
    for (int64_t j = j0; j < j1; ++j) {
      if (!valid[j]) continue;
      const double e = std::exp(s[static_cast<size_t>(j - j0)] - mn);
      sum += e;                         // l sums the unrounded e
      const double ph = ref::to_fp16(e);  // P in FP16
      for (int64_t d = 0; d < vd; ++d) pv[static_cast<size_t>(d)] += ph * v[j * vd + d];
    }
    l = l * a + sum;
    const double ah = ref::to_fp16(a);
    for (int64_t d = 0; d < vd; ++d) {
      double& od = o[static_cast<size_t>(d)];
      od = ref::to_fp16(ref::to_fp16(od * ah) + ref::to_fp16(pv[static_cast<size_t>(d)]));
    }
    m = mn;
  }
  const double lh = ref::to_fp16(l);
  for (int64_t d = 0; d < vd; ++d) acc[d] = o[static_cast<size_t>(d)] / lh;
  return m + std::log(l);
}

double fia_ref_legacy_row(const char* kept, int64_t s2, const double* v, int64_t vd, bool fp16_softmax, double* acc) {
  int64_t count = 0;
  std::fill(acc, acc + vd, 0.0);
  for (int64_t j = 0; j < s2; ++j) {
    if (!kept[j]) continue;
    ++count;
    for (int64_t d = 0; d < vd; ++d) acc[d] += v[j * vd + d];
  }
  for (int64_t d = 0; d < vd; ++d) acc[d] /= static_cast<double>(count);
  const double fill = fp16_softmax ? -65504.0 : static_cast<double>(-std::numeric_limits<float>::max());
  return fill + std::log(static_cast<double>(count));
}

}  // namespace mlaops

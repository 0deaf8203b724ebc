// Float64 reference of FusedInferAttentionScoreV4's INT8 full quantisation; definition and
// rounding steps in fia_full_quant_ref.h. Uses only the references' own helpers (ref_util.h,
// fia_left_padding_ref.h).
#include "reference/fia/fia_full_quant_ref.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "reference/fia/fia_left_padding_ref.h"
#include "reference/common/ref_util.h"

namespace mlaops {
namespace {

constexpr const char* kOp = "fused_infer_attention_score_v4_ref (full quant)";
constexpr int64_t kChunk = 1024;
using Wide = __int128;  // band arithmetic (pre / next may be near the int64 limits)

// Element (b, n, s, d) of a BSH / BSND / BNSD / NBSD tensor with head dim `d_head`.
struct Access {
  const TensorView* t = nullptr;
  FiaLayout l = FiaLayout::kBSH;
  int64_t d_head = 0;
  int64_t offset(int64_t b, int64_t n, int64_t s, int64_t d) const {
    int64_t idx[4] = {0, 0, 0, 0};
    switch (l) {
      case FiaLayout::kBSH: idx[0] = b; idx[1] = s; idx[2] = n * d_head + d; break;
      case FiaLayout::kBSND: idx[0] = b; idx[1] = s; idx[2] = n; idx[3] = d; break;
      case FiaLayout::kNBSD: idx[0] = n; idx[1] = b; idx[2] = s; idx[3] = d; break;
      default: idx[0] = b; idx[1] = n; idx[2] = s; idx[3] = d; break;
    }
    return ref::offset(*t, idx);
  }
};

// Shape (B, S, heads, D) of a tensor in layout l, or false.
bool shape_of(const TensorView& t, FiaLayout l, int64_t heads, int64_t* B, int64_t* S, int64_t* D) {
  switch (l) {
    case FiaLayout::kBSH:
      if (t.rank != 3 || heads <= 0 || t.dims[2] % heads != 0) return false;
      *B = t.dims[0], *S = t.dims[1], *D = t.dims[2] / heads;
      return true;
    case FiaLayout::kBSND:
      if (t.rank != 4 || t.dims[2] != heads) return false;
      *B = t.dims[0], *S = t.dims[1], *D = t.dims[3];
      return true;
    case FiaLayout::kBNSD:
      if (t.rank != 4 || t.dims[1] != heads) return false;
      *B = t.dims[0], *S = t.dims[2], *D = t.dims[3];
      return true;
    case FiaLayout::kNBSD:
      if (t.rank != 4 || t.dims[0] != heads) return false;
      *B = t.dims[1], *S = t.dims[2], *D = t.dims[3];
      return true;
    default: return false;
  }
}

// The 19-bit value of a per-tensor dequant scale (UINT64: the float32 pattern in the low 32 bits).
double trunc19(const TensorView& t) {
  uint32_t bits = 0;
  if (t.dtype == DType::kUInt64) {
    uint64_t v = 0;
    std::memcpy(&v, t.data, 8);
    bits = static_cast<uint32_t>(v & 0xffffffffu);
  } else {
    std::memcpy(&bits, t.data, 4);
  }
  bits &= 0xffffe000u;
  float f = 0.0f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::vector<int64_t> lengths(const std::vector<int64_t>* a, int64_t B, int64_t extent, bool* ok) {
  std::vector<int64_t> v(static_cast<size_t>(B), extent);
  if (a == nullptr) return v;
  const int64_t n = static_cast<int64_t>(a->size());
  if (n != 1 && n < B) *ok = false;
  for (int64_t b = 0; b < B && *ok; ++b) {
    const int64_t x = (*a)[static_cast<size_t>(n == 1 ? 0 : b)];
    if (x < 0 || x > extent) *ok = false;
    v[static_cast<size_t>(b)] = x;
  }
  return v;
}

}  // namespace

bool fia_ref_is_full_quant(const FiaParams& p) {
  return p.query.dtype == DType::kInt8 && p.query_rope == nullptr && p.dequant_scale_query == nullptr;
}

Status fia_full_quant_ref(const FiaParams& p) {
  const TensorView& q = p.query;
  MLAOPS_CHECK(p.key.size() == 1 && p.value.size() == 1, kParamInvalid, "%s: one key and one value tensor", kOp);
  const TensorView& key = p.key[0];
  const TensorView& value = p.value[0];
  const TensorView& out = p.attention_out;
  const TensorView* lse = p.softmax_lse_flag ? p.softmax_lse : nullptr;
  MLAOPS_CHECK(key.dtype == DType::kInt8 && value.dtype == DType::kInt8, kParamInvalid,
               "%s: key / value must be INT8, got %s / %s", kOp, ref::type_name(key.dtype), ref::type_name(value.dtype));
  MLAOPS_CHECK(p.deq_scale1 && p.quant_scale1 && p.deq_scale2, kParamInvalid,
               "%s: deqScale1, quantScale1 and deqScale2 are required", kOp);
  for (const TensorView* t : {p.deq_scale1, p.deq_scale2})
    MLAOPS_CHECK((t->dtype == DType::kUInt64 || t->dtype == DType::kFloat32) && t->numel() == 1 && t->data, kParamInvalid,
                 "%s: deqScale1 / deqScale2: one UINT64 or FLOAT element", kOp);
  MLAOPS_CHECK(p.quant_scale1->dtype == DType::kFloat32 && p.quant_scale1->numel() == 1 && p.quant_scale1->data,
               kParamInvalid, "%s: quantScale1: one FLOAT element", kOp);
  MLAOPS_CHECK(p.block_table == nullptr && p.learnable_sink == nullptr && p.key_shared_prefix == nullptr &&
                   p.antiquant_scale == nullptr && p.key_antiquant_scale == nullptr && p.value_antiquant_scale == nullptr,
               kParamInvalid, "%s: paged KV, learnableSink, prefix and antiquant are outside full quant", kOp);
  const bool post_quant = p.quant_scale2 != nullptr;
  MLAOPS_CHECK(post_quant ? out.dtype == DType::kInt8
                          : (out.dtype == DType::kFloat16 || out.dtype == DType::kFloat32 || out.dtype == DType::kFloat64),
               kParamInvalid, "%s: attentionOut dtype: INT8 with quantScale2, else FLOAT16 (FLOAT, DOUBLE); got %s", kOp,
               ref::type_name(out.dtype));
  FiaLayout in_l = FiaLayout::kBSH, out_l = FiaLayout::kBSH;
  MLAOPS_CHECK(ref::layout_from_string(p.input_layout, &in_l, &out_l) && !ref::layout_packed(in_l), kParamInvalid,
               "%s: inputLayout: BSH, BSND, BNSD and their output variants, got \"%.64s\"", kOp, p.input_layout.c_str());
  const int64_t N = p.num_heads, KVN = p.num_key_value_heads == 0 ? N : p.num_key_value_heads;
  MLAOPS_CHECK(N > 0 && KVN > 0 && N % KVN == 0, kParamInvalid, "%s: numHeads / numKeyValueHeads", kOp);
  const int64_t G = N / KVN;
  int64_t B = 0, QS = 0, QD = 0, kb = 0, KS = 0, KD = 0, vb = 0, VS = 0, VD = 0, ob = 0, OS = 0, OD = 0;
  MLAOPS_CHECK(shape_of(q, in_l, N, &B, &QS, &QD) && shape_of(key, in_l, KVN, &kb, &KS, &KD) &&
                   shape_of(value, in_l, KVN, &vb, &VS, &VD) && shape_of(out, out_l, N, &ob, &OS, &OD),
               kParamInvalid, "%s: query / key / value / attentionOut shapes for layout %s", kOp, p.input_layout.c_str());
  MLAOPS_CHECK(kb == B && vb == B && ob == B && OS == QS && KS == VS && KD == QD && OD == VD && QS > 1, kParamInvalid,
               "%s: inconsistent shapes (or Q_S == 1)", kOp);
  if (lse != nullptr)
    MLAOPS_CHECK(lse->dtype == DType::kFloat32 && lse->rank == 4 && lse->dims[0] == B && lse->dims[1] == N &&
                     lse->dims[2] == QS && lse->dims[3] == 1,
                 kParamInvalid, "%s: softmaxLse: FLOAT (B, N, Q_S, 1)", kOp);
  bool ok = true;
  const std::vector<int64_t> act_q = lengths(p.actual_seq_lengths, B, QS, &ok);
  std::vector<int64_t> act_kv = lengths(p.actual_seq_lengths_kv, B, KS, &ok);
  MLAOPS_CHECK(ok, kParamInvalid, "%s: actualSeqLengths / actualSeqLengthsKv", kOp);
  // Left padding: batch b's valid rows / positions start at lp.q(b) / lp.kv(b); the explicit
  // mask and pseShift are read at these padded coordinates (fia_left_padding_ref.h).
  FiaRefLeftPad lp;
  MLAOPS_TRY(fia_ref_left_padding(p, B, QS, KS, false, false, false, act_q, &act_kv, &lp));
  int64_t max_q = 0, max_kv = 0;
  for (int64_t b = 0; b < B; ++b) {
    max_q = std::max(max_q, act_q[static_cast<size_t>(b)]);
    max_kv = std::max(max_kv, act_kv[static_cast<size_t>(b)]);
  }
  // Masks: sparse 0 / 1 explicit (rank 2 (Q_S, KV_S), 3 (B or 1, ...), 4 (B or 1, 1, ...)),
  // sparse 2 / 3 / 4 analytic.
  const int64_t mode = p.sparse_mode;
  MLAOPS_CHECK(mode >= 0 && mode <= 4, kParamInvalid, "%s: sparseMode 0..4", kOp);
  const TensorView* mask = (mode <= 1) ? p.atten_mask : nullptr;
  MLAOPS_CHECK(mode != 1 || mask != nullptr, kParamInvalid, "%s: sparseMode 1 needs a mask", kOp);
  if (mask != nullptr)
    MLAOPS_CHECK(mask->rank >= 2 && mask->rank <= 4 && mask->dim(-1) >= max_kv && mask->dim(-2) >= max_q &&
                     (mask->rank == 2 || mask->dims[0] == 1 || mask->dims[0] == B) && mask->data,
                 kParamInvalid, "%s: attenMask shape %s", kOp, ref::shape_str(*mask).c_str());
  const TensorView* pse = p.pse_shift;
  if (pse != nullptr)
    MLAOPS_CHECK(ref::is_half(pse->dtype) && pse->rank == 4 && (pse->dims[0] == 1 || pse->dims[0] == B) &&
                     pse->dims[1] == N && pse->dims[2] >= max_q && pse->dims[3] >= max_kv && pse->data,
                 kParamInvalid, "%s: pseShift", kOp);
  const int64_t nv = N * VD;
  for (const TensorView* t : {p.quant_scale2, p.quant_offset2})
    if (t != nullptr)
      MLAOPS_CHECK((t->numel() == 1 || t->numel() == nv) && t->data, kParamInvalid, "%s: quantScale2 / quantOffset2", kOp);
  MLAOPS_CHECK(p.quant_offset2 == nullptr || post_quant, kParamInvalid, "%s: quantOffset2 needs quantScale2", kOp);

  const double deq1 = trunc19(*p.deq_scale1), deq2 = trunc19(*p.deq_scale2);
  float qs1f = 0.0f;
  std::memcpy(&qs1f, p.quant_scale1->data, 4);
  const double qs_h = ref::to_fp16(qs1f);
  const double sc_h = ref::to_fp16(static_cast<float>(p.scale_value));
  const Wide pre = p.pre_tokens, next = p.next_tokens;
  const Access qa{&q, in_l, QD}, ka{&key, in_l, KD}, va{&value, in_l, VD}, oa{&out, out_l, VD};
  auto masked = [&](int64_t b, int64_t i, int64_t j) -> bool {
    const Wide diag = static_cast<Wide>(act_kv[static_cast<size_t>(b)]) - act_q[static_cast<size_t>(b)];
    const Wide wi = i, wj = j;
    auto explicit_mask = [&]() {
      int64_t idx[4] = {0, 0, 0, 0};
      const int64_t bb = mask->rank == 2 || mask->dims[0] == 1 ? 0 : b;
      const int64_t mi = i + lp.q(b), mj = j + lp.kv(b);  // padded coordinates
      if (mask->rank == 2) {
        idx[0] = mi, idx[1] = mj;
      } else if (mask->rank == 3) {
        idx[0] = bb, idx[1] = mi, idx[2] = mj;
      } else {
        idx[0] = bb, idx[2] = mi, idx[3] = mj;
      }
      return ref::load(*mask, ref::offset(*mask, idx)) != 0.0;
    };
    switch (mode) {
      case 0:  // left padding: pre / next ignored
        return mask != nullptr && (explicit_mask() || (!lp.on && (wj > wi + next || wj < wi - pre)));
      case 1: return explicit_mask();
      case 2: return wj > wi;
      case 3: return wj > wi + diag;
      default: return wj > wi + diag + next || wj < wi + diag - pre;
    }
  };
  auto pq_param = [&](const TensorView* t, int64_t n, int64_t d) -> double {
    if (t == nullptr) return 0.0;
    return ref::load(*t, ref::linear_offset(*t, t->numel() == 1 ? 0 : n * VD + d));
  };
  auto store_row = [&](int64_t b, int64_t n, int64_t i, const std::vector<double>& o) {
    for (int64_t d = 0; d < VD; ++d) {
      const int64_t off = oa.offset(b, n, i, d);
      if (post_quant)
        ref::store(out, off,
                   ref::post_quant_int8(o[static_cast<size_t>(d)], pq_param(p.quant_scale2, n, d),
                                        pq_param(p.quant_offset2, n, d)));
      else
        ref::store(out, off, o[static_cast<size_t>(d)]);
    }
  };
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> s, o(static_cast<size_t>(VD)), oc(static_cast<size_t>(VD)), mc;
  std::vector<std::vector<double>> ochunks;
  std::vector<char> valid;
  std::vector<int64_t> qi(static_cast<size_t>(QD));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t s1 = act_q[static_cast<size_t>(b)], s2 = act_kv[static_cast<size_t>(b)];
    const int64_t q0 = lp.q(b), kv0 = lp.kv(b);  // the windows' first row / position
    s.assign(static_cast<size_t>(s2), 0.0);
    valid.assign(static_cast<size_t>(s2), 0);
    for (int64_t n = 0; n < N; ++n) {
      const int64_t h = n / G;
      for (int64_t i = 0; i < QS; ++i) {
        std::fill(o.begin(), o.end(), 0.0);
        double lse_v = inf;
        bool any = false;
        const int64_t r = i - q0;  // row in the batch's query window
        if (r >= 0 && r < s1) {
          for (int64_t d = 0; d < QD; ++d) qi[static_cast<size_t>(d)] = ref::load_int(q, qa.offset(b, n, i, d));
          for (int64_t j = 0; j < s2; ++j) {
            valid[static_cast<size_t>(j)] = !masked(b, r, j);
            if (!valid[static_cast<size_t>(j)]) continue;
            any = true;
            int64_t dot = 0;
            for (int64_t d = 0; d < QD; ++d) dot += qi[static_cast<size_t>(d)] * ref::load_int(key, ka.offset(b, h, kv0 + j, d));
            double x = static_cast<float>(static_cast<double>(dot) * deq1);  // fp32 product
            x = std::min(std::max(x, -65504.0), 65504.0);  // FP16 saturation; NaN stays NaN
            double sj = ref::to_fp16(ref::to_fp16(x) * sc_h);  // fp16 product of two FP16 values
            if (pse != nullptr) {
              const int64_t idx[4] = {pse->dims[0] == 1 ? 0 : b, n, i, kv0 + j};
              sj = static_cast<float>(sj + ref::load(*pse, ref::offset(*pse, idx)));  // fp32 sum
            }
            s[static_cast<size_t>(j)] = sj;
          }
        }
        if (any) {
          double m = -inf;
          mc.clear();
          ochunks.clear();
          for (int64_t c0 = 0; c0 < s2; c0 += kChunk) {
            const int64_t c1 = std::min(s2, c0 + kChunk);
            bool cany = false;
            for (int64_t j = c0; j < c1; ++j)
              if (valid[static_cast<size_t>(j)]) {
                m = std::max(m, s[static_cast<size_t>(j)]);
                cany = true;
              }
            if (!cany) continue;
            std::vector<int64_t> acc(static_cast<size_t>(VD), 0);
            for (int64_t j = c0; j < c1; ++j) {
              if (!valid[static_cast<size_t>(j)]) continue;
              const double e = std::exp(s[static_cast<size_t>(j)] - m);
              const int64_t pj = ref::int8_rint(ref::to_fp16(ref::to_fp16(e) * qs_h));
              if (pj == 0) continue;
              for (int64_t d = 0; d < VD; ++d) acc[static_cast<size_t>(d)] += pj * ref::load_int(value, va.offset(b, h, kv0 + j, d));
            }
            for (int64_t d = 0; d < VD; ++d) oc[static_cast<size_t>(d)] = static_cast<double>(acc[static_cast<size_t>(d)]) * deq2;
            mc.push_back(m);
            ochunks.push_back(oc);
          }
          double l = 0.0;
          for (int64_t j = 0; j < s2; ++j)
            if (valid[static_cast<size_t>(j)]) l += std::exp(s[static_cast<size_t>(j)] - m);
          for (size_t c = 0; c < mc.size(); ++c) {
            const double a = std::exp(mc[c] - m);
            for (int64_t d = 0; d < VD; ++d) o[static_cast<size_t>(d)] += ochunks[c][static_cast<size_t>(d)] * a;
          }
          for (int64_t d = 0; d < VD; ++d) o[static_cast<size_t>(d)] /= l;
          lse_v = m + std::log(l);
        }
        store_row(b, n, i, o);
        if (lse != nullptr) {
          const int64_t idx[4] = {b, n, i, 0};
          ref::store(*lse, ref::offset(*lse, idx), lse_v);
        }
      }
    }
  }
  return kSuccess;
}

}  // namespace mlaops

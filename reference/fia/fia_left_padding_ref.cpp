// Float64 reference of FusedInferAttentionScoreV4 left padding (reference/fia/fia_left_padding_ref.h).
#include "reference/fia/fia_left_padding_ref.h"

#include <algorithm>

#include "reference/common/ref_util.h"

namespace mlaops {
namespace {

constexpr const char* kOp = "fused_infer_attention_score_v4_ref";

Status pad_value(const TensorView* t, const char* name, int64_t* v) {
  *v = 0;
  if (t == nullptr) return kSuccess;
  MLAOPS_CHECK(t->dtype == DType::kInt64 && t->rank == 1 && t->dims[0] == 1, kParamInvalid,
               "%s: %s must be INT64 of shape (1), got %s %s", kOp, name, ref::type_name(t->dtype),
               ref::shape_str(*t).c_str());
  MLAOPS_CHECK(t->data != nullptr, kParamNullptr, "%s: %s data is null", kOp, name);
  *v = std::max<int64_t>(0, static_cast<int64_t>(ref::load_int(*t, 0)));
  return kSuccess;
}

}  // namespace

Status fia_ref_left_padding(const FiaParams& p, int64_t B, int64_t QS, int64_t KVS, bool paged, bool packed, bool rope,
                            const std::vector<int64_t>& act_q, std::vector<int64_t>* act_kv, FiaRefLeftPad* lp) {
  *lp = FiaRefLeftPad();
  if (p.query_padding_size == nullptr && p.kv_padding_size == nullptr) return kSuccess;
  MLAOPS_CHECK(!paged && !packed && !rope, kParamInvalid,
               "%s: left padding is not defined with paged attention, TND / NTD or MLA", kOp);
  int64_t q_pad = 0, kv_pad = 0;
  MLAOPS_TRY(pad_value(p.query_padding_size, "queryPaddingSize", &q_pad));
  MLAOPS_TRY(pad_value(p.kv_padding_size, "kvPaddingSize", &kv_pad));
  const bool q = p.query_padding_size != nullptr && QS > 1 && p.actual_seq_lengths != nullptr;
  const bool kv = p.kv_padding_size != nullptr && p.actual_seq_lengths_kv != nullptr;
  lp->on = q || kv;
  lp->q_off.assign(static_cast<size_t>(B), 0);
  lp->kv_off.assign(static_cast<size_t>(B), 0);
  for (int64_t b = 0; b < B; ++b) {
    const size_t i = static_cast<size_t>(b);
    if (q) {
      lp->q_off[i] = QS - q_pad - act_q[i];
      MLAOPS_CHECK(lp->q_off[i] >= 0, kParamInvalid, "%s: batch %lld: the query window starts before row 0", kOp,
                   static_cast<long long>(b));
    }
    if (kv) {
      const int64_t s = KVS - kv_pad - (*act_kv)[i];
      if (s < 0) {
        MLAOPS_CHECK(QS == 1, kParamInvalid, "%s: batch %lld: the KV window starts before position 0", kOp,
                     static_cast<long long>(b));
        (*act_kv)[i] = 0;  // decode: no valid position
      } else {
        lp->kv_off[i] = s;
      }
    }
  }
  // The explicit mask (sparse 0 / 1) and pseShift must reach the padded windows.
  int64_t q_end = 0, kv_end = 0;
  for (int64_t b = 0; b < B; ++b) {
    q_end = std::max(q_end, lp->q(b) + act_q[static_cast<size_t>(b)]);
    kv_end = std::max(kv_end, lp->kv(b) + (*act_kv)[static_cast<size_t>(b)]);
  }
  const TensorView* m = p.atten_mask;
  if (m != nullptr && p.sparse_mode <= 1 && m->rank >= 2) {
    const int64_t rows = m->rank == 2 && QS == 1 ? 1 : m->dims[m->rank - 2];
    MLAOPS_CHECK(rows >= q_end && m->dims[m->rank - 1] >= kv_end, kParamInvalid,
                 "%s: attenMask %s does not reach the padded windows (%lld rows, %lld columns)", kOp,
                 ref::shape_str(*m).c_str(), static_cast<long long>(q_end), static_cast<long long>(kv_end));
  }
  const TensorView* t = p.pse_shift;
  if (t != nullptr && t->rank == 4)
    MLAOPS_CHECK(t->dims[2] >= q_end && t->dims[3] >= kv_end, kParamInvalid,
                 "%s: pseShift %s does not reach the padded windows (%lld rows, %lld columns)", kOp,
                 ref::shape_str(*t).c_str(), static_cast<long long>(q_end), static_cast<long long>(kv_end));
  return kSuccess;
}

}  // namespace mlaops

// FusedInferAttentionScoreV4 left padding (ops/fia/fia_left_padding.h, docs/ops/fused_infer_attention_score.md
// "Left padding").
#include "ops/fia/fia_left_padding.h"

#include <algorithm>
#include <memory>
#include <string>

#include "core/error.h"
#include "ops/common/check_util.h"
#include "ops/fia/fia.h"

namespace mlaops {
namespace {

using check::shape_str;

// FIA-40: an INT64 tensor of shape (1) with data; its value, negative clamped to 0.
Status read_pad(const TensorView* t, const char* op, const char* name, int64_t* v) {
  MLAOPS_CHECK(t->dtype == DType::kInt64, kParamInvalid, "%s: %s: FIA-40 dtype; allowed INT64, got %s", op, name,
               dtype_name(t->dtype));
  MLAOPS_CHECK(t->rank == 1 && t->dims[0] == 1, kParamInvalid, "%s: %s: FIA-40 shape; allowed [1], got %s", op, name,
               shape_str(*t).c_str());
  MLAOPS_CHECK(t->data != nullptr, kParamNullptr, "%s: %s: FIA-40 data pointer; allowed non-null, got null", op, name);
  *v = std::max<int64_t>(0, *t->ptr<const int64_t>());
  return kSuccess;
}

// The batches' windows for the padding values in c->lp (q_start / kv_start from 0, act_kv from
// the given lengths: decode batches whose KV window starts before 0 get no own position) and the
// mask / pse extents they need; `rule` names the rule a failure reports (FIA-42 when planning,
// FIA-40 for the values read at run time).
Status place_windows(const FiaParams& p, const char* op, const char* rule, FiaCall* c) {
  const FiaLeftPad& lp = c->lp;
  const char* qn = "queryPaddingSizeOptional";
  const char* kn = "kvPaddingSizeOptional";
  int64_t q_end = 0, kv_end = 0;
  for (int64_t b = 0; b < c->B; ++b) {
    const size_t i = static_cast<size_t>(b);
    if (lp.q) {
      const int64_t s = c->QS - lp.q_pad - c->act_q[i];
      MLAOPS_CHECK(s >= 0, kParamInvalid,
                   "%s: %s: %s batch %lld query window starts before row 0; allowed Q_S - queryPaddingSize - "
                   "actualSeqLengths[b] >= 0, got %lld - %lld - %lld",
                   op, qn, rule, (long long)b, (long long)c->QS, (long long)lp.q_pad, (long long)c->act_q[i]);
      c->q_start[i] = s;
    }
    if (lp.kv) {
      const int64_t s = c->kv_s - lp.kv_pad - c->act_kv[i];
      if (s < 0 && c->QS == 1) {  // decode: the batch has no valid position (output 0, lse +inf)
        c->act_kv[i] = 0;
        c->kv_start[i] = 0;
      } else {
        MLAOPS_CHECK(s >= 0, kParamInvalid,
                     "%s: %s: %s batch %lld KV window starts before position 0 (Q_S > 1); allowed KV_S - "
                     "kvPaddingSize - actualSeqLengthsKv[b] >= 0, got %lld - %lld - %lld",
                     op, kn, rule, (long long)b, (long long)c->kv_s, (long long)lp.kv_pad, (long long)c->act_kv[i]);
        c->kv_start[i] = s;
      }
    }
    q_end = std::max(q_end, c->q_start[i] + c->act_q[i]);
    kv_end = std::max(kv_end, c->kv_start[i] + c->act_kv[i]);
  }
  kv_end += c->prefix.len;  // the prefix's columns come first
  // The mask and pseShift are read at the padded coordinates: their extents must reach the windows.
  if (c->explicit_mask) {
    const TensorView& m = *p.atten_mask;
    const int64_t rows = m.rank == 2 && c->QS == 1 ? 1 : m.dim(-2);
    MLAOPS_CHECK(rows >= q_end && m.dim(-1) >= kv_end, kParamInvalid,
                 "%s: attenMaskOptional: %s extent with left padding (padded coordinates); allowed >= %lld rows "
                 "and >= %lld columns, got %s",
                 op, rule, (long long)q_end, (long long)kv_end, shape_str(m).c_str());
  }
  if (c->pse) {
    const TensorView& t = *p.pse_shift;
    MLAOPS_CHECK(t.dims[2] >= q_end && t.dims[3] >= kv_end, kParamInvalid,
                 "%s: pseShiftOptional: %s extent with left padding (padded coordinates); allowed dims 2, 3 >= "
                 "%lld, %lld, got %s",
                 op, rule, (long long)q_end, (long long)kv_end, shape_str(t).c_str());
  }
  return kSuccess;
}

}  // namespace

Status fia_left_padding_check(const FiaParams& p, const FiaCheckOptions& o, FiaCall* c) {
  const char* op = o.op;
  if (p.query_padding_size == nullptr && p.kv_padding_size == nullptr) return kSuccess;
  FiaLeftPad& lp = c->lp;
  const char* qn = "queryPaddingSizeOptional";
  const char* kn = "kvPaddingSizeOptional";
  const char* who = p.kv_padding_size != nullptr ? kn : qn;
  if (p.query_padding_size != nullptr) MLAOPS_TRY(read_pad(p.query_padding_size, op, qn, &lp.q_pad));
  if (p.kv_padding_size != nullptr) MLAOPS_TRY(read_pad(p.kv_padding_size, op, kn, &lp.kv_pad));
  // A shared prefix (ops/fia/fia_prefix.h) comes before the window: the mask / pse columns of the
  // window move by Lp (the C++ API; the aclnn layer rejects the pair as the vendor does, FIA-24).
  // FIA-41: the features left padding excludes (the vendor's exclusion list).
  auto excl = [&](bool bad, const char* what) -> Status {
    MLAOPS_CHECK(!bad, kParamInvalid, "%s: %s: FIA-41 left padding excludes %s; allowed no padding tensor, got one",
                 op, who, what);
    return kSuccess;
  };
  MLAOPS_TRY(excl(c->paged, "paged attention (blockTable)"));
  MLAOPS_TRY(excl(c->packed, "the TND / NTD layouts"));
  MLAOPS_TRY(excl(c->out_l != c->in_l && (c->out_l == FiaLayout::kBNSD || c->out_l == FiaLayout::kNBSD),
                  "the BSH_BNSD / BSND_BNSD / *_NBSD output layouts"));
  MLAOPS_TRY(excl(c->rope, "MLA (queryRope / keyRope)"));
  MLAOPS_TRY(excl(c->sink, "learnableSink"));
  MLAOPS_TRY(excl(p.sparse_mode == 9, "the tree mask (sparseMode 9)"));
  MLAOPS_TRY(excl(c->QD != c->VD, "a value head dim different from the query head dim"));
  MLAOPS_TRY(excl(c->QS > 1 && c->aq.on, "KV antiquant with Q_S > 1"));
  MLAOPS_TRY(excl(c->QS > 1 && c->pq_channel, "per-channel post-quant with Q_S > 1"));
  MLAOPS_TRY(excl(c->aq.on && (c->aq.k.kind == FiaAntiquantParam::Kind::kRow || c->aq.v.kind == FiaAntiquantParam::Kind::kRow),
                  "per-token antiquant scales (modes 1 and 3)"));
  // Which paddings apply: query padding only for Q_S > 1 with actualSeqLengths, KV padding with
  // actualSeqLengthsKv; otherwise the lengths are right padding as without the tensor.
  lp.q = p.query_padding_size != nullptr && c->QS > 1 && p.actual_seq_lengths != nullptr;
  lp.kv = p.kv_padding_size != nullptr && p.actual_seq_lengths_kv != nullptr;
  lp.on = lp.q || lp.kv;
  if (!lp.on) return kSuccess;
  lp.act_kv_in = c->act_kv;  // the lengths before the windows: a run with other values places them again
  return place_windows(p, op, "FIA-42", c);
}

Status fia_left_padding_run_windows(const FiaParams& p, const FiaPlan& P, const char* op, std::unique_ptr<FiaPlan>* moved) {
  moved->reset();
  if (p.query_padding_size == nullptr && p.kv_padding_size == nullptr) return kSuccess;
  FiaLeftPad lp = P.lp;
  if (p.query_padding_size != nullptr)
    MLAOPS_TRY(read_pad(p.query_padding_size, op, "queryPaddingSizeOptional", &lp.q_pad));
  if (p.kv_padding_size != nullptr) MLAOPS_TRY(read_pad(p.kv_padding_size, op, "kvPaddingSizeOptional", &lp.kv_pad));
  // Unused values (no window applies) and the planned values (after clamping): the plan as it is.
  if (!P.lp.on || (lp.q_pad == P.lp.q_pad && lp.kv_pad == P.lp.kv_pad)) return kSuccess;
  // Other values: the windows placed again from the lengths before padding, on a copy of the plan
  // (its items, tasks, rows and workspace are the planned ones: fia_attn_sizes bounds the KV by
  // those lengths). Placed and checked before the copy, so a failure allocates nothing.
  FiaCall c;
  c.lp = lp;
  c.B = P.B;
  c.QS = P.QS;
  c.kv_s = P.kv_s;
  c.act_q = P.act_q;
  c.act_kv = lp.act_kv_in;
  c.q_start.assign(static_cast<size_t>(c.B), 0);
  c.kv_start.assign(static_cast<size_t>(c.B), 0);
  c.prefix.len = P.prefix.len;
  c.explicit_mask = P.explicit_mask;
  c.pse = P.pse;
  MLAOPS_TRY(place_windows(p, op, "FIA-40 run-time padding", &c));
  auto np = std::make_unique<FiaPlan>(P);
  np->lp = lp;
  np->act_kv = std::move(c.act_kv);
  np->q_start = std::move(c.q_start);
  np->kv_start = std::move(c.kv_start);
  *moved = std::move(np);
  return kSuccess;
}

}  // namespace mlaops

// FusedInferAttentionScoreV4 phase 1: mask, pseShift and learnableSink rules (ops/fia/fia_check_masks.h).
#include "ops/fia/fia_check_masks.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "ops/common/check_util.h"
#include "ops/fia/fia.h"

namespace mlaops::fia_checks {
namespace {

using check::rank_in;
using check::shape_str;

bool is_2048_template(const TensorView& m) {
  if (m.rank < 2 || m.rank > 4) return false;
  for (int i = 0; i < m.rank - 2; ++i)
    if (m.dims[i] != 1) return false;
  return m.dim(-1) == 2048 && m.dim(-2) == 2048;
}

int64_t max_of(const std::vector<int64_t>& v, int64_t floor) {
  int64_t m = floor;
  for (int64_t x : v) m = std::max(m, x);
  return m;
}
}  // namespace

// FIA-14 mask.
Status check_mask(const FiaParams& p, const char* op, FiaCall* c) {
  c->decode_rule = !c->packed && c->QS == 1 && !c->rope && c->QD == c->VD;
  c->mode = p.sparse_mode;
  c->pre = p.pre_tokens;
  c->next = p.next_tokens;
  const TensorView* mask = p.atten_mask;
  MLAOPS_CHECK(c->mode == 0 || mask != nullptr, kParamInvalid,
               "%s: attenMaskOptional: FIA-14 needed by sparseMode %lld; allowed a mask, got null", op,
               (long long)c->mode);
  if (mask == nullptr) return kSuccess;
  if (c->mode == 9) return fia_tree_check(p, op, c);  // the tree mask (ops/fia/fia_tree_mask.h)
  // Decode without rope: the sparse mode is ignored, so with sparseMode 2/3/4 a mask that is not
  // the 2048 template is an explicit mask of the sparse 0/1 forms ((B or 1, KV_S), (B, 1, KV_S),
  // (B, 1, 1, KV_S), ...) and is applied; the template itself masks nothing there.
  const bool decode_explicit = c->decode_rule && c->mode >= 2 && !is_2048_template(*mask);
  if (c->mode >= 2 && !decode_explicit) {
    MLAOPS_CHECK(is_2048_template(*mask), kParamInvalid,
                 "%s: attenMaskOptional: FIA-14 shape for sparseMode %lld; allowed [2048, 2048], [1, 2048, 2048] or "
                 "[1, 1, 2048, 2048], got %s",
                 op, (long long)c->mode, shape_str(*mask).c_str());
    return kSuccess;
  }
  MLAOPS_TRY(rank_in(op, "attenMaskOptional", "FIA-14", *mask, {2, 3, 4}));
  const int64_t max_q = max_of(c->act_q, 0), max_kv = max_of(c->act_kv, 0) + c->prefix.len;
  int64_t batch_dim = -1, rows = 0;
  const int64_t* st = mask->strides;
  if (mask->rank == 2) {
    MLAOPS_CHECK(!c->packed, kParamInvalid,
                 "%s: attenMaskOptional: FIA-14 a 2-D mask is not accepted with TND/NTD layouts; allowed rank 3 or 4, "
                 "got %s",
                 op, shape_str(*mask).c_str());
    if (c->QS == 1) {  // (B, KV_S)
      batch_dim = mask->dims[0];
      rows = 1;
      c->mask_b = st[0];
      c->mask_i = 0;
    } else {  // (Q_S, KV_S)
      rows = mask->dims[0];
      c->mask_i = st[0];
    }
    c->mask_j = st[1];
  } else if (mask->rank == 3) {
    batch_dim = mask->dims[0];
    rows = mask->dims[1];
    c->mask_b = st[0];
    c->mask_i = st[1];
    c->mask_j = st[2];
  } else {
    MLAOPS_CHECK(mask->dims[1] == 1, kParamInvalid, "%s: attenMaskOptional: FIA-14 4-D mask dim 1; allowed 1, got %lld",
                 op, (long long)mask->dims[1]);
    batch_dim = mask->dims[0];
    rows = mask->dims[2];
    c->mask_b = st[0];
    c->mask_i = st[2];
    c->mask_j = st[3];
  }
  if (batch_dim >= 0) {
    MLAOPS_CHECK(batch_dim == c->B || batch_dim == 1, kParamInvalid,
                 "%s: attenMaskOptional: FIA-14 batch dim; allowed B (%lld) or 1, got %lld", op, (long long)c->B,
                 (long long)batch_dim);
    if (batch_dim == 1) c->mask_b = 0;
  }
  MLAOPS_CHECK(rows >= max_q && mask->dim(-1) >= max_kv, kParamInvalid,
               "%s: attenMaskOptional: FIA-14 extent; allowed >= %lld rows and >= %lld columns, got %s", op,
               (long long)max_q, (long long)max_kv, shape_str(*mask).c_str());
  c->explicit_mask = true;
  return kSuccess;
}

// FIA-22 pseShift: [B or 1, N, >= the query rows read, >= the KV positions read], the query
// dtype (the dtype row above). The aclnn layer adds the vendor's decode rules.
Status check_pse(const FiaParams& p, const FiaCheckOptions& o, FiaCall* c) {
  const TensorView* pse = p.pse_shift;
  if (pse == nullptr) return kSuccess;
  const char* op = o.op;
  MLAOPS_TRY(rank_in(op, "pseShiftOptional", "FIA-22", *pse, {4}));
  const int64_t max_q = max_of(c->act_q, 0), max_kv = max_of(c->act_kv, 0) + c->prefix.len;
  MLAOPS_CHECK((pse->dims[0] == c->B || pse->dims[0] == 1) && pse->dims[1] == c->N && pse->dims[2] >= max_q &&
                   pse->dims[3] >= max_kv,
               kParamInvalid,
               "%s: pseShiftOptional: FIA-22 pseShift shape; allowed [B (%lld) or 1, N (%lld), >= %lld, >= %lld], got %s", op,
               (long long)c->B, (long long)c->N, (long long)max_q, (long long)max_kv, shape_str(*pse).c_str());
  if (o.vendor_ranges && c->QS == 1 && !c->packed) {
    MLAOPS_CHECK(c->QD % 16 == 0, kParamInvalid,
                 "%s: pseShiftOptional: FIA-22 with Q_S = 1 the vendor needs a head dim multiple of 16; allowed D %% 16 "
                 "== 0, got D %lld",
                 op, (long long)c->QD);
    MLAOPS_CHECK(!c->aq.on || pse->dims[2] == 1, kParamInvalid,
                 "%s: pseShiftOptional: FIA-22 with KV antiquant and Q_S = 1 dim 2 must be 1; allowed 1, got %lld", op,
                 (long long)pse->dims[2]);
  }
  c->pse = true;
  c->pse_b = pse->dims[0] == 1 ? 0 : pse->strides[0];
  c->pse_n = pse->strides[1];
  c->pse_i = pse->strides[2];
  return kSuccess;
}

// FIA-23 learnableSink: [N] (the dtype row above).
Status check_sink(const FiaParams& p, const char* op, FiaCall* c) {
  const TensorView* sink = p.learnable_sink;
  if (sink == nullptr) return kSuccess;
  MLAOPS_CHECK(sink->rank == 1 && sink->dims[0] == c->N, kParamInvalid,
               "%s: learnableSinkOptional: FIA-23 sink shape; allowed [N] = [%lld], got %s", op, (long long)c->N,
               shape_str(*sink).c_str());
  c->sink = true;
  return kSuccess;
}

}  // namespace mlaops::fia_checks

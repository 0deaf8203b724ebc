// FusedInferAttentionScoreV4 tree mask (sparseMode 9): its rules and per-batch addressing
// (ops/fia/fia_tree_mask.h).
#include "ops/fia/fia_tree_mask.h"

#include "core/checked_math.h"
#include "core/error.h"
#include "ops/common/check_util.h"
#include "ops/fia/fia.h"

namespace mlaops {

Status fia_tree_check(const FiaParams& p, const char* op, FiaCall* c) {
  const TensorView& m = *p.atten_mask;  // present: FIA-14 requires a mask for sparseMode 9
  const int64_t B = c->B;
  // FIA-14: (B, Q_S, Q_S), or 1-D of length sum actQ[b]^2 with TND / NTD
  c->tree_off.assign(static_cast<size_t>(B), 0);
  c->tree_i.assign(static_cast<size_t>(B), 0);
  if (c->packed) {
    const int64_t st = m.rank == 1 ? m.strides[0] : 1;
    int64_t total = 0;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t s1 = c->act_q[static_cast<size_t>(b)];
      int64_t sq = 0;
      MLAOPS_CHECK(mul_ok(s1, s1, &sq) && add_ok(total, sq, &sq) && mul_ok(sq, st, &sq), kParamInvalid,
                   "%s: attenMaskOptional: FIA-17 the tree mask length sum actQ^2 overflows int64", op);
      c->tree_off[static_cast<size_t>(b)] = total * st;
      c->tree_i[static_cast<size_t>(b)] = s1 * st;
      total += s1 * s1;
    }
    MLAOPS_CHECK(m.rank == 1 && m.dims[0] == total, kParamInvalid,
                 "%s: attenMaskOptional: FIA-14 tree mask (sparseMode 9) with layout %s is 1-D, the per-batch actQ x "
                 "actQ blocks; allowed [%lld], got %s",
                 op, fia_layout_name(c->in_l), (long long)total, check::shape_str(m).c_str());
    c->mask_j = m.strides[0];
  } else {
    MLAOPS_CHECK(m.rank == 3 && m.dims[0] == B && m.dims[1] == c->QS && m.dims[2] == c->QS, kParamInvalid,
                 "%s: attenMaskOptional: FIA-14 tree mask (sparseMode 9) shape; allowed %s, got %s", op,
                 check::dims_str({B, c->QS, c->QS}).c_str(), check::shape_str(m).c_str());
    for (int64_t b = 0; b < B; ++b) {
      c->tree_off[static_cast<size_t>(b)] = b * m.strides[0];
      c->tree_i[static_cast<size_t>(b)] = m.strides[1];
    }
    c->mask_j = m.strides[2];
  }
  // FIA-35: the draft tokens are the last S1 of the S2 positions
  for (int64_t b = 0; b < B; ++b) {
    const int64_t s1 = c->act_q[static_cast<size_t>(b)], s2 = c->act_kv[static_cast<size_t>(b)];
    MLAOPS_CHECK(s1 <= s2, kParamInvalid,
                 "%s: actualSeqLengths: FIA-35 tree mask (sparseMode 9) needs actQ <= actKV in every batch; allowed "
                 "<= %lld in batch %lld, got %lld",
                 op, (long long)s2, (long long)b, (long long)s1);
  }
  c->tree = true;
  c->explicit_mask = true;
  c->mask_b = 0;
  c->mask_i = 0;
  return kSuccess;
}

void fia_tree_rows(const FiaCall& c, int64_t b, int64_t* offset, int64_t* mask_i, int64_t* mask_j0) {
  const size_t u = static_cast<size_t>(b);
  *offset = c.tree_off[u];
  *mask_i = c.tree_i[u];
  *mask_j0 = c.act_kv[u] - c.act_q[u];
}

}  // namespace mlaops

// Float64 reference of FusedInferAttentionScoreV4 left padding (queryPaddingSize / kvPaddingSize,
// docs/ops/fused_infer_attention_score.md "Left padding"), written from the definition: batch b's
// valid query rows are [Q_S - qPad - actQ[b], Q_S - qPad) (Q_S > 1 with actualSeqLengths), its
// valid KV positions [KV_S - kvPad - actKV[b], KV_S - kvPad) (with actualSeqLengthsKv); negative
// padding values count as 0. The explicit mask and pseShift are read at these padded coordinates,
// and with sparse 0 pre / next are ignored.
#pragma once

#include <cstdint>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"

namespace mlaops {

struct FiaRefLeftPad {
  bool on = false;                    // a padding applies
  std::vector<int64_t> q_off, kv_off;  // per batch: the first valid query row / KV position
  int64_t q(int64_t b) const { return on ? q_off[static_cast<size_t>(b)] : 0; }
  int64_t kv(int64_t b) const { return on ? kv_off[static_cast<size_t>(b)] : 0; }
};

// Reads the padding tensors and places each batch's windows; Q_S = 1 with a KV window starting
// before position 0 sets that batch's actKV to 0 (output 0, lse +inf); Q_S > 1 with a window
// starting before 0 is an error. Paged, packed (TND / NTD) and MLA calls with padding are errors.
Status fia_ref_left_padding(const FiaParams& p, int64_t B, int64_t QS, int64_t KVS, bool paged, bool packed, bool rope,
                            const std::vector<int64_t>& act_q, std::vector<int64_t>* act_kv, FiaRefLeftPad* lp);

}  // namespace mlaops

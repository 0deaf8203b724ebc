// Float64 golden reference of the FusedInferAttentionScoreV4 shared prefix
// (docs/ops/fused_infer_attention_score.md "Shared prefix"): keySharedPrefix / valueSharedPrefix
// (batch dim 1) and actualSharedPrefixLen (Lp) are prepended logically to every batch's KV:
//   K_eff[b] = concat(keySharedPrefix[0][:, :Lp], K[b][:, :actKV[b]]), V likewise,
// so the mask / pse columns [0, Lp) are the prefix and [Lp, Lp + actKV[b]) the batch's own
// tokens, and the sparse rules use S2 = Lp + actKV[b]. The reference builds K_eff / V_eff as
// plain tensors of the key's layout (S' = Lp + KV_S) and runs fused_infer_attention_score_v4_ref
// on them with actualSeqLengthsKv = Lp + actKV[b]; its own checks cover what it reads.
// actualSharedPrefixLen without the prefix tensors is ignored (the vendor's reading).
//
// INT8 / INT4 (INT32 words) key / value: the prefix has their dtype and K_eff / V_eff are built
// from the raw elements, so the reference dequantises prefix and own rows alike with the same
// parameters; per-token arrays are read at the K_eff position (prefix row j at j, own row t at
// Lp + t): they have Lp + KV_S positions.
//
// KV left padding (kvPaddingSize with actualSeqLengthsKv; the C++ API's extension, the vendor
// rejects the pair): the own rows are batch b's window [kv0, kv0 + actKV) with
// kv0 = KV_S - kvPad - actKV[b] (Q_S = 1 with kv0 < 0: no own row, the prefix stays), placed after
// the prefix; the explicit mask and pseShift are read at the columns of [prefix | KV tensor] in
// padded coordinates, prefix row j at column j and own row t at column Lp + kv0 + t (gathered
// into per-batch tensors for the inner call); with sparse 0 preTokens / nextTokens are ignored.
// Per-token antiquant parameters with left padding are not defined (an error).
#pragma once

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"
#include "reference/fia/fia_ref.h"

namespace mlaops {

Status fia_prefix_ref(const FiaParams& p);

}  // namespace mlaops

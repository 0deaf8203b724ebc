// FusedInferAttentionScoreV4 tree mask, sparseMode 9 (speculative decoding / MTP;
// docs/ops/fused_infer_attention_score.md "Tree mask"). Per batch b with S1 = actQ[b] query rows
// (the draft tokens) and S2 = actKV[b] positions (S1 <= S2, FIA-35): row i attends every position
// j < S2 - S1 (the committed context) and position S2 - S1 + t of the last S1 iff tree[i][t] == 0.
// attenMask holds the trees: (B, Q_S, Q_S) for BSH / BSND / BNSD (batch b's block tree[b][i][t],
// i, t < actQ[b]); 1-D of length sum_b actQ[b]^2 for TND / NTD (the per-batch actQ[b] x actQ[b]
// blocks concatenated, row-major). The kernels read it as an explicit mask covering the last S1
// columns (kernels/cpu/attention/attn_variant.h AttnMask::j0; the MLA full quant rows: MlaqArgs::mask).
#pragma once

#include <cstdint>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"

namespace mlaops {

struct FiaCall;

// FIA-14 (the tree's rank and shape) and FIA-35 (S1 <= S2 per batch); fills c->tree, c->tree_off,
// c->tree_i, c->mask_j and c->explicit_mask. Needs c's layouts and lengths; called by the mask
// rule for sparseMode 9. The vendor's exclusions (pseShift, learnableSink, INT8 output, INT8 KV
// outside the NZ cache) are FIA-24 rows (aclnn only; the C++ API computes them).
Status fia_tree_check(const FiaParams& p, const char* op, FiaCall* c);

// Batch b's tree for a kernel: *mask (element offset from attenMask's data), *mask_i (row
// stride), *mask_j0 = S2 - S1 (the first column the tree covers).
void fia_tree_rows(const FiaCall& c, int64_t b, int64_t* offset, int64_t* mask_i, int64_t* mask_j0);

}  // namespace mlaops

// Float64 reference of FusedInferAttentionScoreV4's innerPrecise numerics
// (docs/ops/fused_infer_attention_score.md "innerPrecise"), hooked from
// fia_ref.cpp:
//   * bit 0 = 1 with FP16 query / key / value on the vendor's prefill path (not the decode rule, no
//     rope, pseShift, learnableSink, shared prefix or quantisation): the FP16 softmax emulation,
//     every intermediate the vendor keeps in FP16 rounded once from its exact value, per block of
//     128 KV positions (block k = positions [128 k, 128 k + 128) of the batch's range);
//   * legacy_uniform_invalid_rows with bit 1 == 0: a row whose rule range is non-empty but fully
//     masked by the explicit mask (sparse 0 / 1, the decode mask; not with sparse 0 + left padding,
//     which the vendor corrects, nor with learnableSink, INT8 / INT4 key / value or a shared
//     prefix) gives the mean of V over the rule range,
//     lse = fill + log(count), fill -65504 (FP16 emulation) or -FLT_MAX.
// Independent of the library (ref_util.h only).
#pragma once

#include <cstdint>

#include "mlaops/fused_infer_attention_score.h"

namespace mlaops {

// Whether the FP16 emulation applies to p (decode_rule: the call takes the decode rule).
bool fia_ref_fp16_softmax(const FiaParams& p, bool decode_rule);
// Whether legacy rows apply (explicit_mask: an explicit sparse 0 / 1 or decode mask is applied;
// left_padding: query or KV padding is on).
bool fia_ref_legacy_rows(const FiaParams& p, bool explicit_mask, bool left_padding);

// One row under the FP16 emulation: dots[j] the exact q . k of position j < s2 (read where
// valid[j] != 0), v the [s2][vd] values. Writes acc[vd] = O / fp16(l) (the output before its
// store) and returns lse = m + log(l). At least one position must be valid.
double fia_ref_fp16_softmax_row(const double* dots, const char* valid, int64_t s2, const double* v, int64_t vd,
                                double scale, double* acc);

// One legacy row: acc[vd] = the mean of v over the positions with kept[j] != 0 (count > 0);
// returns fill + log(count).
double fia_ref_legacy_row(const char* kept, int64_t s2, const double* v, int64_t vd, bool fp16_softmax, double* acc);

}  // namespace mlaops

// The support sets of FusedInferAttentionScoreV4's rules as data (docs/ops/fused_infer_attention_score.md):
// the dtype and format rows, the layout strings and the cross-feature exclusions. The rules in
// fia_check.cpp read these tables, and the negative tests
// (tests/ops/fia/test_fia_errors.cpp) iterate the same rows.
#pragma once

#include <cstdint>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/tensor_view.h"

namespace mlaops {

// The dtypes a tensor may have; some sets are relative to the query's or the key's dtype.
enum class FiaDtypeSet {
  kHalf,         // FLOAT16, BF16
  kQuery,        // the query dtype
  kQueryOrInt8,  // the query dtype, or INT8 (key: KV antiquant, FIA-21; attentionOut: post-quant, FIA-26)
  kKeyIn,        // the query dtype, INT8 or INT32 (packed INT4) (KV antiquant, FIA-21 / FIA-33)
  kKey,          // the key dtype (INT8 / INT32 with an INT8 / INT32 key)
  kFloat32,
  kMask,         // BOOL, INT8, UINT8
  kInt32,
  kQueryDtypes,  // FLOAT16, BF16, INT8 (INT8: full quantisation, FIA-30)
  kOperand,      // the query dtype; FLOAT16 with an INT8 query (full quantisation: pseShift)
  kOutput,       // the operand dtype (above), or INT8 (post-quant, FIA-26)
};
std::vector<DType> fia_dtype_set(FiaDtypeSet set, const FiaParams& p);

struct FiaDtypeRow {
  const char* param;  // the name in messages
  const char* rule;   // its rule id
  const TensorView* (*tensor)(const FiaParams& p);  // null: not given
  FiaDtypeSet set;
};
// query, key, value, attentionOut, softmaxLse, queryRope, keyRope, attenMask, pseShift,
// learnableSink, blockTable: checked in this order.
const std::vector<FiaDtypeRow>& fia_dtype_rows();

struct FiaFormatRow {
  const char* param;
  const TensorView* (*tensor)(const FiaParams& p);
  bool nz_paged;  // FRACTAL_NZ is also allowed for a rank-5 paged cache
};
// Formats (FIA-04): ND (or the NCHW tag) for every tensor in the list.
const std::vector<FiaFormatRow>& fia_format_rows();

// The 13 inputLayout strings of the A2/A3 V4 checker: input and output layout of each.
struct FiaLayoutRow {
  const char* name;
  FiaLayout in, out;
};
const std::vector<FiaLayoutRow>& fia_layout_rows();

// Optional features of a call, for the cross-feature rules.
enum class FiaFeature {
  kPse,                 // pseShift given
  kSink,                // learnableSink given
  kRope,                // queryRope / keyRope (MLA)
  kPacked,              // a TND / NTD input layout
  kKvInt8,              // INT8 or INT4 (INT32) key / value (KV antiquant)
  kExplicitMask,        // an explicit mask (sparseMode 0 with attenMask, or 1)
  kLeftUpCausal,        // sparseMode 2
  kInnerPreciseNonZero, // innerPrecise != 0
  kTreeMask,            // sparseMode 9 (ops/fia/fia_tree_mask.h)
  kPostQuant,           // INT8 attentionOut (quantScale2)
  kKvInt8NotNz,         // INT8 / INT4 key / value outside a paged 5-D FRACTAL_NZ cache
  kSharedPrefix,        // keySharedPrefix / valueSharedPrefix given (ops/fia/fia_prefix.h)
  kLeftPadding,         // a left padding that applies (ops/fia/fia_left_padding.h): kvPaddingSize with
                        // actualSeqLengthsKv, or queryPaddingSize with actualSeqLengths and Q_S > 1
};
const char* fia_feature_name(FiaFeature f);
bool fia_has_feature(const FiaParams& p, FiaFeature f);

// Pairs of features the vendor's operator rejects together (FIA-24, the aclnn layer only; the
// C++ API computes them, its float64 reference defines the result). `param` is named in the
// message.
struct FiaExclusion {
  FiaFeature a, b;
  const char* param;
};
const std::vector<FiaExclusion>& fia_exclusions();

}  // namespace mlaops

// The support tables of FusedInferAttentionScoreV4's rules (fia_check.h):
// dtype and format rows, layout strings, features and their exclusions, as data.
#include <string>

#include "ops/fia/fia_check.h"

namespace mlaops {

namespace {

constexpr DType BF16 = DType::kBFloat16;
constexpr DType F16 = DType::kFloat16;
constexpr DType F32 = DType::kFloat32;
constexpr DType I32 = DType::kInt32;
constexpr DType I8 = DType::kInt8;

const TensorView* query_of(const FiaParams& p) { return &p.query; }
const TensorView* key_of(const FiaParams& p) { return p.key.empty() ? nullptr : &p.key[0]; }
const TensorView* value_of(const FiaParams& p) { return p.value.empty() ? nullptr : &p.value[0]; }
const TensorView* out_of(const FiaParams& p) { return &p.attention_out; }
const TensorView* lse_of(const FiaParams& p) { return p.softmax_lse_flag ? p.softmax_lse : nullptr; }
const TensorView* query_rope_of(const FiaParams& p) { return p.query_rope; }
const TensorView* key_rope_of(const FiaParams& p) { return p.key_rope; }
const TensorView* mask_of(const FiaParams& p) { return p.atten_mask; }
const TensorView* pse_of(const FiaParams& p) { return p.pse_shift; }
const TensorView* sink_of(const FiaParams& p) { return p.learnable_sink; }
const TensorView* block_table_of(const FiaParams& p) { return p.block_table; }

}  // namespace

std::vector<DType> fia_dtype_set(FiaDtypeSet set, const FiaParams& p) {
  switch (set) {
    case FiaDtypeSet::kHalf: return {F16, BF16};
    case FiaDtypeSet::kQuery: return {p.query.dtype};
    case FiaDtypeSet::kQueryOrInt8:
      if (p.query.dtype == I8) return {I8};
      return {p.query.dtype, I8};
    case FiaDtypeSet::kKeyIn:  // an INT8 query (full quantisation) takes INT8 key / value only
      if (p.query.dtype == I8) return {I8};
      return {p.query.dtype, I8, I32};
    case FiaDtypeSet::kKey:
      return {p.key.empty() || (p.key[0].dtype != I8 && p.key[0].dtype != I32) ? p.query.dtype : p.key[0].dtype};
    case FiaDtypeSet::kFloat32: return {F32};
    case FiaDtypeSet::kMask: return {DType::kBool, I8, DType::kUInt8};
    case FiaDtypeSet::kInt32: return {I32};
    case FiaDtypeSet::kQueryDtypes: return {F16, BF16, I8};
    case FiaDtypeSet::kOperand: return {p.query.dtype == I8 ? F16 : p.query.dtype};
    case FiaDtypeSet::kOutput:
      if (p.query.dtype == I8) return {F16, I8};
      return {p.query.dtype, I8};
  }
  return {};
}

const std::vector<FiaDtypeRow>& fia_dtype_rows() {
  static const std::vector<FiaDtypeRow> rows = {
      {"query", "FIA-03 (INT8: full quantisation, FIA-30)", query_of, FiaDtypeSet::kQueryDtypes},
      {"key", "FIA-03 (= query dtype, or INT8 / INT32 = packed INT4 with KV antiquant; INT8 with an INT8 query)", key_of,
       FiaDtypeSet::kKeyIn},
      {"value", "FIA-03 / FIA-21 (= key dtype: the query dtype, or INT8 / INT32 with an INT8 / INT32 key)", value_of,
       FiaDtypeSet::kKey},
      {"attentionOut", "FIA-03 (= query dtype (FLOAT16 for an INT8 query), or INT8 with quantScale2, FIA-26)", out_of,
       FiaDtypeSet::kOutput},
      {"softmaxLse", "FIA-03", lse_of, FiaDtypeSet::kFloat32},
      {"queryRopeOptional", "FIA-03 (= query dtype)", query_rope_of, FiaDtypeSet::kQuery},
      {"keyRopeOptional", "FIA-03 (= query dtype)", key_rope_of, FiaDtypeSet::kQuery},
      {"attenMaskOptional", "FIA-14", mask_of, FiaDtypeSet::kMask},
      {"pseShiftOptional", "FIA-22 (= query dtype; FLOAT16 for an INT8 query)", pse_of, FiaDtypeSet::kOperand},
      {"learnableSinkOptional", "FIA-23", sink_of, FiaDtypeSet::kHalf},
      {"blockTableOptional", "FIA-12", block_table_of, FiaDtypeSet::kInt32},
  };
  return rows;
}

const std::vector<FiaFormatRow>& fia_format_rows() {
  static const std::vector<FiaFormatRow> rows = {
      {"query", query_of, false},
      {"key", key_of, true},
      {"value", value_of, true},
      {"attentionOut", out_of, false},
      {"softmaxLse", lse_of, false},
      {"queryRopeOptional", query_rope_of, false},
      {"keyRopeOptional", key_rope_of, true},
      {"attenMaskOptional", mask_of, false},
      {"pseShiftOptional", pse_of, false},
      {"learnableSinkOptional", sink_of, false},
      {"blockTableOptional", block_table_of, false},
  };
  return rows;
}

const std::vector<FiaLayoutRow>& fia_layout_rows() {
  static const std::vector<FiaLayoutRow> rows = {
      {"BSH", FiaLayout::kBSH, FiaLayout::kBSH},          {"BSND", FiaLayout::kBSND, FiaLayout::kBSND},
      {"BNSD", FiaLayout::kBNSD, FiaLayout::kBNSD},       {"TND", FiaLayout::kTND, FiaLayout::kTND},
      {"NTD", FiaLayout::kNTD, FiaLayout::kNTD},          {"BSH_BNSD", FiaLayout::kBSH, FiaLayout::kBNSD},
      {"BSND_BNSD", FiaLayout::kBSND, FiaLayout::kBNSD},  {"BNSD_BSND", FiaLayout::kBNSD, FiaLayout::kBSND},
      {"NTD_TND", FiaLayout::kNTD, FiaLayout::kTND},      {"TND_NTD", FiaLayout::kTND, FiaLayout::kNTD},
      {"BSH_NBSD", FiaLayout::kBSH, FiaLayout::kNBSD},    {"BSND_NBSD", FiaLayout::kBSND, FiaLayout::kNBSD},
      {"BNSD_NBSD", FiaLayout::kBNSD, FiaLayout::kNBSD},
  };
  return rows;
}

bool parse_fia_layout(const std::string& layout, FiaLayout* in, FiaLayout* out) {
  for (const FiaLayoutRow& r : fia_layout_rows()) {
    if (layout == r.name) {
      if (in != nullptr) *in = r.in;
      if (out != nullptr) *out = r.out;
      return true;
    }
  }
  return false;
}

const char* fia_layout_name(FiaLayout layout) {
  switch (layout) {
    case FiaLayout::kBSH: return "BSH";
    case FiaLayout::kBSND: return "BSND";
    case FiaLayout::kBNSD: return "BNSD";
    case FiaLayout::kTND: return "TND";
    case FiaLayout::kNTD: return "NTD";
    case FiaLayout::kNBSD: return "NBSD";
  }
  return "?";
}

const char* fia_feature_name(FiaFeature f) {
  switch (f) {
    case FiaFeature::kPse: return "pseShift";
    case FiaFeature::kSink: return "learnableSink";
    case FiaFeature::kRope: return "queryRope / keyRope (MLA)";
    case FiaFeature::kPacked: return "a TND / NTD layout";
    case FiaFeature::kKvInt8: return "INT8 / INT4 key / value (KV antiquant)";
    case FiaFeature::kExplicitMask: return "an explicit mask (sparseMode 0 with attenMask, or 1)";
    case FiaFeature::kLeftUpCausal: return "sparseMode 2";
    case FiaFeature::kInnerPreciseNonZero: return "innerPrecise != 0";
    case FiaFeature::kTreeMask: return "the tree mask (sparseMode 9)";
    case FiaFeature::kPostQuant: return "INT8 output (post-quant)";
    case FiaFeature::kKvInt8NotNz: return "INT8 / INT4 key / value outside the paged FRACTAL_NZ cache";
    case FiaFeature::kSharedPrefix: return "a shared prefix (keySharedPrefix / valueSharedPrefix)";
    case FiaFeature::kLeftPadding: return "left padding (queryPaddingSize / kvPaddingSize)";
  }
  return "?";
}

bool fia_has_feature(const FiaParams& p, FiaFeature f) {
  switch (f) {
    case FiaFeature::kPse: return p.pse_shift != nullptr;
    case FiaFeature::kSink: return p.learnable_sink != nullptr;
    case FiaFeature::kRope: return p.query_rope != nullptr || p.key_rope != nullptr;
    case FiaFeature::kPacked: {
      FiaLayout in;
      return parse_fia_layout(p.input_layout, &in, nullptr) && fia_layout_is_packed(in);
    }
    case FiaFeature::kKvInt8: return !p.key.empty() && (p.key[0].dtype == I8 || p.key[0].dtype == I32);
    case FiaFeature::kExplicitMask: return p.atten_mask != nullptr && (p.sparse_mode == 0 || p.sparse_mode == 1);
    case FiaFeature::kLeftUpCausal: return p.sparse_mode == 2;
    case FiaFeature::kInnerPreciseNonZero: return p.inner_precise != 0;
    case FiaFeature::kTreeMask: return p.sparse_mode == 9;
    case FiaFeature::kPostQuant: return p.quant_scale2 != nullptr;
    case FiaFeature::kKvInt8NotNz:
      return !p.key.empty() && (p.key[0].dtype == I8 || p.key[0].dtype == I32) &&
             !(p.block_table != nullptr && p.key[0].rank == 5);
    case FiaFeature::kSharedPrefix: return p.key_shared_prefix != nullptr || p.value_shared_prefix != nullptr;
    case FiaFeature::kLeftPadding: {
      if (p.kv_padding_size != nullptr && p.actual_seq_lengths_kv != nullptr) return true;
      if (p.query_padding_size == nullptr || p.actual_seq_lengths == nullptr) return false;
      FiaLayout in;  // query padding applies with Q_S > 1 (BSH / BSND: dim 1, BNSD: dim 2)
      if (!parse_fia_layout(p.input_layout, &in, nullptr) || fia_layout_is_packed(in)) return false;
      const int s_dim = in == FiaLayout::kBNSD ? 2 : 1;
      return p.query.rank > s_dim && p.query.dims[s_dim] > 1;
    }
  }
  return false;
}

const std::vector<FiaExclusion>& fia_exclusions() {
  static const std::vector<FiaExclusion> rows = {
      {FiaFeature::kSink, FiaFeature::kPse, "learnableSinkOptional"},
      {FiaFeature::kSink, FiaFeature::kRope, "learnableSinkOptional"},
      {FiaFeature::kSink, FiaFeature::kKvInt8, "learnableSinkOptional"},
      {FiaFeature::kSink, FiaFeature::kInnerPreciseNonZero, "learnableSinkOptional"},
      {FiaFeature::kSink, FiaFeature::kExplicitMask, "learnableSinkOptional"},
      {FiaFeature::kSink, FiaFeature::kLeftUpCausal, "learnableSinkOptional"},
      {FiaFeature::kPse, FiaFeature::kPacked, "pseShiftOptional"},
      {FiaFeature::kPse, FiaFeature::kRope, "pseShiftOptional"},
      {FiaFeature::kTreeMask, FiaFeature::kPse, "pseShiftOptional"},
      {FiaFeature::kTreeMask, FiaFeature::kSink, "learnableSinkOptional"},
      {FiaFeature::kTreeMask, FiaFeature::kPostQuant, "quantScale2Optional"},
      {FiaFeature::kTreeMask, FiaFeature::kKvInt8NotNz, "key"},
      // the vendor's decode tiling: "shared prefix with kv padding is not supported"
      {FiaFeature::kSharedPrefix, FiaFeature::kLeftPadding, "keySharedPrefixOptional"},
  };
  return rows;
}

}  // namespace mlaops

// MlaPreprocess: the rules of docs/ops/mla_preprocess.md (mla_preprocess_check.cpp) and the
// support tables they are made of. Each table row names a parameter, what it may take and the
// rule id; the same rows drive the negative tests (tests/ops/mla_preprocess/).
//
// Parameters are named as in the aclnn prototype ("input", "kvCache", ...); shapes use the
// symbols of include/mlaops/mla_preprocess.h.
#pragma once

#include <array>
#include <cstdint>

#include "mlaops/mla_preprocess.h"
#include "ops/common/check_util.h"

namespace mlaops {

struct MlaPreprocessCheckOptions {
  const char* op = "mla_preprocess";  // the name used in messages (the aclnn entry point)
  bool vendor_ranges = false;         // the aclnn layer: the vendor's shape ranges and combinations
  bool v2 = false;                    // aclnnMlaPreprocessV2: its tiling's ranges (no headNum / Hcq / D
                                      // range) and contiguous caches (it makes them contiguous first)
  bool mlapo = false;                 // the serving stacks' MLAPO op (mlaops/mlapo.h): first stage a quant
                                      // without RmsNorm (no gamma0 / beta0), beta1 optional, cos / sin
                                      // optional together (MPP-20), deScale FP32 or INT64 with either dtype
};

// The shape symbols of one call (include/mlaops/mla_preprocess.h).
struct MlaPreprocessShape {
  int64_t T = 0, He = 0, Hckv = 0, Dr = 0, Hcq = 0, N = 0, D = 0;
  int64_t block_num = 0, block_size = 0;
  int64_t m1_cols = 0;  // Hckv + Dr + Hcq: output channels of wdqkv, [ckv | kpe | cq]
  int64_t m2_cols = 0;  // N * (D + Dr): output channels of wuq, per head [qn | qp]
};

namespace mla_preprocess_table {

using namespace check::names;  // NOLINT(google-build-using-namespace): F16, ND, ... in the rows

// ---- single parameter ----

// MPP-02: dtypes of every tensor (optional ones when given). Which of the allowed dtypes a call
// needs follows from the input dtype, the weights and the cache mode (cross-feature below).
inline constexpr check::DtypeRow kDtypes[] = {
    {"input", {F16, BF16}, "MPP-02"},
    {"gamma0", {F16, BF16}, "MPP-02"},
    {"beta0", {F16, BF16}, "MPP-02"},
    {"quantScale0", {F16, BF16}, "MPP-02"},
    {"quantOffset0", {I8}, "MPP-02"},
    {"wdqkv", {I8, F16, BF16}, "MPP-02"},
    {"deScale0", {I64, F32}, "MPP-02"},
    {"bias0", {I32}, "MPP-02"},
    {"gamma1", {F16, BF16}, "MPP-02"},
    {"beta1", {F16, BF16}, "MPP-02"},
    {"quantScale1", {F16, BF16}, "MPP-02"},
    {"quantOffset1", {I8}, "MPP-02"},
    {"wuq", {I8, F16, BF16}, "MPP-02"},
    {"deScale1", {I64, F32}, "MPP-02"},
    {"bias1", {I32}, "MPP-02"},
    {"gamma2", {F16, BF16}, "MPP-02"},
    {"cos", {F16, BF16}, "MPP-02"},
    {"sin", {F16, BF16}, "MPP-02"},
    {"wuk", {F16, BF16}, "MPP-02"},
    {"kvCache", {I8, F16, BF16}, "MPP-02"},
    {"kvCacheRope", {F16, BF16}, "MPP-02"},
    {"ctkvScale", {F16, BF16}, "MPP-02"},
    {"qNopeScale", {F16, BF16}, "MPP-02"},
    {"qOut", {I8, F16, BF16}, "MPP-02"},
    {"qRopeOut", {F16, BF16}, "MPP-02"},
    {"qDownOut", {F16, BF16}, "MPP-02"},
};
// MPP-02: slotMapping, by layer (the C++ API also takes INT64).
inline constexpr check::DtypeRow kSlotDtypeAclnn[] = {{"slotMapping", {I32}, "MPP-02"}};
inline constexpr check::DtypeRow kSlotDtypeCpp[] = {{"slotMapping", {I32, I64}, "MPP-02"}};

// MPP-03: formats (the caches by cache mode: cross-feature below).
inline constexpr check::FormatRow kFormats[] = {
    {"input", {ND, NCHW}, "MPP-03"},
    {"gamma0", {ND, NCHW}, "MPP-03"},
    {"beta0", {ND, NCHW}, "MPP-03"},
    {"quantScale0", {ND, NCHW}, "MPP-03"},
    {"quantOffset0", {ND, NCHW}, "MPP-03"},
    {"wdqkv", {NZ}, "MPP-03 (wdqkv / wuq are passed transposed in FRACTAL_NZ)"},
    {"deScale0", {ND, NCHW}, "MPP-03"},
    {"bias0", {ND, NCHW}, "MPP-03"},
    {"gamma1", {ND, NCHW}, "MPP-03"},
    {"beta1", {ND, NCHW}, "MPP-03"},
    {"quantScale1", {ND, NCHW}, "MPP-03"},
    {"quantOffset1", {ND, NCHW}, "MPP-03"},
    {"wuq", {NZ}, "MPP-03 (wdqkv / wuq are passed transposed in FRACTAL_NZ)"},
    {"deScale1", {ND, NCHW}, "MPP-03"},
    {"bias1", {ND, NCHW}, "MPP-03"},
    {"gamma2", {ND, NCHW}, "MPP-03"},
    {"cos", {ND, NCHW}, "MPP-03"},
    {"sin", {ND, NCHW}, "MPP-03"},
    {"wuk", {ND, NCHW, NZ}, "MPP-03"},
    {"slotMapping", {ND, NCHW}, "MPP-03"},
    {"ctkvScale", {ND, NCHW}, "MPP-03"},
    {"qNopeScale", {ND, NCHW}, "MPP-03"},
    {"qOut", {ND, NCHW}, "MPP-03"},
    {"qRopeOut", {ND, NCHW}, "MPP-03"},
    {"qDownOut", {ND, NCHW}, "MPP-03"},
};

// MPP-04: dim counts (wdqkv / wuq: 2 logical or 4 NZ dims; wuk: 3 ND or 4 NZ).
inline constexpr check::RankRow kRanks[] = {
    {"input", {2}, "MPP-04"},        {"gamma0", {1}, "MPP-04"},       {"beta0", {1}, "MPP-04"},
    {"quantScale0", {1}, "MPP-04"},  {"quantOffset0", {1}, "MPP-04"}, {"wdqkv", {2, 4}, "MPP-04"},
    {"deScale0", {1}, "MPP-04"},     {"bias0", {1}, "MPP-04"},        {"gamma1", {1}, "MPP-04"},
    {"beta1", {1}, "MPP-04"},        {"quantScale1", {1}, "MPP-04"},  {"quantOffset1", {1}, "MPP-04"},
    {"wuq", {2, 4}, "MPP-04"},       {"deScale1", {1}, "MPP-04"},     {"bias1", {1}, "MPP-04"},
    {"gamma2", {1}, "MPP-04"},       {"cos", {2}, "MPP-04"},          {"sin", {2}, "MPP-04"},
    {"wuk", {3, 4}, "MPP-04"},       {"kvCache", {4}, "MPP-04"},      {"kvCacheRope", {4}, "MPP-04"},
    {"slotMapping", {1}, "MPP-04"},  {"ctkvScale", {1}, "MPP-04"},    {"qNopeScale", {1, 2, 3}, "MPP-04"},
    {"qOut", {3}, "MPP-04"},         {"qRopeOut", {3}, "MPP-04"},     {"qDownOut", {2}, "MPP-04"},
};

// MPP-07: quantMode values; the vendor rejects 2 and 3 ("not implemented").
struct QuantModeRow {
  int64_t value;
  const char* name;
  bool implemented;
};
inline constexpr QuantModeRow kQuantModes[] = {{0, "PER_TENSOR_QUANT_ASYMM", true},
                                               {1, "PER_TOKEN_QUANT_SYMM", true},
                                               {2, "PER_TOKEN_QUANT_ASYMM", false},
                                               {3, "UNQUANT", false}};

// MPP-12: reserved attributes; other values would select behaviour that is not implemented
// (wdqDim, qRopeDim, kRopeDim are ignored: the sizes come from the tensors).
struct IntAttrRow {
  const char* name;
  int64_t MlaPreprocessParams::*field;
  check::Allowed<int64_t> allowed;
  const char* rule;
};
inline constexpr IntAttrRow kIntAttrs[] = {
    {"qRotaryCoeff", &MlaPreprocessParams::q_rotary_coeff, {2}, "MPP-12 (half-rotation RoPE only)"},
    {"kRotaryCoeff", &MlaPreprocessParams::k_rotary_coeff, {2}, "MPP-12 (half-rotation RoPE only)"},
    {"wdkvSplitCount", &MlaPreprocessParams::wdkv_split_count, {1}, "MPP-12"},
};
struct BoolAttrRow {
  const char* name;
  bool MlaPreprocessParams::*field;
};
// MPP-12: must be true (the weights are always the transposed (N, K) form).
inline constexpr BoolAttrRow kTransposeAttrs[] = {{"transposeWdq", &MlaPreprocessParams::transpose_wdq},
                                                  {"transposeWuq", &MlaPreprocessParams::transpose_wuq},
                                                  {"transposeWuk", &MlaPreprocessParams::transpose_wuk}};

// MPP-14: the outputs (disjoint from each other and from every input the call reads; the cache
// outputs as the bytes their views span). kvCache / kvCacheRope give the geometry only and are
// not read, so they may overlap anything (the in-place call passes them as the cache outputs).
inline constexpr const char* kOutputs[] = {"qOut", "qRopeOut", "qDownOut", "kvCacheOut", "krCacheOut"};
inline constexpr const char* kNotRead[] = {"kvCache", "kvCacheRope"};

// ---- existence ----

// MPP-01: required tensors (kvCacheOut: the C++ API takes a default view as "kvCache itself").
inline constexpr const char* kRequired[] = {"input", "gamma0", "beta0", "wdqkv", "gamma1",      "beta1", "wuq",
                                            "gamma2", "cos",   "sin",   "wuk",   "kvCache", "slotMapping", "qOut"};
// MPP-01 in the serving op (mlaops/mlapo.h): no gamma0 / beta0; beta1 optional; cos / sin optional
// together (MPP-20).
inline constexpr const char* kRequiredMlapo[] = {"input", "wdqkv", "gamma1",  "wuq",         "gamma2",
                                                 "wuk",   "kvCache", "slotMapping", "qOut"};

// MPP-10: the optional tensors and the feature that reads them. Each is required when its feature
// is on; when it is off the tensor is ignored (mla_preprocess_unread: not read, not checked).
// krCacheOut may be null in the C++ API ("kvCacheRope itself").
enum class Feature { kRopeOutputs, kInt8Cache, kInt8Weights, kPerTensorQuant };
struct PresenceRow {
  const char* param;
  Feature needs;
};
inline constexpr PresenceRow kPresence[] = {
    {"kvCacheRope", Feature::kRopeOutputs}, {"qRopeOut", Feature::kRopeOutputs},
    {"ctkvScale", Feature::kInt8Cache},     {"qNopeScale", Feature::kInt8Cache},
    {"deScale0", Feature::kInt8Weights},    {"deScale1", Feature::kInt8Weights},
    {"quantScale0", Feature::kPerTensorQuant}, {"quantOffset0", Feature::kPerTensorQuant},
    {"bias0", Feature::kPerTensorQuant},    {"quantScale1", Feature::kPerTensorQuant},
    {"quantOffset1", Feature::kPerTensorQuant}, {"bias1", Feature::kPerTensorQuant},
};
// Ignored when their feature is off, like the rows above (krCacheOut: an output).
inline constexpr PresenceRow kIgnoredOutputs[] = {{"krCacheOut", Feature::kRopeOutputs}};

// MPP-01 in the aclnn layer: the vendor's op definition declares every tensor REQUIRED (null ->
// 161001); these may also be null (absent) when their feature is off, the superset CANN's
// documentation and ATB's callers use. Every other tensor is required in every mode, read or not.
inline constexpr PresenceRow kAclnnNullable[] = {
    {"bias0", Feature::kPerTensorQuant},  {"bias1", Feature::kPerTensorQuant},
    {"kvCacheRope", Feature::kRopeOutputs}, {"qRopeOut", Feature::kRopeOutputs},
    {"krCacheOut", Feature::kRopeOutputs},  {"ctkvScale", Feature::kInt8Cache},
    {"qNopeScale", Feature::kInt8Cache},
};

// ---- cross-feature ----

// MPP-06: the cache modes (docs/ops/mla_preprocess.md): NZ caches, the separate rope outputs
// (kvCacheRope, qRopeOut, krCacheOut), an INT8 kvCache and qOut (with ctkvScale, qNopeScale).
struct CacheModeRow {
  MlaPreprocessCacheMode mode;
  bool nz;
  bool rope_outputs;
  bool int8;
};
inline constexpr CacheModeRow kCacheModes[] = {
    {MlaPreprocessCacheMode::kKvCache, false, false, false},
    {MlaPreprocessCacheMode::kKropeCtkv, false, true, false},
    {MlaPreprocessCacheMode::kInt8NzCache, true, true, true},
    {MlaPreprocessCacheMode::kNzCache, true, true, false},
};

// MPP-02: tensors in the input dtype.
inline constexpr const char* kInputDtype[] = {"gamma0",      "beta0",       "quantScale0", "gamma1",    "beta1",
                                              "quantScale1", "gamma2",      "cos",         "sin",       "wuk",
                                              "kvCacheRope", "ctkvScale",   "qNopeScale",  "qRopeOut",  "qDownOut"};
// MPP-02: kvCache and qOut: INT8 in cacheMode 2, else the input dtype.
inline constexpr const char* kCacheModeDtype[] = {"kvCache", "qOut"};

// MPP-03: the caches by cache mode (the NZ modes also accept the FRACTAL_NZ tag).
inline constexpr check::FormatRow kCacheFormatsNd[] = {{"kvCache", {ND, NCHW}, "MPP-03"},
                                                       {"kvCacheRope", {ND, NCHW}, "MPP-03"}};
inline constexpr check::FormatRow kCacheFormatsNz[] = {{"kvCache", {ND, NCHW, NZ}, "MPP-03"},
                                                       {"kvCacheRope", {ND, NCHW, NZ}, "MPP-03"}};

// ---- consistency: shapes ----

// The dim symbols; kM1 = Hckv + Dr + Hcq, kM2 = N * (D + Dr), kHckvDr = Hckv + Dr.
enum class Sym : int { kOne, kT, kHe, kHckv, kDr, kHcq, kN, kD, kBlockNum, kBlockSize, kM1, kM2, kHckvDr, kHckv16,
                       kHckv32, kDr16, k16, k32 };

// MPP-08: the vendor's ranges (aclnn layer only; blockSize and the hiddenSize multiple: in code).
inline constexpr check::ValueRow<Sym> kVendorRanges[] = {
    {Sym::kT, "input", "MPP-08 tokenNum", {}, 0, 1024},
    {Sym::kHe, "input", "MPP-08 hiddenSize", {}, 2048, 10240},
    {Sym::kN, "wuk", "MPP-08 headNum", {16, 32, 64, 128}},
    {Sym::kHckv, "gamma2", "MPP-08 Hckv", {512}},
    {Sym::kHcq, "gamma1", "MPP-08 Hcq (wdqDim)", {1536}},
    {Sym::kDr, "cos", "MPP-08 rope dim", {64}},
    {Sym::kD, "wuk", "MPP-08 D", {128}},
};
// MPP-08 in aclnnMlaPreprocessV2: its tiling ignores the headNum, Hcq (qLoraRank) and D (nopeDim)
// checks, so only the rows the kernel's fixed sizes need remain.
inline constexpr check::ValueRow<Sym> kVendorRangesV2[] = {
    {Sym::kT, "input", "MPP-08 tokenNum", {}, 0, 1024},
    {Sym::kHe, "input", "MPP-08 hiddenSize", {}, 2048, 10240},
    {Sym::kHckv, "gamma2", "MPP-08 Hckv", {512}},
    {Sym::kDr, "cos", "MPP-08 rope dim", {64}},
};

// MPP-09: the shapes of the outputs every mode has (optional ones when given).
inline constexpr check::ShapeRow<Sym> kShapes[] = {
    {"qRopeOut", {Sym::kT, Sym::kN, Sym::kDr}, "MPP-09"},
    {"qDownOut", {Sym::kT, Sym::kHcq}, "MPP-09"},
};
// MPP-09: the inputs the kernel reads a prefix of (the first `dim 0` rows in memory order): dim 0
// at least the symbol's value, the other dims exact. CANN checks none of these shapes (its op
// definition, infershape and tiling read no dim of them), so a longer input is accepted, as the
// kernel never reads past the prefix (e.g. SGLang's dummy beta1 of length He); a shorter one
// would be read past its end and is refused.
inline constexpr check::ShapeRow<Sym> kPrefixShapes[] = {
    {"gamma0", {Sym::kHe}, "MPP-09"},        {"beta0", {Sym::kHe}, "MPP-09"},
    {"beta1", {Sym::kHcq}, "MPP-09"},        {"cos", {Sym::kT, Sym::kDr}, "MPP-09"},
    {"sin", {Sym::kT, Sym::kDr}, "MPP-09"},  {"slotMapping", {Sym::kT}, "MPP-09"},
    {"quantScale0", {Sym::kOne}, "MPP-09"},  {"quantOffset0", {Sym::kOne}, "MPP-09"},
    {"deScale0", {Sym::kM1}, "MPP-09"},      {"bias0", {Sym::kM1}, "MPP-09"},
    {"quantScale1", {Sym::kOne}, "MPP-09"},  {"quantOffset1", {Sym::kOne}, "MPP-09"},
    {"deScale1", {Sym::kM2}, "MPP-09"},      {"bias1", {Sym::kM2}, "MPP-09"},
    {"ctkvScale", {Sym::kOne}, "MPP-09"},
};
// MPP-09: wuk ND [N, D, Hckv] or FRACTAL_NZ per head [N, Hckv/16, D, 16].
inline constexpr check::ShapeRow<Sym> kWukNd[] = {{"wuk", {Sym::kN, Sym::kD, Sym::kHckv}, "MPP-09"}};
inline constexpr check::ShapeRow<Sym> kWukNz[] = {{"wuk", {Sym::kN, Sym::kHckv16, Sym::kD, Sym::k16}, "MPP-09"}};
// MPP-09: qOut and the caches, by cache mode (kvCacheRope: absent in cacheMode 0).
inline constexpr check::ShapeRow<Sym> kShapesKvCache[] = {
    {"qOut", {Sym::kT, Sym::kN, Sym::kHckvDr}, "MPP-09"},
    {"kvCache", {Sym::kBlockNum, Sym::kBlockSize, Sym::kOne, Sym::kHckvDr}, "MPP-09"}};
inline constexpr check::ShapeRow<Sym> kShapesKropeCtkv[] = {
    {"qOut", {Sym::kT, Sym::kN, Sym::kHckv}, "MPP-09"},
    {"kvCache", {Sym::kBlockNum, Sym::kBlockSize, Sym::kOne, Sym::kHckv}, "MPP-09"},
    {"kvCacheRope", {Sym::kBlockNum, Sym::kBlockSize, Sym::kOne, Sym::kDr}, "MPP-09"}};
inline constexpr check::ShapeRow<Sym> kShapesInt8NzCache[] = {
    {"qOut", {Sym::kT, Sym::kN, Sym::kHckv}, "MPP-09"},
    {"kvCache", {Sym::kBlockNum, Sym::kHckv32, Sym::kBlockSize, Sym::k32}, "MPP-09"},
    {"kvCacheRope", {Sym::kBlockNum, Sym::kDr16, Sym::kBlockSize, Sym::k16}, "MPP-09"}};
inline constexpr check::ShapeRow<Sym> kShapesNzCache[] = {
    {"qOut", {Sym::kT, Sym::kN, Sym::kHckv}, "MPP-09"},
    {"kvCache", {Sym::kBlockNum, Sym::kHckv16, Sym::kBlockSize, Sym::k16}, "MPP-09"},
    {"kvCacheRope", {Sym::kBlockNum, Sym::kDr16, Sym::kBlockSize, Sym::k16}, "MPP-09"}};
// Indexed by cacheMode.
inline constexpr std::span<const check::ShapeRow<Sym>> kModeShapes[] = {kShapesKvCache, kShapesKropeCtkv,
                                                                        kShapesInt8NzCache, kShapesNzCache};

}  // namespace mla_preprocess_table

// Every tensor parameter of a call by its aclnn name, in prototype order (null: an absent
// optional tensor; kvCacheOut / krCacheOut as passed). The checks, the call signature and the
// aliasing rule read this one list.
std::array<check::Named, 29> mla_preprocess_tensors(const MlaPreprocessParams& p);

// Whether a feature of the MPP-10 table is on in this call (INT8 weights: wdqkv's dtype).
bool mla_preprocess_feature_on(const MlaPreprocessParams& p, mla_preprocess_table::Feature f);

// `p` without the optional tensors its modes do not read (MPP-10 rows whose feature is off, and
// krCacheOut in cacheMode 0): the checks, the plan and the run see only what the call reads.
MlaPreprocessParams mla_preprocess_unread_dropped(const MlaPreprocessParams& p);

// The memory the cache rows go to: kv_cache_out (kv_cache when default-constructed) and
// kr_cache_out (kv_cache_rope when null; null in cacheMode 0).
const TensorView& mla_preprocess_kv_out(const MlaPreprocessParams& p);
const TensorView* mla_preprocess_kr_out(const MlaPreprocessParams& p);

// Elements a view reaches from its data pointer (1 + sum (dim - 1) * stride; 0 when empty), or
// false on overflow or a negative stride.
bool mla_preprocess_view_span(const TensorView& t, int64_t* span);

// MPP-06 / MPP-07 on the raw attribute values (the aclnn layer passes int64).
Status mla_preprocess_check_modes(const char* op, int64_t cache_mode, int64_t quant_mode);

// Phase 1: every rule of docs/ops/mla_preprocess.md, grouped single parameter / existence /
// cross-feature / consistency, then the pointer rules below. Reads no tensor contents and
// writes nothing but *dims.
Status mla_preprocess_check(const MlaPreprocessParams& p, const MlaPreprocessCheckOptions& o, MlaPreprocessShape* dims);

// The rules on data pointers, which may change between the phases (phase 1 and every run): no
// null data with a non-zero extent and every pointer aligned to its element size (MPP-05),
// outputs disjoint from each other and from every input the call reads (MPP-14); in phase 2 also
// the workspace bytes the run uses, [workspace, workspace + workspace_bytes), disjoint from every
// tensor of `p` (MPP-14). `p` has its unread tensors dropped.
Status mla_preprocess_check_pointers(const MlaPreprocessParams& p, const char* op, const void* workspace = nullptr,
                                     uint64_t workspace_bytes = 0);

}  // namespace mlaops

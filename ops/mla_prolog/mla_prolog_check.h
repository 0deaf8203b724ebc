// MlaProlog V1 / V2WeightNz / V3WeightNz: the rules of docs/ops/mla_prolog.md (mla_prolog_check.cpp) and the
// support tables they are made of. Each table row names a parameter, what it may take and the
// rule id; the same rows drive the negative tests (tests/ops/mla_prolog/).
//
// Parameters are named as in the aclnn prototype ("tokenX", "kvCacheRef", ...); shapes use the
// symbols of include/mlaops/mla_prolog.h.
#pragma once

#include <array>
#include <cstdint>

#include "mlaops/mla_prolog.h"
#include "ops/common/check_util.h"

namespace mlaops {

// The V3 attributes the aclnn layer checks (aclnnMlaPrologV3WeightNz; docs/ops/mla_prolog.md).
struct MlaPrologV3Modes {
  int64_t weight_quant_mode = 0;     // 0 none, 1 weightUqQr int8 (partial), 2 int8 full
  int64_t kv_cache_quant_mode = 0;   // 0 none, 1 per tensor, 2 per channel, 3 per token per tile
  int64_t query_quant_mode = 0;      // 0 none, 1 per token and head
  int64_t ckvkr_repo_mode = 0;       // 1: the rope row inside the kv row (kvCacheQuantMode 3 only)
  int64_t quant_scale_repo_mode = 0; // 1: the tile scales inside the kv row (kvCacheQuantMode 3 only)
  int64_t tile_size = 128;
};

struct MlaPrologCheckOptions {
  const char* op = "mla_prolog";  // the name used in messages (the aclnn entry point)
  bool v2 = true;                 // V2 has dequantScaleQNopeOut; V1 cannot express full quant + KV quant
  bool vendor_ranges = false;     // the aclnn layer: He, Hcq, N, D, ... limited to the vendor's sets
  bool v3 = false;                // aclnnMlaPrologV3WeightNz: `modes` are checked (MP-20, MP-21)
  MlaPrologV3Modes modes;
};

namespace mla_prolog_table {

using namespace check::names;  // NOLINT(google-build-using-namespace): BF16, ND, ... in the rows

// ---- single parameter ----

// MP-02: dtypes of every tensor (optional ones when given).
inline constexpr check::DtypeRow kDtypes[] = {
    {"tokenX", {BF16, I8}, "MP-02"},
    {"weightDq", {BF16, I8}, "MP-02"},
    {"weightUqQr", {BF16, I8}, "MP-02"},
    {"weightUk", {BF16}, "MP-02"},
    {"weightDkvKr", {BF16, I8}, "MP-02"},
    {"rmsnormGammaCq", {BF16}, "MP-02"},
    {"rmsnormGammaCkv", {BF16}, "MP-02"},
    {"ropeSin", {BF16}, "MP-02"},
    {"ropeCos", {BF16}, "MP-02"},
    {"cacheIndex", {I64}, "MP-02"},
    {"kvCacheRef", {BF16, I8}, "MP-02"},
    {"krCacheRef", {BF16, I8}, "MP-02"},
    {"dequantScaleXOptional", {F32}, "MP-02"},
    {"dequantScaleWDqOptional", {F32}, "MP-02"},
    {"dequantScaleWUqQrOptional", {F32}, "MP-02"},
    {"dequantScaleWDkvKrOptional", {F32}, "MP-02"},
    {"quantScaleCkvOptional", {F32}, "MP-02"},
    {"quantScaleCkrOptional", {F32}, "MP-02"},
    {"smoothScalesCqOptional", {F32}, "MP-02"},
    {"queryOut", {BF16, I8}, "MP-02"},
    {"queryRopeOut", {BF16}, "MP-02"},
    {"dequantScaleQNopeOutOptional", {F32}, "MP-02"},
};
// MP-02 / MP-03 / MP-04 of the V3 outputs (the dtype by scenario is MP-24).
inline constexpr check::DtypeRow kDtypesV3[] = {
    {"queryNormOutOptional", {BF16, I8}, "MP-02"},
    {"dequantScaleQNormOutOptional", {F32}, "MP-02"},
    {"actualSeqLenOptional", {I32}, "MP-02"},
    {"kNopeClipAlphaOptional", {F32}, "MP-02"},
};
inline constexpr check::FormatRow kFormatsV3[] = {
    {"queryNormOutOptional", {ND, NCHW}, "MP-03"},
    {"dequantScaleQNormOutOptional", {ND, NCHW}, "MP-03"},
    {"actualSeqLenOptional", {ND, NCHW}, "MP-03"},
    {"kNopeClipAlphaOptional", {ND, NCHW}, "MP-03"},
};
inline constexpr check::RankRow kRanksV3[] = {
    {"queryNormOutOptional", {2, 3}, "MP-04"},
    {"dequantScaleQNormOutOptional", {2}, "MP-04"},
    {"actualSeqLenOptional", {1}, "MP-04"},
    {"kNopeClipAlphaOptional", {1}, "MP-04"},
};

// MP-03: formats of the plain tensors (ND; the NCHW tag is accepted as ND).
inline constexpr check::FormatRow kFormats[] = {
    {"tokenX", {ND, NCHW}, "MP-03"},
    {"weightUk", {ND, NCHW}, "MP-03"},
    {"rmsnormGammaCq", {ND, NCHW}, "MP-03"},
    {"rmsnormGammaCkv", {ND, NCHW}, "MP-03"},
    {"ropeSin", {ND, NCHW}, "MP-03"},
    {"ropeCos", {ND, NCHW}, "MP-03"},
    {"cacheIndex", {ND, NCHW}, "MP-03"},
    {"dequantScaleXOptional", {ND, NCHW}, "MP-03"},
    {"dequantScaleWDqOptional", {ND, NCHW}, "MP-03"},
    {"dequantScaleWUqQrOptional", {ND, NCHW}, "MP-03"},
    {"dequantScaleWDkvKrOptional", {ND, NCHW}, "MP-03"},
    {"quantScaleCkvOptional", {ND, NCHW}, "MP-03"},
    {"quantScaleCkrOptional", {ND, NCHW}, "MP-03"},
    {"smoothScalesCqOptional", {ND, NCHW}, "MP-03"},
    {"queryOut", {ND, NCHW}, "MP-03"},
    {"queryRopeOut", {ND, NCHW}, "MP-03"},
    {"dequantScaleQNopeOutOptional", {ND, NCHW}, "MP-03"},
};

// MP-03: the three LoRA weights. The aclnn entry points (…WeightNz) take FRACTAL_NZ only; the
// C++ API also takes bf16 ND [K, N] matrices.
inline constexpr check::FormatRow kWeightFormatsAclnn[] = {
    {"weightDq", {NZ}, "MP-03"},
    {"weightUqQr", {NZ}, "MP-03"},
    {"weightDkvKr", {NZ}, "MP-03"},
};
inline constexpr check::FormatRow kWeightFormatsCpp[] = {
    {"weightDq", {NZ, ND, NCHW}, "MP-03"},
    {"weightUqQr", {NZ, ND, NCHW}, "MP-03"},
    {"weightDkvKr", {NZ, ND, NCHW}, "MP-03"},
};

// MP-04: dim counts (weights: 2 logical or 4 NZ storage dims; the caches by cache mode below).
inline constexpr check::RankRow kRanks[] = {
    {"tokenX", {2, 3}, "MP-04"},
    {"weightDq", {2, 4}, "MP-04"},
    {"weightUqQr", {2, 4}, "MP-04"},
    {"weightUk", {3}, "MP-04"},
    {"weightDkvKr", {2, 4}, "MP-04"},
    {"rmsnormGammaCq", {1}, "MP-04"},
    {"rmsnormGammaCkv", {1}, "MP-04"},
    {"ropeSin", {2, 3}, "MP-04"},
    {"ropeCos", {2, 3}, "MP-04"},
    {"cacheIndex", {1, 2}, "MP-04"},
    {"dequantScaleXOptional", {2}, "MP-04"},
    {"dequantScaleWDqOptional", {2}, "MP-04"},
    {"dequantScaleWUqQrOptional", {2}, "MP-04"},
    {"dequantScaleWDkvKrOptional", {2}, "MP-04"},
    {"quantScaleCkvOptional", {1, 2}, "MP-04"},  // 1: V3's per-tensor (1); the shape by scenario is MP-09
    {"quantScaleCkrOptional", {2}, "MP-04"},
    {"smoothScalesCqOptional", {2}, "MP-04"},
    {"queryOut", {3, 4}, "MP-04"},
    {"queryRopeOut", {3, 4}, "MP-04"},
    {"dequantScaleQNopeOutOptional", {1, 3}, "MP-04"},
};
// MP-04: the caches: 4 dims ([BlockNum, BlockSize, 1, H] or BSND [B, S, 1, H]), 3 in TND
// ([T, 1, H]); per-tile KV quant: krCacheRef is an empty tensor of any rank (MP-27).
inline constexpr check::RankRow kCacheRanks4[] = {{"kvCacheRef", {4}, "MP-04"}, {"krCacheRef", {4}, "MP-04"}};
inline constexpr check::RankRow kCacheRanks3[] = {{"kvCacheRef", {3}, "MP-04"}, {"krCacheRef", {3}, "MP-04"}};

// MP-06: cacheModeOptional values (null = PA_BSND).
struct CacheModeRow {
  const char* value;
  MlaPrologCacheMode mode;
};
inline constexpr CacheModeRow kCacheModes[] = {{"PA_BSND", MlaPrologCacheMode::kPaBsnd},
                                               {"PA_NZ", MlaPrologCacheMode::kPaNz}};
// The cache modes V3 adds (aclnnMlaPrologV3WeightNz only).
inline constexpr CacheModeRow kCacheModesV3[] = {{"PA_BLK_BSND", MlaPrologCacheMode::kPaBlkBsnd},
                                                 {"PA_BLK_NZ", MlaPrologCacheMode::kPaBlkNz},
                                                 {"BSND", MlaPrologCacheMode::kBsnd},
                                                 {"TND", MlaPrologCacheMode::kTnd}};

// MP-20: the V3 mode tuple (weightQuantMode, kvCacheQuantMode, queryQuantMode) of each scenario.
struct ModeTupleRow {
  int64_t weight, kv, query;
  MlaPrologScenario scenario;
};
inline constexpr ModeTupleRow kModeTuples[] = {
    {0, 0, 0, MlaPrologScenario::kNoQuant},
    {1, 0, 0, MlaPrologScenario::kPartialQuantKvNoQuant},
    {1, 2, 0, MlaPrologScenario::kPartialQuantKvQuant},
    {2, 0, 0, MlaPrologScenario::kFullQuantKvNoQuant},
    {2, 1, 1, MlaPrologScenario::kFullQuantKvQuant},
    {1, 3, 0, MlaPrologScenario::kPartialQuantKvQuantPerTile},
    {2, 3, 0, MlaPrologScenario::kFullQuantKvQuantPerTile},
};

// MP-27: per-tile KV quant (kvCacheQuantMode 3): the tile width, the cache modes it takes.
inline constexpr int64_t kKvQuantTile = 128;
inline constexpr MlaPrologCacheMode kPerTileCacheModes[] = {MlaPrologCacheMode::kPaBsnd, MlaPrologCacheMode::kBsnd,
                                                            MlaPrologCacheMode::kTnd};

// MP-12: the outputs and in/out caches (disjoint from each other and from every other tensor).
inline constexpr const char* kOutputs[] = {"queryOut",   "queryRopeOut", "dequantScaleQNopeOutOptional",
                                           "kvCacheRef", "krCacheRef",   "queryNormOutOptional",
                                           "dequantScaleQNormOutOptional"};

// ---- existence ----

// MP-01: required tensors (cacheIndex: in the paged cache modes; MP-26 otherwise).
inline constexpr const char* kRequired[] = {"tokenX",      "weightDq",       "weightUqQr",      "weightUk",
                                            "weightDkvKr", "rmsnormGammaCq", "rmsnormGammaCkv", "ropeSin",
                                            "ropeCos",     "kvCacheRef",     "krCacheRef",      "queryOut",
                                            "queryRopeOut"};

// ---- cross-feature: the quantization scenario (from the dtypes only; docs/ops/mla_prolog.md) ----

// The parameters whose dtype each scenario fixes (MP-08), and the optional inputs it reads (MP-10:
// given exactly when the scenario reads them; smoothScalesCqOptional is optional everywhere).
inline constexpr const char* kScenarioDtypeParams[] = {"tokenX",     "weightDq",   "weightUqQr", "weightDkvKr",
                                                       "kvCacheRef", "krCacheRef", "queryOut"};
inline constexpr const char* kScenarioOptionalParams[] = {"dequantScaleXOptional",      "dequantScaleWDqOptional",
                                                          "dequantScaleWUqQrOptional",  "dequantScaleWDkvKrOptional",
                                                          "quantScaleCkvOptional",      "quantScaleCkrOptional"};
struct ScenarioRow {
  MlaPrologScenario scenario;
  std::array<DType, 7> dtypes;    // kScenarioDtypeParams (kUndefined: any, the empty per-tile krCache)
  std::array<bool, 6> optionals;  // kScenarioOptionalParams
};
inline constexpr ScenarioRow kScenarios[] = {
    {MlaPrologScenario::kNoQuant, {BF16, BF16, BF16, BF16, BF16, BF16, BF16}, {false, false, false, false, false, false}},
    {MlaPrologScenario::kPartialQuantKvNoQuant,
     {BF16, BF16, I8, BF16, BF16, BF16, BF16},
     {false, false, true, false, false, false}},
    {MlaPrologScenario::kPartialQuantKvQuant, {BF16, BF16, I8, BF16, I8, I8, BF16}, {false, false, true, false, true, true}},
    {MlaPrologScenario::kFullQuantKvNoQuant, {I8, I8, I8, I8, BF16, BF16, BF16}, {true, true, true, true, false, false}},
    {MlaPrologScenario::kFullQuantKvQuant, {I8, I8, I8, I8, I8, BF16, I8}, {true, true, true, true, true, false}},
    {MlaPrologScenario::kPartialQuantKvQuantPerTile,
     {BF16, BF16, I8, BF16, I8, DType::kUndefined, BF16},
     {false, false, true, false, false, false}},
    {MlaPrologScenario::kFullQuantKvQuantPerTile,
     {I8, I8, I8, I8, I8, DType::kUndefined, BF16},
     {true, true, true, true, false, false}},
};
// The parameters whose dtypes choose the scenario (mla_prolog_scenario): changing one of them
// changes the row, not only the column.
inline constexpr const char* kScenarioChoosers[] = {"tokenX", "weightUqQr", "kvCacheRef"};

// MP-03: the caches' formats by cache mode (V1 / V2 and the C++ API: PA_NZ and PA_BLK_NZ also
// accept the FRACTAL_NZ tag; aclnnMlaPrologV3WeightNz takes ND / NCHW in every mode, as the V3
// tiling check's CheckKvCache / CheckKrCache).
inline constexpr check::FormatRow kCacheFormatsPaBsnd[] = {{"kvCacheRef", {ND, NCHW}, "MP-03"},
                                                           {"krCacheRef", {ND, NCHW}, "MP-03"}};
inline constexpr check::FormatRow kCacheFormatsPaNz[] = {{"kvCacheRef", {ND, NCHW, NZ}, "MP-03"},
                                                         {"krCacheRef", {ND, NCHW, NZ}, "MP-03"}};

// ---- consistency: dims and shapes ----

// The dim symbols (include/mlaops/mla_prolog.h); kQCols = N*(D+Dr), kKCols = Hckv+Dr.
enum class Sym : int { kOne, kB, kS, kT, kHe, kHcq, kN, kD, kDr, kHckv, kBlockNum, kBlockSize, kNkv, kQCols, kKCols };

// Where each symbol but B, S, T (tokenX's leading dims) and the cache geometry (Hckv, Nkv,
// BlockNum, BlockSize: by cache mode, in the check) is read from; `positive`: MP-09 >= 1.
struct DimSource {
  Sym sym;
  const char* param;
  int dim;  // -1 = last
  const char* what;
  bool positive;
};
inline constexpr DimSource kDimSources[] = {
    {Sym::kHe, "tokenX", -1, "He (tokenX last dim)", true},
    {Sym::kHcq, "rmsnormGammaCq", 0, "Hcq (rmsnormGammaCq)", true},
    {Sym::kN, "weightUk", 0, "N (weightUk dim 0)", true},
    {Sym::kD, "weightUk", 1, "D (weightUk dim 1)", true},
    {Sym::kDr, "ropeCos", -1, "Dr (ropeCos last dim)", true},
};
// The cache geometry, read from kvCacheRef [BlockNum, BlockSize, Nkv, Hckv] (BSND [B, S, Nkv,
// Hckv]: BlockNum and BlockSize are then B and S; TND [T, Nkv, Hckv]: Nkv is dim 1; per-tile KV
// quant: Hckv is rmsnormGammaCkv's, the row is packed).
inline constexpr DimSource kCacheDimSources[] = {
    {Sym::kHckv, "kvCacheRef", -1, "Hckv (kvCacheRef last dim)", true},
    {Sym::kBlockSize, "kvCacheRef", 1, "BlockSize (kvCacheRef dim 1)", true},
    {Sym::kBlockNum, "kvCacheRef", 0, "BlockNum (kvCacheRef dim 0)", false},
    {Sym::kNkv, "kvCacheRef", 2, "Nkv (kvCacheRef dim 2)", false},
};

// MP-09: values every call must have.
inline constexpr check::ValueRow<Sym> kValues[] = {{Sym::kNkv, "kvCacheRef", "MP-09 Nkv (the dim before the row)", {1}}};

// MP-07: the vendor's ranges (aclnn entry points only); B and S for tokenX [B, S, He].
inline constexpr check::ValueRow<Sym> kVendorRangesBsh[] = {
    {Sym::kB, "tokenX", "MP-07 B", {}, 0, 65536},
    {Sym::kS, "tokenX", "MP-07 S", {}, 0, 16},
};
inline constexpr check::ValueRow<Sym> kVendorRanges[] = {
    {Sym::kT, "tokenX", "MP-07 T", {}, 0, 1048576},
    {Sym::kHe, "tokenX", "MP-07 He", {7168, 7680, 6144}},
    {Sym::kHcq, "rmsnormGammaCq", "MP-07 Hcq", {1536}},
    {Sym::kHckv, "kvCacheRef", "MP-07 Hckv", {512}},
    {Sym::kD, "weightUk", "MP-07 D", {128}},
    {Sym::kDr, "ropeCos", "MP-07 Dr", {64}},
    {Sym::kN, "weightUk", "MP-07 N", {1, 2, 4, 8, 16, 32, 64, 128}},
};
inline constexpr check::ValueRow<Sym> kVendorRangesPaged[] = {
    {Sym::kBlockSize, "kvCacheRef", "MP-07 BlockSize", {16, 128}},
};
// MP-07 for aclnnMlaPrologV3WeightNz: the V3 document's wider ranges (S and T unlimited); V1 / V2
// keep the rows above.
inline constexpr check::ValueRow<Sym> kVendorRangesV3Bsh[] = {
    {Sym::kB, "tokenX", "MP-07 B", {}, 0, 65536},
};
inline constexpr check::ValueRow<Sym> kVendorRangesV3[] = {
    {Sym::kHe, "tokenX", "MP-07 He", {1024, 2048, 3072, 4096, 5120, 6144, 7168, 7680, 8192}},
    {Sym::kHcq, "rmsnormGammaCq", "MP-07 Hcq", {1536, 2048}},
    {Sym::kHckv, "kvCacheRef", "MP-07 Hckv", {512}},
    {Sym::kD, "weightUk", "MP-07 D", {128, 192}},
    {Sym::kDr, "ropeCos", "MP-07 Dr", {64}},
    {Sym::kN, "weightUk", "MP-07 N", {1, 2, 4, 8, 16, 32, 64, 128}},
};
inline constexpr check::ValueRow<Sym> kVendorRangesV3Paged[] = {
    {Sym::kBlockSize, "kvCacheRef", "MP-07 BlockSize", {}, 16, 1024, 16},
};

// MP-09 / MP-13: the LoRA weights' logical [K, N] (FRACTAL_NZ: the 4-D storage of that matrix).
inline constexpr check::ShapeRow<Sym> kWeightShapes[] = {
    {"weightDq", {Sym::kHe, Sym::kHcq}, "MP-09"},
    {"weightUqQr", {Sym::kHcq, Sym::kQCols}, "MP-09"},
    {"weightDkvKr", {Sym::kHe, Sym::kKCols}, "MP-09"},
};

// MP-09: the token-layout tensors, for tokenX [B, S, He] and tokenX [T, He].
inline constexpr check::ShapeRow<Sym> kShapesBsh[] = {
    {"ropeSin", {Sym::kB, Sym::kS, Sym::kDr}, "MP-09"},
    {"ropeCos", {Sym::kB, Sym::kS, Sym::kDr}, "MP-09"},
    {"queryOut", {Sym::kB, Sym::kS, Sym::kN, Sym::kHckv}, "MP-09"},
    {"queryRopeOut", {Sym::kB, Sym::kS, Sym::kN, Sym::kDr}, "MP-09"},
};
inline constexpr check::ShapeRow<Sym> kShapesTnd[] = {
    {"ropeSin", {Sym::kT, Sym::kDr}, "MP-09"},
    {"ropeCos", {Sym::kT, Sym::kDr}, "MP-09"},
    {"queryOut", {Sym::kT, Sym::kN, Sym::kHckv}, "MP-09"},
    {"queryRopeOut", {Sym::kT, Sym::kN, Sym::kDr}, "MP-09"},
};

// MP-09: the other tensors (optional ones when given).
inline constexpr check::ShapeRow<Sym> kShapes[] = {
    {"weightUk", {Sym::kN, Sym::kD, Sym::kHckv}, "MP-09"},
    {"rmsnormGammaCkv", {Sym::kHckv}, "MP-09"},
    {"dequantScaleXOptional", {Sym::kT, Sym::kOne}, "MP-09"},
    {"dequantScaleWDqOptional", {Sym::kOne, Sym::kHcq}, "MP-09"},
    {"dequantScaleWUqQrOptional", {Sym::kOne, Sym::kQCols}, "MP-09"},
    {"dequantScaleWDkvKrOptional", {Sym::kOne, Sym::kKCols}, "MP-09"},
    {"quantScaleCkrOptional", {Sym::kOne, Sym::kDr}, "MP-09"},
    {"smoothScalesCqOptional", {Sym::kOne, Sym::kHcq}, "MP-09"},
};

// MP-09: quantScaleCkvOptional by KV quant kind. Per channel (PARTIAL_QUANT_KV_QUANT) and V1 / V2's
// per tensor (FULL_QUANT_KV_QUANT, element 0 read): (1, Hckv). aclnnMlaPrologV3WeightNz's per
// tensor (kvCacheQuantMode 1) is checked in mla_prolog_check.cpp (v3_per_tensor_scale): (1), (1, 1)
// or (1, Hckv).
inline constexpr check::ShapeRow<Sym> kQuantScaleCkv[] = {{"quantScaleCkvOptional", {Sym::kOne, Sym::kHckv}, "MP-09"}};

// MP-10 (aclnnMlaPrologV3WeightNz): the scenarios in which the V3 tiling check expects
// smoothScalesCqOptional; in the others it must be null (FillNonQuantParamInfo adds no row for it).
inline constexpr MlaPrologScenario kSmoothScenariosV3[] = {
    MlaPrologScenario::kPartialQuantKvNoQuant,      MlaPrologScenario::kPartialQuantKvQuant,
    MlaPrologScenario::kFullQuantKvNoQuant,         MlaPrologScenario::kFullQuantKvQuant,
    MlaPrologScenario::kPartialQuantKvQuantPerTile, MlaPrologScenario::kFullQuantKvQuantPerTile};

}  // namespace mla_prolog_table

// Every tensor parameter of a call by its aclnn name, in prototype order (null: an absent
// optional tensor). The checks, the call signature and the aliasing rule read this one list.
std::array<check::Named, 26> mla_prolog_tensors(const MlaPrologParams& p);

// Phase 1: every rule of docs/ops/mla_prolog.md, grouped single parameter / existence /
// cross-feature / consistency, then the pointer rules below. Reads no tensor contents and
// writes nothing but *dims and *scenario.
Status mla_prolog_check(const MlaPrologParams& p, const MlaPrologCheckOptions& o, MlaPrologDims* dims,
                        MlaPrologScenario* scenario);

// The rules on data pointers, which may change between the phases (phase 1 and every run): no
// null data with a non-zero extent and every pointer aligned to its element size (MP-05), and
// outputs and caches disjoint from each other and from every input (MP-12); in phase 2 also the
// workspace bytes the run uses, [workspace, workspace + workspace_bytes), disjoint from every
// bound tensor (MP-12).
Status mla_prolog_check_pointers(const MlaPrologParams& p, MlaPrologScenario scenario, const char* op,
                                 const void* workspace = nullptr, uint64_t workspace_bytes = 0);

}  // namespace mlaops

// aclnnMlaPrologV3WeightNz's shape ranges (MP-07 of the V3 document): shapes at the new values
// against the float64 reference under every ISA, every row of the V3 range table rejected outside
// its values; the plain aclnnMlaPrologV3 (not supported), which touches nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aclnnop/aclnn_mla_prolog_v3.h"
#include "ops/mla_prolog/mla_prolog_v3_cases.h"
#include "ops/mla_prolog/table_values.h"

namespace mlaops::testing {
namespace {

using namespace mla_prolog_v3;

// ---- the V3 document's shape ranges (MP-07 of aclnnMlaPrologV3WeightNz) ----

// Shapes at new values of the V3 ranges through the C API against the reference, every ISA:
// He 1024 / 2048 / 8192, Hcq 2048, D 192, BlockSize 16 / 64 / 1024, S above V2's 16; T small.
TEST(MlaPrologV3, WiderVendorRangesAgainstReference) {
  struct Case {
    MlaPrologScenario sc;
    MlaPrologCacheMode mode;
    bool bsh;
    int64_t He, Hcq, D, N, B, S, block_size, block_num;
  };
  const Case cases[] = {
      {NQ, kPaBsnd, true, 1024, 1536, 192, 1, 1, 17, 64, 1},      // S 17, BlockSize 64
      {PKV, kPaNz, false, 2048, 2048, 128, 2, 3, 1, 1024, 1},     // BlockSize 1024 (int8 NZ cache)
      {FQ, kPaBlkBsnd, true, 8192, 2048, 192, 1, 1, 18, 16, 3},   // He 8192, two blocks per batch
      {FKV, kPaBlkNz, true, 1024, 2048, 192, 2, 1, 20, 16, 3},    // S 20, int8 query
      {PKVT, kTnd, false, 1024, 2048, 192, 1, 20, 1, 16, 1},      // per-tile KV quant, T 20
  };
  for (const Case& k : cases) {
    MlaPrologCaseConfig cfg = vendor_cfg(k.sc, k.bsh, k.mode);
    cfg.He = k.He;
    cfg.Hcq = k.Hcq;
    cfg.D = k.D;
    cfg.N = k.N;
    cfg.B = k.B;
    cfg.S = k.S;
    cfg.block_size = k.block_size;
    cfg.block_num = k.block_num;
    cfg.query_norm = k.sc == PKV;
    const MlaPrologCase base = testdata::make_mla_prolog_case(cfg);  // generated once, cloned per run
    expect_v3_matches_reference(base);
    // V2 keeps its own ranges: the same call is rejected there (S, He, Hcq, D or BlockSize)
    if (!mla_prolog_is_per_tile(k.sc) && !mla_prolog_cache_blocks(k.mode)) {
      MlaPrologCase v2 = base.clone();
      EXPECT_EQ(mla_prolog_call(v2), ACLNN_ERR_PARAM_INVALID);
      EXPECT_NE(std::string(aclGetRecentErrMsg()).find("aclnnMlaPrologV2WeightNz: "), std::string::npos);
      EXPECT_NE(std::string(aclGetRecentErrMsg()).find(": MP-07 "), std::string::npos) << aclGetRecentErrMsg();
    }
  }
  reset_isa();
}

// Where a symbol of a value row is read from (ops/mla_prolog/mla_prolog_check.h kDimSources, kCacheDimSources).
const mla_prolog_table::DimSource* source_of(mla_prolog_table::Sym s) {
  for (const auto& d : mla_prolog_table::kDimSources)
    if (d.sym == s) return &d;
  for (const auto& d : mla_prolog_table::kCacheDimSources)
    if (d.sym == s) return &d;
  return nullptr;
}

MlaPrologCall with_dims(const char* name, std::vector<int64_t> dims) {
  const std::string n = name;
  return edit([n, dims](MlaPrologArgs& a) {
    TensorView& t = a[n];
    t = make_view(t.data, t.dtype, dims.data(), static_cast<int>(dims.size()), t.format);
  });
}

// Every row of the V3 range table with a value it does not allow (its largest value + 2), then
// values between and below the allowed ones, and the BlockSize steps.
TEST(MlaPrologV3Errors, MP07_V3Ranges) {
  constexpr auto E = ACLNN_ERR_PARAM_INVALID;
  for (const auto& row : mla_prolog_table::kVendorRangesV3) {
    int64_t bad = 0;
    for (int64_t v : row.set.values()) bad = std::max(bad, v + 2);
    SCOPED_TRACE(std::string(row.rule) + " = " + std::to_string(bad));
    const mla_prolog_table::DimSource* src = source_of(row.sym);
    ASSERT_NE(src, nullptr);
    std::vector<int64_t> dims = dims_of(args_of(v3_case(NQ))[src->param]);
    dims[src->dim < 0 ? dims.size() - 1 : static_cast<size_t>(src->dim)] = bad;
    expect_rejected(NQ, E, row.param, row.rule, with_dims(src->param, dims));
  }
  expect_rejected(NQ, E, "tokenX", "MP-07 He", with_dims("tokenX", {3, 1536}));
  expect_rejected(NQ, E, "tokenX", "MP-07 He", with_dims("tokenX", {3, 512}));
  expect_rejected(NQ, E, "rmsnormGammaCq", "MP-07 Hcq", with_dims("rmsnormGammaCq", {1024}));
  expect_rejected(NQ, E, "weightUk", "MP-07 D", with_dims("weightUk", {2, 64, 512}));
  expect_rejected(NQ, E, "weightUk", "MP-07 N", with_dims("weightUk", {3, 128, 512}));
  // BlockSize: multiples of 16 in [16, 1024] (the cache is never read in phase 1)
  for (int64_t bs : {int64_t{8}, int64_t{24}, int64_t{1040}, int64_t{2048}}) {
    SCOPED_TRACE("BlockSize " + std::to_string(bs));
    expect_rejected(NQ, E, "kvCacheRef", "MP-07 BlockSize", with_dims("kvCacheRef", {1, bs, 1, 512}));
  }
  // B of tokenX [B, S, He] and of actualSeqLen (PA_BLK with tokenX [T, He]): descriptions only
  expect_rejected(NQ, E, "tokenX", "MP-07 B", edit([](MlaPrologArgs& a) {
                    a["tokenX"] = make_view(reinterpret_cast<void*>(uintptr_t{1} << 44), DType::kBFloat16,
                                            {65537, 1, 7168});
                  }));
  expect_rejected_in(mode_case(NQ, kPaBlkNz, false), E, "actualSeqLenOptional", "MP-07 B", edit([](MlaPrologArgs& a) {
                       a["actualSeqLenOptional"] =
                           make_view(reinterpret_cast<void*>(uintptr_t{1} << 44), DType::kInt32, {65537});
                     }));
  // S and T have no V3 limit: a tokenX past V2's S 16 and T 1048576 gets past MP-07 (and is then
  // rejected for its shapes, MP-09)
  for (std::vector<int64_t> tok : {std::vector<int64_t>{1, 4096, 7168}, std::vector<int64_t>{1048577, 7168}}) {
    expect_rejected(NQ, E, "ropeSin", "MP-09", edit([tok](MlaPrologArgs& a) {
                      a["tokenX"] = make_view(reinterpret_cast<void*>(uintptr_t{1} << 44), DType::kBFloat16,
                                              tok.data(), static_cast<int>(tok.size()));
                    }));
  }
}

// ---- the plain aclnnMlaPrologV3 (the vendor's unsupported entry point) ----

// Both functions return ACLNN_ERR_INNER with "not supported" in the recent message and touch
// nothing: no workspace size, no executor, no output or cache byte (a valid V3 call's tensors).
TEST(MlaPrologV3Plain, BothFunctionsAreNotSupported) {
  const MlaPrologCase& c = v3_case(PQ);
  const Snapshot before(c);
  MlaPrologArgs a = args_of(c);
  std::vector<AclTensor> t;
  t.reserve(MlaPrologArgs::kCount);
  for (int i = 0; i < MlaPrologArgs::kCount; ++i) t.emplace_back(a.v[i], a.passed[i] && i != 21);
  char mode[] = "PA_BSND";
  uint64_t ws = 12345;
  aclOpExecutor* ex = reinterpret_cast<aclOpExecutor*>(uintptr_t{0x1234});
  EXPECT_EQ(aclnnMlaPrologV3GetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[10], t[11], t[9],
                                             t[12], t[13], t[14], t[15], t[16], t[17], t[18], t[24], t[25], 1e-5, 1e-5,
                                             mode, true, 1, 0, 0, 0, 0, 128, 1.0, 1.0, t[19], t[20], t[21], t[22],
                                             t[23], &ws, &ex),
            561000);
  std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("aclnnMlaPrologV3GetWorkspaceSize: ACL-65 not supported"), std::string::npos) << msg;
  EXPECT_EQ(ws, 12345u);
  EXPECT_EQ(ex, reinterpret_cast<aclOpExecutor*>(uintptr_t{0x1234}));
  // nulls and bad values change nothing: the entry point looks at no argument
  EXPECT_EQ(aclnnMlaPrologV3GetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                             nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                             nullptr, nullptr, nullptr, nullptr, nullptr, -1.0, -1.0, nullptr, false, 9,
                                             9, 9, 9, 9, 0, 0.0, 0.0, nullptr, nullptr, nullptr, nullptr, nullptr,
                                             nullptr, nullptr),
            ACLNN_ERR_INNER);
  // phase 2, with a real V3WeightNz executor: refused, and that executor still runs afterwards
  uint64_t size = 0;
  aclOpExecutor* real = nullptr;
  MlaPrologCase other = testdata::make_mla_prolog_case(c.cfg);
  ASSERT_EQ(mla_prolog_phase1(other, v3_call(), &size, &real), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  const Snapshot other_before(other);
  std::vector<char> buf(size);
  EXPECT_EQ(aclnnMlaPrologV3(buf.data(), size, real, nullptr), ACLNN_ERR_INNER);
  msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("aclnnMlaPrologV3: ACL-65 not supported"), std::string::npos) << msg;
  EXPECT_EQ(aclnnMlaPrologV3(nullptr, 0, nullptr, nullptr), ACLNN_ERR_INNER);
  EXPECT_TRUE(other_before.same(other));
  EXPECT_TRUE(before.same(c));
  EXPECT_EQ(aclnnMlaPrologV3WeightNz(buf.data(), size, real, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_FALSE(other_before.same(other));
}

}  // namespace
}  // namespace mlaops::testing

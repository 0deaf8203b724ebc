// MlaPreprocess fast path (C++ API) vs the float64 reference at small shapes: every input dtype x
// cache mode x quant mode, the dtype-weight path, every NZ weight form and both wuk formats, token
// counts {1, 8, 32, 129, 257} and heads {16, 32, 64, 128} (a covering rotation, not the full
// product), each under every forced ISA with 1 and 2 threads. The vendor shapes run through the
// C API in test_mla_preprocess_aclnn.cpp.
#include <gtest/gtest.h>

#include <tuple>

#include "ops/mla_preprocess/mla_preprocess_harness.h"

namespace mlaops::testing {
namespace {

using testdata::MlaPreprocessWeightForm;
using CM = MlaPreprocessCacheMode;
using QM = MlaPreprocessQuantMode;

constexpr int64_t kTokens[] = {1, 8, 32, 129, 257};
constexpr int64_t kHeads[] = {16, 32, 64, 128};

// Small split sizes (vendor: He 7168, Hckv 512, Dr 64, Hcq 1536, D 128); D + Dr = 48 is a
// multiple of 16, so every head's wuq window is aligned; OddShapes covers the unaligned case.
MlaPreprocessCaseConfig small_cfg(DType dt, CM cm, QM qm, int i) {
  MlaPreprocessCaseConfig c;
  c.dtype = dt;
  c.cache_mode = cm;
  c.quant_mode = qm;
  c.tokens = kTokens[i % 5];
  c.heads = kHeads[(i / 2) % 4];
  if (c.tokens * c.heads > 4096) c.heads = 16;  // keeps the float64 reference quick
  c.hidden = 96;
  c.Hckv = 64;
  c.Dr = 16;
  c.Hcq = 48;
  c.D = 32;
  c.block_size = 16;
  c.block_num = (c.tokens + 15) / 16 + 1;
  c.weight_form = static_cast<MlaPreprocessWeightForm>(i % 3);  // kNz4d, kNzAtb, kNz2d
  c.wuk_nz = (i % 2) == 1;
  c.seed = 100 + static_cast<uint64_t>(i);
  return c;
}

class MlaPreprocessCross : public ::testing::TestWithParam<std::tuple<DType, CM, QM>> {};

TEST_P(MlaPreprocessCross, QuantizedPath) {
  const auto [dt, cm, qm] = GetParam();
  const int i = static_cast<int>(cm) * 2 + static_cast<int>(qm) + (dt == DType::kBFloat16 ? 3 : 0);
  run_and_compare_all_isas(small_cfg(dt, cm, qm, i));
}

INSTANTIATE_TEST_SUITE_P(
    AllModes, MlaPreprocessCross,
    ::testing::Combine(::testing::Values(DType::kFloat16, DType::kBFloat16),
                       ::testing::Values(CM::kKvCache, CM::kKropeCtkv, CM::kInt8NzCache, CM::kNzCache),
                       ::testing::Values(QM::kPerTensorAsymm, QM::kPerTokenSymm)),
    [](const ::testing::TestParamInfo<std::tuple<DType, CM, QM>>& p) {
      return std::string(std::get<0>(p.param) == DType::kFloat16 ? "fp16_" : "bf16_") + "cm" +
             std::to_string(static_cast<int>(std::get<1>(p.param))) + "_qm" +
             std::to_string(static_cast<int>(std::get<2>(p.param)));
    });

// Weights in the input dtype (doRmsNorm = false; the vendor builds it with BF16 only and cacheMode
// 0/1, the C++ API accepts every combination the reference computes).
TEST(MlaPreprocessCrossDtypeWeights, EveryCacheModeBothDtypes) {
  int i = 0;
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (CM cm : {CM::kKvCache, CM::kKropeCtkv, CM::kInt8NzCache, CM::kNzCache}) {
      MlaPreprocessCaseConfig c = small_cfg(dt, cm, QM::kPerTensorAsymm, i++);
      c.float_weights = true;
      run_and_compare_all_isas(c);
    }
}

// Unaligned sizes: D + Dr = 40 (head windows straddle 16-column groups), He and Hcq not multiples
// of 32 (NZ padding in K), N = 5, T = 3, slots across several blocks.
TEST(MlaPreprocessCrossOdd, OddShapes) {
  int i = 0;
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (CM cm : {CM::kKvCache, CM::kKropeCtkv, CM::kInt8NzCache, CM::kNzCache}) {
      MlaPreprocessCaseConfig c;
      c.dtype = dt;
      c.cache_mode = cm;
      c.quant_mode = (i % 2) ? QM::kPerTokenSymm : QM::kPerTensorAsymm;
      c.tokens = 3;
      c.heads = 5;
      c.hidden = 100;
      c.Hckv = 32;
      c.Dr = 16;
      c.Hcq = 40;
      c.D = 24 + ((i % 2) ? 0 : 0);
      c.block_num = 3;
      c.block_size = 4;
      c.weight_form = static_cast<MlaPreprocessWeightForm>(i % 3);
      c.seed = 7 + static_cast<uint64_t>(i);
      ++i;
      run_and_compare_all_isas(c);
    }
}

// More tokens than one 256-token chunk: two chunks, the second partial.
TEST(MlaPreprocessCrossChunks, TwoChunks) {
  MlaPreprocessCaseConfig c = small_cfg(DType::kBFloat16, CM::kNzCache, QM::kPerTokenSymm, 4);
  c.tokens = 300;
  c.heads = 2;
  c.block_num = 20;
  run_and_compare_all_isas(c);
}

// Duplicate slots: tokens are processed in order, the last writer wins (as in the reference);
// -1 skips; the skipped / untouched slots keep the canary.
TEST(MlaPreprocessCrossSlots, DuplicatesLastWriterWinsAndSkips) {
  for (CM cm : {CM::kKvCache, CM::kInt8NzCache}) {
    MlaPreprocessCaseConfig cfg = small_cfg(DType::kFloat16, cm, QM::kPerTensorAsymm, 1);
    cfg.tokens = 6;
    cfg.heads = 2;
    const std::vector<double> slots = {5, -1, 5, 17, 5, -1};
    MlaPreprocessCase ref = testdata::make_mla_preprocess_case(cfg);
    for (int64_t t = 0; t < 6; ++t) ref.slot_mapping.set(t, slots[static_cast<size_t>(t)]);
    ASSERT_EQ(mla_preprocess_ref(ref.params()), kSuccess) << last_error_message();
    for_each_isa_and_threads([&] {
      MlaPreprocessCase fast = testdata::make_mla_preprocess_case(cfg);
      for (int64_t t = 0; t < 6; ++t) fast.slot_mapping.set(t, slots[static_cast<size_t>(t)]);
      ASSERT_EQ(run_fast(fast), kSuccess) << last_error_message();
      expect_match(fast, ref);
      EXPECT_EQ(fast.kv_cache.bytes, ref.kv_cache.bytes) << "the cache rows must be bit-identical";
    });
  }
}

// T = 0: success, workspace 0, nothing written.
TEST(MlaPreprocessCrossEmpty, ZeroTokens) {
  MlaPreprocessCaseConfig cfg = small_cfg(DType::kBFloat16, CM::kKropeCtkv, QM::kPerTensorAsymm, 0);
  cfg.tokens = 0;
  MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);
  uint64_t bytes = 1;
  ASSERT_EQ(mla_preprocess_workspace_size(c.params(), &bytes), kSuccess) << last_error_message();
  EXPECT_EQ(bytes, 0u);
  ASSERT_EQ(mla_preprocess(c.params(), nullptr, 0), kSuccess) << last_error_message();
  EXPECT_TRUE(testdata::all_bytes(c.kv_cache, cfg.canary));
  EXPECT_TRUE(testdata::all_bytes(c.kv_cache_rope, cfg.canary));
}

// Two runs with the same thread count are bitwise identical.
TEST(MlaPreprocessCrossDeterminism, SameThreadsSameBits) {
  MlaPreprocessCaseConfig cfg = small_cfg(DType::kFloat16, CM::kKropeCtkv, QM::kPerTokenSymm, 2);
  set_num_threads(2);
  MlaPreprocessCase a = testdata::make_mla_preprocess_case(cfg), b = testdata::make_mla_preprocess_case(cfg);
  ASSERT_EQ(run_fast(a), kSuccess);
  ASSERT_EQ(run_fast(b), kSuccess);
  set_num_threads(0);
  EXPECT_EQ(a.q_out.bytes, b.q_out.bytes);
  EXPECT_EQ(a.q_rope_out.bytes, b.q_rope_out.bytes);
  EXPECT_EQ(a.kv_cache.bytes, b.kv_cache.bytes);
  EXPECT_EQ(a.kv_cache_rope.bytes, b.kv_cache_rope.bytes);
}

// ND weights are a reference-only form: the fast path rejects them before writing anything.
TEST(MlaPreprocessCrossNd, NdWeightsAreRejected) {
  MlaPreprocessCaseConfig cfg = small_cfg(DType::kFloat16, CM::kKvCache, QM::kPerTensorAsymm, 0);
  cfg.weight_form = MlaPreprocessWeightForm::kNd;
  MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);
  EXPECT_EQ(run_fast(c), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("MPP-03"), std::string::npos) << last_error_message();
  EXPECT_TRUE(testdata::all_bytes(c.kv_cache, cfg.canary));
  EXPECT_TRUE(testdata::all_bytes(c.q_out, cfg.canary));
}

}  // namespace
}  // namespace mlaops::testing

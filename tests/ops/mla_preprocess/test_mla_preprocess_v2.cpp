// MlaPreprocess as CANN treats it, and aclnnMlaPreprocessV2 (docs/ops/mla_preprocess.md):
//   * qDownOut (C++ API and V2) against the float64 reference under every ISA level;
//   * cache outputs distinct from the input caches: only this call's rows land in them, placed by
//     the input caches' geometry, their other bytes and the input caches untouched (fast path
//     under every ISA level, the reference, and through aclnn);
//   * the aclnn entry points ignore epsilon (1e-6 for every RmsNorm);
//   * V2 through the C API at the vendor's shapes: qDownOut written only with the flag, required
//     even without it, the headNum range its tiling does not check, contiguous caches.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ops/mla_preprocess/mla_preprocess_aclnn_call.h"
#include "ops/mla_preprocess/mla_preprocess_harness.h"

namespace mlaops::testing {
namespace {

using CM = MlaPreprocessCacheMode;
using QM = MlaPreprocessQuantMode;

MlaPreprocessCaseConfig small(DType dt, CM cm, QM qm, bool dtype_weights, uint64_t seed) {
  MlaPreprocessCaseConfig c;
  c.dtype = dt;
  c.cache_mode = cm;
  c.quant_mode = qm;
  c.float_weights = dtype_weights;
  c.tokens = 9;
  c.heads = 4;
  c.hidden = 96;
  c.block_num = 3;
  c.q_down = true;
  c.seed = seed;
  return c;
}

TEST(MlaPreprocessQDownOut, MatchesReferenceUnderEachIsa) {
  run_and_compare_all_isas(small(DType::kFloat16, CM::kKvCache, QM::kPerTensorAsymm, false, 1));
  run_and_compare_all_isas(small(DType::kBFloat16, CM::kKropeCtkv, QM::kPerTokenSymm, false, 2));
  run_and_compare_all_isas(small(DType::kBFloat16, CM::kInt8NzCache, QM::kPerTensorAsymm, false, 3));
  run_and_compare_all_isas(small(DType::kBFloat16, CM::kKropeCtkv, QM::kPerTensorAsymm, true, 4));
  run_and_compare_all_isas(small(DType::kFloat16, CM::kNzCache, QM::kPerTokenSymm, true, 5));
}

// Without qDownOut the other outputs are the same.
TEST(MlaPreprocessQDownOut, OptionalOutput) {
  MlaPreprocessCaseConfig cfg = small(DType::kBFloat16, CM::kKropeCtkv, QM::kPerTensorAsymm, false, 6);
  MlaPreprocessCase with = testdata::make_mla_preprocess_case(cfg);
  cfg.q_down = false;
  MlaPreprocessCase without = testdata::make_mla_preprocess_case(cfg);
  ASSERT_EQ(run_fast(with), kSuccess) << last_error_message();
  ASSERT_EQ(run_fast(without), kSuccess) << last_error_message();
  EXPECT_EQ(with.q_out.bytes, without.q_out.bytes);
  EXPECT_EQ(with.kv_cache.bytes, without.kv_cache.bytes);
  EXPECT_EQ(with.q_rope_out.bytes, without.q_rope_out.bytes);
}

// A cache output buffer shaped like the input cache, filled with `fill`.
HostTensor out_like(const HostTensor& cache, uint8_t fill) {
  HostTensor h = cache.clone();
  h.view.data = h.bytes.data();
  h.fill_bytes(fill);
  return h;
}

// `a` and `b` are the same outputs run with pattern 0x5A and 0x3C: bytes equal in both were
// written and must equal the in-place result; the others keep their pattern. Returns the number
// of bytes written.
int64_t expect_only_rows(const HostTensor& a, const HostTensor& b, const HostTensor& in_place, const char* what) {
  int64_t written = 0, bad = 0;
  for (size_t i = 0; i < a.bytes.size(); ++i) {
    if (a.bytes[i] == b.bytes[i]) {
      ++written;
      bad += a.bytes[i] != in_place.bytes[i];
    } else {
      bad += a.bytes[i] != 0x5A || b.bytes[i] != 0x3C;
    }
  }
  EXPECT_EQ(bad, 0) << what;
  EXPECT_GT(written, 0) << what;
  return written;
}

// Runs the case with distinct cache outputs (fast path or reference), twice with two patterns.
template <class Run>
void distinct_outputs_case(const MlaPreprocessCaseConfig& cfg, Run run) {
  MlaPreprocessCase in_place = testdata::make_mla_preprocess_case(cfg);
  ASSERT_EQ(run(in_place.params()), kSuccess) << last_error_message();
  HostTensor kv[2], kr[2];
  for (int k = 0; k < 2; ++k) {
    MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);
    kv[k] = out_like(c.kv_cache, k == 0 ? 0x5A : 0x3C);
    if (c.kv_cache_rope.present()) kr[k] = out_like(c.kv_cache_rope, k == 0 ? 0x5A : 0x3C);
    MlaPreprocessParams p = c.params();
    p.kv_cache_out = kv[k].view;
    p.kr_cache_out = kr[k].present() ? &kr[k].view : nullptr;
    ASSERT_EQ(run(p), kSuccess) << last_error_message();
    EXPECT_TRUE(testdata::all_bytes(c.kv_cache, cfg.canary)) << "the input cache was written";
    EXPECT_TRUE(testdata::all_bytes(c.kv_cache_rope, cfg.canary)) << "the input rope cache was written";
    EXPECT_EQ(c.q_out.bytes, in_place.q_out.bytes);
  }
  expect_only_rows(kv[0], kv[1], in_place.kv_cache, "kvCacheOut");
  if (kr[0].present()) expect_only_rows(kr[0], kr[1], in_place.kv_cache_rope, "krCacheOut");
}

TEST(MlaPreprocessCacheOutputs, DistinctBuffersReceiveOnlyThisCallsRows) {
  for (CM cm : {CM::kKvCache, CM::kKropeCtkv, CM::kInt8NzCache, CM::kNzCache}) {
    SCOPED_TRACE(mla_preprocess_cache_mode_name(cm));
    MlaPreprocessCaseConfig cfg = small(DType::kFloat16, cm, QM::kPerTensorAsymm, false, 10 + static_cast<int>(cm));
    cfg.block_size = 4;  // several blocks written, several left alone
    cfg.block_num = 5;
    distinct_outputs_case(cfg, [](const MlaPreprocessParams& p) { return mla_preprocess_ref(p); });
    for_each_isa_and_threads([&] {
      distinct_outputs_case(cfg, [](const MlaPreprocessParams& p) {
        uint64_t bytes = 0;
        Status s = mla_preprocess_workspace_size(p, &bytes);
        if (s != kSuccess) return s;
        std::vector<uint8_t> ws(static_cast<size_t>(bytes) + 1);
        return mla_preprocess(p, ws.data(), bytes);
      });
    });
  }
}

// ---- through the C API at the vendor's shapes ----

MlaPreprocessCaseConfig vendor(DType dt, CM cm, QM qm, int64_t heads, bool q_down, uint64_t seed) {
  MlaPreprocessCaseConfig c =
      testdata::vendor_cfg({dt, 2, heads, cm, qm, false, testdata::MlaPreprocessWeightForm::kNz4d, false}, seed);
  c.block_num = 2;
  c.q_down = q_down;
  return c;
}

TEST(MlaPreprocessAclnnV2, MatchesReferenceUnderEachIsa) {
  for (const MlaPreprocessCaseConfig& cfg : {vendor(DType::kFloat16, CM::kKropeCtkv, QM::kPerTensorAsymm, 16, true, 1),
                                             vendor(DType::kBFloat16, CM::kInt8NzCache, QM::kPerTokenSymm, 16, true, 2)}) {
    MlaPreprocessCase ref = testdata::make_mla_preprocess_case(cfg);
    ASSERT_EQ(mla_preprocess_ref(ref.params()), kSuccess) << last_error_message();
    MlaPreprocessCase fast = testdata::make_mla_preprocess_case(cfg);
    for (Isa isa : runnable_isas()) {
      set_isa(isa);
      fast.reset_outputs();
      ASSERT_EQ(mla_preprocess_call(fast), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      expect_match(fast, ref);
    }
    reset_isa();
  }
}

// qDownOutFlag false: qDownOut untouched, the other outputs those of V1.
TEST(MlaPreprocessAclnnV2, FlagFalseWritesNoQDownOut) {
  const MlaPreprocessCaseConfig cfg = vendor(DType::kFloat16, CM::kKvCache, QM::kPerTensorAsymm, 16, true, 3);
  MlaPreprocessCase v2 = testdata::make_mla_preprocess_case(cfg), v1 = testdata::make_mla_preprocess_case(cfg);
  ASSERT_EQ(mla_preprocess_call(v2, [](MlaPreprocessArgs& a) { a.q_down_out_flag = false; }), ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  ASSERT_EQ(mla_preprocess_call(v1, [](MlaPreprocessArgs& a) { a.v2 = false; }), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_TRUE(testdata::all_bytes(v2.q_down_out, cfg.canary));
  EXPECT_EQ(v2.q_out.bytes, v1.q_out.bytes);
  EXPECT_EQ(v2.kv_cache.bytes, v1.kv_cache.bytes);
  // ... and a qDownOut of any dtype or shape is then not checked
  v2.reset_outputs();
  ASSERT_EQ(mla_preprocess_call(v2,
                                [](MlaPreprocessArgs& a) {
                                  a.q_down_out_flag = false;
                                  a["qDownOut"] = placeholder_view();
                                }),
            ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  EXPECT_EQ(v2.q_out.bytes, v1.q_out.bytes);
}

// Expects phase 1 or 2 to fail with `code`, the message naming `needle`, nothing written.
void expect_v2_rejected(const MlaPreprocessCase& c, aclnnStatus code, const std::string& needle,
                        const MlaPreprocessMutation& m) {
  const std::vector<uint8_t> kv = c.kv_cache.bytes, q = c.q_out.bytes, qd = c.q_down_out.bytes;
  EXPECT_EQ(mla_preprocess_call(c, m), code) << aclGetRecentErrMsg();
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("aclnnMlaPreprocessV2: " + needle), std::string::npos) << msg;
  EXPECT_TRUE(kv == c.kv_cache.bytes && q == c.q_out.bytes && qd == c.q_down_out.bytes) << "a rejected call wrote";
}

TEST(MlaPreprocessAclnnV2, Errors) {
  const MlaPreprocessCase c =
      testdata::make_mla_preprocess_case(vendor(DType::kBFloat16, CM::kKropeCtkv, QM::kPerTensorAsymm, 16, true, 4));
  for (bool flag : {true, false})  // required by the op definition even when not written
    expect_v2_rejected(c, ACLNN_ERR_PARAM_NULLPTR, "qDownOut: MPP-01", [flag](MlaPreprocessArgs& a) {
      a.q_down_out_flag = flag;
      a.passed[a.index("qDownOut")] = false;
    });
  expect_v2_rejected(c, ACLNN_ERR_PARAM_INVALID, "qDownOut: MPP-02",
                     [](MlaPreprocessArgs& a) { a["qDownOut"].dtype = DType::kFloat16; });
  expect_v2_rejected(c, ACLNN_ERR_PARAM_INVALID, "qDownOut: MPP-09", [](MlaPreprocessArgs& a) {
    a["qDownOut"] = make_view(a["qDownOut"].data, DType::kBFloat16, {2, 1535});
  });
  expect_v2_rejected(c, ACLNN_ERR_PARAM_INVALID, "qDownOut: MPP-04", [](MlaPreprocessArgs& a) {
    a["qDownOut"] = make_view(a["qDownOut"].data, DType::kBFloat16, {2, 1, 1536});
  });
  expect_v2_rejected(c, ACLNN_ERR_PARAM_INVALID, "qDownOut: MPP-14",
                     [](MlaPreprocessArgs& a) { a["qDownOut"].data = a["input"].data; });
  // V2 reads the caches' geometry after making them contiguous: a padded block axis is refused
  expect_v2_rejected(c, ACLNN_ERR_PARAM_INVALID, "kvCache: MPP-05", [](MlaPreprocessArgs& a) {
    TensorView& kv = a["kvCache"];
    kv = make_view(kv.data, kv.dtype, {2, 128, 1, 512});  // described only: phase 1 refuses it
    kv.strides[0] = 2 * 128 * 512;
    kv.storage_rank = 1;
    kv.storage_dims[0] = 4 * 128 * 512;
    a["kvCacheOut"] = kv;
  });
}

// V2's tiling does not check headNum (nor Hcq, D): a consistent headNum outside V1's set is
// computed (and still refused by V1, MPP-08).
TEST(MlaPreprocessAclnnV2, HeadNumOutsideV1sSet) {
  const MlaPreprocessCaseConfig cfg = vendor(DType::kFloat16, CM::kKropeCtkv, QM::kPerTensorAsymm, 8, true, 5);
  MlaPreprocessCase ref = testdata::make_mla_preprocess_case(cfg), fast = testdata::make_mla_preprocess_case(cfg);
  ASSERT_EQ(mla_preprocess_ref(ref.params()), kSuccess) << last_error_message();
  ASSERT_EQ(mla_preprocess_call(fast), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  expect_match(fast, ref);
  fast.reset_outputs();
  EXPECT_EQ(mla_preprocess_call(fast, [](MlaPreprocessArgs& a) { a.v2 = false; }), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("MPP-08 headNum"), std::string::npos) << aclGetRecentErrMsg();
}

// The aclnn entry points ignore epsilon: 1e-5 there equals the C++ API with 1e-6.
TEST(MlaPreprocessAclnnEpsilon, AttributeIgnored) {
  MlaPreprocessCaseConfig cfg = vendor(DType::kFloat16, CM::kKropeCtkv, QM::kPerTensorAsymm, 16, false, 6);
  cfg.epsilon = 1e-6;
  MlaPreprocessCase aclnn = testdata::make_mla_preprocess_case(cfg), cpp = testdata::make_mla_preprocess_case(cfg);
  ASSERT_EQ(mla_preprocess_call(aclnn, [](MlaPreprocessArgs& a) { a.epsilon = 1e-5; }), ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  ASSERT_EQ(run_fast(cpp), kSuccess) << last_error_message();
  EXPECT_EQ(aclnn.q_out.bytes, cpp.q_out.bytes);
  EXPECT_EQ(aclnn.q_rope_out.bytes, cpp.q_rope_out.bytes);
  EXPECT_EQ(aclnn.kv_cache.bytes, cpp.kv_cache.bytes);
  EXPECT_EQ(aclnn.kv_cache_rope.bytes, cpp.kv_cache_rope.bytes);
}

// Through aclnn, a fresh kvCacheOut / krCacheOut receives only this call's rows; kvCache and
// kvCacheRope stay unchanged.
TEST(MlaPreprocessAclnnCacheOutputs, DistinctBuffers) {
  const MlaPreprocessCaseConfig cfg = vendor(DType::kBFloat16, CM::kKropeCtkv, QM::kPerTensorAsymm, 16, false, 7);
  MlaPreprocessCase in_place = testdata::make_mla_preprocess_case(cfg);
  ASSERT_EQ(mla_preprocess_call(in_place), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  HostTensor kv[2], kr[2];
  for (int k = 0; k < 2; ++k) {
    MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);
    kv[k] = out_like(c.kv_cache, k == 0 ? 0x5A : 0x3C);
    kr[k] = out_like(c.kv_cache_rope, k == 0 ? 0x5A : 0x3C);
    const TensorView kv_view = kv[k].view, kr_view = kr[k].view;
    ASSERT_EQ(mla_preprocess_call(c,
                                  [&](MlaPreprocessArgs& a) {
                                    a["kvCacheOut"] = kv_view;
                                    a["krCacheOut"] = kr_view;
                                  }),
              ACLNN_SUCCESS)
        << aclGetRecentErrMsg();
    EXPECT_TRUE(testdata::all_bytes(c.kv_cache, cfg.canary));
    EXPECT_TRUE(testdata::all_bytes(c.kv_cache_rope, cfg.canary));
    EXPECT_EQ(c.q_out.bytes, in_place.q_out.bytes);
  }
  expect_only_rows(kv[0], kv[1], in_place.kv_cache, "kvCacheOut");
  expect_only_rows(kr[0], kr[1], in_place.kv_cache_rope, "krCacheOut");
}

}  // namespace
}  // namespace mlaops::testing

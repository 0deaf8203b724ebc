// FusedInferAttentionScoreV4 INT8 full quantisation (INT8 query / key / value, deqScale1 /
// quantScale1 / deqScale2; rules FIA-30..32; docs/ops/fused_infer_attention_score.md "Full
// quantisation (INT8 query)") against the float64 reference (reference/fia/fia_full_quant_ref.h)
// under every ISA level of this host and 1 / 2 threads: GQA / MHA, B 1..3, Q_S 2..300, KV_S up to
// 2600 (three 1024-position chunks), D 32 / 64 / 128, BSH / BSND / BNSD and output variants,
// sparse 0..4 with explicit masks and the template, FP16 pseShift, softmaxLse, UINT64 and FP32
// dequant scales, FP16 and INT8 output (per tensor / per channel, with and without offset); the
// C API with vendor-style UINT64 scales (trans_19bit); then every FIA-30..32 rejection (status,
// message, outputs untouched).
//
// The fast path follows the reference's rounding steps; the integer dots and the score
// roundings are identical (both reproduce fp16(fp16(fp32(qk * deq1)) * fp16(scale))), so what
// differs is the exponential (fp32 polynomial vs double exp, and s - m in fp32) where a P value
// sits on an FP16 or integer rounding boundary, and the fp32 accumulation of o and l. Asserted
// per run (kMax* below): FP16 output within 1 FP16 ulp of the exact (FP64-output) reference value
// (+1e-6) for every element; INT8 output |op - ref| <= 1 with at
// most 0.1 % differing; softmaxLse within 1e-5 relative. Measured over every case, ISA level
// (scalar, avx2, avx512) and thread count: max 0.502 ulp (the final FP16 rounding), none beyond
// 1 ulp, no INT8 difference, lse relative error <= 2.4e-7; P against the double-exp emulation
// (RowsFollowTheRoundingSteps): 0 flips in 1.02e6 scores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "kernels/cpu/attention/flash_quant.h"
#include "mlaops/numeric.h"
#include "mlaops/plan.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_entry_call.h"
#include "ops/fia/fia_full_quant_cases.h"
#include "reference/fia/fia_ref.h"
#include "testkit/fia_test_data.h"
#include "tests/support/isa_list.h"
#include "tests/support/kernel_rows.h"

namespace mlaops::testing {
namespace {

std::vector<FqCase> cases() {
  std::vector<FqCase> v;
  FqCase c;
  c = fq("mha_bsnd_small_u64", 1, 2, 2, 5, 37, 32, "BSND");
  v.push_back(c);
  c = fq("gqa4_bsh_fp32_scales_lse", 2, 8, 2, 17, 300, 64, "BSH");
  c.deq_dtype = F32;
  c.lse = true;
  c.act_q = {17, 9};
  c.act_kv = {300, 123};
  v.push_back(c);
  c = fq("gqa2_bnsd_three_chunks_lse", 1, 4, 2, 20, 2600, 64, "BNSD");
  c.lse = true;
  v.push_back(c);
  c = fq("gqa8_bnsd_bsnd_causal_two_chunks", 1, 8, 1, 40, 1500, 128, "BNSD_BSND");
  c.sparse = 3;
  c.mask = Mask::kTemplate;
  c.lse = true;
  v.push_back(c);
  c = fq("mha_bsh_bnsd_q300_causal", 1, 2, 2, 300, 300, 32, "BSH_BNSD");
  c.sparse = 3;
  c.mask = Mask::kTemplate;
  c.seed = 4;
  v.push_back(c);
  c = fq("gqa2_bsnd_sparse2_b3", 3, 4, 2, 33, 70, 64, "BSND");
  c.sparse = 2;
  c.mask = Mask::kTemplate;
  c.act_q = {33, 20, 2};
  c.act_kv = {70, 20, 65};
  c.seed = 5;
  v.push_back(c);
  c = fq("gqa4_bsnd_band_sparse4_chunks", 1, 4, 1, 24, 1100, 64, "BSND_BNSD");
  c.sparse = 4;
  c.mask = Mask::kTemplate;
  c.pre = 700;
  c.next = 5;
  c.lse = true;
  v.push_back(c);
  c = fq("gqa2_bsh_rank2_mask_prenext_lse", 2, 4, 2, 19, 90, 32, "BSH");
  c.mask = Mask::kRank2;
  c.pre = 40;
  c.next = 3;
  c.lse = true;
  v.push_back(c);
  c = fq("mha_bnsd_sparse1_rank3_pse", 2, 3, 3, 16, 80, 64, "BNSD");
  c.sparse = 1;
  c.mask = Mask::kRank3;
  c.pse = true;
  c.lse = true;
  c.deq_dtype = F32;
  v.push_back(c);
  c = fq("gqa2_bsnd_rank4_bcast_pse_bcast", 2, 4, 2, 12, 50, 32, "BSND_NBSD");
  c.mask = Mask::kRank4Bcast;
  c.pse = true;
  c.pse_bcast = true;
  v.push_back(c);
  c = fq("gqa4_bsh_int8_out_tensor", 2, 8, 2, 10, 200, 64, "BSH");
  c.int8_out = true;
  c.lse = true;
  v.push_back(c);
  c = fq("gqa2_bnsd_int8_out_offset_causal", 1, 4, 2, 64, 1030, 128, "BNSD");
  c.int8_out = true;
  c.offset = true;
  c.sparse = 3;
  c.mask = Mask::kTemplate;
  v.push_back(c);
  c = fq("mha_bsnd_int8_out_channel_pse", 2, 2, 2, 9, 64, 32, "BSND");
  c.int8_out = true;
  c.channel = true;
  c.pse = true;
  c.deq_dtype = F32;
  v.push_back(c);
  c = fq("gqa16_bsnd_q2", 1, 16, 1, 2, 1025, 64, "BSND");
  c.lse = true;
  v.push_back(c);
  c = fq("gqa2_bsh_nbsd_empty_kv_batch_int8_out", 3, 4, 2, 7, 60, 32, "BSH_NBSD");
  c.act_q = {7, 3, 5};
  c.act_kv = {0, 60, 17};
  c.int8_out = true;
  c.lse = true;
  c.mask = Mask::kRank3;  // row 1: mostly masked, some rows fully
  c.sparse = 1;
  v.push_back(c);
  return v;
}

class FiaFullQuant : public ::testing::TestWithParam<FqCase> {};

TEST_P(FiaFullQuant, MatchesReferenceEveryIsaAndThreads) {
  const FqCase& c = GetParam();
  auto ref = make_data(c);
  ref->bind(c.int8_out ? I8 : DType::kFloat64);
  ASSERT_EQ(fused_infer_attention_score_v4_ref(ref->params), kSuccess) << last_error_message();
  FqStats worst;
  for (Isa isa : test_isas()) {
    ASSERT_TRUE(set_isa(isa));
    for (int t : {1, 2}) {
      set_num_threads(t);
      auto op = make_data(c);
      op->bind(c.int8_out ? I8 : F16);
      const Status s = run_fia_cpp(op->params);
      set_num_threads(0);
      ASSERT_EQ(s, kSuccess) << last_error_message();
      const FqStats r = compare_runs(*op, *ref);
      const std::string where = c.name + " isa=" + isa_name(isa) + " threads=" + std::to_string(t);
      expect_within_tolerances(r, c.int8_out, where);
      worst.take_worst(r);
    }
  }
  reset_isa();
  std::printf("[ measured ] %s: n %lld, max %.3f ulp, >1 ulp %.4f %%, int8 max %.0f, int8 diff %.4f %%, lse rel %.2e\n",
              c.name.c_str(), (long long)ref->out.numel(), worst.max_ulps, worst.over1_pct, worst.max_int8,
              worst.int8_pct, worst.lse_rel);
}

INSTANTIATE_TEST_SUITE_P(Cases, FiaFullQuant, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<FqCase>& i) { return i.param.name; });

// ---- the flash_quant rows against the rounding steps ----


// A plan made once runs on new tensor contents: the scales are read at run time (changed
// deqScale1 / quantScale1 / deqScale2 give the bytes of a fresh call).
TEST(FiaFullQuantPlan, ScalesAreReadAtRunTime) {
  FqCase c = fq("plan_reuse", 2, 4, 2, 9, 130, 64, "BNSD");
  c.lse = true;
  auto d = make_data(c);
  d->bind(F16);
  OpPlan plan;
  ASSERT_EQ(fused_infer_attention_score_v4_plan(d->params, &plan), kSuccess) << last_error_message();
  std::vector<uint64_t> ws(plan.workspace_size() / 8 + 1);
  ASSERT_EQ(fused_infer_attention_score_v4_run(plan, d->params, ws.data(), plan.workspace_size()), kSuccess);
  const std::vector<uint64_t> first = d->out.storage;
  // new scale values, same tensors
  const HostTensor deq1 = scale_tensor(U64, 0.002f), qs1 = scale_tensor(F32, 60.0f), deq2 = scale_tensor(U64, 0.0007f);
  std::memcpy(d->deq1.data(), deq1.data(), 8);
  std::memcpy(d->qs1.data(), qs1.data(), 4);
  std::memcpy(d->deq2.data(), deq2.data(), 8);
  ASSERT_EQ(fused_infer_attention_score_v4_run(plan, d->params, ws.data(), plan.workspace_size()), kSuccess);
  const std::vector<uint64_t> replanned = d->out.storage;
  EXPECT_FALSE(replanned == first);
  std::fill(d->out.storage.begin(), d->out.storage.end(), 0);
  ASSERT_EQ(run_fia_cpp(d->params), kSuccess) << last_error_message();
  EXPECT_TRUE(d->out.storage == replanned);
}

// ---- the C API (aclnnFusedInferAttentionScoreV4), vendor style ----


TEST(FiaFullQuantAclnn, VendorStyleUint64ScalesMatchReference) {
  FqCase c = fq("aclnn_gqa4_bsh", 2, 8, 2, 33, 1200, 128, "BSH");
  c.lse = true;
  c.sparse = 3;
  c.mask = Mask::kTemplate;
  c.seed = 2;  // even seed: deqScale1 / deqScale2 by trans_19bit
  for (bool int8_out : {false, true}) {
    c.int8_out = int8_out;
    c.offset = int8_out;
    auto ref = make_data(c);
    ref->bind(int8_out ? I8 : DType::kFloat64);
    ASSERT_EQ(fused_infer_attention_score_v4_ref(ref->params), kSuccess) << last_error_message();
    auto op = make_data(c);
    op->bind(int8_out ? I8 : F16);
    ASSERT_EQ(fia_aclnn_call(acl_args_of_params(op->params)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    const FqStats r = compare_runs(*op, *ref);
    expect_within_tolerances(r, int8_out, "");
  }
}

// The 19-bit truncation: the kernel reads the float32 pattern of a UINT64 / FP32 scale with the
// low 13 mantissa bits cleared, so an untruncated UINT64 pattern and FP32 scale give the same
// bytes as the trans_19bit one.
TEST(FiaFullQuantAclnn, DequantScalesUseNineteenBits) {
  FqCase c = fq("trunc19", 1, 4, 2, 8, 100, 64, "BSND");
  std::vector<uint64_t> first;
  for (int form = 0; form < 3; ++form) {
    auto d = make_data(c);
    const float s1 = 0.0271f * 0.0333f, s2 = 0.0311f / 126.7f;
    d->deq1 = scale_tensor(form == 2 ? F32 : U64, s1, form == 0);
    d->deq2 = scale_tensor(form == 2 ? F32 : U64, s2, form == 0);
    d->bind(F16);
    ASSERT_EQ(fia_aclnn_call(acl_args_of_params(d->params)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    if (form == 0)
      first = d->out.storage;
    else
      EXPECT_TRUE(d->out.storage == first) << "form " << form;
  }
}

// The earlier entry points with deqScale1 / quantScale1 / deqScale2 / quantScale2 / quantOffset2
// slots reach the full-quantisation path: FIA V1-V3 and PFA V2 / V3 give the bytes of the V4 call
// of their mapped arguments (prefill, FP16 and INT8 output); IFA V2-V4 (decode, Q_S = 1) reject an
// INT8 query with FIA-32, naming the entry point.
TEST(FiaFullQuantAclnn, EarlierEntryPointsReachThePath) {
  for (bool int8_out : {false, true}) {
    FqCase c = fq("entry", 2, 4, 2, 6, 70, 64, "BSND");
    c.sparse = 3;
    c.mask = Mask::kTemplate;
    c.int8_out = int8_out;
    c.offset = int8_out;
    auto d = make_data(c);
    d->bind(int8_out ? I8 : F16);
    const FiaAclArgs a = acl_args_of_params(d->params);
    for (Entry e : {Entry::kFiaV1, Entry::kFiaV2, Entry::kFiaV3, Entry::kPfaV2, Entry::kPfaV3}) {
      SCOPED_TRACE(entry_name(e));
      std::fill(d->out.storage.begin(), d->out.storage.end(), 0);
      ASSERT_EQ(entry_call(e, a), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      const std::vector<uint64_t> got = d->out.storage;
      std::fill(d->out.storage.begin(), d->out.storage.end(), 0);
      ASSERT_EQ(fia_aclnn_call(mapped_v4(e, a)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      EXPECT_TRUE(got == d->out.storage);
    }
  }
  FqCase c = fq("entry_decode", 2, 4, 2, 1, 40, 64, "BSND");
  auto d = make_data(c);
  d->bind(F16);
  const FiaAclArgs a = acl_args_of_params(d->params);
  for (Entry e : {Entry::kIfaV2, Entry::kIfaV3, Entry::kIfaV4}) {
    EXPECT_EQ(entry_call(e, a), ACLNN_ERR_PARAM_INVALID) << entry_name(e);
    const std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find(entry_name(e)), std::string::npos) << msg;
    EXPECT_NE(msg.find("FIA-32 INT8 full quantisation is the prefill path"), std::string::npos) << msg;
  }
}

// ---- rejections (FIA-30..32 and the dtype / pairing rules full quantisation relies on) ----

struct Reject {
  const char* what;
  aclnnStatus code;
  const char* param;
  const char* rule;
  std::function<void(FqCase&)> edit_case;     // optional: a different base case
  std::function<void(FiaAclArgs&)> mutate;
};

void expect_rejected_fq(const Reject& r) {
  FqCase c = fq("base", 2, 4, 2, 6, 40, 32, "BSND");
  c.lse = true;
  if (r.edit_case) r.edit_case(c);
  auto d = make_data(c);
  d->bind(c.int8_out ? I8 : F16);
  std::fill(d->out.storage.begin(), d->out.storage.end(), 0x7e007e007e007e00ull);  // NaN canaries
  std::fill(d->lse.storage.begin(), d->lse.storage.end(), 0x7fc000007fc00000ull);
  const std::vector<uint64_t> out0 = d->out.storage, lse0 = d->lse.storage;
  FiaAclArgs a = acl_args_of_params(d->params);
  a.lse_flag = true;
  a.lse = d->lse.view();
  a.lse_passed = true;
  if (r.mutate) r.mutate(a);
  const aclnnStatus s = fia_aclnn_call(a);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_EQ(s, r.code) << r.what << ": " << msg;
  EXPECT_NE(msg.find(r.param), std::string::npos) << r.what << ": " << msg;
  EXPECT_NE(msg.find(r.rule), std::string::npos) << r.what << ": " << msg;
  EXPECT_TRUE(d->out.storage == out0) << r.what << ": attentionOut changed";
  EXPECT_TRUE(d->lse.storage == lse0) << r.what << ": softmaxLse changed";
}

TEST(FiaFullQuantRules, RejectedWithoutWriting) {
  static float f32_one[2] = {1.0f, 1.0f};
  static int32_t i32_one[2] = {1, 1};
  static uint16_t h_one[8] = {0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00};
  static uint64_t u64_one[1] = {0x3f800000ull};
  static int32_t bt[2] = {0, 1};
  const std::vector<Reject> rejects = {
      {"FP16 query with deqScale1", ACLNN_ERR_PARAM_INVALID, "deqScale1Optional", "FIA-30",
       [](FqCase&) {},
       [](FiaAclArgs& a) {
         static HostTensor q16;
         q16 = HostTensor(F16, {a.in[0].dims[0], a.in[0].dims[1], a.in[0].dims[2], a.in[0].dims[3]});
         static HostTensor k16, v16;
         k16 = HostTensor(F16, {a.in[1].dims[0], a.in[1].dims[1], a.in[1].dims[2], a.in[1].dims[3]});
         v16 = k16;
         a.in[0] = q16.view();
         a.in[1] = k16.view();
         a.in[2] = v16.view();
       }},
      {"FP16 query with quantScale1", ACLNN_ERR_PARAM_INVALID, "quantScale1Optional", "FIA-30",
       [](FqCase&) {},
       [](FiaAclArgs& a) {
         static HostTensor q16, k16, v16;
         q16 = HostTensor(F16, {a.in[0].dims[0], a.in[0].dims[1], a.in[0].dims[2], a.in[0].dims[3]});
         k16 = HostTensor(F16, {a.in[1].dims[0], a.in[1].dims[1], a.in[1].dims[2], a.in[1].dims[3]});
         v16 = k16;
         a.in[0] = q16.view();
         a.in[1] = k16.view();
         a.in[2] = v16.view();
         a.passed[7] = false;
       }},
      {"missing deqScale1", ACLNN_ERR_PARAM_INVALID, "deqScale1Optional", "FIA-30 required with an INT8 query (full quantisation needs deqScale1, quantScale1 and deqScale2)", nullptr,
       [](FiaAclArgs& a) { a.passed[7] = false; }},
      {"missing quantScale1", ACLNN_ERR_PARAM_INVALID, "quantScale1Optional", "FIA-30 required with an INT8 query (full quantisation needs deqScale1, quantScale1 and deqScale2)", nullptr,
       [](FiaAclArgs& a) { a.passed[8] = false; }},
      {"missing deqScale2", ACLNN_ERR_PARAM_INVALID, "deqScale2Optional", "FIA-30 required with an INT8 query (full quantisation needs deqScale1, quantScale1 and deqScale2)", nullptr,
       [](FiaAclArgs& a) { a.passed[9] = false; }},
      {"deqScale1 INT32", ACLNN_ERR_PARAM_INVALID, "deqScale1Optional", "FIA-31", nullptr,
       [](FiaAclArgs& a) { a.in[7] = make_view(i32_one, DType::kInt32, {1}); }},
      {"deqScale2 FLOAT16", ACLNN_ERR_PARAM_INVALID, "deqScale2Optional", "FIA-31", nullptr,
       [](FiaAclArgs& a) { a.in[9] = make_view(h_one, F16, {1}); }},
      {"quantScale1 UINT64", ACLNN_ERR_PARAM_INVALID, "quantScale1Optional", "FIA-31", nullptr,
       [](FiaAclArgs& a) { a.in[8] = make_view(u64_one, U64, {1}); }},
      {"deqScale1 two elements", ACLNN_ERR_PARAM_INVALID, "deqScale1Optional", "FIA-31 per-tensor scale", nullptr,
       [](FiaAclArgs& a) { a.in[7] = make_view(f32_one, F32, {2}); }},
      {"quantScale1 two elements", ACLNN_ERR_PARAM_INVALID, "quantScale1Optional", "FIA-31 per-tensor scale", nullptr,
       [](FiaAclArgs& a) { a.in[8] = make_view(f32_one, F32, {1, 2}); }},
      {"Q_S 1 (decode)", ACLNN_ERR_PARAM_INVALID, "query", "FIA-32", [](FqCase& c) { c.Sq = 1; }, nullptr},
      {"head dim 48", ACLNN_ERR_PARAM_INVALID, "query",
       "FIA-32 INT8 head dims must be multiples of 32 (32-byte aligned) when Q_S > 1", [](FqCase& c) { c.D = 48; }, nullptr},
      {"TND layout", ACLNN_ERR_PARAM_INVALID, "inputLayout", "FIA-32 INT8 full quantisation is not allowed with layout", nullptr,
       [](FiaAclArgs& a) {
         static HostTensor q, k;
         q = HostTensor(I8, {12, 4, 32});
         k = HostTensor(I8, {80, 2, 32});
         a.in[0] = q.view();
         a.in[1] = k.view();
         a.in[2] = k.view();
         a.layout = "TND";
         a.has_asl_q = a.has_asl_kv = true;
         a.asl_q = {6, 12};
         a.asl_kv = {40, 80};
         static HostTensor o;
         o = HostTensor(F16, {12, 4, 32});
         a.out = o.view();
         a.lse_passed = false;
         a.lse_flag = false;
       }},
      {"paged KV", ACLNN_ERR_PARAM_INVALID, "blockTableOptional", "FIA-32 paged attention is not allowed with an INT8 query", [](FqCase& c) {
         c.layout = "BNSD";
         c.Skv = 48;
       },
       [](FiaAclArgs& a) {
         a.in[14] = make_view(bt, DType::kInt32, {2, 1});
         a.passed[14] = true;
         a.block_size = 48;
         a.has_asl_kv = true;
         a.asl_kv = {48, 48};
       }},
      {"tree mask (sparse 9)", ACLNN_ERR_PARAM_INVALID, "sparseMode",
       "FIA-32 the tree mask (9) is not allowed with INT8 full quantisation", nullptr,
       [](FiaAclArgs& a) {
         static HostTensor tree;
         tree = HostTensor(DType::kUInt8, {2, 6, 6});  // a valid (B, Q_S, Q_S) tree: all zero
         a.in[4] = tree.view();
         a.passed[4] = true;
         a.sparse = 9;
       }},
      {"learnableSink", ACLNN_ERR_PARAM_INVALID, "learnableSinkOptional", "FIA-32 not allowed with INT8 full quantisation", nullptr,
       [](FiaAclArgs& a) {
         a.in[28] = make_view(h_one, DType::kBFloat16, {4});
         a.passed[28] = true;
       }},
      {"KV antiquant scale", ACLNN_ERR_PARAM_INVALID, "keyAntiquantScaleOptional",
       "FIA-32 KV antiquant parameters are not allowed with INT8 full quantisation (key and value are dequantised by "
       "deqScale1 / deqScale2)", nullptr,
       [](FiaAclArgs& a) {
         a.in[17] = make_view(f32_one, F32, {1});
         a.passed[17] = true;
         a.in[19] = make_view(f32_one, F32, {1});
         a.passed[19] = true;
       }},
      {"FP16 key with an INT8 query", ACLNN_ERR_PARAM_INVALID, "key", "FIA-03", nullptr,
       [](FiaAclArgs& a) {
         static HostTensor k16;
         k16 = HostTensor(F16, {a.in[1].dims[0], a.in[1].dims[1], a.in[1].dims[2], a.in[1].dims[3]});
         a.in[1] = k16.view();
       }},
      {"INT32 (packed INT4) key with an INT8 query", ACLNN_ERR_PARAM_INVALID, "key", "FIA-03", nullptr,
       [](FiaAclArgs& a) {
         static HostTensor k32, v32;
         k32 = HostTensor(DType::kInt32, {a.in[1].dims[0], a.in[1].dims[1], a.in[1].dims[2], a.in[1].dims[3] / 8});
         v32 = k32;
         a.in[1] = k32.view();
         a.in[2] = v32.view();
       }},
      {"BF16 pseShift with an INT8 query", ACLNN_ERR_PARAM_INVALID, "pseShiftOptional", "FIA-22 (= query dtype", nullptr,
       [](FiaAclArgs& a) {
         static HostTensor pse;
         pse = HostTensor(DType::kBFloat16, {2, 4, 6, 40});
         a.in[3] = pse.view();
         a.passed[3] = true;
       }},
      {"INT8 to FP16 with quantScale2", ACLNN_ERR_PARAM_INVALID, "attentionOut", "FIA-26", nullptr,
       [](FiaAclArgs& a) {
         a.in[10] = make_view(f32_one, F32, {1});
         a.passed[10] = true;
       }},
      {"INT8 to INT8 without quantScale2", ACLNN_ERR_PARAM_INVALID, "attentionOut", "FIA-26", nullptr,
       [](FiaAclArgs& a) {
         static HostTensor o8;
         o8 = HostTensor(I8, {a.out.dims[0], a.out.dims[1], a.out.dims[2], a.out.dims[3]});
         a.out = o8.view();
       }},
      {"BF16 output with an INT8 query", ACLNN_ERR_PARAM_INVALID, "attentionOut", "FIA-03", nullptr,
       [](FiaAclArgs& a) {
         static HostTensor ob;
         ob = HostTensor(DType::kBFloat16, {a.out.dims[0], a.out.dims[1], a.out.dims[2], a.out.dims[3]});
         a.out = ob.view();
       }},
  };
  for (const Reject& r : rejects) expect_rejected_fq(r);
}

}  // namespace
}  // namespace mlaops::testing

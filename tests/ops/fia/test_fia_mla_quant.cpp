// FusedInferAttentionScoreV4 MLA full quant (ops/fia/fia_mla_quant.h, rules FIA-27 / FIA-28 /
// FIA-29): the operator against the float64 reference (reference/fia/fia_mla_quant_ref.h) under
// every ISA level this host runs and 1 / 2 threads, over decode and MTP shapes (N 1..128, Q_S
// 1..16, BSH / BSND / TND with NBSD / NTD outputs, KV lengths 0..700, block sizes 16..256 incl.
// 48, value = key or a separate tensor, fully masked and padded rows, softmaxLse, KV splits with
// 2 threads), one
// vendor-style DeepSeek decode call through the C API, then every rule's rejections (status,
// message naming the parameter and the rule, no output byte changed).
//
// Bound (the harness's BF16 bound, fia_harness.h): |op - ref| <= 7.8e-3 |ref| + 1e-2 rms(ref)
// per element; softmaxLse |op - ref| <= 1e-4 |ref| + 1e-5, +inf positions equal; padded rows 0.
// Measured worst (AMD EPYC Zen 5, 108 runs): max |op - ref| 0.033 rms(ref) (the BF16 output's
// rounding of large elements), relative to |ref| >= rms 3.9e-3 (portable row, fp32 P) and
// 9.2e-3 (AVX-512 row, BF16 P); softmaxLse 1.4e-6. Printed by MlaQuant.MatchesReference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/runtime.h"
#include "mlaops/status.h"
#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_harness.h"
#include "ops/fia/fia_mla_quant_data.h"
#include "reference/fia/fia_ref.h"
#include "tests/support/isa_list.h"

namespace mlaops::testing {
namespace {

struct Err {
  double out_rel_rms = 0;  // max |op - ref| / rms(ref)
  double out_rel = 0;      // max |op - ref| / |ref| where |ref| >= rms(ref)
  double lse_abs = 0;
  int64_t bad = 0;
};

Err compare(const HostTensor& op, const HostTensor& ref, const HostTensor* op_lse, const HostTensor* ref_lse) {
  Err e;
  double ss = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) ss += ref.flat(i) * ref.flat(i);
  const double rms = std::sqrt(ss / static_cast<double>(std::max<int64_t>(ref.numel(), 1))) + 1e-30;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double a = op.flat(i), b = ref.flat(i), d = std::fabs(a - b);
    if (!(d <= 7.8e-3 * std::fabs(b) + 1e-2 * rms)) ++e.bad;
    if (b == 0.0 && a != 0.0) ++e.bad;  // padded / empty rows are exactly 0
    e.out_rel_rms = std::max(e.out_rel_rms, d / rms);
    if (std::fabs(b) >= rms) e.out_rel = std::max(e.out_rel, d / std::fabs(b));
  }
  if (op_lse != nullptr) {
    for (int64_t i = 0; i < ref_lse->numel(); ++i) {
      const double a = op_lse->flat(i), b = ref_lse->flat(i);
      if (std::isinf(a) || std::isinf(b)) {
        if (!(a == b)) ++e.bad;
        continue;
      }
      const double d = std::fabs(a - b);
      if (!(d <= 1e-4 * std::fabs(b) + 1e-5)) ++e.bad;
      e.lse_abs = std::max(e.lse_abs, d);
    }
  }
  return e;
}

MqCase mk(const char* name, const char* layout, int64_t B, int64_t N, int64_t QS, std::vector<int64_t> act_kv,
          int64_t bs, int64_t sparse = 0, uint32_t seed = 1) {
  MqCase c;
  c.name = name;
  c.layout = layout;
  c.B = B;
  c.N = N;
  c.QS = QS;
  c.act_kv = std::move(act_kv);
  c.bs = bs;
  c.sparse = sparse;
  c.seed = seed;
  return c;
}

std::vector<MqCase> cases() {
  std::vector<MqCase> v;
  v.push_back(mk("deepseek_decode_bsnd_nbsd_n128", "BSND_NBSD", 2, 128, 1, {700, 129}, 128, 0, 1));
  v.push_back(mk("decode_bsnd_n1_kv1", "BSND", 1, 1, 1, {1}, 128, 0, 2));
  v.push_back(mk("decode_bsh_n2_bs16_kv0", "BSH", 3, 2, 1, {33, 0, 16}, 16, 0, 3));
  MqCase c = mk("decode_bsnd_n4_bs48_separate_value", "BSND", 2, 4, 1, {95, 47}, 48, 0, 4);
  c.separate_v = true;
  v.push_back(c);
  v.push_back(mk("decode_bsh_nbsd_n16_bs256", "BSH_NBSD", 2, 16, 1, {300, 257}, 256, 0, 5));
  v.push_back(mk("decode_bsnd_n32_bs64", "BSND", 1, 32, 1, {640}, 64, 0, 6));
  c = mk("decode_bsnd_n64_no_lse", "BSND", 1, 64, 1, {511}, 128, 0, 7);
  c.lse = false;
  v.push_back(c);
  v.push_back(mk("decode_odd_heads_n3_bs32", "BSND", 2, 3, 1, {70, 5}, 32, 0, 8));
  v.push_back(mk("mtp_bsnd_qs2_causal_masked_row", "BSND", 2, 8, 2, {50, 1}, 16, 3, 9));
  c = mk("mtp_bsh_qs4_padded_rows", "BSH", 2, 16, 4, {200, 130}, 128, 3, 10);
  c.act_q = {4, 2};
  v.push_back(c);
  c = mk("mtp_tnd_n16", "TND", 3, 16, 0, {5, 300, 129}, 128, 3, 11);
  c.act_q = {1, 2, 4};
  v.push_back(c);
  c = mk("mtp_tnd_ntd_n128", "TND_NTD", 2, 128, 0, {400, 17}, 128, 3, 12);
  c.act_q = {3, 1};
  v.push_back(c);
  c = mk("mtp_tnd_sparse0_separate_value", "TND", 2, 4, 0, {40, 64}, 16, 0, 13);
  c.act_q = {2, 3};
  c.separate_v = true;
  v.push_back(c);
  v.push_back(mk("qs16_bsnd_bs32", "BSND", 1, 4, 16, {100}, 32, 3, 14));
  c = mk("decode_tnd_single_tokens", "TND", 4, 8, 0, {1, 130, 256, 0}, 128, 0, 15);
  c.act_q = {1, 1, 1, 1};
  v.push_back(c);
  v.push_back(mk("decode_bsnd_n128_seed2", "BSND", 1, 128, 1, {333}, 128, 0, 16));
  // one item, two threads: KV splits (a long cache), the rows merged by log-sum-exp
  c = mk("mtp_tnd_one_item_kv_split", "TND", 1, 16, 0, {700}, 128, 3, 17);
  c.act_q = {4};
  v.push_back(c);
  v.push_back(mk("decode_bsnd_n128_kv_split", "BSND_NBSD", 1, 128, 1, {1000}, 128, 0, 18));
  return v;
}

TEST(MlaQuant, MatchesReference) {
  Err worst, worst_isa[8];
  int runs = 0;
  for (const MqCase& c : cases()) {
    SCOPED_TRACE(c.name);
    auto d = mq_make(c);
    HostTensor ref_out(DType::kFloat64, d->out_dims), ref_lse(DType::kFloat32, d->lse_dims);
    const TensorView rlv = ref_lse.view();
    ASSERT_EQ(fused_infer_attention_score_v4_ref(mq_params(*d, ref_out.view(), c.lse ? &rlv : nullptr)), kSuccess)
        << last_error_message();
    for (Isa isa : test_isas()) {
      ASSERT_TRUE(set_isa(isa));
      for (int t : {1, 2}) {
        set_num_threads(t);
        HostTensor out(DType::kBFloat16, d->out_dims, std::nan("")), lse(DType::kFloat32, d->lse_dims, std::nan(""));
        const TensorView lv = lse.view();
        const Status s = run_fia_cpp(mq_params(*d, out.view(), c.lse ? &lv : nullptr));
        set_num_threads(0);
        ASSERT_EQ(s, kSuccess) << last_error_message();
        const Err e = compare(out, ref_out, c.lse ? &lse : nullptr, c.lse ? &ref_lse : nullptr);
        EXPECT_EQ(e.bad, 0) << c.name << " isa=" << isa_name(isa) << " threads=" << t << " max|d|/rms "
                            << e.out_rel_rms << " rel " << e.out_rel << " lse " << e.lse_abs;
        Err& wi = worst_isa[static_cast<int>(isa) & 7];
        wi.out_rel_rms = std::max(wi.out_rel_rms, e.out_rel_rms);
        wi.out_rel = std::max(wi.out_rel, e.out_rel);
        wi.lse_abs = std::max(wi.lse_abs, e.lse_abs);
        worst.out_rel_rms = std::max(worst.out_rel_rms, e.out_rel_rms);
        worst.out_rel = std::max(worst.out_rel, e.out_rel);
        worst.lse_abs = std::max(worst.lse_abs, e.lse_abs);
        ++runs;
      }
    }
    reset_isa();
  }
  std::printf("worst over %d runs: max|op-ref|/rms(ref) %.3g, max rel (|ref| >= rms) %.3g, lse abs %.3g\n", runs,
              worst.out_rel_rms, worst.out_rel, worst.lse_abs);
  for (Isa isa : test_isas()) {
    const Err& wi = worst_isa[static_cast<int>(isa) & 7];
    std::printf("  %s: max|op-ref|/rms(ref) %.3g, max rel %.3g, lse abs %.3g\n", isa_name(isa), wi.out_rel_rms,
                wi.out_rel, wi.lse_abs);
  }
}

// Plans are reusable: a second run on new tensor contents (other scales, other block table).
TEST(MlaQuant, PlanRunsOnNewContents) {
  MqCase c = mk("plan_reuse", "BSND_NBSD", 2, 16, 1, {200, 77}, 128, 0, 21);
  auto d = mq_make(c);
  HostTensor out(DType::kBFloat16, d->out_dims), lse(DType::kFloat32, d->lse_dims);
  const TensorView lv = lse.view();
  FiaParams p = mq_params(*d, out.view(), &lv);
  OpPlan plan;
  ASSERT_EQ(fused_infer_attention_score_v4_plan(p, &plan), kSuccess) << last_error_message();
  std::vector<uint64_t> ws(static_cast<size_t>(plan.workspace_size() / 8 + 1));
  for (int round = 0; round < 2; ++round) {
    if (round == 1) {
      d->ks.set_flat(0, 0.05);
      d->vs.set_flat(0, 0.011);
      d->dq.set_flat(3, d->dq.flat(3) * 2);
    }
    ASSERT_EQ(fused_infer_attention_score_v4_run(plan, p, ws.data(), plan.workspace_size()), kSuccess)
        << last_error_message();
    HostTensor ref_out(DType::kFloat64, d->out_dims), ref_lse(DType::kFloat32, d->lse_dims);
    const TensorView rlv = ref_lse.view();
    ASSERT_EQ(fused_infer_attention_score_v4_ref(mq_params(*d, ref_out.view(), &rlv)), kSuccess);
    EXPECT_EQ(compare(out, ref_out, &lse, &ref_lse).bad, 0) << "round " << round;
  }
}

// The vendor's DeepSeek decode full quant call through the C API: BSND_NBSD, INT8 query
// (T, 1, N, 512), dequant_scale_query (T, 1, N), INT8 NZ caches, blockSize 128.
TEST(MlaQuant, VendorDeepSeekDecodeThroughTheCApi) {
  MqCase c = mk("vendor_decode", "BSND_NBSD", 4, 32, 1, {513, 128, 1, 300}, 128, 0, 31);
  auto d = mq_make(c);
  HostTensor out(DType::kBFloat16, d->out_dims), lse(DType::kFloat32, d->lse_dims);
  const TensorView lv = lse.view();
  const FiaParams p = mq_params(*d, out.view(), &lv);
  ASSERT_EQ(fia_aclnn_call(acl_args_of_params(p)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  HostTensor ref_out(DType::kFloat64, d->out_dims), ref_lse(DType::kFloat32, d->lse_dims);
  const TensorView rlv = ref_lse.view();
  ASSERT_EQ(fused_infer_attention_score_v4_ref(mq_params(*d, ref_out.view(), &rlv)), kSuccess);
  EXPECT_EQ(compare(out, ref_out, &lse, &ref_lse).bad, 0);
}

// ---- rejections ----

struct Reject {
  const char* what;
  const char* param;
  const char* rule;
  std::function<void(FiaParams&)> mutate;
};

// Base: BSND decode, N 4, B 2, blockSize 16 (the C++ API's range), softmaxLse; a canary pattern
// in attentionOut and softmaxLse must survive a rejected call.
void expect_rejected_cpp(const Reject& r) {
  SCOPED_TRACE(r.what);
  static auto d = mq_make(mk("base", "BSND", 2, 4, 1, {40, 17}, 16, 0, 41));
  HostTensor out(DType::kBFloat16, d->out_dims), lse(DType::kFloat32, d->lse_dims);
  std::memset(out.data(), 0x5A, out.storage.size() * 8);
  std::memset(lse.data(), 0x5A, lse.storage.size() * 8);
  const auto out0 = out.storage, lse0 = lse.storage;
  const TensorView lv = lse.view();
  FiaParams p = mq_params(*d, out.view(), &lv);
  ASSERT_EQ(run_fia_cpp(p), kSuccess) << last_error_message();  // the base is valid
  std::memset(out.data(), 0x5A, out.storage.size() * 8);
  std::memset(lse.data(), 0x5A, lse.storage.size() * 8);
  r.mutate(p);
  const Status s = run_fia_cpp(p);
  const std::string msg = last_error_message();
  EXPECT_EQ(s, kParamInvalid) << msg;
  EXPECT_NE(msg.find(r.param), std::string::npos) << "message does not name " << r.param << ": " << msg;
  EXPECT_NE(msg.find(r.rule), std::string::npos) << "message does not name " << r.rule << ": " << msg;
  EXPECT_NE(msg.find("fused_infer_attention_score_v4"), std::string::npos) << msg;
  EXPECT_TRUE(out.storage == out0) << "attentionOut changed by a rejected call";
  EXPECT_TRUE(lse.storage == lse0) << "softmaxLse changed by a rejected call";
}

// Views with other dims over the same storage (rejected before any read).
TensorView reshape(const TensorView& t, std::initializer_list<int64_t> dims) {
  TensorView v = make_view(t.data, t.dtype, dims, t.format);
  return v;
}

TEST(MlaQuantRules, FIA27_DtypesAndPresence) {
  static HostTensor bf_q(DType::kBFloat16, {2, 1, 4, 512}), f16_rope(DType::kFloat16, {2, 1, 4, 64});
  static TensorView v_f16_rope = f16_rope.view();
  static TensorView v_f16_dq;
  const Reject rs[] = {
      {"BF16 query with dequantScaleQuery", "query", "FIA-27 MLA full quant", [](FiaParams& p) { p.query = bf_q.view(); }},
      {"INT8 query with rope, no dequantScaleQuery", "dequantScaleQueryOptional", "FIA-27 MLA full quant",
       [](FiaParams& p) { p.dequant_scale_query = nullptr; }},
      {"no rope", "queryRopeOptional", "FIA-27 MLA full quant",
       [](FiaParams& p) {
         p.query_rope = nullptr;
         p.key_rope = nullptr;
       }},
      {"FP16 queryRope", "queryRopeOptional", "FIA-27 MLA full quant", [](FiaParams& p) { p.query_rope = &v_f16_rope; }},
      {"FP16 keyRope", "keyRopeOptional", "FIA-27 MLA full quant",
       [](FiaParams& p) {
         static TensorView v;
         v = *p.key_rope;
         v.dtype = DType::kFloat16;
         p.key_rope = &v;
       }},
      {"BF16 key", "key", "FIA-27 MLA full quant", [](FiaParams& p) { p.key[0].dtype = DType::kBFloat16; }},
      {"UINT8 value", "value", "FIA-27 MLA full quant", [](FiaParams& p) { p.value[0].dtype = DType::kUInt8; }},
      {"FP16 output", "attentionOut", "FIA-27 MLA full quant", [](FiaParams& p) { p.attention_out.dtype = DType::kFloat16; }},
      {"FP16 dequantScaleQuery", "dequantScaleQueryOptional", "FIA-27 MLA full quant",
       [](FiaParams& p) {
         v_f16_dq = *p.dequant_scale_query;
         v_f16_dq.dtype = DType::kFloat16;
         p.dequant_scale_query = &v_f16_dq;
       }},
      {"queryQuantMode 0", "queryQuantMode", "FIA-27 MLA full quant", [](FiaParams& p) { p.query_quant_mode = 0; }},
  };
  for (const Reject& r : rs) expect_rejected_cpp(r);
}

TEST(MlaQuantRules, FIA28_ShapesLayoutsMasks) {
  static MqCase c17 = mk("qs17", "BSND", 1, 1, 17, {20}, 16, 3, 43);
  static auto d17 = mq_make(c17);
  static HostTensor nd_k(DType::kInt8, {8, 1, 16, 512}), nd_kr(DType::kBFloat16, {8, 1, 16, 64});
  static HostTensor flat_k(DType::kInt8, {2, 40, 1, 512}), flat_kr(DType::kBFloat16, {2, 40, 1, 64});
  static TensorView v_kr, v_dq, v_qr, v_mask;
  static HostTensor mask(DType::kBool, {2048, 2048});
  const Reject rs[] = {
      {"BSND_BNSD output", "inputLayout", "FIA-28 MLA full quant", [](FiaParams& p) { p.input_layout = "BSND_BNSD"; }},
      {"not paged", "blockTableOptional", "FIA-28 MLA full quant",
       [](FiaParams& p) {
         p.key = {flat_k.view()};
         p.value = {flat_k.view()};
         v_kr = flat_kr.view();
         p.key_rope = &v_kr;
         p.block_table = nullptr;
         p.block_size = 0;
       }},
      {"ND paged cache", "key", "FIA-28 MLA full quant",
       [](FiaParams& p) {
         p.key = {nd_k.view()};
         p.value = {nd_k.view()};
         v_kr = nd_kr.view();
         p.key_rope = &v_kr;
       }},
      {"D 256", "query", "FIA-28 MLA full quant",
       [](FiaParams& p) {
         p.query = reshape(p.query, {2, 1, 4, 256});
         p.key[0] = reshape(p.key[0], {p.key[0].dims[0], 1, 8, 16, 32});
         p.value[0] = p.key[0];
       }},
      {"rope 32", "queryRopeOptional", "FIA-28 MLA full quant",
       [](FiaParams& p) {
         v_qr = reshape(*p.query_rope, {2, 1, 4, 32});
         p.query_rope = &v_qr;
         v_kr = reshape(*p.key_rope, {p.key_rope->dims[0], 1, 2, 16, 16});
         p.key_rope = &v_kr;
       }},
      {"sparseMode 2", "sparseMode", "FIA-28 MLA full quant",
       [](FiaParams& p) {
         v_mask = mask.view();
         p.atten_mask = &v_mask;
         p.sparse_mode = 2;
       }},
      {"sparseMode 0 with a mask", "attenMaskOptional", "FIA-28 MLA full quant",
       [](FiaParams& p) {
         v_mask = mask.view();
         p.atten_mask = &v_mask;
       }},
      {"dequantScaleQuery [B, S, N, 1]", "dequantScaleQueryOptional", "FIA-28 MLA full quant",
       [](FiaParams& p) {
         v_dq = reshape(*p.dequant_scale_query, {2, 1, 4, 1});
         p.dequant_scale_query = &v_dq;
       }},
  };
  for (const Reject& r : rs) expect_rejected_cpp(r);
  // Q_S 17
  HostTensor out(DType::kBFloat16, d17->out_dims);
  std::memset(out.data(), 0x5A, out.storage.size() * 8);
  const auto out0 = out.storage;
  EXPECT_EQ(run_fia_cpp(mq_params(*d17, out.view(), nullptr)), kParamInvalid);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find("FIA-28 MLA full quant"), std::string::npos) << msg;
  EXPECT_NE(msg.find("query"), std::string::npos) << msg;
  EXPECT_TRUE(out.storage == out0);
}

TEST(MlaQuantRules, FIA29_ScalesAndExclusions) {
  static HostTensor two(DType::kFloat32, {2}, 1.0), f16s(DType::kFloat16, {1}, 1.0), off(DType::kFloat32, {1});
  static HostTensor pse(DType::kBFloat16, {2, 4, 1, 64}), sink(DType::kBFloat16, {4});
  static TensorView v_two = two.view(), v_f16 = f16s.view(), v_off = off.view(), v_pse = pse.view(),
                    v_sink = sink.view();
  const Reject rs[] = {
      {"no key scale", "keyAntiquantScaleOptional", "FIA-29 MLA full quant",
       [](FiaParams& p) { p.key_antiquant_scale = nullptr; }},
      {"value scale [2]", "valueAntiquantScaleOptional", "FIA-29 MLA full quant",
       [](FiaParams& p) { p.value_antiquant_scale = &v_two; }},
      {"FP16 key scale", "keyAntiquantScaleOptional", "FIA-29 MLA full quant", [](FiaParams& p) { p.key_antiquant_scale = &v_f16; }},
      {"key offset", "keyAntiquantOffsetOptional", "FIA-29 MLA full quant", [](FiaParams& p) { p.key_antiquant_offset = &v_off; }},
      {"combined antiquantScale", "antiquantScaleOptional", "FIA-29 MLA full quant", [](FiaParams& p) { p.antiquant_scale = &v_off; }},
      {"keyAntiquantMode 1", "keyAntiquantMode", "FIA-29 MLA full quant", [](FiaParams& p) { p.key_antiquant_mode = 1; }},
      {"valueAntiquantMode 2", "valueAntiquantMode", "FIA-29 MLA full quant", [](FiaParams& p) { p.value_antiquant_mode = 2; }},
      {"pseShift", "pseShiftOptional", "FIA-29 MLA full quant", [](FiaParams& p) { p.pse_shift = &v_pse; }},
      {"learnableSink", "learnableSinkOptional", "FIA-29 MLA full quant", [](FiaParams& p) { p.learnable_sink = &v_sink; }},
      {"key scale without data", "keyAntiquantScaleOptional", "FIA-17 null data of an MLA quant tensor",
       [](FiaParams& p) {
         static TensorView v;
         v = *p.key_antiquant_scale;
         v.data = nullptr;
         p.key_antiquant_scale = &v;
       }},
  };
  for (const Reject& r : rs) expect_rejected_cpp(r);
}

// The vendor's ranges (aclnn layer only): blockSize 128, N a power of two <= 128.
TEST(MlaQuantRules, FIA19_VendorRangesThroughTheCApi) {
  for (const auto& [bs, N, param] : {std::make_tuple(int64_t{16}, int64_t{4}, "blockSize"),
                                     std::make_tuple(int64_t{128}, int64_t{3}, "numHeads")}) {
    SCOPED_TRACE(param);
    auto d = mq_make(mk("vendor", "BSND", 2, N, 1, {40, 17}, bs, 0, 44));
    HostTensor out(DType::kBFloat16, d->out_dims);
    std::memset(out.data(), 0x5A, out.storage.size() * 8);
    const auto out0 = out.storage;
    const FiaParams p = mq_params(*d, out.view(), nullptr);
    EXPECT_EQ(run_fia_cpp(p), kSuccess) << last_error_message();  // the C++ API accepts it
    std::memset(out.data(), 0x5A, out.storage.size() * 8);
    EXPECT_EQ(fia_aclnn_call(acl_args_of_params(p)), ACLNN_ERR_PARAM_INVALID);
    const std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find("FIA-19 MLA full quant"), std::string::npos) << msg;
    EXPECT_NE(msg.find(param), std::string::npos) << msg;
    EXPECT_TRUE(out.storage == out0);
  }
}

// An INT8 query without queryRope stays outside this feature: it is GQA / MHA full quantisation,
// whose rules then apply (here FIA-03: its output is FLOAT16 or INT8, not BF16;
// tests/ops/fia/test_fia_full_quant.cpp).
TEST(MlaQuantRules, Int8QueryWithoutRopeOrScaleIsNotMlaQuant) {
  auto d = mq_make(mk("base", "BSND", 2, 4, 1, {40, 17}, 16, 0, 45));
  HostTensor out(DType::kBFloat16, d->out_dims);
  FiaParams p = mq_params(*d, out.view(), nullptr);
  p.query_rope = nullptr;
  p.key_rope = nullptr;
  p.dequant_scale_query = nullptr;
  EXPECT_EQ(run_fia_cpp(p), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("FIA-03 (= query dtype (FLOAT16 for an INT8 query), or INT8 with quantScale2, FIA-26)"), std::string::npos) << last_error_message();
}

}  // namespace
}  // namespace mlaops::testing

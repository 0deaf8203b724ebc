// FusedInferAttentionScoreV4 KV antiquant with INT4 key / value (rule FIA-33): key / value are
// INT32 words with last dim D / 8 (H / 8 for BSH), 8 signed nibbles per word, low nibble first.
// The operator against the float64 reference (which unpacks the words itself) over every mode the
// vendor allows with INT4 (separate 0 per-channel in every shape form, 1, 3, key 0 + value 1;
// combined 0 per-channel / 1), offsets or none, FP16 / BF16 queries, BNSD / BSND / BSH, GQA group
// sizes 1..8, D 64 / 128 (and D 40 through the C++ API), zero-length batches and KV splits, under
// every ISA and 1 / 2 threads, output and lse; through the C API (V4); then the FIA-33 errors
// (status, message, output untouched).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_antiquant_cases.h"
#include "reference/fia/fia_ref.h"
#include "testkit/compare.h"
#include "testkit/fia_test_data.h"
#include "tests/support/isa_list.h"

namespace mlaops::testing {
namespace {

struct I4Case {
  std::string name;
  DType dt = DType::kBFloat16;
  std::string layout = "BNSD";
  int64_t B = 2, N = 4, KVN = 2, S = 1, L = 37, D = 64;
  std::vector<int64_t> act_kv;  // empty: L for every batch
  int64_t mode_k = 0, mode_v = 0;
  bool combined = false, offset = true;
  int shape_form = 0;  // mode 0 shape: 0 (1,KVN,1,D), 1 (1,KVN,D), 2 (1,H), 3 (KVN,D)
  bool paged = false;  // a BnBsH cache of INT32 words (rejected, FIA-33)
  int64_t bs = 16;
  uint32_t seed = 1;
};

struct I4Data {
  HostTensor q, k, v, bt, out_op, out_ref, lse_op, lse_ref, ks, ko, vs, vo;
  std::vector<int64_t> akv;
  TensorView vbt, vks, vko, vvs, vvo, vlse_op, vlse_ref;
  FiaParams op, ref;
};

// An INT32 tensor of `dims` (last dim D / 8 words) holding random nibbles in [-8, 7].
HostTensor int4_words(std::vector<int64_t> dims, std::mt19937& g) {
  HostTensor t(DType::kInt32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint32_t w = 0;
    for (int k = 0; k < 8; ++k) w |= static_cast<uint32_t>(g() % 16) << (4 * k);
    t.set_flat(i, static_cast<double>(static_cast<int32_t>(w)));
  }
  return t;
}

HostTensor param(const I4Case& c, int64_t mode, bool off, int64_t kv_s, std::mt19937& g) {
  const int64_t lead = c.combined ? 2 : 1, H = c.KVN * c.D;
  HostTensor t;
  if (mode == 0) {
    const DType pdt = c.dt;
    if (c.shape_form == 0) t = HostTensor(pdt, {lead, c.KVN, 1, c.D});
    else if (c.shape_form == 1) t = HostTensor(pdt, {lead, c.KVN, c.D});
    else if (c.shape_form == 2) t = HostTensor(pdt, {lead, H});
    else t = HostTensor(pdt, {c.KVN, c.D});
  } else if (mode == 1) {
    t = HostTensor(DType::kFloat32, {lead, c.B, kv_s});
  } else {
    t = HostTensor(DType::kFloat32, {c.B, c.KVN, kv_s});
  }
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set_flat(i, off ? std::round(uni(g, -3, 3)) + (i % 3 == 0 ? 0.5 : 0.0) : uni(g, 0.5, 1.5) / 7.0);
  return t;
}

std::unique_ptr<I4Data> setup(const I4Case& c) {
  auto d = std::make_unique<I4Data>();
  std::mt19937 g(c.seed * 7919 + 5);
  d->akv = c.act_kv.empty() ? std::vector<int64_t>(static_cast<size_t>(c.B), c.L) : c.act_kv;
  const int64_t W = c.D / 8;  // words per head row
  aq_make_query_io(d.get(), c.dt, c.layout, c.B, c.N, c.S, c.D, g);
  int64_t kv_s = c.L;
  if (c.paged) {
    const int64_t per = (c.L + c.bs - 1) / c.bs, blocks = c.B * per + 1;
    kv_s = per * c.bs;
    d->k = int4_words({blocks, c.bs, c.KVN * W}, g);
    d->v = int4_words({blocks, c.bs, c.KVN * W}, g);
    d->bt = HostTensor(DType::kInt32, {c.B, per});
    for (int64_t i = 0; i < c.B * per; ++i) d->bt.set_flat(i, static_cast<double>((i * 5 + 1) % blocks));
  } else {
    d->k = int4_words(aq_seq_shape(c.layout, c.B, c.KVN, c.L, W), g);
    d->v = int4_words(aq_seq_shape(c.layout, c.B, c.KVN, c.L, W), g);
  }
  d->ks = param(c, c.mode_k, false, kv_s, g);
  if (c.offset) d->ko = param(c, c.mode_k, true, kv_s, g);
  if (!c.combined) {
    d->vs = param(c, c.mode_v, false, kv_s, g);
    if (c.offset) d->vo = param(c, c.mode_v, true, kv_s, g);
  }
  d->vbt = d->bt.view();
  d->vks = d->ks.view();
  d->vko = d->ko.view();
  d->vvs = d->vs.view();
  d->vvo = d->vo.view();
  d->vlse_op = d->lse_op.view();
  d->vlse_ref = d->lse_ref.view();
  for (int w = 0; w < 2; ++w) {
    FiaParams& p = w == 0 ? d->op : d->ref;
    aq_bind_common(&p, *d, w == 0, c.N, c.KVN, c.D, c.layout);
    p.softmax_lse = w == 0 ? &d->vlse_op : &d->vlse_ref;
    if (c.paged) {
      p.block_table = &d->vbt;
      p.block_size = c.bs;
    }
    aq_bind_antiquant(&p, c.combined, c.offset, c.mode_k, c.mode_v, &d->vks, &d->vko, &d->vvs, &d->vvo);
  }
  return d;
}

// The INT8 antiquant tolerances and golden (fia_antiquant_cases.h): the dequantised values are
// never rounded to the query dtype, in place (INT4 rows read by the INT8 / INT4 decode row) or on
// the dequantised chunks; the rest is fp32 attention.
void check_case(const I4Case& c) {
  SCOPED_TRACE(c.name);
  const auto d = setup(c);
  ASSERT_EQ(fused_infer_attention_score_v4_ref(d->ref), kSuccess) << last_error_message();
  check_against_golden(c.name, "fia-aq4-stats", out_tol(c.dt), {0, 1}, d->op, d->out_op, d->lse_op, d->out_ref,
                       d->lse_ref);
}

std::vector<I4Case> cases() {
  std::vector<I4Case> v;
  auto add = [&](I4Case c) {
    c.seed = static_cast<uint32_t>(v.size() + 1);
    v.push_back(c);
  };
  for (DType dt : {DType::kBFloat16, DType::kFloat16}) {
    const std::string t = dt == DType::kFloat16 ? "fp16" : "bf16";
    for (int form = 0; form < 4; ++form) {
      I4Case c;
      c.name = t + " mode0 per-channel form " + std::to_string(form);
      c.dt = dt;
      c.shape_form = form;
      c.offset = form != 1;
      c.layout = form == 2 ? "BSH" : form == 3 ? "BSND" : "BNSD";
      add(c);
    }
    for (int64_t m : {1, 3}) {
      for (const char* layout : {"BSH", "BNSD"}) {
        I4Case c;
        c.name = t + " mode" + std::to_string(m) + " " + layout;
        c.dt = dt;
        c.mode_k = c.mode_v = m;
        c.layout = layout;
        c.act_kv = {37, 0};  // a zero-length batch
        add(c);
      }
    }
    I4Case mix;
    mix.name = t + " key 0 + value 1 BSND";
    mix.dt = dt;
    mix.mode_k = 0;
    mix.mode_v = 1;
    mix.layout = "BSND";
    add(mix);
    for (int64_t m : {0, 1}) {
      I4Case c;
      c.name = t + " combined mode" + std::to_string(m);
      c.dt = dt;
      c.combined = true;
      c.mode_k = c.mode_v = m;
      c.offset = m == 0;
      c.layout = m == 0 ? "BSH" : "BNSD";
      add(c);
    }
  }
  // GQA decode shapes: group sizes 1..8, D 128, heads side by side (BSH / BSND: one parameter set
  // per row or per head) and head-major (BNSD), KV splits (one batch, few heads).
  struct G {
    const char* name;
    DType dt;
    std::string layout;
    int64_t B, N, KVN, L, D, mode;
    std::vector<int64_t> act;
  };
  for (const G& x : std::vector<G>{{"bf16 GQA8 D128 BSH mode1", DType::kBFloat16, "BSH", 2, 32, 4, 300, 128, 1, {300, 129}},
                                   {"bf16 GQA8 D128 BSND mode3", DType::kBFloat16, "BSND", 2, 32, 4, 200, 128, 3, {200, 1}},
                                   {"fp16 GQA1 D64 BSH mode0", DType::kFloat16, "BSH", 2, 4, 4, 150, 64, 0, {}},
                                   {"bf16 GQA2 D128 BNSD mode0 16 heads", DType::kBFloat16, "BNSD", 1, 32, 16, 90, 128, 0, {}},
                                   {"bf16 B1 N8 KVN1 L1000 D128 KV split mode0", DType::kBFloat16, "BNSD", 1, 8, 1, 1000, 128, 0, {}},
                                   {"fp16 B1 N8 KVN1 L1000 D128 KV split mode1", DType::kFloat16, "BSH", 1, 8, 1, 1000, 128, 1, {}},
                                   {"bf16 D40 (C++ API) mode0", DType::kBFloat16, "BSH", 2, 4, 2, 50, 40, 0, {}}}) {
    I4Case c;
    c.name = x.name;
    c.dt = x.dt;
    c.layout = x.layout;
    c.B = x.B;
    c.N = x.N;
    c.KVN = x.KVN;
    c.L = x.L;
    c.D = x.D;
    c.mode_k = c.mode_v = x.mode;
    c.act_kv = x.act;
    add(c);
  }
  return v;
}

TEST(FiaAntiquantInt4, AllModesMatchTheReference) {
  for (const I4Case& c : cases()) check_case(c);
}

// Through aclnnFusedInferAttentionScoreV4 (INT32 key / value read as packed INT4): separate
// per-token and combined per-channel parameters.
TEST(FiaAntiquantInt4, ThroughTheCApi) {
  for (int variant = 0; variant < 2; ++variant) {
    I4Case c;
    c.name = variant == 0 ? "C API mode 1 BSH" : "C API combined mode 0";
    c.layout = variant == 0 ? "BSH" : "BNSD";
    c.mode_k = c.mode_v = variant == 0 ? 1 : 0;
    c.combined = variant == 1;
    SCOPED_TRACE(c.name);
    const auto d = setup(c);
    ASSERT_EQ(fused_infer_attention_score_v4_ref(d->ref), kSuccess) << last_error_message();
    ASSERT_EQ(fia_aclnn_call(acl_args_of_params(d->op)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    const Stats st = compare(d->out_op.view(), d->out_ref.view(), out_tol(c.dt));
    EXPECT_TRUE(within(st, out_tol(c.dt), false)) << st.str();
  }
}

// A valid case, mutated; the operator must reject it with kParamInvalid, a message naming the
// parameter and the rule, and leave the output and lse untouched.
template <class F>
void expect_rejected(const I4Case& c, const char* param, const char* rule, F&& mutate) {
  SCOPED_TRACE(std::string(param) + " " + rule);
  const auto d = setup(c);
  HostTensor extra;
  mutate(d->op, *d, extra);
  expect_rejected_call(d->op, d->out_op, d->lse_op, false, param, rule);
}

TEST(FiaAntiquantInt4, FIA33_Errors) {
  I4Case c;
  using H = HostTensor;
  // ACL_INT4 (2 per byte) is not a key / value dtype of the vendor's API: INT4 comes as INT32
  expect_rejected(c, "key", "FIA-33", [](FiaParams& p, I4Data&, H&) {
    TensorView k = p.key[0];
    k.dtype = DType::kInt4;
    p.key = {k};
  });
  // value INT8 with an INT32 key; key INT32 with a BF16 value
  expect_rejected(c, "value", "FIA-03 / FIA-21 (= key dtype: the query dtype, or INT8 / INT32 with an INT8 / INT32 key)", [](FiaParams& p, I4Data&, H& e) {
    e = H(DType::kInt8, {2, 2, 37, 64});
    p.value = {e.view()};
  });
  // decode only
  I4Case pre = c;
  pre.S = 2;
  expect_rejected(pre, "query", "FIA-33 INT4 key/value allow decode only (Q_S = 1)", [](FiaParams&, I4Data&, H&) {});
  // no paged attention
  I4Case pg = c;
  pg.paged = true;
  expect_rejected(pg, "blockTableOptional", "FIA-33 INT4 key/value exclude paged attention", [](FiaParams&, I4Data&, H&) {});
  // no post-quant
  expect_rejected(c, "quantScale2Optional", "FIA-33 INT4 key/value exclude post-quant (INT8 output)", [](FiaParams& p, I4Data&, H& e) {
    e = H(DType::kFloat32, {1}, 1.0);
    static TensorView v;
    v = e.view();
    p.quant_scale2 = &v;
    p.attention_out.dtype = DType::kInt8;
    p.softmax_lse_flag = false;
    p.softmax_lse = nullptr;
  });
  // modes 2, 4, 5 are INT8 only (checked before the scale shapes)
  for (int64_t m : {2, 4, 5})
    expect_rejected(c, "keyAntiquantMode",
                    "FIA-33 INT4 key/value allow modes 0 (per-channel), 1 (per-token), 3 (per-token x per-head)", [m](FiaParams& p, I4Data&, H&) {
      p.key_antiquant_mode = p.value_antiquant_mode = m;
    });
  // per-tensor mode 0 is INT8 only: separate and combined
  constexpr const char* kInt4PerTensor = "FIA-33 INT4 key/value allow per-channel mode 0 scales only (per-tensor is INT8 only)";
  expect_rejected(c, "keyAntiquantScaleOptional", kInt4PerTensor, [](FiaParams& p, I4Data&, H& e) {
    e = H(DType::kBFloat16, {1}, 0.1);
    static TensorView v;
    v = e.view();
    p.key_antiquant_scale = p.value_antiquant_scale = &v;
    p.key_antiquant_offset = p.value_antiquant_offset = nullptr;
  });
  I4Case comb = c;
  comb.combined = true;
  expect_rejected(comb, "antiquantScaleOptional", kInt4PerTensor, [](FiaParams& p, I4Data&, H& e) {
    e = H(DType::kBFloat16, {2}, 0.1);
    static TensorView v;
    v = e.view();
    p.antiquant_scale = &v;
    p.antiquant_offset = nullptr;
  });
  // left padding (FIA-33)
  expect_rejected(c, "kvPaddingSizeOptional", "FIA-33 INT4 key/value exclude left padding", [](FiaParams& p, I4Data&, H& e) {
    e = H(DType::kInt64, {1}, 1.0);
    static TensorView v;
    v = e.view();
    p.kv_padding_size = &v;
  });
  // TND / NTD need the NZ path (FIA-21, as for INT8)
  expect_rejected(c, "inputLayout", "FIA-21", [](FiaParams& p, I4Data&, H& e) {
    static std::vector<int64_t> aq, akv;
    static H k4, o;
    e = H(DType::kBFloat16, {2, 4, 64});  // TND, T = 2
    p.query = e.view();
    p.input_layout = "TND";
    k4 = H(DType::kInt32, {74, 2, 8});
    o = H(DType::kBFloat16, {2, 4, 64});
    p.key = {k4.view()};
    p.value = {k4.view()};
    p.attention_out = o.view();
    aq = {1, 2};
    akv = {37, 74};
    p.actual_seq_lengths = &aq;
    p.actual_seq_lengths_kv = &akv;
    p.softmax_lse_flag = false;
    p.softmax_lse = nullptr;
  });
}

// FIA-33 in the aclnn layer: D % 64 == 0 (the C++ API computes D 40, AllModesMatchTheReference).
TEST(FiaAntiquantInt4, FIA33_HeadDimInAclnn) {
  I4Case c;
  c.D = 40;
  c.layout = "BSH";
  const auto d = setup(c);
  const std::vector<uint64_t> out0 = d->out_op.storage;
  EXPECT_EQ(fia_aclnn_call(acl_args_of_params(d->op)), ACLNN_ERR_PARAM_INVALID);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("key"), std::string::npos) << msg;
  EXPECT_NE(msg.find("FIA-33 INT4 key/value head dim must be a multiple of 64"), std::string::npos) << msg;
  EXPECT_TRUE(d->out_op.storage == out0);
  EXPECT_EQ(run_fia_cpp(d->op), kSuccess) << last_error_message();
}

}  // namespace
}  // namespace mlaops::testing

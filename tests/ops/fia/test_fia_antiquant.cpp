// FusedInferAttentionScoreV4 KV antiquant (INT8 key / value, FIA-21): the operator
// against the float64 reference over every mode (separate 0 per-channel / per-tensor, 1, 2, 3, 4,
// 5, key 0 + value 1; combined 0 / 1), offsets or none, FP16 / BF16 queries, BNSD / BSND / BSH,
// contiguous and paged (BnBsH, BnNBsD) caches with a partly filled last block, Q_S = 1 and
// Q_S > 1, empty and zero-length batches, KV splits, under every ISA; then the FIA-21 errors
// (status, message, output untouched).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/attention/attn_decode.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/runtime.h"
#include "testkit/compare.h"
#include "testkit/fia_test_data.h"
#include "tests/support/isa_list.h"
#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_antiquant_cases.h"
#include "reference/fia/fia_ref.h"

namespace mlaops::testing {
namespace {

struct AqCase {
  std::string name;
  DType dt = DType::kBFloat16;
  std::string layout = "BNSD";
  bool paged = false;
  int paged_rank = 3;  // 3 BnBsH, 4 BnNBsD
  int64_t B = 2, N = 4, KVN = 2, S = 1, L = 37, D = 64, bs = 16;
  std::vector<int64_t> act_kv;  // empty: L for every batch
  int64_t mode_k = 0, mode_v = 0;
  bool combined = false, offset = true, per_tensor = false;
  int64_t pse_rows = 0;
  int shape_form = 0;  // mode 0 per-channel shape: 0 (1,KVN,1,D), 1 (1,KVN,D), 2 (1,H), 3 without the leading 1
  bool pse = false;    // pseShift [B, N, pse_rows (0: S), >= L] of the query dtype
  bool sink = false;   // learnableSink [N] of the query dtype
  bool signed_scales = false;  // every third scale negative (per-token: the in-place kernel's block max of |s|)
  uint32_t seed = 1;
};

struct AqData {
  HostTensor q, k, v, bt, out_op, out_ref, lse_op, lse_ref;
  HostTensor ks, ko, vs, vo;  // separate (or combined in ks / ko)
  HostTensor pse, sink;
  std::vector<int64_t> akv;
  int64_t blocks_per = 0, block_num = 0;
};

// The scale (or offset when `off`) tensor of one of key / value for `mode`.
HostTensor make_param(const AqCase& c, int64_t mode, int64_t lead, int64_t kv_s) {
  const DType pdt = (mode == 0 || mode == 2) ? c.dt : DType::kFloat32;
  HostTensor t;
  const int64_t H = c.KVN * c.D;
  switch (mode) {
    case 0:
      if (c.per_tensor) {
        t = HostTensor(pdt, {lead});
      } else {
        std::vector<int64_t> d;
        if (c.shape_form == 0) d = {lead, c.KVN, 1, c.D};
        else if (c.shape_form == 1) d = {lead, c.KVN, c.D};
        else if (c.shape_form == 2) d = {lead, H};
        else d = {c.KVN, c.D};  // lead must be 1
        t = HostTensor(pdt, d);
      }
      break;
    case 1: t = c.S > 1 && !c.combined ? HostTensor(pdt, {c.B, kv_s}) : HostTensor(pdt, {lead, c.B, kv_s}); break;
    case 2: t = HostTensor(pdt, {c.KVN}); break;
    case 3: t = HostTensor(pdt, {c.B, c.KVN, kv_s}); break;
    case 4: t = HostTensor(pdt, {0, c.bs}); break;  // block_num filled by the caller
    default: t = HostTensor(pdt, {0, c.KVN, c.bs}); break;
  }
  return t;
}

void fill_param(HostTensor& t, bool off, std::mt19937& g) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = off ? std::round(uni(g, -4, 4)) + (i % 3 == 0 ? 0.5 : 0.0) : uni(g, 0.5, 1.5) / 127.0;
    t.set_flat(i, v);
  }
}

std::unique_ptr<AqData> build(const AqCase& c, FiaParams* p_op, FiaParams* p_ref) {
  auto d = std::make_unique<AqData>();
  std::mt19937 g(c.seed * 977 + 3);
  d->akv = c.act_kv.empty() ? std::vector<int64_t>(static_cast<size_t>(c.B), c.L) : c.act_kv;
  const int64_t H = c.KVN * c.D;
  aq_make_query_io(d.get(), c.dt, c.layout, c.B, c.N, c.S, c.D, g);  // query / output in the layout
  int64_t kv_s = c.L;
  if (c.paged) {
    d->blocks_per = (c.L + c.bs - 1) / c.bs;
    d->block_num = c.B * d->blocks_per + 1;
    kv_s = d->blocks_per * c.bs;
    const std::vector<int64_t> kd = c.paged_rank == 3 ? std::vector<int64_t>{d->block_num, c.bs, H}
                                                      : std::vector<int64_t>{d->block_num, c.KVN, c.bs, c.D};
    d->k = HostTensor(DType::kInt8, kd);
    d->v = HostTensor(DType::kInt8, kd);
    d->bt = HostTensor(DType::kInt32, {c.B, d->blocks_per});
    for (int64_t i = 0; i < c.B * d->blocks_per; ++i) d->bt.set_flat(i, static_cast<double>((i * 5 + 1) % d->block_num));
  } else {
    const std::vector<int64_t> kd = c.layout == "BNSD"   ? std::vector<int64_t>{c.B, c.KVN, c.L, c.D}
                                    : c.layout == "BSND" ? std::vector<int64_t>{c.B, c.L, c.KVN, c.D}
                                                         : std::vector<int64_t>{c.B, c.L, H};
    d->k = HostTensor(DType::kInt8, kd);
    d->v = HostTensor(DType::kInt8, kd);
  }
  for (HostTensor* t : {&d->k, &d->v})
    for (int64_t i = 0; i < t->numel(); ++i) t->set_flat(i, std::round(uni(g, -127, 127)));
  // antiquant parameters
  const int64_t lead = c.combined ? 2 : 1;
  auto param = [&](int64_t mode, bool off) {
    HostTensor t = make_param(c, mode, lead, kv_s);
    if (mode == 4) t = HostTensor(DType::kFloat32, {d->block_num, c.bs});
    if (mode == 5) t = HostTensor(DType::kFloat32, {d->block_num, c.KVN, c.bs});
    fill_param(t, off, g);
    return t;
  };
  if (c.pse) {
    d->pse = HostTensor(c.dt, {c.B, c.N, c.pse_rows > 0 ? c.pse_rows : c.S, kv_s + 1});
    for (int64_t i = 0; i < d->pse.numel(); ++i) d->pse.set_flat(i, uni(g, -2, 2));
  }
  if (c.sink) {
    d->sink = HostTensor(c.dt, {c.N});
    for (int64_t i = 0; i < c.N; ++i) d->sink.set_flat(i, uni(g, -1, 3));
  }
  d->ks = param(c.mode_k, false);
  if (c.offset) d->ko = param(c.mode_k, true);
  if (!c.combined) {
    d->vs = param(c.mode_v, false);
    if (c.offset) d->vo = param(c.mode_v, true);
  }
  if (c.signed_scales)
    for (HostTensor* t : {&d->ks, &d->vs})
      for (int64_t i = 1; i < t->numel(); i += 3) t->set_flat(i, -t->flat(i));
  for (int w = 0; w < 2; ++w) {
    FiaParams& p = w == 0 ? *p_op : *p_ref;
    aq_bind_common(&p, *d, w == 0, c.N, c.KVN, c.D, c.layout);
    p.sparse_mode = 0;
    if (c.paged) {
      p.block_size = c.bs;
    }
  }
  return d;
}

// Views of the optional tensors must outlive the params: kept beside the data.
struct AqViews {
  TensorView q, k, v, bt, ks, ko, vs, vo, lse_op, lse_ref, pse, sink;
};

void bind(const AqCase& c, AqData& d, AqViews& vw, FiaParams* op, FiaParams* ref) {
  vw.bt = d.bt.view();
  vw.ks = d.ks.view();
  vw.ko = d.ko.view();
  vw.vs = d.vs.view();
  vw.vo = d.vo.view();
  vw.lse_op = d.lse_op.view();
  vw.lse_ref = d.lse_ref.view();
  vw.pse = d.pse.view();
  vw.sink = d.sink.view();
  for (FiaParams* p : {op, ref}) {
    if (c.paged) p->block_table = &vw.bt;
    if (c.pse) p->pse_shift = &vw.pse;
    if (c.sink) p->learnable_sink = &vw.sink;
    aq_bind_antiquant(p, c.combined, c.offset, c.mode_k, c.mode_v, &vw.ks, &vw.ko, &vw.vs, &vw.vo);
    p->softmax_lse = p == op ? &vw.lse_op : &vw.lse_ref;
  }
}

// A case's data and its bound operator / reference parameters (the views live beside them).
struct AqSetup {
  std::unique_ptr<AqData> d;
  AqViews vw;
  FiaParams op, ref;
};
std::unique_ptr<AqSetup> setup(const AqCase& c) {
  auto st = std::make_unique<AqSetup>();
  st->d = build(c, &st->op, &st->ref);
  bind(c, *st->d, st->vw, &st->op, &st->ref);
  return st;
}

// innerPrecise 0 and 1 against the reference (fia_antiquant_cases.h).
void check_case(const AqCase& c) {
  SCOPED_TRACE(c.name);
  const auto cs = setup(c);
  const auto& d = cs->d;
  ASSERT_EQ(fused_infer_attention_score_v4_ref(cs->ref), kSuccess) << last_error_message();
  check_against_golden(c.name, "fia-aq-stats", out_tol(c.dt), {0, 1}, cs->op, d->out_op, d->lse_op, d->out_ref,
                       d->lse_ref);
}

std::vector<AqCase> cases() {
  std::vector<AqCase> v;
  auto add = [&](AqCase c) {
    c.seed = static_cast<uint32_t>(v.size() + 1);
    v.push_back(c);
  };
  for (DType dt : {DType::kBFloat16, DType::kFloat16}) {
    const std::string t = dt == DType::kFloat16 ? "fp16" : "bf16";
    for (int form = 0; form < 4; ++form) {
      AqCase c;
      c.name = t + " mode0 per-channel form " + std::to_string(form);
      c.dt = dt;
      c.shape_form = form;
      c.offset = form != 1;
      add(c);
    }
    AqCase pt;
    pt.name = t + " mode0 per-tensor BSND";
    pt.dt = dt;
    pt.per_tensor = true;
    pt.layout = "BSND";
    add(pt);
    for (int64_t m : {1, 2, 3}) {
      AqCase c;
      c.name = t + " mode" + std::to_string(m) + " BSH";
      c.dt = dt;
      c.mode_k = c.mode_v = m;
      c.layout = "BSH";
      c.act_kv = {37, 0};  // a zero-length batch
      add(c);
    }
    for (int64_t m : {0, 1, 4, 5}) {
      for (int rank : {3, 4}) {
        AqCase c;
        c.name = t + " paged rank " + std::to_string(rank) + " mode" + std::to_string(m);
        c.dt = dt;
        c.paged = true;
        c.paged_rank = rank;
        c.mode_k = c.mode_v = m;
        c.act_kv = {37, 20};  // partly filled last blocks
        add(c);
      }
    }
    AqCase mix;
    mix.name = t + " key 0 + value 1";
    mix.dt = dt;
    mix.mode_k = 0;
    mix.mode_v = 1;
    add(mix);
    for (int64_t m : {0, 1}) {
      AqCase c;
      c.name = t + " combined mode" + std::to_string(m);
      c.dt = dt;
      c.combined = true;
      c.mode_k = c.mode_v = m;
      c.offset = m == 0;
      add(c);
    }
  }
  AqCase pre;  // Q_S > 1: BF16, modes 0 / 1, contiguous
  pre.name = "bf16 Q_S 4 mode0";
  pre.S = 4;
  add(pre);
  pre.name = "bf16 Q_S 3 mode1 BSND";
  pre.S = 3;
  pre.mode_k = pre.mode_v = 1;
  pre.layout = "BSND";
  add(pre);
  AqCase big;  // one item per thread: KV splits; D 128, GQA 8
  big.name = "bf16 B1 N8 KVN1 L1000 D128 KV split";
  big.B = 1;
  big.N = 8;
  big.KVN = 1;
  big.L = 1000;
  big.D = 128;
  big.mode_k = big.mode_v = 0;
  add(big);
  big.name = "bf16 B1 paged L1000 mode 1 KV split";
  big.paged = true;
  big.bs = 128;
  big.mode_k = big.mode_v = 1;
  add(big);
  // Per-channel decode shapes of the in-place INT8 kernel (AVX-512): every G, D 32..256, 16 KV
  // heads per group, paged BnBsH with partly filled last blocks, a zero-length batch, FP16 query.
  struct Ip {
    const char* name;
    DType dt;
    int64_t B, N, KVN, L, D, bs;
    bool paged;
    std::vector<int64_t> act;
  };
  for (const Ip& ip : std::vector<Ip>{{"bf16 in-place G1 D128 paged", DType::kBFloat16, 2, 4, 4, 300, 128, 64, true, {300, 129}},
                                      {"bf16 in-place G4 D128 paged B3", DType::kBFloat16, 3, 8, 2, 129, 128, 32, true, {129, 1, 64}},
                                      {"fp16 in-place G16 D32", DType::kFloat16, 2, 16, 1, 77, 32, 16, false, {77, 0}},
                                      {"bf16 in-place G2 D256", DType::kBFloat16, 1, 4, 2, 100, 256, 16, false, {}},
                                      {"bf16 in-place G4 16 KV heads paged", DType::kBFloat16, 2, 64, 16, 70, 64, 16, true, {70, 33}},
                                      {"fp16 in-place G8 D64 paged", DType::kFloat16, 2, 16, 2, 200, 64, 128, true, {200, 65}}}) {
    AqCase c;
    c.name = ip.name;
    c.dt = ip.dt;
    c.B = ip.B;
    c.N = ip.N;
    c.KVN = ip.KVN;
    c.L = ip.L;
    c.D = ip.D;
    c.bs = ip.bs;
    c.paged = ip.paged;
    c.act_kv = ip.act;
    add(c);
  }
  // pseShift and learnableSink through both INT8 paths: in place (per-channel decode), the
  // dequantised chunks (per-token, paged; Q_S > 1 on the panel / lane kernels), KV splits.
  for (DType dt : {DType::kBFloat16, DType::kFloat16}) {
    const std::string t = dt == DType::kFloat16 ? "fp16" : "bf16";
    AqCase c;
    c.dt = dt;
    c.pse = c.sink = true;
    c.name = t + " in-place G2 D64 pse sink";
    c.act_kv = {37, 0};
    add(c);
    c.name = t + " paged mode1 pse sink";
    c.paged = true;
    c.mode_k = c.mode_v = 1;
    c.act_kv = {37, 20};
    add(c);
  }
  // per-token parameters in place (AVX-512): signed scales, G 4, KV split
  for (int64_t m : {1, 3}) {
    AqCase c;
    c.name = "bf16 signed per-token scales mode" + std::to_string(m) + " G4";
    c.N = 8;
    c.signed_scales = true;
    c.mode_k = c.mode_v = m;
    c.layout = "BSH";
    c.L = 300;
    add(c);
  }
  AqCase ps;
  ps.name = "bf16 Q_S 4 mode0 pse sink";
  ps.S = 4;
  ps.pse = ps.sink = true;
  add(ps);
  ps.name = "bf16 B1 N8 KVN1 L1000 D128 KV split pse sink";
  ps.S = 1;
  ps.B = 1;
  ps.N = 8;
  ps.KVN = 1;
  ps.L = 1000;
  ps.D = 128;
  add(ps);
  return v;
}

TEST(FiaAntiquant, AllModesMatchTheReference) {
  for (const AqCase& c : cases()) check_case(c);
}

// Through the vendor C API (aclCreateTensor ..., two-phase call): separate per-token parameters
// on a paged cache and combined per-channel parameters, every mode attribute passed by position.
TEST(FiaAntiquant, ThroughTheCApi) {
  for (int variant = 0; variant < 3; ++variant) {
    AqCase c;
    c.name = variant == 0 ? "C API paged mode 1" : variant == 1 ? "C API combined mode 0" : "C API key 0 + value 1";
    c.paged = variant == 0;
    c.mode_k = variant == 0 ? 1 : 0;
    c.mode_v = variant == 0 ? 1 : variant == 1 ? 0 : 1;
    c.combined = variant == 1;
    c.layout = variant == 2 ? "BSH" : "BNSD";
    if (variant == 0) c.bs = 32;                    // INT8 paged: a multiple of 32 (FIA-19)
    if (variant == 2) c.dt = DType::kFloat16;       // INT8 key 0 + value 1: FLOAT16 query (FIA-21)
    SCOPED_TRACE(c.name);
    const auto cs = setup(c);
    FiaParams &op = cs->op, &ref = cs->ref;
    const auto& d = cs->d;
    ASSERT_EQ(fused_infer_attention_score_v4_ref(ref), kSuccess) << last_error_message();
    const FiaAclArgs a = acl_args_of_params(op);
    ASSERT_EQ(fia_aclnn_call(a), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    const Stats st = compare(d->out_op.view(), d->out_ref.view(), out_tol(c.dt));
    EXPECT_TRUE(within(st, out_tol(c.dt), false)) << st.str();
  }
}

// A valid case, mutated; the operator must reject it with kParamInvalid, a message naming the
// parameter and the rule, and leave the output and lse untouched.
template <class F>
void expect_rejected(AqCase c, const char* param, const char* rule, F&& mutate) {
  SCOPED_TRACE(c.name);
  const auto cs = setup(c);
  HostTensor extra;  // storage a mutation may point at
  mutate(cs->op, *cs->d, extra);
  expect_rejected_call(cs->op, cs->d->out_op, cs->d->lse_op, false, param, rule);
}

// FIA-22 with KV antiquant and Q_S = 1: the vendor accepts only a pse with one row (aclnn); the
// C++ API reads row 0 of any taller pse.
TEST(FiaAntiquant, FIA22_DecodePseRowsInAclnn) {
  AqCase c;
  c.pse = true;
  c.pse_rows = 2;
  const auto cs = setup(c);
  const std::vector<uint64_t> out0 = cs->d->out_op.storage;
  EXPECT_EQ(fia_aclnn_call(acl_args_of_params(cs->op)), ACLNN_ERR_PARAM_INVALID);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("pseShiftOptional"), std::string::npos) << msg;
  EXPECT_NE(msg.find("FIA-22 with KV antiquant and Q_S = 1 dim 2 must be 1"), std::string::npos) << msg;
  EXPECT_TRUE(cs->d->out_op.storage == out0);
  EXPECT_EQ(run_fia_cpp(cs->op), kSuccess) << last_error_message();
  c.pse_rows = 1;
  const auto one = setup(c);
  EXPECT_EQ(fia_aclnn_call(acl_args_of_params(one->op)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

// FIA-24: a learnableSink with INT8 key / value is the vendor's exclusion (aclnn); the C++ API
// computes it (AllModesMatchTheReference).
TEST(FiaAntiquant, FIA24_SinkWithInt8KvInAclnn) {
  AqCase c;
  c.sink = true;
  const auto cs = setup(c);
  const std::vector<uint64_t> out0 = cs->d->out_op.storage;
  EXPECT_EQ(fia_aclnn_call(acl_args_of_params(cs->op)), ACLNN_ERR_PARAM_INVALID);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("learnableSinkOptional"), std::string::npos) << msg;
  EXPECT_NE(msg.find("FIA-24"), std::string::npos) << msg;
  EXPECT_TRUE(cs->d->out_op.storage == out0);
}

TEST(FiaAntiquant, FIA21_Errors) {
  AqCase c;
  c.name = "base";
  using D = AqData;
  using H = HostTensor;
  // parameters without INT8 KV, INT8 KV without parameters, dtype pairing
  expect_rejected(c, "keyAntiquantScaleOptional", "FIA-21", [](FiaParams& p, D& d, H& e) {
    e = H(DType::kBFloat16, d.k.dims);
    p.key = {e.view()};
    p.value = {e.view()};
  });
  expect_rejected(c, "value", "FIA-", [](FiaParams& p, D& d, H& e) {
    e = H(DType::kBFloat16, d.v.dims);
    p.value = {e.view()};
  });
  expect_rejected(c, "keyAntiquantScaleOptional", "FIA-21 INT8 key/value need antiquant scales", [](FiaParams& p, D&, H&) {
    p.key_antiquant_scale = p.value_antiquant_scale = nullptr;
    p.key_antiquant_offset = p.value_antiquant_offset = nullptr;
  });
  expect_rejected(c, "valueAntiquantScaleOptional", "FIA-21 keyAntiquantScale and valueAntiquantScale are given together", [](FiaParams& p, D&, H&) { p.value_antiquant_scale = nullptr; });
  expect_rejected(c, "keyAntiquantOffsetOptional", "FIA-21 keyAntiquantOffset and valueAntiquantOffset are given together", [](FiaParams& p, D&, H&) { p.key_antiquant_offset = nullptr; });
  // modes
  expect_rejected(c, "keyAntiquantMode", "FIA-02 mode 6 (per-token-group FP4, Ascend 950 only) is not supported", [](FiaParams& p, D&, H&) { p.key_antiquant_mode = p.value_antiquant_mode = 6; });
  expect_rejected(c, "keyAntiquantMode", "FIA-21", [](FiaParams& p, D&, H&) { p.key_antiquant_mode = p.value_antiquant_mode = 7; });
  expect_rejected(c, "valueAntiquantMode", "FIA-21 equals keyAntiquantMode except key 0 + value 1", [](FiaParams& p, D&, H&) { p.value_antiquant_mode = 2; });
  // dtypes and shapes of the parameters
  expect_rejected(c, "keyAntiquantScaleOptional", "FIA-21", [](FiaParams& p, D& d, H& e) {
    e = H(DType::kFloat32, d.ks.dims);
    p.key_antiquant_scale = p.value_antiquant_scale = nullptr;
    static TensorView v;
    v = e.view();
    p.key_antiquant_scale = p.value_antiquant_scale = &v;
    p.key_antiquant_offset = p.value_antiquant_offset = nullptr;
  });
  expect_rejected(c, "keyAntiquantScaleOptional", "FIA-21", [](FiaParams& p, D&, H& e) {
    e = H(DType::kBFloat16, {1, 3, 1, 64});  // KV_N 2
    static TensorView v;
    v = e.view();
    p.key_antiquant_scale = &v;
  });
  expect_rejected(c, "keyAntiquantOffsetOptional", "FIA-21 offset dtype and shape equal its scale's", [](FiaParams& p, D&, H& e) {
    e = H(DType::kBFloat16, {1, 2, 64});  // scale is (1, 2, 1, 64)
    static TensorView v;
    v = e.view();
    p.key_antiquant_offset = &v;
  });
  AqCase tok = c;
  tok.mode_k = tok.mode_v = 1;
  expect_rejected(tok, "keyAntiquantScaleOptional", "FIA-21", [](FiaParams& p, D&, H& e) {
    e = H(DType::kFloat32, {1, 2, 36});  // S must be 37
    static TensorView v;
    v = e.view();
    p.key_antiquant_scale = &v;
  });
  expect_rejected(tok, "keyAntiquantScaleOptional", "FIA-21", [](FiaParams& p, D&, H& e) {
    e = H(DType::kBFloat16, {1, 2, 37});  // per-token scales are FP32
    static TensorView v;
    v = e.view();
    p.key_antiquant_scale = &v;
  });
  AqCase m4 = c;  // modes 4 / 5 need paged attention
  m4.paged = true;
  m4.mode_k = m4.mode_v = 4;
  expect_rejected(m4, "keyAntiquantScaleOptional", "FIA-21", [](FiaParams& p, D&, H& e) {
    e = H(DType::kFloat32, {8, 16});  // blockNum is 7
    static TensorView v;
    v = e.view();
    p.key_antiquant_scale = &v;
  });
  AqCase m5 = c;  // mode 5 on a contiguous cache
  m5.mode_k = m5.mode_v = 5;
  expect_rejected(m5, "keyAntiquantScaleOptional", "FIA-21 modes 4 / 5", [](FiaParams&, D&, H&) {});
  // Q_S > 1: modes 0 / 1, BF16 query, Q_S <= 16, no paged attention
  AqCase pre = c;
  pre.S = 2;
  pre.mode_k = pre.mode_v = 2;
  expect_rejected(pre, "keyAntiquantMode", "FIA-21 Q_S > 1 allows modes 0 / 1", [](FiaParams&, D&, H&) {});
  pre.mode_k = pre.mode_v = 0;
  pre.dt = DType::kFloat16;
  expect_rejected(pre, "query", "FIA-21 KV antiquant with Q_S > 1 needs a BF16 query", [](FiaParams&, D&, H&) {});
  pre.dt = DType::kBFloat16;
  pre.S = 17;
  expect_rejected(pre, "query", "FIA-21 KV antiquant with Q_S > 1 allows Q_S <= 16", [](FiaParams&, D&, H&) {});
  pre.S = 2;
  pre.paged = true;
  expect_rejected(pre, "blockTableOptional", "FIA-21 KV antiquant with Q_S > 1 excludes paged attention", [](FiaParams&, D&, H&) {});
  // combined parameters
  AqCase comb = c;
  comb.combined = true;
  expect_rejected(comb, "antiquantMode", "FIA-21", [](FiaParams& p, D&, H&) { p.antiquant_mode = 2; });
  expect_rejected(comb, "antiquantScaleOptional", "FIA-21", [](FiaParams& p, D&, H& e) {
    e = H(DType::kBFloat16, {3, 2, 1, 64});
    static TensorView v;
    v = e.view();
    p.antiquant_scale = &v;
    p.antiquant_offset = nullptr;
  });
  expect_rejected(comb, "antiquantOffsetOptional", "FIA-21 an offset needs its scale", [](FiaParams& p, D&, H&) { p.antiquant_scale = nullptr; });
  expect_rejected(comb, "antiquantScaleOptional", "FIA-21 combined per-channel parameters need equal key / value head dims", [](FiaParams& p, D& d, H& e) {
    e = H(DType::kInt8, {d.v.dims[0], d.v.dims[1], d.v.dims[2], 32});  // V_D 32, K_D 64
    static H o;
    o = H(d.out_op.dtype, {d.out_op.dims[0], d.out_op.dims[1], d.out_op.dims[2], 32});
    p.value = {e.view()};
    p.attention_out = o.view();
    p.softmax_lse_flag = false;
    p.softmax_lse = nullptr;
  });
  AqCase comb_pre = comb;  // combined per-channel (mode 0) with Q_S > 1 and a BF16 query
  comb_pre.S = 2;
  expect_rejected(comb_pre, "query", "FIA-21 combined per-channel antiquant with Q_S > 1 needs a FLOAT16 query", [](FiaParams&, D&, H&) {});
  // features INT8 KV does not combine with here
  expect_rejected(c, "inputLayout", "FIA-21 KV antiquant with TND/NTD needs the NZ KV path (not supported yet)", [](FiaParams& p, D& d, H& e) {
    static std::vector<int64_t> aq, akv;
    e = H(DType::kBFloat16, {2, 4, 64});  // TND, T = 2
    p.query = e.view();
    p.input_layout = "TND";
    static H k8, o;
    k8 = H(DType::kInt8, {74, 2, 64});
    o = H(DType::kBFloat16, {2, 4, 64});
    p.key = {k8.view()};
    p.value = {k8.view()};
    p.attention_out = o.view();
    aq = {1, 2};
    akv = {37, 74};
    p.actual_seq_lengths = &aq;
    p.actual_seq_lengths_kv = &akv;
    p.softmax_lse_flag = false;
    (void)d;
  });
  expect_rejected(c, "key", "FIA-33 INT4 key/value are passed as INT32 (8 nibbles per word, last dim D / 8)", [](FiaParams& p, D& d, H&) {  // INT4 comes as INT32
    static TensorView k;
    k = d.k.view();
    k.dtype = DType::kInt4;
    p.key = {k};
  });
}

}  // namespace
}  // namespace mlaops::testing
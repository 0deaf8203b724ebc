// FusedInferAttentionScoreV4 GQA KV antiquant over a paged INT8 cache in NZ chunks (rule FIA-34):
// key / value (blockNum, KV_N, D / 32, blockSize, 32), BF16 query, Q_S 1 (sparse 0, no mask) and
// 2..16 (sparse 3, the 2048 mask; or sparse 9, a tree mask), BSH / BSND / BNSD / TND, separate scales without offsets,
// per-channel (mode 0, the layout's shape) / per-token (mode 1, [B, S]) / key 0 + value 1. The
// operator against the float64 reference (which reads the NZ cache with its own index code) with
// innerPrecise 1 (golden rounded to BF16) and 0 (exact golden), under every ISA and 1 / 2
// threads, output and lse; the vendor shapes through the C API (V4); then the FIA-34 errors.
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

struct NzCase {
  std::string name;
  std::string layout = "BNSD";
  int64_t B = 2, N = 10, KVN = 1, S = 1, D = 128, bs = 128;
  std::vector<int64_t> act_kv = {300, 129};
  std::vector<int64_t> act_q;  // TND: per-batch query lengths (empty: S each)
  int64_t mode_k = 0, mode_v = 0;
  int64_t inner = 1;
  bool tree = false;  // sparse 9: per batch the tree of a binary tree (node t's parent (t - 1) / 2)
  uint32_t seed = 1;
};

struct NzData {
  HostTensor q, k, v, bt, mask, out_op, out_ref, lse_op, lse_ref, ks, vs;
  std::vector<int64_t> akv, aq;
  TensorView vbt, vmask, vks, vvs, vlse_op, vlse_ref;
  FiaParams op, ref;
  int64_t T = 0;  // TND rows
};

HostTensor scale_of(const NzCase& c, int64_t mode, int64_t S, std::mt19937& g) {
  HostTensor t;
  if (mode == 1) {
    t = HostTensor(DType::kFloat32, {c.B, S});
  } else if (c.layout == "BSH") {
    t = HostTensor(DType::kBFloat16, {c.KVN * c.D});
  } else if (c.layout == "BNSD") {
    t = HostTensor(DType::kBFloat16, {c.KVN, 1, c.D});
  } else {
    t = HostTensor(DType::kBFloat16, {c.KVN, c.D});
  }
  for (int64_t i = 0; i < t.numel(); ++i) t.set_flat(i, uni(g, 0.5, 1.5) / 127.0);
  return t;
}

std::unique_ptr<NzData> setup(const NzCase& c) {
  auto d = std::make_unique<NzData>();
  std::mt19937 g(c.seed * 131 + 17);
  d->akv = c.act_kv;
  const bool tnd = c.layout == "TND";
  int64_t max_kv = 0;
  for (int64_t v : d->akv) max_kv = std::max(max_kv, v);
  const int64_t per = (max_kv + c.bs - 1) / c.bs, nb = c.B * per + 2;
  // query / output / lse
  std::vector<int64_t> qd, ld;
  if (tnd) {
    const std::vector<int64_t> lens = c.act_q.empty() ? std::vector<int64_t>(static_cast<size_t>(c.B), c.S) : c.act_q;
    int64_t t = 0;
    for (int64_t l : lens) d->aq.push_back(t += l);
    d->T = t;
    qd = {t, c.N, c.D};
    ld = {t, c.N, 1};
  } else {
    if (c.layout == "BNSD") qd = {c.B, c.N, c.S, c.D};
    else if (c.layout == "BSND") qd = {c.B, c.S, c.N, c.D};
    else qd = {c.B, c.S, c.N * c.D};
    ld = {c.B, c.N, c.S, 1};
  }
  d->q = HostTensor(DType::kBFloat16, qd);
  for (int64_t i = 0; i < d->q.numel(); ++i) d->q.set_flat(i, uni(g, -1, 1));
  d->out_op = HostTensor(DType::kBFloat16, qd);
  d->out_ref = HostTensor(DType::kFloat64, qd);
  d->lse_op = HostTensor(DType::kFloat32, ld);
  d->lse_ref = HostTensor(DType::kFloat32, ld);
  // the NZ pools: random INT8 everywhere (unused slots too), scattered block table
  const std::vector<int64_t> pd = {nb, c.KVN, c.D / 32, c.bs, 32};
  d->k = HostTensor(DType::kInt8, pd);
  d->v = HostTensor(DType::kInt8, pd);
  for (HostTensor* t : {&d->k, &d->v})
    for (int64_t i = 0; i < t->numel(); ++i) t->set_flat(i, std::round(uni(g, -127, 127)));
  d->bt = HostTensor(DType::kInt32, {c.B, per});
  for (int64_t i = 0; i < c.B * per; ++i) d->bt.set_flat(i, static_cast<double>((i * 7 + 3) % nb));
  if (c.tree) {  // (B, S, S), TND 1-D sum actQ^2: 0 where t is an ancestor of i or i itself
    std::vector<int64_t> lens = c.act_q.empty() ? std::vector<int64_t>(static_cast<size_t>(c.B), c.S) : c.act_q;
    int64_t total = 0;
    for (int64_t l : lens) total += l * l;
    d->mask = tnd ? HostTensor(DType::kBool, {total}, 1.0) : HostTensor(DType::kBool, {c.B, c.S, c.S}, 1.0);
    int64_t start = 0;
    for (int64_t b = 0; b < c.B; ++b) {
      const int64_t n = lens[static_cast<size_t>(b)];
      for (int64_t i = 0; i < n; ++i)
        for (int64_t t = i;; t = (t - 1) / 2) {
          d->mask.set_flat(tnd ? start + i * n + t : (b * c.S + i) * c.S + t, 0.0);
          if (t == 0) break;
        }
      start += n * n;
    }
  } else if (c.S > 1 || (tnd && d->T > c.B)) {
    d->mask = HostTensor(DType::kUInt8, {2048, 2048});
    for (int64_t i = 0; i < 2048; ++i)
      for (int64_t j = i + 1; j < 2048; ++j) d->mask.set_flat(i * 2048 + j, 1.0);
  }
  d->ks = scale_of(c, c.mode_k, per * c.bs, g);
  d->vs = scale_of(c, c.mode_v, per * c.bs, g);
  d->vbt = d->bt.view();
  d->vmask = d->mask.view();
  d->vks = d->ks.view();
  d->vvs = d->vs.view();
  d->vlse_op = d->lse_op.view();
  d->vlse_ref = d->lse_ref.view();
  for (int w = 0; w < 2; ++w) {
    FiaParams& p = w == 0 ? d->op : d->ref;
    p.query = d->q.view();
    TensorView kv = d->k.view(), vv = d->v.view();
    kv.format = vv.format = Format::kFractalNZ;
    p.key = {kv};
    p.value = {vv};
    p.num_heads = c.N;
    p.num_key_value_heads = c.KVN;
    p.scale_value = 1.0 / std::sqrt(static_cast<double>(c.D));
    p.input_layout = c.layout;
    p.block_table = &d->vbt;
    p.block_size = c.bs;
    p.actual_seq_lengths_kv = &d->akv;
    if (tnd) p.actual_seq_lengths = &d->aq;
    p.inner_precise = c.inner;
    p.attention_out = w == 0 ? d->out_op.view() : d->out_ref.view();
    p.softmax_lse_flag = true;
    p.softmax_lse = w == 0 ? &d->vlse_op : &d->vlse_ref;
    if (!d->mask.dims.empty()) {
      p.atten_mask = &d->vmask;
      p.sparse_mode = c.tree ? 9 : 3;
    }
    p.key_antiquant_scale = &d->vks;
    p.value_antiquant_scale = &d->vvs;
    p.key_antiquant_mode = c.mode_k;
    p.value_antiquant_mode = c.mode_v;
  }
  return d;
}

// The INT8 antiquant tolerances (fia_antiquant_cases.h), BF16: the mean relative error and
// cosine of out_tol; each element within bf16_pv_bound (the rounding of P to BF16 before P x V and
// of the output), which also holds where the output cancels. The |ref|- and rms-relative bound of
// out_tol does not hold there: in "BNSD Q_S 16 sparse 3 key 0 + value 1", element 325848 (a causal
// row with few valid positions and large per-token V) has |Δ| 1.8e-3 at ref -0.040, sum p |v| 0.97,
// rms 0.14: 1.06 times out_tol's bound, 0.46 of bf16_pv_bound. Measured over every case, ISA and
// thread count: at most 0.82 of bf16_pv_bound (a tree row with A ~ |ref|: both roundings add up).
const Tolerance kTol = out_tol(DType::kBFloat16);
// Every innerPrecise, in place or on the dequantised chunks, against the reference (the dequantised
// values unrounded, fia_antiquant_cases.h).
void check_case(const NzCase& c) {
  SCOPED_TRACE(c.name);
  const auto d = setup(c);
  ASSERT_EQ(fused_infer_attention_score_v4_ref(d->ref), kSuccess) << last_error_message();
  // sum_j p_j |v_j| per output element: the reference on |V| (the scales are positive, no offsets)
  const auto da = setup(c);
  for (int64_t i = 0; i < da->v.numel(); ++i) da->v.set_flat(i, std::fabs(da->v.flat(i)));
  ASSERT_EQ(fused_infer_attention_score_v4_ref(da->ref), kSuccess) << last_error_message();
  check_against_golden(c.name, "fia-aqnz-stats", kTol, {c.inner}, d->op, d->out_op, d->lse_op, d->out_ref, d->lse_ref,
                       &da->out_ref);
}

std::vector<NzCase> cases() {
  std::vector<NzCase> v;
  auto add = [&](NzCase c) {
    c.seed = static_cast<uint32_t>(v.size() + 1);
    v.push_back(c);
  };
  for (int64_t inner : {1, 0}) {
    const std::string ip = " ip" + std::to_string(inner);
    NzCase c;
    c.inner = inner;
    c.name = "BNSD Q_S 1 mode0 (10,1)" + ip;
    add(c);
    c.name = "BSH Q_S 1 mode1 (64,8)" + ip;
    c.layout = "BSH";
    c.N = 64;
    c.KVN = 8;
    c.mode_k = c.mode_v = 1;
    c.act_kv = {140, 0};  // a zero-length batch
    add(c);
    c = NzCase();
    c.inner = inner;
    c.name = "BSND Q_S 4 sparse 3 mode0" + ip;
    c.layout = "BSND";
    c.S = 4;
    add(c);
    c.name = "BNSD Q_S 16 sparse 3 key 0 + value 1 (80,8) bs 512" + ip;
    c.layout = "BNSD";
    c.S = 16;
    c.N = 80;
    c.KVN = 8;
    c.bs = 512;
    c.act_kv = {600, 20};
    c.mode_k = 0;
    c.mode_v = 1;
    add(c);
    c = NzCase();
    c.inner = inner;
    c.name = "TND act_q {3, 1} mode1" + ip;
    c.layout = "TND";
    c.act_q = {3, 1};
    c.mode_k = c.mode_v = 1;
    add(c);
    c.name = "TND Q_S 1 mode0" + ip;
    c.act_q = {1, 1};
    c.mode_k = c.mode_v = 0;
    add(c);
    c = NzCase();
    c.inner = inner;
    c.name = "C++ API D 64 bs 16 (4,2) BSH mode0" + ip;
    c.layout = "BSH";
    c.N = 4;
    c.KVN = 2;
    c.D = 64;
    c.bs = 16;
    c.act_kv = {37, 20};
    add(c);
    c.name = "C++ API D 96 bs 16 (4,2) BNSD mode1" + ip;  // in place: a half 64-channel chunk of the query's lo slice
    c.layout = "BNSD";
    c.D = 96;
    c.mode_k = c.mode_v = 1;
    add(c);
    c = NzCase();
    c.inner = inner;
    c.name = "BSND Q_S 6 tree (sparse 9) mode0 (64,8)" + ip;
    c.layout = "BSND";
    c.S = 6;
    c.N = 64;
    c.KVN = 8;
    c.act_kv = {300, 6};
    c.tree = true;
    add(c);
    c = NzCase();
    c.inner = inner;
    c.name = "TND act_q {5, 2} tree (sparse 9) mode1" + ip;
    c.layout = "TND";
    c.act_q = {5, 2};
    c.act_kv = {129, 40};
    c.mode_k = c.mode_v = 1;
    c.tree = true;
    add(c);
    c = NzCase();
    c.inner = inner;
    c.name = "B1 L1000 KV split mode1" + ip;
    c.B = 1;
    c.act_kv = {1000};
    c.mode_k = c.mode_v = 1;
    add(c);
  }
  return v;
}

TEST(FiaAntiquantNz, AllFormsMatchTheReference) {
  for (const NzCase& c : cases()) check_case(c);
}

// The vendor's shapes through aclnnFusedInferAttentionScoreV4.
TEST(FiaAntiquantNz, ThroughTheCApi) {
  for (int variant = 0; variant < 2; ++variant) {
    NzCase c;
    c.name = variant == 0 ? "C API BNSD Q_S 1 mode0" : "C API BSND Q_S 4 mode1";
    if (variant == 1) {
      c.layout = "BSND";
      c.S = 4;
      c.mode_k = c.mode_v = 1;
    }
    SCOPED_TRACE(c.name);
    const auto d = setup(c);
    ASSERT_EQ(fused_infer_attention_score_v4_ref(d->ref), kSuccess) << last_error_message();
    ASSERT_EQ(fia_aclnn_call(acl_args_of_params(d->op)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    const Stats st = compare(d->out_op.view(), d->out_ref.view(), kTol);
    EXPECT_TRUE(within(st, kTol, false)) << st.str();
  }
}

// A valid case, mutated: kParamInvalid naming the parameter and rule, output and lse untouched,
// through the C++ API (aclnn = false) or the C API (aclnn = true).
template <class F>
void expect_rejected(const NzCase& c, bool aclnn, const char* param, const char* rule, F&& mutate) {
  SCOPED_TRACE(std::string(param) + " " + rule);
  const auto d = setup(c);
  HostTensor extra;
  mutate(d->op, *d, extra);
  expect_rejected_call(d->op, d->out_op, d->lse_op, aclnn, param, rule);
}

TEST(FiaAntiquantNz, FIA34_Errors) {
  using H = HostTensor;
  NzCase c;
  // FP16 query (and output)
  expect_rejected(c, false, "query", "FIA-34 INT8 key/value in NZ need a BF16 query", [](FiaParams& p, NzData& d, H&) {
    p.query.dtype = DType::kFloat16;
    p.attention_out.dtype = DType::kFloat16;
    (void)d;
  });
  // offsets
  expect_rejected(c, false, "keyAntiquantOffsetOptional", "FIA-34 INT8 key/value in NZ take no offsets", [](FiaParams& p, NzData& d, H&) {
    p.key_antiquant_offset = &d.vks;
    p.value_antiquant_offset = &d.vvs;
  });
  // combined parameters
  expect_rejected(c, false, "antiquantScaleOptional", "FIA-34 INT8 key/value in NZ take separate key / value scales", [](FiaParams& p, NzData&, H& e) {
    e = H(DType::kBFloat16, {2, 1, 128}, 0.01);
    static TensorView v;
    v = e.view();
    p.antiquant_scale = &v;
    p.key_antiquant_scale = p.value_antiquant_scale = nullptr;
  });
  // mode 3 / 4
  for (int64_t m : {3, 4})
    expect_rejected(c, false, "keyAntiquantMode", "FIA-34 INT8 key/value in NZ allow modes 0 (per-channel) and 1 (per-token)",
                    [m](FiaParams& p, NzData&, H&) { p.key_antiquant_mode = p.value_antiquant_mode = m; });
  // Q_S 1 with a mask; Q_S > 1 without sparse 3
  expect_rejected(c, false, "sparseMode", "FIA-34 INT8 key/value in NZ with Q_S = 1 allow sparse 0 without a mask", [](FiaParams& p, NzData&, H& e) {
    e = H(DType::kUInt8, {2, 400});
    static TensorView v;
    v = e.view();
    p.atten_mask = &v;
  });
  NzCase pre = c;
  pre.S = 4;
  expect_rejected(pre, false, "sparseMode",
                  "FIA-34 INT8 key/value in NZ with Q_S > 1 allow sparse 3 (causal, 2048 mask) or 9 (tree mask)", [](FiaParams& p, NzData&, H&) {
    p.sparse_mode = 0;
    p.atten_mask = nullptr;
  });
  // Q_S 17
  NzCase q17 = c;
  q17.S = 17;
  expect_rejected(q17, false, "query", "FIA-34 INT8 key/value in NZ allow Q_S 1..16", [](FiaParams&, NzData&, H&) {});
  // NTD
  NzCase ntd = c;
  ntd.layout = "TND";
  ntd.act_q = {1, 1};
  expect_rejected(ntd, false, "inputLayout", "FIA-34 INT8 key/value in NZ allow BSH, BSND, BNSD, TND", [](FiaParams& p, NzData& d, H&) {
    p.input_layout = "NTD";
    p.query = d.q.reshaped({10, 2, 128}).view();
    p.attention_out = d.out_op.reshaped({10, 2, 128}).view();
  });
  // an INT8 NZ cache has 32-byte chunks (c0 32)
  expect_rejected(c, false, "key", "FIA-08 NZ cache last dim (c0: 16 for FP16/BF16, 32 for INT8)", [](FiaParams& p, NzData& d, H&) {
    TensorView k = d.k.view();
    k.format = Format::kFractalNZ;
    const int64_t dims[5] = {k.dims[0], k.dims[1], 8, k.dims[3], 16};
    k = make_view(k.data, DType::kInt8, dims, 5, Format::kFractalNZ);
    p.key = {k};
    p.value = {k};
  });
  // the aclnn layer's vendor ranges: D 128, blockSize 128 / 512, innerPrecise 1, (N, KV_N)
  NzCase small;
  small.N = 4;
  small.KVN = 2;
  small.D = 64;
  small.bs = 16;
  small.act_kv = {37, 20};
  expect_rejected(small, true, "key", "FIA-34 INT8 key/value in NZ need head dim 128", [](FiaParams&, NzData&, H&) {});
  NzCase bs16 = c;
  bs16.bs = 16;
  expect_rejected(bs16, true, "blockSize", "FIA-34 INT8 key/value in NZ allow blockSize 128 or 512", [](FiaParams&, NzData&, H&) {});
  NzCase ip0 = c;
  ip0.inner = 0;
  expect_rejected(ip0, true, "innerPrecise", "FIA-34 INT8 key/value in NZ allow innerPrecise 1", [](FiaParams&, NzData&, H&) {});
  NzCase heads = c;
  heads.N = 8;
  heads.KVN = 1;
  expect_rejected(heads, true, "numHeads",
                  "FIA-34 INT8 key/value in NZ allow (numHeads, numKeyValueHeads) in {(10, 1), (64, 8), (80, 8), (128, 16)}", [](FiaParams&, NzData&, H&) {});
}

}  // namespace
}  // namespace mlaops::testing

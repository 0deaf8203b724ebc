// FusedInferAttentionScoreV4 tree mask, sparseMode 9 (ops/fia/fia_tree_mask.h, rules FIA-14 / FIA-35,
// the FIA-24 exclusion rows): the operator against the float64 reference under every kernel
// configuration (fia_kernel_configs(): each ISA level, and the portable attention row at the
// best one) with 1 and 2 threads, over
//   * MLA decode / MTP (D 512 + rope 64, one latent head): N 16 / 32 / 128, 1..8 draft tokens per
//     batch, TND (cumulative lengths, batches of different S1) and TND_NTD, BSND, BNSD_NBSD,
//     paged NZ / BnBsH / BnNBsD caches and contiguous ones, softmaxLse;
//   * GQA: BSND / BSH / BNSD / TND, FP16 and BF16, decode Q_S 1, the lane rows (G * R >= 16), KV
//     splits (one item, two threads), S1 == S2, arbitrary (non-tree) bits with fully masked rows;
//   * random trees (each node sees its ancestors and itself), all-zero trees (every draft token
//     sees every other one), chains (causal), mask dtypes BOOL / INT8 / UINT8;
//   * MLA full quant (INT8 query and NZ latent cache) with a tree;
// then: a tree equals the sparse 1 mask that spells it out, bitwise, in the fast path (every
// kernel configuration) and in the reference (whose tree code also equals its causal rule for a
// chain and "no mask" for an all-zero tree, exactly), the plans' rows, a call through the C API, the FIA-24 rows the pair test of test_fia_rules does
// not build (INT8 output, INT8 key / value: rejected by aclnn, computed by the C++ API), and the
// rejections of FIA-14 / FIA-35 (status, message naming the parameter and rule, no output byte
// changed).
//
// Bounds: the harness's (fia_harness.h) for FP16 / BF16 outputs and softmaxLse; MLA full quant the
// bound of test_fia_mla_quant.cpp (7.8e-3 |ref| + 1e-2 rms(ref)); INT8 output |op - ref| <= 1.
// Measured worst (AMD EPYC Zen 5; printed by the tests): see docs/ops/fused_infer_attention_score.md
// "Tree mask".
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/plan.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_harness.h"
#include "ops/fia/fia_mla_quant_data.h"

namespace mlaops::testing {
namespace {

constexpr DType BF = DType::kBFloat16;
constexpr DType F16 = DType::kFloat16;

enum class Tree { kRandom, kAllZero, kChain, kBits };

struct TreeCase {
  FiaCase c;
  Tree tree = Tree::kRandom;
};
void PrintTo(const TreeCase& t, std::ostream* os) { *os << t.c.name; }

bool packed_layout(const std::string& layout) { return layout.rfind("TND", 0) == 0 || layout.rfind("NTD", 0) == 0; }

// The tree of a case for the per-batch query lengths s1.
HostTensor make_tree(Tree kind, DType dt, const std::vector<int64_t>& s1, int64_t QS, bool packed, uint32_t seed) {
  std::mt19937 g(seed * 101 + 5);
  switch (kind) {
    case Tree::kRandom:
      return tree_mask(dt, s1, QS, packed, [&](int64_t, int64_t t) { return static_cast<int64_t>(g() % t); });
    case Tree::kChain:
      return tree_mask(dt, s1, QS, packed, [](int64_t, int64_t t) { return t - 1; });
    case Tree::kAllZero:
    case Tree::kBits: break;
  }
  HostTensor m = tree_mask(dt, s1, QS, packed, [](int64_t, int64_t) { return int64_t{0}; });
  for (int64_t i = 0; i < m.numel(); ++i)
    m.set_flat(i, kind == Tree::kAllZero ? 0.0 : static_cast<double>(g() % 3 == 0));
  if (kind == Tree::kBits && !packed && QS > 1)  // row 1 of batch 0 fully masked inside the block
    for (int64_t t = 0; t < QS; ++t) m.set({0, 1, t}, 1.0);
  return m;
}

std::unique_ptr<FiaCaseData> tree_data(const TreeCase& t) {
  FiaCase c = t.c;
  c.mask = MaskForm::kNone;
  auto d = make_case_data(c);
  d->mask = make_tree(t.tree, c.mask_dtype, d->canon.lens_q(), c.Sq, packed_layout(c.cfg.layout), c.seed);
  d->cfg.mask = &d->mask;
  d->cfg.sparse_mode = 9;
  return d;
}

TreeCase tc(FiaCase c, Tree tree, DType mask_dt = DType::kBool) {
  c.cfg.sparse_mode = 9;
  c.mask_dtype = mask_dt;
  return {c, tree};
}

FiaCase mla_case(const char* name, DType dt, int64_t B, int64_t N, int64_t Sq, int64_t Skv, const char* layout) {
  FiaCase c = fia_case(name, dt, B, N, 1, Sq, Skv, 512, layout);
  return mla(c, 64);
}

std::vector<TreeCase> cases() {
  std::vector<TreeCase> v;
  FiaCase c;
  // MLA decode / MTP
  // KV lengths of one order: the harness's bound scales with the whole output's rms, and a batch
  // of 64 positions beside ones of 300 has larger outputs (and BF16 P errors) than that rms
  // (measured: one element of 786432 at 0.021 rms with actKV 64; the same batch is bitwise equal
  // to its spelled-out mask in FiaTreeMaskKernels.TreeEqualsItsFullMask)
  c = mla_case("mla_tnd_n128_paged_nz", BF, 3, 128, 4, 300, "TND");
  c.act_q = {2, 4, 3};
  c.act_kv = {300, 129, 160};
  paged(c, 5, 128);
  v.push_back(tc(c, Tree::kRandom));
  c = mla_case("mla_tnd_ntd_n16_paged_bnnbsd_s1_eq_s2", F16, 4, 16, 8, 600, "TND_NTD");
  c.act_q = {8, 1, 5, 3};
  c.act_kv = {8, 40, 600, 3};
  paged(c, 4, 16);
  v.push_back(tc(c, Tree::kRandom, DType::kUInt8));
  c = mla_case("mla_bsnd_n32_qs4_paged_bnbsh_all_zero", BF, 2, 32, 4, 257, "BSND");
  paged(c, 3, 64);
  v.push_back(tc(c, Tree::kAllZero, DType::kInt8));
  c = mla_case("mla_bnsd_nbsd_n16_qs3_contiguous", BF, 2, 16, 3, 100, "BNSD_NBSD");
  c.act_kv = {100, 3};
  v.push_back(tc(c, Tree::kRandom));
  c = mla_case("mla_bsnd_n128_qs8_nz_chain", BF, 1, 128, 8, 1000, "BSND");
  paged(c, 5, 128);
  v.push_back(tc(c, Tree::kChain));
  c = mla_case("mla_tnd_n32_one_batch_kv_split", BF, 1, 32, 6, 900, "TND");
  c.act_q = {6};
  paged(c, 5, 128);
  v.push_back(tc(c, Tree::kRandom));
  // GQA
  c = fia_case("gqa_bsnd_g4_fp16", F16, 2, 8, 2, 5, 70, 64, "BSND");
  c.act_kv = {70, 5};
  v.push_back(tc(c, Tree::kRandom, DType::kInt8));
  c = fia_case("gqa_tnd_paged_bnbsh", BF, 3, 4, 1, 6, 200, 128, "TND");
  c.act_q = {1, 6, 3};
  c.act_kv = {10, 6, 200};
  paged(c, 3, 16);
  v.push_back(tc(c, Tree::kRandom, DType::kUInt8));
  c = fia_case("gqa_bsh_decode_qs1", BF, 3, 8, 8, 1, 50, 64, "BSH");
  c.act_kv = {50, 1, 20};
  v.push_back(tc(c, Tree::kRandom));
  c = fia_case("gqa_bnsd_lanes_g16_qs8", BF, 2, 32, 2, 8, 300, 64, "BNSD");
  v.push_back(tc(c, Tree::kRandom));
  c = fia_case("gqa_bsnd_qs16_kv_split_fp16", F16, 1, 2, 1, 16, 2000, 128, "BSND");
  v.push_back(tc(c, Tree::kRandom));
  c = fia_case("gqa_bsnd_s1_eq_s2_all_zero", BF, 2, 4, 2, 6, 6, 32, "BSND");
  v.push_back(tc(c, Tree::kAllZero));
  c = fia_case("gqa_bsnd_bits_fully_masked_row", BF, 2, 4, 2, 5, 40, 32, "BSND");
  c.act_kv = {5, 40};
  v.push_back(tc(c, Tree::kBits));
  c = fia_case("gqa_bsh_padded_rows_chain_fp16", F16, 2, 4, 2, 7, 64, 64, "BSH");
  c.act_q = {7, 3};
  c.act_kv = {64, 30};
  v.push_back(tc(c, Tree::kChain, DType::kInt8));
  return v;
}

class FiaTreeMask : public ::testing::TestWithParam<TreeCase> {};

TEST_P(FiaTreeMask, MatchesReference) {
  const TreeCase& t = GetParam();
  auto d = tree_data(t);
  auto ref = reference_run(*d);
  ASSERT_TRUE(ref);
  const FiaWorst w = check_every_isa(*d, *ref, t.c.dtype, t.c.cfg.lse, {1, 2}, t.c.name);
  EXPECT_GT(w.runs, 0);
  std::printf("[fia-tree] %s: %d runs, max rel %.3g, max abs %.3g, lse rel %.3g\n", t.c.name.c_str(), w.runs,
              w.out_rel, w.out_abs, w.lse_rel);
}

INSTANTIATE_TEST_SUITE_P(Cases, FiaTreeMask, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<TreeCase>& i) { return i.param.c.name; });

// The plans: MLA MTP runs on the lane row (as MLA decode does); a GQA decode call with a tree
// runs on the decode row, which applies explicit masks (the tree covering the last position).
TEST(FiaTreeMaskPlan, MaskedRowsAreChosen) {
  FiaCase m = mla_case("plan_mla", BF, 1, 16, 4, 300, "TND");
  m.act_q = {4};
  paged(m, 5, 128);
  FiaCase g = fia_case("plan_gqa", BF, 2, 8, 2, 1, 300, 128, "BSND");
  for (int k = 0; k < 2; ++k) {
    const FiaCase& c = k == 0 ? m : g;
    auto d = tree_data(tc(c, Tree::kRandom));
    auto r = fia_test::build_fia_run(d->canon, d->cfg);
    OpPlan plan;
    ASSERT_EQ(fused_infer_attention_score_v4_plan(r->params, &plan), kSuccess) << last_error_message();
    const std::string e = plan.explain();
    EXPECT_NE(e.find("sparseMode 9 with a mask"), std::string::npos) << e;
    if (detected_isa() == Isa::kAvx512) {
      if (k == 0) {
        EXPECT_NE(e.find(": attn_avx512_lanes"), std::string::npos) << e;
      } else {  // the decode row applies explicit masks
        EXPECT_NE(e.find("row(s): attn_avx512_decode "), std::string::npos) << e;
      }
    }
  }
}

// The tree equals the explicit (B, Q_S, S2) mask of sparse mode 1 that spells it out (its rows:
// 0 on the context, the tree on the last S1 positions): the same kernel rows run both, so the
// outputs are bitwise equal under every kernel configuration.
TEST(FiaTreeMaskKernels, TreeEqualsItsFullMask) {
  std::vector<TreeCase> v;
  FiaCase c = fia_case("gqa_paged_nz_g8", BF, 3, 16, 2, 4, 300, 128, "BSND");
  c.act_kv = {300, 64, 4};
  paged(c, 5, 128);
  v.push_back(tc(c, Tree::kRandom));
  c = fia_case("gqa_lanes_fp16", F16, 2, 32, 2, 6, 150, 64, "BNSD");
  c.act_kv = {150, 6};
  v.push_back(tc(c, Tree::kRandom));
  c = fia_case("gqa_decode_kv_split", BF, 1, 2, 1, 3, 3000, 64, "BSH");
  v.push_back(tc(c, Tree::kBits));
  c = fia_case("gqa_decode_row_qs1_g4", BF, 3, 16, 4, 1, 700, 128, "BSND");
  c.act_kv = {700, 1, 64};
  v.push_back(tc(c, Tree::kBits));
  c = mla_case("mla_n128_paged_nz", BF, 3, 128, 4, 300, "BSND");
  c.act_kv = {300, 129, 64};
  paged(c, 5, 128);
  v.push_back(tc(c, Tree::kRandom));
  for (const TreeCase& t : v) {
    SCOPED_TRACE(t.c.name);
    auto d = tree_data(t);
    const std::vector<int64_t> s1 = d->canon.lens_q(), s2 = d->canon.lens_kv();
    const int64_t B = t.c.B, QS = t.c.Sq, S2 = t.c.Skv;
    auto full = std::make_unique<FiaCaseData>();
    full->canon = d->canon;
    full->cfg = d->cfg;
    full->cfg.sparse_mode = 1;
    full->mask = HostTensor(DType::kBool, {B, QS, S2}, 1.0);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t n1 = s1[static_cast<size_t>(b)], n2 = s2[static_cast<size_t>(b)];
      for (int64_t i = 0; i < n1; ++i)
        for (int64_t j = 0; j < n2; ++j)
          full->mask.set({b, i, j}, j < n2 - n1 ? 0.0 : d->mask.get({b, i, j - (n2 - n1)}));
    }
    full->cfg.mask = &full->mask;
    for (const FiaKernelConfig& k : fia_kernel_configs()) {
      if (!set_isa(k.isa) || !set_kernel_override(k.override_rows)) continue;
      for (int th : {1, 2}) {
        set_num_threads(th);
        auto a = fia_test::build_fia_run(d->canon, d->cfg);
        auto b = fia_test::build_fia_run(full->canon, full->cfg);
        ASSERT_EQ(run_fia_cpp(a->params), kSuccess) << last_error_message();
        ASSERT_EQ(run_fia_cpp(b->params), kSuccess) << last_error_message();
        set_num_threads(0);
        EXPECT_TRUE(a->out.storage == b->out.storage && a->lse.storage == b->lse.storage)
            << isa_name(k.isa) << " " << k.override_rows << " threads=" << th;
      }
    }
    set_kernel_override("");
    reset_isa();
  }
}

// ---- the reference's tree rule against its other rules ----

// The reference run of a case with mask `m` (or none) and sparse mode `mode`.
std::unique_ptr<FiaRun> ref_with(const FiaCase& c, const HostTensor* m, int64_t mode) {
  auto d = make_case_data(c);
  d->cfg.mask = m;
  d->cfg.sparse_mode = mode;
  return reference_run(*d);
}

TEST(FiaTreeMaskReference, ChainIsCausalAllZeroIsNoMaskAndATreeIsItsFullMask) {
  for (const char* layout : {"BSND", "TND"}) {
    SCOPED_TRACE(layout);
    FiaCase c = fia_case("ref_rules", BF, 3, 4, 2, 5, 40, 32, layout);
    c.act_q = {5, 2, 4};
    c.act_kv = {40, 2, 17};
    const bool packed = packed_layout(layout);
    const HostTensor chain = make_tree(Tree::kChain, DType::kBool, c.act_q, c.Sq, packed, 1);
    const HostTensor zero = make_tree(Tree::kAllZero, DType::kBool, c.act_q, c.Sq, packed, 1);
    const HostTensor& tmpl = template_mask(DType::kBool, 2);
    auto a = ref_with(c, &chain, 9), b = ref_with(c, &tmpl, 3), z = ref_with(c, &zero, 9), n = ref_with(c, nullptr, 0);
    ASSERT_TRUE(a && b && z && n);
    EXPECT_TRUE(a->out.storage == b->out.storage && a->lse.storage == b->lse.storage);
    EXPECT_TRUE(z->out.storage == n->out.storage && z->lse.storage == n->lse.storage);
    EXPECT_FALSE(a->out.storage == z->out.storage);
    // a random tree equals the sparse 1 mask (B, Q_S, S2) that spells it out (the reference's
    // explicit-mask code, not its tree code)
    const HostTensor tree = make_tree(Tree::kRandom, DType::kUInt8, c.act_q, c.Sq, packed, 7);
    HostTensor full(DType::kBool, {c.B, c.Sq, c.Skv}, 1.0);
    int64_t start = 0;
    for (int64_t bb = 0; bb < c.B; ++bb) {
      const int64_t n1 = c.act_q[static_cast<size_t>(bb)], n2 = c.act_kv[static_cast<size_t>(bb)];
      for (int64_t i = 0; i < n1; ++i)
        for (int64_t j = 0; j < n2; ++j) {
          const int64_t t = j - (n2 - n1);
          full.set({bb, i, j}, t < 0 ? 0.0 : packed ? tree.flat(start + i * n1 + t) : tree.get({bb, i, t}));
        }
      start += n1 * n1;
    }
    auto rt = ref_with(c, &tree, 9), rf = ref_with(c, &full, 1);
    ASSERT_TRUE(rt && rf);
    EXPECT_TRUE(rt->out.storage == rf->out.storage && rt->lse.storage == rf->lse.storage);
  }
}

// ---- through the C API ----

TEST(FiaTreeMaskApi, MlaMtpThroughTheCApi) {
  FiaCase c = mla_case("capi", BF, 2, 16, 3, 200, "TND");
  c.act_q = {3, 2};
  c.act_kv = {200, 77};
  paged(c, 5, 128);
  auto d = tree_data(tc(c, Tree::kRandom));
  auto ref = reference_run(*d);
  ASSERT_TRUE(ref);
  auto r = fia_test::build_fia_run(d->canon, d->cfg);
  ASSERT_EQ(fia_aclnn_call(acl_args_of(*r)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  const FiaCompare cmp = compare_fia(*r, *ref, c.dtype, true);
  EXPECT_TRUE(cmp.ok) << cmp.str();
}

// ---- MLA full quant with a tree ----

Status run_cpp(const FiaParams& p) { return run_fia_cpp(p); }

TEST(FiaTreeMaskMlaQuant, MatchesReference) {
  struct Q {
    MqCase c;
    Tree tree;
  };
  std::vector<Q> qs;
  MqCase m;
  m.name = "mlaq_bsnd_n16_qs4";
  m.layout = "BSND";
  m.B = 2, m.N = 16, m.QS = 4, m.act_kv = {200, 4}, m.bs = 128, m.seed = 31;
  qs.push_back({m, Tree::kRandom});
  m = MqCase();
  m.name = "mlaq_tnd_n128";
  m.layout = "TND";
  m.B = 3, m.N = 128, m.act_q = {2, 4, 1}, m.act_kv = {300, 64, 5}, m.bs = 128, m.seed = 32;
  qs.push_back({m, Tree::kRandom});
  m = MqCase();
  m.name = "mlaq_bsh_nbsd_n32_qs3_all_zero";
  m.layout = "BSH_NBSD";
  m.B = 1, m.N = 32, m.QS = 3, m.act_kv = {129}, m.bs = 64, m.seed = 33;
  qs.push_back({m, Tree::kAllZero});
  m = MqCase();
  m.name = "mlaq_tnd_ntd_n16_chain_kv_split";
  m.layout = "TND_NTD";
  m.B = 1, m.N = 16, m.act_q = {5}, m.act_kv = {900}, m.bs = 128, m.seed = 34;
  qs.push_back({m, Tree::kChain});
  double worst = 0;
  for (const Q& q : qs) {
    SCOPED_TRACE(q.c.name);
    auto d = mq_make(q.c);
    const bool packed = d->packed;
    const std::vector<int64_t> s1 = packed ? q.c.act_q : std::vector<int64_t>(static_cast<size_t>(q.c.B), q.c.QS);
    d->mask = make_tree(q.tree, DType::kBool, s1, q.c.QS, packed, q.c.seed);
    d->v_mask = d->mask.view();
    auto params = [&](const TensorView& out, const TensorView* lse) {
      FiaParams p = mq_params(*d, out, lse);
      p.sparse_mode = 9;
      p.atten_mask = &d->v_mask;
      return p;
    };
    HostTensor ref_out(DType::kFloat64, d->out_dims), ref_lse(DType::kFloat32, d->lse_dims);
    const TensorView rlv = ref_lse.view();
    ASSERT_EQ(fused_infer_attention_score_v4_ref(params(ref_out.view(), &rlv)), kSuccess) << last_error_message();
    double ss = 0;
    for (int64_t i = 0; i < ref_out.numel(); ++i) ss += ref_out.flat(i) * ref_out.flat(i);
    const double rms = std::sqrt(ss / static_cast<double>(ref_out.numel())) + 1e-30;
    for (Isa isa : test_isas()) {
      ASSERT_TRUE(set_isa(isa));
      for (int t : {1, 2}) {
        set_num_threads(t);
        HostTensor out(BF, d->out_dims, std::nan("")), lse(DType::kFloat32, d->lse_dims, std::nan(""));
        const TensorView lv = lse.view();
        const Status s = run_cpp(params(out.view(), &lv));
        set_num_threads(0);
        ASSERT_EQ(s, kSuccess) << last_error_message();
        int64_t bad = 0;
        for (int64_t i = 0; i < ref_out.numel(); ++i) {
          const double a = out.flat(i), b = ref_out.flat(i), e = std::fabs(a - b);
          if (!(e <= 7.8e-3 * std::fabs(b) + 1e-2 * rms) || (b == 0.0 && a != 0.0)) ++bad;
          worst = std::max(worst, e / rms);
        }
        for (int64_t i = 0; i < ref_lse.numel(); ++i) {
          const double a = lse.flat(i), b = ref_lse.flat(i);
          if (std::isinf(a) || std::isinf(b) ? !(a == b) : !(std::fabs(a - b) <= 1e-4 * std::fabs(b) + 1e-5)) ++bad;
        }
        EXPECT_EQ(bad, 0) << q.c.name << " isa=" << isa_name(isa) << " threads=" << t;
      }
    }
    reset_isa();
  }
  std::printf("[fia-tree] MLA full quant: worst max|op-ref|/rms(ref) %.3g\n", worst);
}

// ---- FIA-24 rows not built by the pair test: rejected by aclnn, computed by the C++ API ----

FiaCase gqa_small() {
  FiaCase c = fia_case("gqa_small", BF, 2, 4, 2, 3, 30, 32, "BSND");
  c.act_kv = {30, 3};
  return c;
}

void expect_aclnn_fia24(const FiaRun& r, const FiaAclArgs& a, const char* param) {
  const std::vector<uint64_t> out0 = r.out.storage, lse0 = r.lse.storage;
  EXPECT_EQ(fia_aclnn_call(a), ACLNN_ERR_PARAM_INVALID);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("FIA-24"), std::string::npos) << msg;
  EXPECT_NE(msg.find(param), std::string::npos) << msg;
  EXPECT_NE(msg.find("sparseMode 9"), std::string::npos) << msg;
  EXPECT_TRUE(r.out.storage == out0 && r.lse.storage == lse0);
}

TEST(FiaTreeMaskRules, FIA24_Int8OutputInAclnnComputedByTheCppApi) {
  FiaCase c = gqa_small();
  c.cfg.out_dtype = DType::kInt8;
  auto d = tree_data(tc(c, Tree::kRandom));
  HostTensor sc(DType::kFloat32, {1}, 40.0);
  const TensorView scv = sc.view();
  auto bind = [&](FiaRun& r) { r.params.quant_scale2 = &scv; };
  auto ref = fia_test::build_fia_run(d->canon, d->cfg);
  bind(*ref);
  ASSERT_EQ(fused_infer_attention_score_v4_ref(ref->params), kSuccess) << last_error_message();
  auto r = fia_test::build_fia_run(d->canon, d->cfg);
  bind(*r);
  FiaAclArgs args = acl_args_of(*r);
  args.in[10] = scv;  // quantScale2Optional
  args.passed[10] = true;
  expect_aclnn_fia24(*r, args, "quantScale2Optional");
  for (Isa isa : test_isas()) {
    ASSERT_TRUE(set_isa(isa));
    for (int t : {1, 2}) {
      set_num_threads(t);
      auto op = fia_test::build_fia_run(d->canon, d->cfg);
      bind(*op);
      const Status s = run_fia_cpp(op->params);
      set_num_threads(0);
      ASSERT_EQ(s, kSuccess) << last_error_message();
      const HostTensor a = op->out_bnsd(), b = ref->out_bnsd();
      int64_t big = 0;
      for (int64_t i = 0; i < a.numel(); ++i) big += std::fabs(a.flat(i) - b.flat(i)) > 1;
      EXPECT_EQ(big, 0) << isa_name(isa) << " threads=" << t;
    }
  }
  reset_isa();
}

TEST(FiaTreeMaskRules, FIA24_Int8KvInAclnnComputedByTheCppApi) {
  FiaCase c = gqa_small();
  c.dtype = F16;  // combined antiquantScale with Q_S > 1: FP16 query (FIA-21)
  auto d = tree_data(tc(c, Tree::kRandom));
  // per-tensor symmetric INT8 key / value (antiquantScale [2], the query dtype)
  struct Kv {
    HostTensor k8, v8, aq;
    TensorView aqv;
  };
  auto int8 = [&](FiaRun& r, Kv& kv) {
    kv.aq = HostTensor(c.dtype, {2});
    kv.k8 = HostTensor(DType::kInt8, r.key.dims);
    kv.v8 = HostTensor(DType::kInt8, r.value.dims);
    const HostTensor* src[2] = {&r.key, &r.value};
    HostTensor* dst[2] = {&kv.k8, &kv.v8};
    for (int k = 0; k < 2; ++k) {
      double mx = 1e-6;
      for (int64_t i = 0; i < src[k]->numel(); ++i) mx = std::max(mx, std::fabs(src[k]->flat(i)));
      kv.aq.set_flat(k, mx / 127.0);
      const double s = kv.aq.flat(k);
      for (int64_t i = 0; i < src[k]->numel(); ++i)
        dst[k]->set_flat(i, std::min(127.0, std::max(-127.0, std::round(src[k]->flat(i) / s))));
    }
    r.params.key = {kv.k8.view()};
    r.params.value = {kv.v8.view()};
    kv.aqv = kv.aq.view();
    r.params.antiquant_scale = &kv.aqv;
    r.params.antiquant_mode = 0;
  };
  FiaRunConfig rcfg = d->cfg;
  rcfg.out_dtype = DType::kFloat64;
  auto ref = fia_test::build_fia_run(d->canon, rcfg);
  Kv rkv;
  int8(*ref, rkv);
  // the dequantised values unrounded (the reference never rounds them)
  ASSERT_EQ(fused_infer_attention_score_v4_ref(ref->params), kSuccess) << last_error_message();
  {
    auto r = fia_test::build_fia_run(d->canon, d->cfg);
    Kv kv;
    int8(*r, kv);
    FiaAclArgs a = acl_args_of(*r);
    a.in[12] = *r->params.antiquant_scale;  // antiquantScaleOptional
    a.passed[12] = true;
    expect_aclnn_fia24(*r, a, "key");
  }
  for (Isa isa : test_isas()) {
    ASSERT_TRUE(set_isa(isa));
    for (int t : {1, 2}) {
      set_num_threads(t);
      auto op = fia_test::build_fia_run(d->canon, d->cfg);
      Kv kv;
      int8(*op, kv);
      const Status s = run_fia_cpp(op->params);
      set_num_threads(0);
      ASSERT_EQ(s, kSuccess) << last_error_message();
      const FiaCompare cmp = compare_fia(*op, *ref, c.dtype, true);
      EXPECT_TRUE(cmp.ok) << isa_name(isa) << " threads=" << t << ": " << cmp.str();
    }
  }
  reset_isa();
}

// ---- FIA-14 / FIA-35: rejected by the C++ API and aclnn, nothing written ----

void expect_rejected(const TreeCase& t, const char* param, const char* rule,
                     const std::function<void(FiaRun&, HostTensor&)>& mutate) {
  auto d = tree_data(t);
  auto r = fia_test::build_fia_run(d->canon, d->cfg);
  HostTensor extra;
  mutate(*r, extra);
  const std::vector<uint64_t> out0 = r->out.storage, lse0 = r->lse.storage;
  EXPECT_EQ(run_fia_cpp(r->params), kParamInvalid);
  std::string msg = last_error_message();
  EXPECT_NE(msg.find(param), std::string::npos) << msg;
  EXPECT_NE(msg.find(rule), std::string::npos) << msg;
  EXPECT_EQ(fia_aclnn_call(acl_args_of(*r)), ACLNN_ERR_PARAM_INVALID);
  msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("aclnnFusedInferAttentionScoreV4"), std::string::npos) << msg;
  EXPECT_NE(msg.find(param), std::string::npos) << msg;
  EXPECT_NE(msg.find(rule), std::string::npos) << msg;
  EXPECT_TRUE(r->out.storage == out0 && r->lse.storage == lse0) << rule << " wrote an output";
}

// Replaces the run's mask by a BOOL tensor of `dims` (zeros).
void remask(FiaRun& r, HostTensor& m, std::vector<int64_t> dims) {
  m = HostTensor(DType::kBool, std::move(dims));
  r.mask_view = m.view();
  r.params.atten_mask = &r.mask_view;
}

TEST(FiaTreeMaskRules, FIA14_Shapes) {
  const TreeCase bsnd = tc(gqa_small(), Tree::kRandom);  // B 2, Q_S 3
  expect_rejected(bsnd, "attenMaskOptional", "FIA-14 tree mask (sparseMode 9) shape", [](FiaRun& r, HostTensor& m) { remask(r, m, {2, 3, 4}); });
  expect_rejected(bsnd, "attenMaskOptional", "FIA-14", [](FiaRun& r, HostTensor& m) { remask(r, m, {1, 3, 3}); });
  expect_rejected(bsnd, "attenMaskOptional", "FIA-14", [](FiaRun& r, HostTensor& m) { remask(r, m, {2, 1, 3, 3}); });
  expect_rejected(bsnd, "attenMaskOptional", "FIA-14", [](FiaRun& r, HostTensor& m) { remask(r, m, {18}); });
  FiaCase c = mla_case("tnd", BF, 2, 16, 4, 100, "TND");
  c.act_q = {3, 4};  // sum of squares 25
  c.act_kv = {100, 50};
  paged(c, 5, 128);
  const TreeCase tnd = tc(c, Tree::kRandom);
  expect_rejected(tnd, "attenMaskOptional", "FIA-14", [](FiaRun& r, HostTensor& m) { remask(r, m, {24}); });
  // A [1] mask of any stride is dense; its offsets (sum actQ^2 times the stride) overflow (FIA-17)
  expect_rejected(tnd, "attenMaskOptional", "FIA-17 the tree mask length sum actQ^2 overflows int64", [](FiaRun& r, HostTensor& m) {
    remask(r, m, {1});
    r.mask_view.strides[0] = int64_t{1} << 62;
  });
  expect_rejected(tnd, "attenMaskOptional", "FIA-14", [](FiaRun& r, HostTensor& m) { remask(r, m, {1, 25}); });
  expect_rejected(tnd, "attenMaskOptional", "FIA-14", [](FiaRun& r, HostTensor& m) { remask(r, m, {2, 4, 4}); });
  expect_rejected(tnd, "attenMaskOptional", "FIA-14", [](FiaRun& r, HostTensor&) { r.params.atten_mask = nullptr; });
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("FIA-14 needed by sparseMode 9"), std::string::npos);
  expect_rejected(tnd, "attenMaskOptional", "FIA-", [](FiaRun& r, HostTensor& m) {
    m = HostTensor(DType::kFloat16, {25});
    r.mask_view = m.view();
    r.params.atten_mask = &r.mask_view;
  });
}

TEST(FiaTreeMaskRules, FIA35_MoreDraftTokensThanPositions) {
  FiaCase c = gqa_small();
  c.act_kv = {30, 2};  // batch 1: S1 3 > S2 2
  expect_rejected(tc(c, Tree::kRandom), "actualSeqLengths", "FIA-35 tree mask (sparseMode 9) needs actQ <= actKV in every batch", [](FiaRun&, HostTensor&) {});
  FiaCase t = mla_case("tnd", BF, 2, 16, 4, 100, "TND");
  t.act_q = {3, 4};
  t.act_kv = {100, 3};
  paged(t, 5, 128);
  expect_rejected(tc(t, Tree::kRandom), "actualSeqLengths", "FIA-35 tree mask (sparseMode 9) needs actQ <= actKV in every batch", [](FiaRun&, HostTensor&) {});
}

}  // namespace
}  // namespace mlaops::testing

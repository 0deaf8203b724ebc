// Property tests of the float64 FusedInferAttentionScoreV4 reference
// (reference/fia/fia_ref.cpp): hand-computed values, invariance under
// layouts / paging / head grouping, MLA rope split, lse identities and the rejection rules.
// Sparse modes, masks and fully masked rows: test_fia_ref_masks.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
#include <utility>
#include <string>
#include <vector>

#include "core/error.h"
#include "mlaops/numeric.h"
#include "reference/fia/fia_ref.h"
#include "fia_ref_checks.h"
#include "testkit/fia_test_data.h"

namespace mlaops {
namespace {

using namespace fia_test;  // the case builders and checks (fia_test_data.h, fia_ref_checks.h)

// ------------------------------------------------------------------------------------------
// (a) hand-computed values
// ------------------------------------------------------------------------------------------

TEST(FiaRefBasic, HandComputedOneQueryThreeKeys) {
  // q = [1, 0]; keys [1,0], [0,1], [-1,0]; scale 0.5 => scores 0.5, 0, -0.5.
  FiaCanonical c = make_canonical(DType::kBFloat16, 1, 1, 1, 1, 3, 2, 2, 0, 1);
  const double qv[2] = {1, 0}, kv[3][2] = {{1, 0}, {0, 1}, {-1, 0}}, vv[3][2] = {{1, 2}, {3, 4}, {5, 6}};
  for (int d = 0; d < 2; ++d) c.q.set({0, 0, 0, d}, qv[d]);
  for (int j = 0; j < 3; ++j)
    for (int d = 0; d < 2; ++d) {
      c.k.set({0, 0, j, d}, kv[j][d]);
      c.v.set({0, 0, j, d}, vv[j][d]);
    }
  const double e0 = std::exp(0.5), e1 = 1.0, e2 = std::exp(-0.5), den = e0 + e1 + e2;
  const double want[2] = {(e0 * 1 + e1 * 3 + e2 * 5) / den, (e0 * 2 + e1 * 4 + e2 * 6) / den};
  const double want_lse = std::log(den);
  for (DType odt : {DType::kFloat64, DType::kFloat32, DType::kBFloat16}) {
    FiaRunConfig cfg;
    cfg.scale = 0.5;
    cfg.out_dtype = odt;
    auto r = run_ok(c, cfg);
    for (int d = 0; d < 2; ++d) {
      const double got = r->out.get({0, 0, d});
      if (odt == DType::kFloat64) {
        EXPECT_NEAR(got, want[d], 1e-15);
      } else if (odt == DType::kFloat32) {
        EXPECT_NEAR(got, want[d], 2e-7 * std::fabs(want[d]));
      } else {
        EXPECT_EQ(got, round_bf16(want[d]));
      }
    }
    EXPECT_NEAR(r->lse.get({0, 0, 0, 0}), want_lse, 2e-7 * std::fabs(want_lse));
  }
}

TEST(FiaRefBasic, HandComputedCausalTwoRows) {
  // Two query rows, two keys, sparse 3 (S1 == S2): row 0 sees key 0 only, row 1 sees both.
  FiaCanonical c = make_canonical(DType::kFloat16, 1, 1, 1, 2, 2, 2, 3, 0, 2);
  const double qv[2][2] = {{1, 0}, {0, 2}}, kv[2][2] = {{1, 1}, {0, 1}}, vv[2][3] = {{1, -2, 4}, {0.5, 3, -1}};
  for (int i = 0; i < 2; ++i)
    for (int d = 0; d < 2; ++d) {
      c.q.set({0, 0, i, d}, qv[i][d]);
      c.k.set({0, 0, i, d}, kv[i][d]);
    }
  for (int j = 0; j < 2; ++j)
    for (int d = 0; d < 3; ++d) c.v.set({0, 0, j, d}, vv[j][d]);
  const HostTensor tmpl = fia_test::template_mask_2048(DType::kBool, 2);
  FiaRunConfig cfg;
  cfg.layout = "BNSD";
  cfg.scale = 0.25;
  cfg.sparse_mode = 3;
  cfg.mask = &tmpl;
  cfg.out_dtype = DType::kFloat64;
  auto r = run_ok(c, cfg);
  // Row 0: only key 0 -> out = v0, lse = s00 = 0.25 * 1.
  for (int d = 0; d < 3; ++d) EXPECT_EQ(r->out.get({0, 0, 0, d}), vv[0][d]);
  EXPECT_FLOAT_EQ(static_cast<float>(r->lse.get({0, 0, 0, 0})), 0.25f);
  // Row 1: scores 0.25 * 2 = 0.5 and 0.25 * 2 = 0.5 -> plain mean of v0 and v1, lse = 0.5 + log 2.
  for (int d = 0; d < 3; ++d) EXPECT_NEAR(r->out.get({0, 0, 1, d}), (vv[0][d] + vv[1][d]) / 2, 1e-15);
  EXPECT_FLOAT_EQ(static_cast<float>(r->lse.get({0, 0, 1, 0})), static_cast<float>(0.5 + std::log(2.0)));
}

TEST(FiaRefBasic, InnerPreciseValuesGiveTheSameResult) {
  FiaCanonical c = make_canonical(DType::kBFloat16, 2, 2, 2, 3, 7, 16, 16, 0, 3);
  FiaRunConfig cfg;
  cfg.scale = 0.25;
  auto base = run_ok(c, cfg);
  for (int64_t ip = 1; ip <= 3; ++ip) {
    auto r = build_fia_run(c, cfg);
    r->params.inner_precise = ip;
    ASSERT_EQ(fused_infer_attention_score_v4_ref(r->params), kSuccess);
    expect_same(r->out, base->out, "innerPrecise " + std::to_string(ip));
  }
  auto r = build_fia_run(c, cfg);
  r->params.inner_precise = 4;
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
}

// ------------------------------------------------------------------------------------------
// (b) layouts
// ------------------------------------------------------------------------------------------

TEST(FiaRefLayout, ParseTable) {
  struct Row {
    const char* s;
    FiaLayout in, out;
  };
  const Row rows[] = {
      {"BSH", FiaLayout::kBSH, FiaLayout::kBSH},        {"BSND", FiaLayout::kBSND, FiaLayout::kBSND},
      {"BNSD", FiaLayout::kBNSD, FiaLayout::kBNSD},     {"TND", FiaLayout::kTND, FiaLayout::kTND},
      {"NTD", FiaLayout::kNTD, FiaLayout::kNTD},        {"BSH_BNSD", FiaLayout::kBSH, FiaLayout::kBNSD},
      {"BSND_BNSD", FiaLayout::kBSND, FiaLayout::kBNSD}, {"BNSD_BSND", FiaLayout::kBNSD, FiaLayout::kBSND},
      {"NTD_TND", FiaLayout::kNTD, FiaLayout::kTND},    {"TND_NTD", FiaLayout::kTND, FiaLayout::kNTD},
      {"BSH_NBSD", FiaLayout::kBSH, FiaLayout::kNBSD},  {"BSND_NBSD", FiaLayout::kBSND, FiaLayout::kNBSD},
      {"BNSD_NBSD", FiaLayout::kBNSD, FiaLayout::kNBSD},
  };
  for (const Row& r : rows) {
    FiaLayout in = FiaLayout::kNBSD, out = FiaLayout::kNBSD;
    ASSERT_TRUE(parse_fia_layout(r.s, &in, &out)) << r.s;
    EXPECT_EQ(in, r.in) << r.s;
    EXPECT_EQ(out, r.out) << r.s;
  }
  for (const char* bad : {"", "bsh", "SH", "NSD", "BSH_", "BSH_BSND", "TND_BSH", "NBSD", "BNSD_TND", "BSHX"})
    EXPECT_FALSE(parse_fia_layout(bad, nullptr, nullptr)) << bad;
  EXPECT_STREQ(fia_layout_name(FiaLayout::kNBSD), "NBSD");
}

// One problem with per-batch lengths (incl. padding rows and a short batch), sparse 3.
FiaCanonical layout_problem(DType dt) {
  FiaCanonical c = make_canonical(dt, 3, 4, 2, 5, 11, 16, 8, 0, 11);
  c.set_lengths({5, 2, 4}, {11, 7, 3});
  return c;
}

TEST(FiaRefLayout, InputLayoutsAgree) {
  const FiaCanonical c = layout_problem(DType::kBFloat16);
  const HostTensor tmpl = fia_test::template_mask_2048(DType::kInt8, 3);
  FiaRunConfig cfg;
  cfg.scale = 0.3;
  cfg.sparse_mode = 3;
  cfg.mask = &tmpl;
  cfg.layout = "BSH";
  auto base = run_ok(c, cfg);
  const HostTensor want = base->out_bnsd(), want_lse = base->lse_bns();
  EXPECT_FALSE(has_nan(want));
  // Padded rows (i >= actQ) are 0 / +inf; valid rows have a finite lse (batch 2: S1 = 4 > S2 = 3
  // leaves row 0 fully masked).
  for (int64_t n = 0; n < c.N; ++n) {
    for (int64_t i = 2; i < 5; ++i) {
      EXPECT_EQ(want_lse.get({1, n, i, 0}), kInf);
      for (int64_t d = 0; d < c.Dv; ++d) EXPECT_EQ(want.get({1, n, i, d}), 0.0);
    }
    EXPECT_EQ(want_lse.get({2, n, 0, 0}), kInf);
    EXPECT_TRUE(std::isfinite(want_lse.get({2, n, 1, 0})));
  }
  for (const char* layout : {"BSND", "BNSD", "TND", "NTD"}) {
    cfg.layout = layout;
    auto r = run_ok(c, cfg);
    expect_same(r->out_bnsd(), want, std::string(layout) + " out");
    expect_same(r->lse_bns(), want_lse, std::string(layout) + " lse");
  }
}

TEST(FiaRefLayout, OutputLayoutsArePermutations) {
  const FiaCanonical c = layout_problem(DType::kFloat16);
  FiaRunConfig cfg;
  cfg.scale = 0.3;
  cfg.layout = "BNSD";
  auto base = run_ok(c, cfg);
  const HostTensor want = base->out_bnsd();  // [B, N, S, Dv] from the BNSD output, read directly
  const int64_t B = c.B, N = c.N, S = c.Sq, Dv = c.Dv;
  for (const char* layout : {"BSH", "BSH_BNSD", "BSH_NBSD", "BSND", "BSND_BNSD", "BSND_NBSD", "BNSD_BSND", "BNSD_NBSD"}) {
    cfg.layout = layout;
    auto r = run_ok(c, cfg);
    expect_same(r->lse_bns(), base->lse_bns(), std::string(layout) + " lse");
    const std::string out_part = std::string(layout).substr(std::string(layout).find('_') + 1);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t s = 0; s < S; ++s)
          for (int64_t d = 0; d < Dv; ++d) {
            double got = 0;
            if (out_part == "BSH" || std::string(layout) == "BSH") got = r->out.get({b, s, n * Dv + d});
            else if (out_part == "BSND") got = r->out.get({b, s, n, d});
            else if (out_part == "BNSD") got = r->out.get({b, n, s, d});
            else got = r->out.get({n, b, s, d});  // NBSD
            ASSERT_EQ(got, want.get({b, n, s, d})) << layout << " at " << b << "," << n << "," << s << "," << d;
          }
  }
  // Packed outputs: the same numbers at token t = start[b] + s.
  cfg.layout = "TND";
  auto tnd = run_ok(c, cfg);
  const std::vector<int64_t> lens = c.lens_q();
  for (const char* layout : {"TND_NTD", "NTD", "NTD_TND"}) {
    cfg.layout = layout;
    auto r = run_ok(c, cfg);
    const bool ntd_out = std::string(layout) == "TND_NTD" || std::string(layout) == "NTD";
    int64_t t0 = 0;
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t s = 0; s < lens[static_cast<size_t>(b)]; ++s)
        for (int64_t n = 0; n < N; ++n) {
          for (int64_t d = 0; d < Dv; ++d) {
            const double got = ntd_out ? r->out.get({n, t0 + s, d}) : r->out.get({t0 + s, n, d});
            ASSERT_EQ(got, tnd->out.get({t0 + s, n, d})) << layout;
            ASSERT_EQ(got, want.get({b, n, s, d})) << layout;
          }
          ASSERT_EQ(r->lse.get({t0 + s, n, 0}), tnd->lse.get({t0 + s, n, 0})) << layout;  // lse (T, N, 1)
        }
      t0 += lens[static_cast<size_t>(b)];
    }
  }
}

// ------------------------------------------------------------------------------------------
// (c) paged KV
// ------------------------------------------------------------------------------------------

struct PagedCase {
  int cache_rank;
  int64_t block_size;
  const char* layout;
};
void PrintTo(const PagedCase& c, std::ostream* os) {
  *os << "rank " << c.cache_rank << ", blockSize " << c.block_size << ", " << c.layout;
}
class FiaRefPaged : public ::testing::TestWithParam<PagedCase> {};

TEST_P(FiaRefPaged, EqualsContiguous) {
  const PagedCase pc = GetParam();
  FiaCanonical c = make_canonical(DType::kBFloat16, 4, 4, 2, 3, 150, 32, 32, 0, 21);
  c.set_lengths({3, 2, 3, 1}, {37, 150, 0, 131});  // none a multiple of the block, one empty batch
  FiaRunConfig cfg;
  cfg.layout = pc.layout;
  cfg.scale = 0.2;
  auto contiguous = run_ok(c, cfg);
  cfg.paged = true;
  cfg.cache_rank = pc.cache_rank;
  cfg.block_size = pc.block_size;
  cfg.table_seed = static_cast<uint32_t>(pc.cache_rank * 1000 + pc.block_size);
  auto paged = run_ok(c, cfg);
  EXPECT_FALSE(has_nan(paged->out));  // unused pool slots hold NaN: none was read
  expect_same(paged->out_bnsd(), contiguous->out_bnsd(), "out");
  expect_same(paged->lse_bns(), contiguous->lse_bns(), "lse");
}

TEST_P(FiaRefPaged, MlaRopePoolEqualsContiguous) {
  const PagedCase pc = GetParam();
  // MLA: key latent D = 32 used as value too, rope 16 in its own pool with the same table.
  FiaCanonical c = make_canonical(DType::kBFloat16, 3, 4, 1, 2, 140, 32, 32, 16, 23);
  c.v = c.k;
  c.set_lengths({}, {140, 17, 129});
  const HostTensor tmpl = fia_test::template_mask_2048(DType::kBool, 2);
  FiaRunConfig cfg;
  cfg.layout = pc.layout;
  cfg.scale = 0.15;
  cfg.value_is_key = true;
  cfg.sparse_mode = 3;
  cfg.mask = &tmpl;
  auto contiguous = run_ok(c, cfg);
  cfg.paged = true;
  cfg.cache_rank = pc.cache_rank;
  cfg.block_size = pc.block_size;
  auto paged = run_ok(c, cfg);
  EXPECT_FALSE(has_nan(paged->out));
  expect_same(paged->out_bnsd(), contiguous->out_bnsd(), "out");
  expect_same(paged->lse_bns(), contiguous->lse_bns(), "lse");
}

INSTANTIATE_TEST_SUITE_P(CacheLayouts, FiaRefPaged,
                         ::testing::Values(PagedCase{3, 16, "BSH"}, PagedCase{3, 128, "BSND"},
                                           PagedCase{4, 16, "BNSD"}, PagedCase{4, 128, "TND"},
                                           PagedCase{5, 16, "BNSD_NBSD"}, PagedCase{5, 128, "NTD_TND"},
                                           PagedCase{3, 128, "TND_NTD"}, PagedCase{5, 16, "BSH"}),
                         [](const ::testing::TestParamInfo<PagedCase>& pi) {
                           return "rank" + std::to_string(pi.param.cache_rank) + "_bs" +
                                  std::to_string(pi.param.block_size) + "_" + pi.param.layout;
                         });

TEST(FiaRefPagedBounds, BadBlockIdOrShortTableIsRejectedWithoutWriting) {
  FiaCanonical c = make_canonical(DType::kBFloat16, 2, 2, 2, 1, 40, 16, 16, 0, 25);
  c.set_lengths({}, {40, 17});
  FiaRunConfig cfg;
  cfg.paged = true;
  cfg.cache_rank = 4;
  cfg.block_size = 16;
  {
    auto r = build_fia_run(c, cfg);
    r->block_table.set({1, 1}, static_cast<double>(r->key.dims[0]));  // one past the pool
    EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
    EXPECT_NE(std::string(last_error_message()).find("blockTable[1][1]"), std::string::npos) << last_error_message();
    for (int64_t i = 0; i < r->out.numel(); ++i) ASSERT_TRUE(std::isnan(r->out.flat(i)));  // untouched
  }
  {
    auto r = build_fia_run(c, cfg);
    r->block_table.set({0, 0}, -1.0);
    EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
  }
  {
    cfg.table_width = 2;  // capacity 32 < 40
    auto r = build_fia_run(c, cfg);
    EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
  }
  {
    cfg.table_width = 0;
    auto r = build_fia_run(c, cfg);
    r->params.block_size = 32;  // disagrees with the pool
    EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
  }
}

// ------------------------------------------------------------------------------------------
// (d) GQA / MQA
// ------------------------------------------------------------------------------------------

TEST(FiaRefGqa, EqualsMhaWithRepeatedKvHeads) {
  for (int64_t kvn : {1, 2, 3}) {
    FiaCanonical c = make_canonical(DType::kFloat16, 2, 6, kvn, 4, 9, 16, 16, 0, 30 + static_cast<uint32_t>(kvn));
    c.set_lengths({4, 3}, {9, 5});
    const FiaCanonical mha = fia_test::expand_kv_heads(c);
    for (const char* layout : {"BSND", "TND"}) {
      FiaRunConfig cfg;
      cfg.layout = layout;
      cfg.scale = 0.25;
      auto g = run_ok(c, cfg);
      auto m = run_ok(mha, cfg);
      expect_same(g->out_bnsd(), m->out_bnsd(), std::string(layout) + " KV_N=" + std::to_string(kvn));
      expect_same(g->lse_bns(), m->lse_bns(), std::string(layout) + " lse");
    }
  }
  // numHeads not a multiple of numKeyValueHeads is rejected.
  FiaCanonical c = make_canonical(DType::kFloat16, 1, 6, 4, 1, 3, 16, 16, 0, 39);
  auto r = build_fia_run(c, FiaRunConfig{});
  r->params.num_key_value_heads = 4;
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
}

// ------------------------------------------------------------------------------------------
// (g) MLA rope split
// ------------------------------------------------------------------------------------------

TEST(FiaRefMla, RopeSplitEqualsConcatenatedAttention) {
  const int64_t D = 32, Dr = 8;
  FiaCanonical mla = make_canonical(DType::kBFloat16, 2, 4, 1, 3, 10, D, D, Dr, 71);
  mla.v = mla.k;  // value = the key latent
  mla.set_lengths({3, 2}, {10, 6});
  // Plain problem: q' = [q | q_rope], k' = [k | k_rope], v = k (the first D of k').
  FiaCanonical plain = make_canonical(DType::kBFloat16, 2, 4, 1, 3, 10, D + Dr, D, 0, 72);
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t s = 0; s < 3; ++s)
        for (int64_t d = 0; d < D + Dr; ++d)
          plain.q.set({b, n, s, d}, d < D ? mla.q.get({b, n, s, d}) : mla.qr.get({b, n, s, d - D}));
    for (int64_t s = 0; s < 10; ++s)
      for (int64_t d = 0; d < D + Dr; ++d) {
        plain.k.set({b, 0, s, d}, d < D ? mla.k.get({b, 0, s, d}) : mla.kr.get({b, 0, s, d - D}));
        if (d < D) plain.v.set({b, 0, s, d}, mla.k.get({b, 0, s, d}));
      }
  }
  plain.set_lengths({3, 2}, {10, 6});
  const HostTensor tmpl = fia_test::template_mask_2048(DType::kBool, 2);
  for (const char* layout : {"BSND", "BNSD_NBSD", "TND_NTD"}) {
    FiaRunConfig cfg;
    cfg.layout = layout;
    cfg.scale = 1.0 / std::sqrt(static_cast<double>(D + Dr));
    cfg.sparse_mode = 3;
    cfg.mask = &tmpl;
    cfg.out_dtype = DType::kFloat64;
    cfg.value_is_key = true;
    auto a = run_ok(mla, cfg);
    cfg.value_is_key = false;
    auto b = run_ok(plain, cfg);
    expect_close(a->out_bnsd(), b->out_bnsd(), 1e-14, layout);
    expect_close(a->lse_bns(), b->lse_bns(), 0.0, std::string(layout) + " lse");
  }
  // MLA decode (Q_S = 1) is not the decode rule: sparse 2 masks all but key 0 (top-left causal).
  FiaCanonical dec = make_canonical(DType::kBFloat16, 1, 2, 1, 1, 5, D, D, Dr, 73);
  dec.v = dec.k;
  FiaRunConfig cfg;
  cfg.layout = "BNSD_NBSD";
  cfg.sparse_mode = 2;
  cfg.mask = &tmpl;
  cfg.value_is_key = true;
  cfg.out_dtype = DType::kFloat64;
  auto r = run_ok(dec, cfg);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t d = 0; d < D; ++d) EXPECT_EQ(r->out.get({n, 0, 0, d}), dec.k.get({0, 0, 0, d}));
  // queryRope without keyRope is rejected.
  auto bad = build_fia_run(dec, cfg);
  bad->params.key_rope = nullptr;
  EXPECT_EQ(fused_infer_attention_score_v4_ref(bad->params), kParamInvalid);
}

// ------------------------------------------------------------------------------------------
// (h) softmaxLse and packed lengths
// ------------------------------------------------------------------------------------------

TEST(FiaRefLse, MatchesLogSumExpOfScores) {
  FiaCanonical c = make_canonical(DType::kFloat16, 2, 4, 2, 3, 13, 16, 16, 0, 81);
  c.set_lengths({3, 2}, {13, 8});
  FiaRunConfig cfg;
  cfg.layout = "TND";
  cfg.scale = 0.7;
  auto r = run_ok(c, cfg);
  const HostTensor lse = r->lse_bns();
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t i = 0; i < c.len_q(b); ++i) {
        double sum = 0;
        for (int64_t j = 0; j < c.len_kv(b); ++j) {
          double dot = 0;
          for (int64_t d = 0; d < 16; ++d) dot += c.q.get({b, n, i, d}) * c.k.get({b, n / 2, j, d});
          sum += std::exp(0.7 * dot);
        }
        EXPECT_NEAR(lse.get({b, n, i, 0}), std::log(sum), 1e-6 * (1 + std::fabs(std::log(sum))));
      }
}

TEST(FiaRefLse, SplitKvCombinesThroughLse) {
  // Attention over KV = A ++ B equals the lse-weighted combination of attention over A and B.
  FiaCanonical full = make_canonical(DType::kBFloat16, 2, 2, 2, 3, 14, 16, 16, 0, 83);
  auto slice = [&](int64_t j0, int64_t j1) {
    FiaCanonical s = make_canonical(DType::kBFloat16, 2, 2, 2, 3, j1 - j0, 16, 16, 0, 84);
    s.q = full.q;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t d = 0; d < 16; ++d) {
            s.k.set({b, h, j - j0, d}, full.k.get({b, h, j, d}));
            s.v.set({b, h, j - j0, d}, full.v.get({b, h, j, d}));
          }
    return s;
  };
  FiaRunConfig cfg;
  cfg.layout = "BNSD";
  cfg.scale = 0.5;
  cfg.out_dtype = DType::kFloat64;
  auto all = run_ok(full, cfg);
  auto a = run_ok(slice(0, 5), cfg);
  auto b = run_ok(slice(5, 14), cfg);
  for (int64_t bb = 0; bb < 2; ++bb)
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 3; ++i) {
        const double la = a->lse.get({bb, n, i, 0}), lb = b->lse.get({bb, n, i, 0});
        const double m = std::max(la, lb), wa = std::exp(la - m), wb = std::exp(lb - m);
        EXPECT_NEAR(m + std::log(wa + wb), all->lse.get({bb, n, i, 0}), 1e-5);
        for (int64_t d = 0; d < 16; ++d) {
          const double o = (wa * a->out.get({bb, n, i, d}) + wb * b->out.get({bb, n, i, d})) / (wa + wb);
          EXPECT_NEAR(o, all->out.get({bb, n, i, d}), 2e-6);  // lse is FP32: ~1e-7 relative weights
        }
      }
}

TEST(FiaRefLse, TndCumulativeLengthsWithZeroLengthBatches) {
  FiaCanonical c = make_canonical(DType::kBFloat16, 4, 2, 2, 3, 6, 16, 16, 0, 85);
  c.set_lengths({3, 0, 2, 1}, {4, 5, 0, 6});  // batch 1: no query rows; batch 2: no KV
  FiaRunConfig cfg;
  cfg.layout = "TND";
  cfg.scale = 0.3;
  auto t = run_ok(c, cfg);
  EXPECT_EQ(t->asl_q, (std::vector<int64_t>{3, 3, 5, 6}));
  EXPECT_EQ(t->out.dims[0], 6);
  EXPECT_FALSE(has_nan(t->out));
  EXPECT_FALSE(has_nan(t->lse));
  // Tokens 3, 4 are batch 2 (no KV): 0 / +inf.
  for (int64_t tok : {3, 4})
    for (int64_t n = 0; n < 2; ++n) {
      EXPECT_EQ(t->lse.get({tok, n, 0}), kInf);
      for (int64_t d = 0; d < 16; ++d) EXPECT_EQ(t->out.get({tok, n, d}), 0.0);
    }
  cfg.layout = "BSH";
  auto p = run_ok(c, cfg);
  expect_same(t->out_bnsd(), p->out_bnsd(), "TND vs BSH");
  expect_same(t->lse_bns(), p->lse_bns(), "lse");
  // A non-monotonic or short cumulative array is rejected.
  cfg.layout = "TND";
  auto bad = build_fia_run(c, cfg);
  bad->asl_q = {3, 2, 5, 6};
  EXPECT_EQ(fused_infer_attention_score_v4_ref(bad->params), kParamInvalid);
  bad->asl_q = {3, 3, 5, 5};
  EXPECT_EQ(fused_infer_attention_score_v4_ref(bad->params), kParamInvalid);
}

TEST(FiaRefLse, BroadcastLengthsAndFlagOff) {
  FiaCanonical c = make_canonical(DType::kBFloat16, 3, 2, 2, 4, 9, 16, 16, 0, 87);
  FiaCanonical per = c;
  per.set_lengths({2, 2, 2}, {7, 7, 7});
  FiaRunConfig cfg;
  cfg.scale = 0.5;
  auto want = run_ok(per, cfg);
  // Length-1 arrays broadcast to every batch; longer arrays use their first B entries.
  for (std::vector<int64_t> aq : {std::vector<int64_t>{2}, std::vector<int64_t>{2, 2, 2, 0, 4}}) {
    auto r = build_fia_run(c, cfg);
    r->asl_q = aq;
    r->asl_kv = aq.size() == 1 ? std::vector<int64_t>{7} : std::vector<int64_t>{7, 7, 7, 1};
    r->params.actual_seq_lengths = &r->asl_q;
    r->params.actual_seq_lengths_kv = &r->asl_kv;
    ASSERT_EQ(fused_infer_attention_score_v4_ref(r->params), kSuccess) << last_error_message();
    expect_same(r->out, want->out, "broadcast");
  }
  // Two entries for three batches, or a length beyond the extent, are rejected.
  auto r = build_fia_run(c, cfg);
  r->asl_kv = {7, 7};
  r->params.actual_seq_lengths_kv = &r->asl_kv;
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
  r->asl_kv = {10};
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
  // softmaxLseFlag false: lse untouched; flag true with a null lse: kParamNullptr.
  r = build_fia_run(per, cfg);
  r->params.softmax_lse_flag = false;
  ASSERT_EQ(fused_infer_attention_score_v4_ref(r->params), kSuccess);
  for (int64_t i = 0; i < r->lse.numel(); ++i) ASSERT_TRUE(std::isnan(r->lse.flat(i)));
  r->params.softmax_lse_flag = true;
  r->params.softmax_lse = nullptr;
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamNullptr);
}

// ------------------------------------------------------------------------------------------
// Scope
// ------------------------------------------------------------------------------------------

TEST(FiaRefScope, OutOfScopeInputsAreNotSupportedYet) {
  FiaCanonical c = make_canonical(DType::kBFloat16, 1, 2, 2, 2, 4, 16, 16, 0, 91);
  const HostTensor extra(DType::kBFloat16, {2});
  const TensorView ev = extra.view();
  using Setter = void (*)(FiaParams&, const TensorView*);
  const Setter setters[] = {
      [](FiaParams& p, const TensorView* t) { p.deq_scale1 = t; },
  };
  for (Setter set : setters) {
    auto r = build_fia_run(c, FiaRunConfig{});
    set(r->params, &ev);
    EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
    EXPECT_NE(std::string(last_error_message()).find("not supported yet"), std::string::npos) << last_error_message();
    for (int64_t i = 0; i < r->out.numel(); ++i) ASSERT_TRUE(std::isnan(r->out.flat(i)));
  }
  // The shared prefix is in scope (reference/fia/fia_prefix_ref.h; compared in test_fia_prefix): one
  // prefix tensor alone is rejected, the output untouched.
  {
    auto r = build_fia_run(c, FiaRunConfig{});
    r->params.key_shared_prefix = &ev;
    EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
    EXPECT_NE(std::string(last_error_message()).find("both or neither"), std::string::npos) << last_error_message();
    for (int64_t i = 0; i < r->out.numel(); ++i) ASSERT_TRUE(std::isnan(r->out.flat(i)));
  }
  // Post-quant (quantScale2 / quantOffset2) is in scope: it needs an INT8 attentionOut, and the
  // offset needs the scale (the output stays untouched on rejection).
  {
    auto r = build_fia_run(c, FiaRunConfig{});
    r->params.quant_scale2 = &ev;
    EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
    EXPECT_NE(std::string(last_error_message()).find("INT8 attentionOut"), std::string::npos) << last_error_message();
    for (int64_t i = 0; i < r->out.numel(); ++i) ASSERT_TRUE(std::isnan(r->out.flat(i)));
    r->params.quant_scale2 = nullptr;
    r->params.quant_offset2 = &ev;
    EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
    EXPECT_NE(std::string(last_error_message()).find("quantOffset2 needs quantScale2"), std::string::npos);
    for (int64_t i = 0; i < r->out.numel(); ++i) ASSERT_TRUE(std::isnan(r->out.flat(i)));
  }
  auto r = build_fia_run(c, FiaRunConfig{});
  // tensor lists (reference/fia/fia_tensor_list_ref.cpp): two copies of the whole key are not
  // elements of batch 1 (the feature: tests/ops/fia/test_fia_tensor_list.cpp)
  r->params.key.push_back(r->params.key[0]);
  r->params.value.push_back(r->params.value[0]);
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("tensor list"), std::string::npos) << last_error_message();
  for (int64_t i = 0; i < r->out.numel(); ++i) ASSERT_TRUE(std::isnan(r->out.flat(i)));
  r = build_fia_run(c, FiaRunConfig{});
  r->params.sparse_mode = 9;  // the tree mask needs its mask
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("attenMask"), std::string::npos) << last_error_message();
  r = build_fia_run(c, FiaRunConfig{});
  // INT4 KV comes packed in INT32, key and value both (test_fia_antiquant_int4.cpp); ACL_INT4 is
  // not a KV dtype
  HostTensor k8 = r->key.as(DType::kInt32);
  r->params.key[0] = k8.view();
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("INT8 / INT32 (INT4)"), std::string::npos) << last_error_message();
  TensorView k4 = k8.view();
  k4.dtype = DType::kInt4;
  r->params.key[0] = k4;
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("INT4 is passed as INT32"), std::string::npos) << last_error_message();
  // INT8 key / value need antiquant scales
  r = build_fia_run(c, FiaRunConfig{});
  HostTensor k8b = r->key.as(DType::kInt8), v8b = r->value.as(DType::kInt8);
  r->params.key[0] = k8b.view();
  r->params.value[0] = v8b.view();
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("antiquant scales"), std::string::npos);
  // Modes 5..8 and a missing mask for modes 1..4 are invalid.
  for (int64_t mode : {1, 2, 3, 4, 5, 8}) {
    r = build_fia_run(c, FiaRunConfig{});
    r->params.sparse_mode = mode;
    EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid) << mode;
  }
  // A sparse-3 mask that is not the 2048 template shape is invalid.
  const HostTensor m = make_mask3(DType::kBool, 1, 2, 4, [](int64_t, int64_t, int64_t) { return false; });
  FiaRunConfig cfg;
  cfg.sparse_mode = 3;
  cfg.mask = &m;
  r = build_fia_run(c, cfg);
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
}

}  // namespace
}  // namespace mlaops

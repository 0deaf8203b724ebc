// Property tests of the float64 FusedInferAttentionScoreV4 reference
// (reference/fia/fia_ref.cpp), masks: equivalence of the analytic sparse
// modes with explicit masks, mask dtypes / ranks / broadcast, fully masked rows, empty batches
// and empty tensors.
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
// (e) sparse modes and masks
// ------------------------------------------------------------------------------------------

// Per-batch lengths with S1 > S2 in one batch (invalid rows) and a short KV in another.
FiaCanonical sparse_problem() {
  FiaCanonical c = make_canonical(DType::kBFloat16, 3, 2, 1, 6, 9, 16, 16, 0, 41);
  c.set_lengths({6, 4, 5}, {9, 2, 5});
  return c;
}

// Mode 1 with an explicit [B, Sq, Skv] mask built from `rule(i, j, S1, S2)`.
std::unique_ptr<FiaRun> run_explicit(const FiaCanonical& c, const std::function<bool(int64_t, int64_t, int64_t, int64_t)>& rule,
                                     const char* layout = "BSH") {
  const HostTensor m = make_mask3(DType::kBool, c.B, c.Sq, c.Skv, [&](int64_t b, int64_t i, int64_t j) {
    return rule(i, j, c.len_q(b), c.len_kv(b));
  });
  FiaRunConfig cfg;
  cfg.layout = layout;
  cfg.scale = 0.4;
  cfg.sparse_mode = 1;
  cfg.mask = &m;
  cfg.pre_tokens = -5;  // ignored by mode 1
  cfg.next_tokens = -5;
  return run_ok(c, cfg);
}

TEST(FiaRefSparse, AnalyticModesEqualExplicitMasks) {
  const FiaCanonical c = sparse_problem();
  const HostTensor tmpl = fia_test::template_mask_2048(DType::kUInt8, 4);
  struct ModeCase {
    int64_t mode, pre, next;
  };
  for (const ModeCase mc : {ModeCase{2, 2147483647, 2147483647}, ModeCase{3, 0, 0}, ModeCase{4, 2, 0},
                            ModeCase{4, 1, 1}, ModeCase{4, 3, -1}, ModeCase{4, 2147483647, 2147483647}}) {
    FiaRunConfig cfg;
    cfg.scale = 0.4;
    cfg.sparse_mode = mc.mode;
    cfg.pre_tokens = mc.pre;
    cfg.next_tokens = mc.next;
    cfg.mask = &tmpl;
    for (const char* layout : {"BSH", "TND"}) {
      cfg.layout = layout;
      auto a = run_ok(c, cfg);
      auto e = run_explicit(
          c,
          [&](int64_t i, int64_t j, int64_t s1, int64_t s2) {
            const int64_t diag = s2 - s1;
            if (mc.mode == 2) return j > i;
            if (mc.mode == 3) return j > i + diag;
            return j > i + diag + mc.next || j < i + diag - mc.pre;
          },
          layout);
      const std::string what = "mode " + std::to_string(mc.mode) + " pre " + std::to_string(mc.pre) + " next " +
                               std::to_string(mc.next) + " " + layout;
      expect_same(a->out_bnsd(), e->out_bnsd(), what);
      expect_same(a->lse_bns(), e->lse_bns(), what + " lse");
    }
  }
}

TEST(FiaRefSparse, PerBatchFourDimMaskEqualsAnalyticCausal) {
  // A (B, 1, Sq', Skv') mask holding each batch's right-down causal pattern (padding dims set
  // to 1) with mode 1 equals sparse 3: the batch index of a 4-D mask is honoured.
  const FiaCanonical c = sparse_problem();
  const HostTensor m = make_mask3(DType::kUInt8, c.B, c.Sq + 2, c.Skv + 3, [&](int64_t b, int64_t i, int64_t j) {
                         return i >= c.len_q(b) || j >= c.len_kv(b) || j > i + c.len_kv(b) - c.len_q(b);
                       }).reshaped({c.B, 1, c.Sq + 2, c.Skv + 3});
  const HostTensor tmpl = fia_test::template_mask_2048(DType::kBool, 3);
  FiaRunConfig cfg;
  cfg.layout = "BSND";
  cfg.scale = 0.4;
  cfg.sparse_mode = 1;
  cfg.mask = &m;
  auto a = run_ok(c, cfg);
  cfg.sparse_mode = 3;
  cfg.mask = &tmpl;
  auto b = run_ok(c, cfg);
  expect_same(a->out, b->out, "out");
  expect_same(a->lse, b->lse, "lse");
}

TEST(FiaRefSparse, ModeZeroMaskAlsoAppliesTheBand) {
  const FiaCanonical c = sparse_problem();
  auto user = [](int64_t b, int64_t i, int64_t j) { return ((b + 2 * i + 3 * j) % 5) == 0; };
  const HostTensor m = make_mask3(DType::kInt8, c.B, c.Sq, c.Skv, user);
  const std::vector<std::pair<int64_t, int64_t>> bands = {{2147483647, 2147483647}, {2, 1}, {0, 0}, {4, -1}, {-1, 3}};
  for (const auto& [pre, next] : bands) {
    FiaRunConfig cfg;
    cfg.scale = 0.4;
    cfg.mask = &m;
    cfg.pre_tokens = pre;
    cfg.next_tokens = next;
    auto a = run_ok(c, cfg);
    // Mode 1 equivalent: user mask OR outside the top-left band.
    HostTensor full = make_mask3(DType::kBool, c.B, c.Sq, c.Skv, [&](int64_t b, int64_t i, int64_t j) {
      return user(b, i, j) || j > i + next || j < i - pre;
    });
    FiaRunConfig e_cfg;
    e_cfg.scale = 0.4;
    e_cfg.sparse_mode = 1;
    e_cfg.mask = &full;
    auto e = run_ok(c, e_cfg);
    expect_same(a->out_bnsd(), e->out_bnsd(), "pre " + std::to_string(pre) + " next " + std::to_string(next));
    expect_same(a->lse_bns(), e->lse_bns(), "lse");
  }
  // Without a mask, mode 0 ignores pre/next entirely.
  FiaRunConfig no_mask;
  no_mask.scale = 0.4;
  auto plain = run_ok(c, no_mask);
  no_mask.pre_tokens = 0;
  no_mask.next_tokens = 0;
  auto banded = run_ok(c, no_mask);
  expect_same(banded->out, plain->out, "mode 0 without mask");
}

TEST(FiaRefMask, DtypesRanksAndBroadcastAgree) {
  FiaCanonical c = make_canonical(DType::kBFloat16, 2, 2, 2, 4, 10, 16, 16, 0, 51);
  c.set_lengths({4, 3}, {10, 6});
  // One batch-independent pattern; mask dims larger than needed (6 x 13), padding random.
  auto pat = [](int64_t, int64_t i, int64_t j) { return ((i * 7 + j * 3) % 4) == 1; };
  const int64_t R = 6, C = 13;
  const HostTensor base3 = make_mask3(DType::kBool, 1, R, C, pat);
  FiaRunConfig cfg;
  cfg.sparse_mode = 1;
  cfg.scale = 0.5;
  cfg.mask = &base3;
  auto want = run_ok(c, cfg);
  int forms = 0;
  for (DType dt : {DType::kBool, DType::kInt8, DType::kUInt8}) {
    const HostTensor m1 = make_mask3(dt, 1, R, C, pat);
    const HostTensor mb = make_mask3(dt, c.B, R, C, pat);
    for (const HostTensor& m : {m1.reshaped({R, C}), m1, mb, m1.reshaped({1, 1, R, C}), mb.reshaped({c.B, 1, R, C})}) {
      for (int64_t mode : {0, 1}) {
        cfg.mask = &m;
        cfg.sparse_mode = mode;  // mode 0 with the default (INT_MAX) band = the mask alone
        auto r = run_ok(c, cfg);
        expect_same(r->out, want->out, std::string(dtype_name(dt)) + " rank " + std::to_string(m.rank()));
        expect_same(r->lse, want->lse, "lse");
        ++forms;
      }
    }
  }
  EXPECT_EQ(forms, 30);
  // Too-small masks are rejected, never read out of bounds.
  const HostTensor small = make_mask3(DType::kBool, 1, 4, 9, pat);
  cfg.mask = &small;
  auto r = build_fia_run(c, cfg);
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
  const HostTensor wrong_batch = make_mask3(DType::kBool, 3, R, C, pat);
  cfg.mask = &wrong_batch;
  r = build_fia_run(c, cfg);
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kParamInvalid);
}

TEST(FiaRefMask, MaskingTrailingColumnsEqualsShorterKv) {
  FiaCanonical c = make_canonical(DType::kFloat16, 2, 3, 3, 3, 12, 16, 16, 0, 53);
  const HostTensor m = make_mask3(DType::kUInt8, 1, 3, 12, [](int64_t, int64_t, int64_t j) { return j >= 7; });
  FiaRunConfig cfg;
  cfg.sparse_mode = 1;
  cfg.mask = &m;
  auto masked = run_ok(c, cfg);
  FiaCanonical shorter = c;
  shorter.set_lengths({}, {7, 7});
  auto cut = run_ok(shorter, FiaRunConfig{});
  expect_same(masked->out, cut->out, "out");
  expect_same(masked->lse, cut->lse, "lse");
}

TEST(FiaRefMask, DecodeIgnoresSparseModeAndBand) {
  // Q_S == 1, no rope, Q_D == V_D, BSH/BSND/BNSD: only an explicit mask applies.
  FiaCanonical c = make_canonical(DType::kBFloat16, 3, 4, 2, 1, 20, 16, 16, 0, 55);
  c.set_lengths({}, {20, 9, 1});
  FiaRunConfig plain_cfg;
  plain_cfg.layout = "BNSD";
  auto plain = run_ok(c, plain_cfg);
  const HostTensor tmpl = fia_test::template_mask_2048(DType::kBool, 2);
  for (int64_t mode : {2, 3, 4}) {
    FiaRunConfig cfg = plain_cfg;
    cfg.sparse_mode = mode;
    cfg.mask = &tmpl;
    cfg.pre_tokens = 0;
    cfg.next_tokens = 0;
    auto r = run_ok(c, cfg);
    expect_same(r->out, plain->out, "decode sparse " + std::to_string(mode));
  }
  // Mode 0 with a (B, KV_S) mask and pre = next = 0: the band is ignored, the mask applies.
  auto pat = [](int64_t b, int64_t, int64_t j) { return (j + b) % 3 == 0 && j > 0; };
  const HostTensor m2 = make_mask3(DType::kInt8, c.B, 1, c.Skv, pat).reshaped({c.B, c.Skv});
  const HostTensor m3 = make_mask3(DType::kBool, c.B, 1, c.Skv, pat);
  FiaRunConfig cfg = plain_cfg;
  cfg.mask = &m2;
  cfg.pre_tokens = 0;
  cfg.next_tokens = 0;
  auto a = run_ok(c, cfg);
  cfg.mask = &m3;
  cfg.sparse_mode = 1;
  auto b = run_ok(c, cfg);
  expect_same(a->out, b->out, "(B, KV_S) vs (B, 1, KV_S)");
  expect_same(a->lse, b->lse, "lse");
  bool differs = false;
  for (int64_t i = 0; i < a->out.numel(); ++i) differs |= a->out.flat(i) != plain->out.flat(i);
  EXPECT_TRUE(differs);  // the mask did something
}

// ------------------------------------------------------------------------------------------
// (f) fully masked rows, empty batches, empty tensors
// ------------------------------------------------------------------------------------------

TEST(FiaRefInvalidRows, FullyMaskedRowsAndEmptyBatchesGiveZeroAndInf) {
  FiaCanonical c = make_canonical(DType::kBFloat16, 3, 2, 1, 3, 6, 16, 16, 0, 61);
  c.set_lengths({3, 3, 2}, {6, 0, 4});
  // Row 1 of every batch fully masked; batch 1 has no KV at all; batch 2 row 2 is padding.
  const HostTensor m = make_mask3(DType::kBool, 1, 3, 6, [](int64_t, int64_t i, int64_t j) { return i == 1 || j == 5; });
  FiaRunConfig cfg;
  cfg.sparse_mode = 1;
  cfg.mask = &m;
  cfg.layout = "BSND_NBSD";
  auto r = run_ok(c, cfg);
  const HostTensor out = r->out_bnsd(), lse = r->lse_bns();
  EXPECT_FALSE(has_nan(out));
  EXPECT_FALSE(has_nan(lse));
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 3; ++i) {
        const bool invalid = i == 1 || b == 1 || (b == 2 && i == 2);
        EXPECT_EQ(std::isinf(lse.get({b, n, i, 0})) && lse.get({b, n, i, 0}) > 0, invalid) << b << n << i;
        double norm = 0;
        for (int64_t d = 0; d < 16; ++d) norm += std::fabs(out.get({b, n, i, d}));
        EXPECT_EQ(norm == 0.0, invalid) << b << n << i;
      }
}

TEST(FiaRefInvalidRows, EmptyTensors) {
  // Empty query: success, nothing written.
  FiaCanonical c = make_canonical(DType::kBFloat16, 0, 2, 2, 3, 5, 16, 16, 0, 63);
  auto r = build_fia_run(c, FiaRunConfig{});
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kSuccess);
  // Empty key/value (KV_S = 0) with a non-empty query: zeros and +inf.
  FiaCanonical e = make_canonical(DType::kBFloat16, 2, 2, 2, 3, 0, 16, 16, 0, 64);
  r = build_fia_run(e, FiaRunConfig{});
  ASSERT_EQ(fused_infer_attention_score_v4_ref(r->params), kSuccess);
  for (int64_t i = 0; i < r->out.numel(); ++i) ASSERT_EQ(r->out.flat(i), 0.0);
  for (int64_t i = 0; i < r->lse.numel(); ++i) ASSERT_EQ(r->lse.flat(i), kInf);
}

}  // namespace
}  // namespace mlaops

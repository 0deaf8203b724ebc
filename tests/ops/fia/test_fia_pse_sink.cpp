// FusedInferAttentionScoreV4 pseShift (random, batch-broadcast, the ALiBi full bias) and
// learnableSink against the float64 reference, through every row of the attention family: each
// case names the row its plan must choose at the host's best level (decode, lanes, panel; the
// INT8 rows: tests/ops/fia/test_fia_antiquant.cpp) and runs under every ISA level with 1 and 2
// threads (KV splits). Pairs the vendor excludes (sink with MLA or a mask, pse with TND or MLA)
// run through the C++ API, whose float64 reference defines them. Tolerances: fia_harness.h.
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/cpu/attention/attn.h"
#include "mlaops/plan.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_harness.h"

namespace mlaops::testing {
namespace {

constexpr DType BF = DType::kBFloat16;
constexpr DType F16 = DType::kFloat16;

struct PseSinkCase {
  FiaCase c;
  const char* row;  // the attention-family row the plan must choose at the host's best level
};

PseSinkCase with(FiaCase c, PseForm pse, bool sink, const char* row) {
  c.pse = pse;
  c.sink = sink;
  return {c, row};
}

std::vector<PseSinkCase> cases() {
  std::vector<PseSinkCase> v;
  FiaCase c;
  // --- decode kernel (one query row per head, no rope) ---
  c = fia_case("decode_gqa4_pse_paged_bnbsh", BF, 3, 16, 4, 1, 300, 128, "BSND");
  c.act_kv = {300, 129, 7};
  paged(c, 3, 128);
  v.push_back(with(c, PseForm::kRandom, false, "attn_avx512_decode"));
  c = fia_case("decode_gqa8_pse_broadcast_sink_fp16", F16, 2, 16, 2, 1, 90, 64, "BNSD");
  v.push_back(with(c, PseForm::kBroadcast, true, "attn_avx512_decode"));
  c = fia_case("decode_long_kv_split_pse_sink", BF, 1, 4, 1, 1, 400, 64, "BSH");
  v.push_back(with(c, PseForm::kRandom, true, "attn_avx512_decode"));
  c = fia_case("decode_alibi_bsh", BF, 2, 8, 8, 1, 90, 32, "BSH");
  c.act_kv = {90, 41};
  v.push_back(with(c, PseForm::kAlibi, false, "attn_avx512_decode"));
  // groups that are not powers of two (run padded: the padded rows read no bias and get no sink)
  c = fia_case("decode_gqa3_pse_sink_paged_bnbsh", BF, 2, 12, 4, 1, 300, 128, "BSND");
  c.act_kv = {300, 77};
  paged(c, 3, 128);
  v.push_back(with(c, PseForm::kRandom, true, "attn_avx512_decode"));
  c = fia_case("decode_gqa5_alibi_fp16", F16, 2, 10, 2, 1, 90, 64, "BSH");
  v.push_back(with(c, PseForm::kAlibi, true, "attn_avx512_decode"));
  c = fia_case("decode_sink_zero_length_batch", BF, 2, 8, 2, 1, 30, 64, "BNSD");
  c.act_kv = {30, 0};
  v.push_back(with(c, PseForm::kNone, true, "attn_avx512_decode"));
  // --- lane kernel (>= 16 query rows per item) ---
  c = fia_case("prefill_tnd_causal_pse", BF, 2, 8, 2, 20, 50, 64, "TND");
  c.act_q = {20, 13};
  c.act_kv = {50, 30};
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(with(c, PseForm::kRandom, false, "attn_avx512_lanes"));
  c = fia_case("prefill_tnd_causal_pse_sink_fp16", F16, 2, 8, 2, 20, 50, 64, "TND");
  c.act_q = {20, 13};
  c.act_kv = {50, 30};
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(with(c, PseForm::kRandom, true, "attn_avx512_lanes"));
  c = fia_case("prefill_bsh_copy_groups_pse_sink", BF, 1, 8, 4, 16, 700, 64, "BSH");
  v.push_back(with(c, PseForm::kBroadcast, true, "attn_avx512_lanes"));
  c = fia_case("prefill_alibi_bsh", BF, 2, 16, 16, 24, 40, 64, "BSH");
  c.act_q = {24, 17};
  c.act_kv = {40, 17};
  c.cfg.pass_act_q = true;
  v.push_back(with(c, PseForm::kAlibi, false, "attn_avx512_lanes"));
  c = fia_case("prefill_mask3_pse_sink_lanes", BF, 2, 4, 1, 6, 40, 32, "BSND");
  sparse(c, 1, MaskForm::kRank3);
  v.push_back(with(c, PseForm::kRandom, true, "attn_avx512_lanes"));
  // --- panel path (fewer than 16 rows per item) ---
  c = fia_case("prefill_panel_mask3_pse_fp16", F16, 2, 2, 2, 5, 40, 32, "BSND");
  sparse(c, 0, MaskForm::kRank3, 3, 1);
  v.push_back(with(c, PseForm::kRandom, false, "attn_scalar_panel"));
  c = fia_case("prefill_panel_band_pse_broadcast_sink", BF, 2, 4, 4, 9, 21, 32, "BNSD");
  c.act_kv = {21, 15};
  sparse(c, 4, MaskForm::kTemplate, 5, 1);
  v.push_back(with(c, PseForm::kBroadcast, true, "attn_scalar_panel"));
  c = fia_case("prefill_panel_sink_row_invalid_ntd", BF, 3, 2, 2, 7, 20, 64, "NTD_TND");
  c.act_q = {5, 0, 7};
  c.act_kv = {9, 4, 3};
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(with(c, PseForm::kRandom, true, "attn_scalar_panel"));
  c = fia_case("decode_odd_d_pse_sink_panel", BF, 2, 4, 2, 1, 33, 31, "BSH");
  v.push_back(with(c, PseForm::kRandom, true, "attn_scalar_panel"));
  // --- MLA (pairs the vendor excludes; the C++ API computes them) ---
  c = fia_case("mla_decode_nz_pse_sink", BF, 2, 16, 1, 1, 100, 512, "BNSD_NBSD");
  mla(c, 64);
  c.act_kv = {100, 37};
  paged(c, 5, 16);
  v.push_back(with(c, PseForm::kRandom, true, "attn_avx512_lanes"));
  c = fia_case("mla_prefill_tnd_sink", BF, 2, 4, 1, 20, 40, 128, "TND");
  mla(c, 64);
  c.cfg.value_is_key = false;
  c.act_q = {20, 12};
  c.act_kv = {20, 40};
  paged(c, 3, 128);
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(with(c, PseForm::kNone, true, "attn_avx512_lanes"));
  return v;
}

void PrintTo(const PseSinkCase& c, std::ostream* os) { *os << c.c.name << " (" << c.row << ")"; }

class FiaPseSink : public ::testing::TestWithParam<PseSinkCase> {};

TEST_P(FiaPseSink, MatchesReference) {
  const PseSinkCase& pc = GetParam();
  const FiaCase& c = pc.c;
  auto data = make_case_data(c);
  auto ref = reference_run(*data);
  ASSERT_TRUE(ref);
  // The plan at the host's best level takes the intended row (when the host can run it).
  const auto& fam = kernels::attn_family();
  const int row = fam.find(pc.row);
  if (row >= 0 && fam.allowed(row, detected_isa())) {
    auto op = fia_test::build_fia_run(data->canon, data->cfg);
    OpPlan plan;
    ASSERT_EQ(fused_infer_attention_score_v4_plan(op->params, &plan), kSuccess) << last_error_message();
    EXPECT_NE(plan.explain().find(std::string("row(s): ") + pc.row), std::string::npos) << plan.explain();
  }
  const FiaWorst w = check_every_isa(*data, *ref, c.dtype, c.cfg.lse, {1, 2}, c.name);
  std::printf("[fia-pse-sink] %s %s out max_abs %.3g max_rel %.3g lse max_rel %.3g\n", c.name.c_str(),
              dtype_name(c.dtype), w.out_abs, w.out_rel, w.lse_rel);
}

INSTANTIATE_TEST_SUITE_P(Cases, FiaPseSink, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<PseSinkCase>& i) { return i.param.c.name; });

// A sink changes the result: the same case without it differs (the sink is not ignored), and a
// zero pse equals no pse exactly.
TEST(FiaPseSinkEffect, SinkAndPseAreApplied) {
  FiaCase c = fia_case("effect", BF, 1, 4, 2, 1, 40, 64, "BSND");
  c.sink = true;
  auto with_sink = make_case_data(c);
  auto a = fia_test::build_fia_run(with_sink->canon, with_sink->cfg);
  ASSERT_EQ(run_fia_cpp(a->params), kSuccess) << last_error_message();
  FiaRunConfig no_sink = with_sink->cfg;
  no_sink.pass_sink = false;
  auto b = fia_test::build_fia_run(with_sink->canon, no_sink);
  ASSERT_EQ(run_fia_cpp(b->params), kSuccess) << last_error_message();
  EXPECT_FALSE(a->out.storage == b->out.storage);
  EXPECT_FALSE(a->lse.storage == b->lse.storage);
  fia_test::FiaCanonical zero = with_sink->canon;
  zero.sink = fia_test::HostTensor();
  zero.pse = fia_test::HostTensor(c.dtype, {1, c.N, 1, c.Skv});
  auto z = fia_test::build_fia_run(zero, with_sink->cfg);
  ASSERT_EQ(run_fia_cpp(z->params), kSuccess) << last_error_message();
  EXPECT_TRUE(z->out.storage == b->out.storage);
  EXPECT_TRUE(z->lse.storage == b->lse.storage);
}

}  // namespace
}  // namespace mlaops::testing

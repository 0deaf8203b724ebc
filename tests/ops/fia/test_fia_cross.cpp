// FusedInferAttentionScoreV4: the fast path (C++ API) against the float64 reference over a case
// table spanning every layout and output layout, GQA ratios 1/2/4/8/16, MLA with 128 heads, odd
// head dims, paged (BnBsH, BnNBsD, NZ) and contiguous KV, block sizes 16/128/512, lengths that
// are not multiples of the block, every sparse mode and mask form, lse on and off; each case
// under every ISA the machine has (set_isa) with 1 and 2 threads. Tolerances: fia_harness.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "mlaops/runtime.h"
#include "ops/fia/fia_harness.h"

namespace mlaops::testing {
namespace {

constexpr DType BF = DType::kBFloat16;
constexpr DType F16 = DType::kFloat16;

FiaCase base(const char* name, DType dt, int64_t B, int64_t N, int64_t KVN, int64_t Sq, int64_t Skv, int64_t D,
             const char* layout) {
  return fia_case(name, dt, B, N, KVN, Sq, Skv, D, layout);
}

std::vector<FiaCase> cases() {
  std::vector<FiaCase> v;
  FiaCase c;
  // --- plain layouts, MHA / GQA, odd D ---
  c = base("bsh_mha", BF, 2, 4, 4, 5, 37, 32, "BSH");
  v.push_back(c);
  c = base("bsnd_gqa2_d31_fp16", F16, 2, 8, 4, 3, 70, 31, "BSND");
  c.act_q = {3, 2};
  c.act_kv = {70, 45};
  v.push_back(c);
  c = base("bnsd_gqa4_d127_decode_zero_len", BF, 3, 16, 4, 1, 130, 127, "BNSD");
  c.act_kv = {130, 1, 0};
  v.push_back(c);
  c = base("bnsd_bsnd_gqa8_sparse3", BF, 2, 8, 1, 4, 33, 64, "BNSD_BSND");
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(c);
  c = base("bsh_nbsd_gqa16_paged_bnbsh16", BF, 2, 16, 1, 2, 64, 64, "BSH_NBSD");
  c.act_kv = {50, 17};
  paged(c, 3, 16);
  v.push_back(c);
  c = base("bsnd_nbsd_gqa2_paged_bnbsh128_fp16", F16, 2, 4, 2, 3, 200, 48, "BSND_NBSD");
  c.act_kv = {200, 129};
  paged(c, 3, 128);
  v.push_back(c);
  c = base("bsh_bnsd_fp16_nolse", F16, 2, 6, 3, 7, 29, 64, "BSH_BNSD");
  c.cfg.lse = false;
  v.push_back(c);
  c = base("bsnd_bnsd_gqa2_paged_bnnbsd16", BF, 2, 4, 2, 3, 40, 32, "BSND_BNSD");
  c.act_kv = {40, 23};
  paged(c, 4, 16);
  v.push_back(c);
  // --- MLA (rope split, value = key latent) ---
  c = base("mla_bnsd_nbsd_128h_nz16", BF, 2, 128, 1, 1, 100, 512, "BNSD_NBSD");
  mla(c, 64);
  c.act_kv = {100, 37};
  paged(c, 5, 16);
  v.push_back(c);
  c = base("mla_bsnd_nbsd_32h_bnnbsd128_split", BF, 1, 32, 1, 1, 700, 512, "BSND_NBSD");
  mla(c, 64);
  c.act_kv = {700};
  paged(c, 4, 128);
  v.push_back(c);
  c = base("mla_fp16_bnsd_nz128", F16, 2, 16, 1, 1, 150, 512, "BNSD");
  mla(c, 64);
  c.act_kv = {150, 3};
  paged(c, 5, 128);
  v.push_back(c);
  c = base("mla_mtp_tnd_ntd_sparse3", BF, 3, 16, 1, 3, 67, 512, "TND_NTD");
  mla(c, 64);
  c.act_q = {2, 3, 1};
  c.act_kv = {40, 67, 5};
  paged(c, 4, 16);
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(c);
  c = base("mla_prefill_tnd_d128_rope64_bnbsh512", BF, 2, 4, 1, 20, 40, 128, "TND");
  mla(c, 64);
  c.cfg.value_is_key = false;
  c.act_q = {20, 12};
  c.act_kv = {20, 40};
  paged(c, 3, 512);
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(c);
  // --- BF16 lane items whose key rows lie far apart: the dense copy path (512 positions per
  // chunk; kernels/cpu/attention/attn_panel.h): several chunks with a partial last one, GQA, a band that
  // skips the first tiles so the first chunk starts late ---
  c = base("mla_prefill_tnd_copy_3_chunks", BF, 2, 4, 4, 20, 1100, 128, "TND");
  mla(c, 64);
  c.cfg.value_is_key = false;
  c.act_q = {20, 17};
  c.act_kv = {1100, 600};
  paged(c, 3, 128);
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(c);
  c = base("bsh_gqa2_prefill_copy", BF, 1, 8, 4, 16, 700, 64, "BSH");
  v.push_back(c);
  c = base("bsh_band_copy_late_chunk", BF, 1, 4, 4, 16, 900, 32, "BSH");
  sparse(c, 4, MaskForm::kTemplate, 100, 0);
  v.push_back(c);
  // groups of adjacent heads copied together (kernels::flash_attn_group): 8 KV heads, two query
  // blocks per batch (items ordered batch, block, head), causal, a partial last chunk, paged
  c = base("tnd_prefill_copy_groups_two_row_blocks", BF, 2, 8, 8, 150, 420, 64, "TND");
  c.act_q = {150, 131};
  c.act_kv = {420, 300};
  paged(c, 3, 128);
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(c);
  // --- packed layouts, sparse modes ---
  c = base("ntd_tnd_gqa4_sparse3_row_invalid", BF, 3, 8, 2, 7, 20, 64, "NTD_TND");
  c.act_q = {5, 0, 7};
  c.act_kv = {9, 4, 3};
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(c);
  c = base("ntd_sparse2", BF, 2, 2, 2, 6, 9, 16, "NTD");
  c.act_q = {6, 4};
  c.act_kv = {9, 2};
  sparse(c, 2, MaskForm::kTemplate);
  v.push_back(c);
  c = base("tnd_mask3_bcast_sparse0_band", F16, 2, 4, 4, 6, 12, 32, "TND");
  c.act_q = {6, 3};
  c.act_kv = {12, 7};
  sparse(c, 0, MaskForm::kRank3Bcast, 4, 1);
  v.push_back(c);
  c = base("bsh_sparse4_band", BF, 2, 4, 2, 9, 21, 32, "BSH");
  c.act_kv = {21, 15};
  sparse(c, 4, MaskForm::kTemplate, 5, 1);
  v.push_back(c);
  c = base("bnsd_sparse4_negative_next", BF, 1, 2, 1, 8, 16, 16, "BNSD");
  sparse(c, 4, MaskForm::kTemplate, 6, -2);
  v.push_back(c);
  c = base("bnsd_sparse0_mask4_bcast_band", BF, 2, 4, 4, 5, 19, 32, "BNSD");
  sparse(c, 0, MaskForm::kRank4Bcast, 3, 2);
  c.mask_dtype = DType::kUInt8;
  v.push_back(c);
  c = base("bsnd_sparse1_mask3_uint8_row_invalid", BF, 2, 4, 2, 4, 25, 32, "BSND");
  sparse(c, 1, MaskForm::kRank3);
  c.mask_dtype = DType::kUInt8;
  c.full_row_masked = true;
  v.push_back(c);
  c = base("bsh_sparse1_mask2_int8", F16, 2, 2, 1, 4, 18, 16, "BSH");
  sparse(c, 1, MaskForm::kRank2);
  c.mask_dtype = DType::kInt8;
  v.push_back(c);
  c = base("bnsd_sparse0_mask4_per_batch", BF, 2, 2, 2, 3, 40, 24, "BNSD");
  sparse(c, 0, MaskForm::kRank4);
  c.act_kv = {40, 31};
  v.push_back(c);
  c = base("decode_mask2_batch_rows", BF, 3, 4, 4, 1, 45, 64, "BNSD");
  sparse(c, 0, MaskForm::kRank2Batch);
  v.push_back(c);
  c = base("decode_sparse3_ignored", BF, 2, 4, 1, 1, 30, 32, "BSH");
  sparse(c, 3, MaskForm::kTemplate);
  c.act_kv = {30, 11};
  v.push_back(c);
  c = base("bsh_lengths_paged_nz", BF, 3, 4, 2, 3, 48, 32, "BSH");
  c.act_q = {2, 2, 2};
  c.act_kv = {25, 25, 25};
  c.cfg.pass_act_q = true;
  paged(c, 5, 16);
  v.push_back(c);
  c = base("gqa_decode_split_long", BF, 1, 4, 1, 1, 500, 64, "BSND");
  v.push_back(c);
  c = base("empty_kv", BF, 2, 2, 2, 3, 0, 16, "BSH");
  v.push_back(c);
  return v;
}

class FiaOpCross : public ::testing::TestWithParam<FiaCase> {};

TEST_P(FiaOpCross, MatchesReference) {
  const FiaCase& c = GetParam();
  auto data = make_case_data(c);
  auto ref = reference_run(*data);
  ASSERT_TRUE(ref);
  const FiaWorst w = check_every_isa(*data, *ref, c.dtype, c.cfg.lse, {1, 2}, c.name);
  std::printf("[fia-stats] %s %s out max_abs %.3g max_rel %.3g lse max_rel %.3g\n", c.name.c_str(),
              dtype_name(c.dtype), w.out_abs, w.out_rel, w.lse_rel);
  RecordProperty("max_rel_out", std::to_string(w.out_rel));
  RecordProperty("max_rel_lse", std::to_string(w.lse_rel));
}

INSTANTIATE_TEST_SUITE_P(Cases, FiaOpCross, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<FiaCase>& i) { return i.param.name; });

}  // namespace
}  // namespace mlaops::testing

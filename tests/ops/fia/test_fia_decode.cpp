// The flash decode kernel (kernels/cpu/attention/attn_decode.h) through FusedInferAttentionScoreV4 against
// the float64 reference, under every ISA the machine has (set_isa; AVX-512 runs the decode
// kernel, AVX2 and scalar the generic item) with 1 and 2 threads:
//   * G (query heads per KV head) 1, 2, 4, 8, 16; D = V_D 64, 128, 256, 48 (a 16-channel tail
//     chunk) and 72 (not a multiple of 16: the generic item); BF16 and FP16
//   * per case 9 batches with KV lengths 0 (zeros, lse +inf), 1, 15, 16, 17, 127, 128, 129, 1000,
//     every row past a batch's length NaN (a read of it poisons the result)
//   * contiguous BSND (heads interleaved in a row: groups of KV heads run together), paged BnBsH
//     and paged NZ with block size 16 (partly filled last blocks, shuffled block table)
//   * KV splits (flash-decoding: one item, 2..4 threads) over lengths 129..1000
//   * explicit masks (sparse mode 0 / 1; (B, KV_S) with batch 1 fully masked -> 0 / +inf, and
//     (B, 1, rows, cols) at density 0.5), contiguous / paged / NZ, with KV splits
// plus the eligibility rules on hand-made items. Tolerances: tests/ops/fia/fia_harness.h
// (unchanged).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/cpu/attention/attn.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_harness.h"

namespace mlaops::testing {
namespace {

struct DecodeCase {
  std::string name;
  DType dtype = DType::kBFloat16;
  int64_t G = 1, D = 64, B = 9, KVN = 2;
  int storage = 0;  // 0 contiguous BSND, 3 paged BnBsH, 5 paged NZ
  MaskForm mask = MaskForm::kNone;  // explicit mask (kRank2Batch: batch 1 fully masked)
  std::vector<int64_t> act_kv;
  std::vector<int> threads = {1, 2};
};

const std::vector<int64_t> kLengths = {0, 1, 15, 16, 17, 127, 128, 129, 1000};

FiaCase to_fia(const DecodeCase& d) {
  FiaCase c;
  c.name = d.name;
  c.dtype = d.dtype;
  c.B = d.B, c.N = d.G * d.KVN, c.KVN = d.KVN, c.Sq = 1, c.Skv = 1000, c.D = d.D, c.Dv = d.D;
  c.act_kv = d.act_kv;
  c.cfg.layout = "BSND";
  c.cfg.scale = 1.0 / std::sqrt(static_cast<double>(d.D));
  if (d.storage != 0) {
    c.cfg.paged = true;
    c.cfg.cache_rank = d.storage;
    c.cfg.block_size = 16;
  }
  if (d.mask != MaskForm::kNone) {
    sparse(c, d.mask == MaskForm::kRank2Batch ? 0 : 1, d.mask);
    c.full_row_masked = d.mask == MaskForm::kRank2Batch;
    c.mask_density = 0.5;
  }
  return c;
}

std::vector<DecodeCase> cases() {
  std::vector<DecodeCase> v;
  const char* st_name[] = {"contig", "", "", "bnbsh", "", "nz"};
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (int64_t D : {128, 64, 256, 48, 72})
      for (int64_t G : {1, 2, 3, 4, 5, 6, 7, 8, 12, 16}) {
        // the full G range at D 128 (G not a power of two: the kernel pads to the next one)
        if (D != 128 && G != 1 && G != 3 && G != 4 && G != 16) continue;
        for (int st : {0, 3, 5}) {
          if (st == 5 && D % 16 != 0) continue;  // NZ caches hold whole 16-channel chunks
          DecodeCase c;
          c.dtype = dt;
          c.G = G;
          c.D = D;
          c.storage = st;
          c.act_kv = kLengths;
          c.name = std::string(dt == DType::kFloat16 ? "fp16" : "bf16") + "_g" + std::to_string(G) + "_d" +
                   std::to_string(D) + "_" + st_name[st];
          v.push_back(c);
        }
      }
  // KV splits: one item (B 1, KV_N 1) and threads > 1 give P.splits > 1 for lengths >= 256; G 6 runs
  // padded to 8 (the partial states of the real rows only).
  for (int64_t G : {4, 6})
    for (DType dt : {DType::kBFloat16, DType::kFloat16})
      for (int st : {0, 3, 5})
        for (int64_t L : {129, 300, 1000}) {
          if (G == 6 && (st != 3 || L != 1000)) continue;
          DecodeCase c;
          c.dtype = dt;
          c.G = G;
          c.D = 128;
          c.B = 1;
          c.KVN = 1;
          c.storage = st;
          c.act_kv = {L};
          c.threads = {1, 2, 3, 4};
          c.name = std::string("split_") + (G == 4 ? "" : "g6_") + (dt == DType::kFloat16 ? "fp16" : "bf16") + "_L" +
                   std::to_string(L) + "_" + st_name[st];
          v.push_back(c);
        }
  // Explicit masks: applied to the decode kernel's block scores.
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (int64_t G : {1, 3, 4, 16})
      for (int st : {0, 3, 5})
        for (MaskForm m : {MaskForm::kRank2Batch, MaskForm::kRank4}) {
          DecodeCase c;
          c.dtype = dt;
          c.G = G;
          c.D = 128;
          c.storage = st;
          c.mask = m;
          c.act_kv = kLengths;
          c.name = std::string("mask_") + (m == MaskForm::kRank2Batch ? "b_kvs_" : "rank4_") +
                   (dt == DType::kFloat16 ? "fp16" : "bf16") + "_g" + std::to_string(G) + "_" + st_name[st];
          v.push_back(c);
        }
  for (int st : {0, 5}) {
    DecodeCase c;
    c.G = 4;
    c.D = 128;
    c.B = 1;
    c.KVN = 1;
    c.storage = st;
    c.mask = MaskForm::kRank4;
    c.act_kv = {1000};
    c.threads = {1, 2, 3, 4};
    c.name = std::string("mask_split_bf16_L1000_") + st_name[st];
    v.push_back(c);
  }
  return v;
}

void PrintTo(const DecodeCase& c, std::ostream* os) { *os << c.name; }

class FlashDecodeOp : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(FlashDecodeOp, MatchesReference) {
  const DecodeCase& d = GetParam();
  const FiaCase c = to_fia(d);
  auto data = make_case_data(c);
  auto ref = reference_run(*data);
  ASSERT_TRUE(ref);
  const FiaWorst w = check_every_isa(*data, *ref, c.dtype, true, d.threads, d.name);
  EXPECT_GT(w.runs, 0);
  std::printf("[flash-decode] %s out max_rel %.3g lse max_rel %.3g\n", d.name.c_str(), w.out_rel, w.lse_rel);
}

INSTANTIATE_TEST_SUITE_P(Cases, FlashDecodeOp, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<DecodeCase>& i) { return i.param.name; });

// ---- the decode rows' shape rules (kernels/cpu/attention/attn.cpp) ----

kernels::AttnShape decode_shape(int64_t G, int64_t D) {
  kernels::AttnShape s;
  s.G = G;
  s.R = 1;
  s.QD = s.VD = D;
  s.k_c0 = s.v_c0 = D;
  s.full_range = true;
  return s;
}

TEST(FlashDecodeShapes, Rules) {
  const auto& fam = kernels::attn_family();
  const int row = fam.find("attn_avx512_decode");
#if defined(MLAOPS_ARCH_X86_64)
  ASSERT_GE(row, 0);
#else
  ASSERT_LT(row, 0);  // x86-64 only
  GTEST_SKIP() << "no decode row on this architecture";
#endif
  const auto ok = [&](const kernels::AttnShape& s) { return fam.value(row).why_not(s) == nullptr; };
  for (int64_t G = 1; G <= 16; ++G) EXPECT_TRUE(ok(decode_shape(G, 128))) << G;  // padded to a power of two
  EXPECT_FALSE(ok(decode_shape(17, 128)));
  EXPECT_FALSE(ok(decode_shape(32, 128)));
  EXPECT_TRUE(ok(decode_shape(4, 48)));
  EXPECT_FALSE(ok(decode_shape(4, 72)));
  kernels::AttnShape s = decode_shape(4, 128);
  s.R = 2;
  EXPECT_FALSE(ok(s));
  s = decode_shape(4, 128);
  s.DR = 64;
  EXPECT_FALSE(ok(s));
  s = decode_shape(4, 128);
  s.explicit_mask = true;  // applied to the block's scores
  EXPECT_TRUE(ok(s));
  s = decode_shape(4, 128);
  s.full_range = false;  // a position of the range masked by the rule
  EXPECT_FALSE(ok(s));
  s = decode_shape(4, 128);
  s.k_c0 = 16;  // NZ K with ND V
  EXPECT_FALSE(ok(s));
  s.v_c0 = 16;
  EXPECT_TRUE(ok(s));
  s.k_c0 = s.v_c0 = 32;
  EXPECT_FALSE(ok(s));
  s = decode_shape(4, 128);
  s.kv_int8 = true;  // INT8 rows: dequantised first (or the INT8 row)
  EXPECT_FALSE(ok(s));
  // the row belongs to the AVX-512 level: a lower active level skips it
  EXPECT_FALSE(fam.allowed(row, Isa::kAvx2));
}

}  // namespace
}  // namespace mlaops::testing

// The flash decode kernel (kernels/cpu/flash_decode.h) through FusedInferAttentionScoreV4 against
// the float64 reference, under every ISA the machine has (set_isa; AVX-512 runs the decode
// kernel, AVX2 and scalar the generic item) with 1 and 2 threads:
//   * G (query heads per KV head) 1, 2, 4, 8, 16; D = V_D 64, 128, 256, 48 (a 16-channel tail
//     chunk) and 72 (not a multiple of 16: the generic item); BF16 and FP16
//   * per case 9 batches with KV lengths 0 (zeros, lse +inf), 1, 15, 16, 17, 127, 128, 129, 1000,
//     every row past a batch's length NaN (a read of it poisons the result)
//   * contiguous BSND (heads interleaved in a row: groups of KV heads run together), paged BnBsH
//     and paged NZ with block size 16 (partly filled last blocks, shuffled block table)
//   * KV splits (flash-decoding: one item, 2..4 threads) over lengths 129..1000
// plus the eligibility rules on hand-made items. Tolerances: tests/ops/fia/fia_harness.h
// (unchanged).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/cpu/flash_decode.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_harness.h"

namespace mlaops::testing {
namespace {

struct DecodeCase {
  std::string name;
  DType dtype = DType::kBFloat16;
  int64_t G = 1, D = 64, B = 9, KVN = 2;
  int storage = 0;  // 0 contiguous BSND, 3 paged BnBsH, 5 paged NZ
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
  return c;
}

std::vector<DecodeCase> cases() {
  std::vector<DecodeCase> v;
  const char* st_name[] = {"contig", "", "", "bnbsh", "", "nz"};
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (int64_t D : {128, 64, 256, 48, 72})
      for (int64_t G : {1, 2, 4, 8, 16}) {
        if (D != 128 && G != 1 && G != 4 && G != 16) continue;  // the full G range at D 128
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
  // KV splits: one item (B 1, KV_N 1) and threads > 1 give P.splits > 1 for lengths >= 256.
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (int st : {0, 3, 5})
      for (int64_t L : {129, 300, 1000}) {
        DecodeCase c;
        c.dtype = dt;
        c.G = 4;
        c.D = 128;
        c.B = 1;
        c.KVN = 1;
        c.storage = st;
        c.act_kv = {L};
        c.threads = {1, 2, 3, 4};
        c.name = std::string("split_") + (dt == DType::kFloat16 ? "fp16" : "bf16") + "_L" + std::to_string(L) + "_" +
                 st_name[st];
        v.push_back(c);
      }
  return v;
}

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

// ---- eligibility rules on hand-made items ----

kernels::FlashItem plain_item(int64_t G, int64_t D) {
  static const uint16_t kRow[512] = {};
  kernels::FlashItem it;
  it.q = kRow;
  it.G = G;
  it.R = 1;
  it.QD = D;
  it.VD = D;
  it.k.base = kRow;
  it.k.c0 = D;
  it.k.slot_stride = D;
  it.v = it.k;
  it.kv_begin = 0;
  it.kv_end = 10;
  it.lo_delta = -(int64_t{1} << 62);
  it.hi_delta = int64_t{1} << 62;
  return it;
}

TEST(FlashDecodeEligible, Rules) {
  using kernels::flash_decode_eligible;
  for (int64_t G : {1, 2, 4, 8, 16}) EXPECT_TRUE(flash_decode_eligible(plain_item(G, 128))) << G;
  EXPECT_FALSE(flash_decode_eligible(plain_item(3, 128)));
  EXPECT_FALSE(flash_decode_eligible(plain_item(32, 128)));
  EXPECT_TRUE(flash_decode_eligible(plain_item(4, 48)));
  EXPECT_FALSE(flash_decode_eligible(plain_item(4, 72)));
  kernels::FlashItem it = plain_item(4, 128);
  it.R = 2;
  EXPECT_FALSE(flash_decode_eligible(it));
  it = plain_item(4, 128);
  it.DR = 64;
  EXPECT_FALSE(flash_decode_eligible(it));
  it = plain_item(4, 128);
  static const uint8_t mask[16] = {};
  it.mask = mask;
  EXPECT_FALSE(flash_decode_eligible(it));
  it = plain_item(4, 128);
  it.hi_delta = 8;  // column 9 masked
  EXPECT_FALSE(flash_decode_eligible(it));
  it.hi_delta = 9;
  EXPECT_TRUE(flash_decode_eligible(it));
  it.lo_delta = 1;  // column 0 masked
  EXPECT_FALSE(flash_decode_eligible(it));
  it = plain_item(4, 128);
  it.k.c0 = 16;  // NZ K with ND V
  EXPECT_FALSE(flash_decode_eligible(it));
  it.v.c0 = 16;
  EXPECT_TRUE(flash_decode_eligible(it));
  it.k.c0 = it.v.c0 = 32;
  EXPECT_FALSE(flash_decode_eligible(it));
  // groups: powers of two with one addressing
  kernels::FlashItem g[4] = {plain_item(4, 128), plain_item(4, 128), plain_item(4, 128), plain_item(4, 128)};
  EXPECT_TRUE(kernels::flash_decode_group_eligible(g, 4));
  EXPECT_FALSE(kernels::flash_decode_group_eligible(g, 3));
  g[2].kv_end = 9;
  EXPECT_FALSE(kernels::flash_decode_group_eligible(g, 4));
  g[2].kv_end = 10;
  g[3].k.slot_stride = 256;
  EXPECT_FALSE(kernels::flash_decode_group_eligible(g, 4));
  // the kernel exists exactly at the AVX-512 level
  EXPECT_EQ(kernels::flash_decode_kernel(Isa::kScalar), nullptr);
  EXPECT_EQ(kernels::flash_decode_kernel(Isa::kAvx2), nullptr);
  EXPECT_NE(kernels::flash_decode_kernel(Isa::kAvx512), nullptr);
}

}  // namespace
}  // namespace mlaops::testing

// Negative tests of the FusedInferAttentionScoreV4 spec audit (docs/ops/fia_rule_audit.md): one
// case per spec clause that had no negative test, table-driven. Each case is a valid call written
// in the vendor system-test notation (testkit/fia_vendor_st.h), and the minimal change that
// breaks the clause (text replacements of the line, or an edit of the C API arguments for shapes
// too large to allocate). Through aclnnFusedInferAttentionScoreV4:
//   * the base call succeeds;
//   * the changed call returns 161002 with a message naming the operator, "<parameter>: <rule>"
//     and the clause's words, and leaves every byte of attentionOut and softmaxLse (a canary
//     pattern) unchanged;
//   * for the vendor-only rules (ops/fia/fia_exclusions.h) the C++ API computes the changed call
//     (FP16 / BF16 key / value: and matches the float64 reference).
// Every row of ops/fia/fia_exclusions.h is hit by at least one case.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_harness.h"
#include "ops/fia/fia_mla_quant_data.h"
#include "testkit/fia_vendor_st.h"
#include "ops/fia/fia_exclusions.h"
#include "testkit/compare.h"

namespace mlaops::testing {
namespace {

using Repl = std::vector<std::pair<std::string, std::string>>;

struct Case {
  std::string name;  // the clause
  std::string base;  // a valid call (vendor notation, items only)
  Repl change;       // the minimal change (every occurrence of each `from`)
  std::function<void(FiaAclArgs&)> edit;  // or an edit of the arguments (shapes too large to allocate)
  const char* param;
  const char* rule;
  const char* words;  // part of the expected message
  bool cpp_computes;  // a vendor-only rule: the C++ API computes the changed call
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::string apply(std::string s, const Repl& r) {
  for (const auto& [from, to] : r) {
    size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << "\"" << from << "\" not in the base line";
    for (; at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  }
  return s;
}

std::unique_ptr<vendor_st::StData> make(const std::string& items) {
  vendor_st::StCase c;
  std::string why;
  EXPECT_TRUE(vendor_st::parse_case_line("#9000 err=None acc=\"default\" | " + items, &c, &why))
      << why << ": " << items;
  return vendor_st::materialise(c);
}

// The valid calls the cases change (vendor notation; FiaCase sizes kept small).
const std::string kBsnd =  // GQA prefill, FP16, BSND, no mask
    "query:fp16[2, 4, 4, 64] ; key:fp16[2, 20, 2, 64] ; value:fp16[2, 20, 2, 64] ; numHeads=4 ; inputLayout=BSND ; "
    "numKeyValueHeads=2 ; sparseMode=0 ; attentionOut:fp16[2, 4, 4, 64]";
const std::string kTnd =  // GQA prefill, BF16, TND (actQ 2 / 4, actKV 10 / 20)
    "query:bf16[6, 4, 64] ; key:bf16[30, 2, 64] ; value:bf16[30, 2, 64] ; asl=[2, 6] ; aslKv=[10, 30] ; numHeads=4 ; "
    "inputLayout=TND ; numKeyValueHeads=2 ; sparseMode=0 ; attentionOut:bf16[6, 4, 64]";
const std::string kMla =  // MLA decode, D 512 + rope 64, paged BnNBsD, BNSD
    "query:bf16[2, 8, 1, 512] ; key:bf16[6, 1, 16, 512] ; value:bf16[6, 1, 16, 512] ; aslKv=[40, 17] ; "
    "bt:int32[2, 3] ; qRope:bf16[2, 8, 1, 64] ; kRope:bf16[6, 1, 16, 64] ; numHeads=8 ; inputLayout=BNSD ; "
    "numKeyValueHeads=1 ; sparseMode=0 ; blockSize=16 ; attentionOut:bf16[2, 8, 1, 512]";
const std::string kMlaPrefill =  // MLA prefill, D 128 + rope 64, BSND
    "query:bf16[2, 4, 4, 128] ; key:bf16[2, 20, 1, 128] ; value:bf16[2, 20, 1, 128] ; qRope:bf16[2, 4, 4, 64] ; "
    "kRope:bf16[2, 20, 1, 64] ; numHeads=4 ; inputLayout=BSND ; numKeyValueHeads=1 ; sparseMode=0 ; "
    "attentionOut:bf16[2, 4, 4, 128]";
const std::string kPagedBsnd =  // GQA prefill, BF16, BSND, paged BnBsH, blockSize 16 (head dim 64)
    "query:bf16[2, 4, 4, 64] ; key:bf16[6, 16, 128] ; value:bf16[6, 16, 128] ; aslKv=[40, 17] ; bt:int32[2, 3] ; "
    "numHeads=4 ; inputLayout=BSND ; numKeyValueHeads=2 ; sparseMode=0 ; blockSize=16 ; "
    "attentionOut:bf16[2, 4, 4, 64]";
const std::string kAqPrefill =  // KV antiquant prefill: BF16 query, INT8 KV, per-channel (KV_N, D) scales
    "query:bf16[2, 4, 4, 64] ; key:int8[2, 20, 2, 64] ; value:int8[2, 20, 2, 64] ; kScale:bf16[2, 64] ; "
    "vScale:bf16[2, 64] ; numHeads=4 ; inputLayout=BSND ; numKeyValueHeads=2 ; sparseMode=0 ; "
    "attentionOut:bf16[2, 4, 4, 64]";
const std::string kAqTokenDecode =  // KV antiquant decode, per-token (mode 1) scales
    "query:fp16[2, 1, 128] ; key:int8[2, 64, 128] ; value:int8[2, 64, 128] ; kScale:fp32[1, 2, 64] ; "
    "vScale:fp32[1, 2, 64] ; numHeads=1 ; inputLayout=BSH ; numKeyValueHeads=1 ; sparseMode=0 ; "
    "keyAntiquantMode=1 ; valueAntiquantMode=1 ; attentionOut:fp16[2, 1, 128]";
const std::string kPrefixDecode =  // shared prefix, decode, BSH
    "query:fp16[2, 1, 128] ; key:fp16[2, 30, 128] ; value:fp16[2, 30, 128] ; kPrefix:fp16[1, 12, 128] ; "
    "vPrefix:fp16[1, 12, 128] ; numHeads=1 ; inputLayout=BSH ; numKeyValueHeads=1 ; sparseMode=0 ; "
    "attentionOut:fp16[2, 1, 128]";

const std::string kTreeBsh =  // the tree mask (sparse 9), GQA, BSH
    "query:bf16[2, 4, 256] ; key:bf16[2, 20, 128] ; value:bf16[2, 20, 128] ; mask:bool[2, 4, 4] ; numHeads=4 ; "
    "inputLayout=BSH ; numKeyValueHeads=2 ; sparseMode=9 ; attentionOut:bf16[2, 4, 256]";

const char* kMask2048 = "mask:bool[2048, 2048] ; ";

std::vector<Case> cases() {
  std::vector<Case> v;
  auto add = [&](const char* name, const std::string& base, Repl change, const char* param, const char* rule,
                 const char* words, bool cpp = true) {
    v.push_back({name, base, std::move(change), {}, param, rule, words, cpp});
  };
  auto edit = [&](const char* name, const std::string& base, std::function<void(FiaAclArgs&)> e, const char* param,
                  const char* rule, const char* words) {
    v.push_back({name, base, {}, std::move(e), param, rule, words, false});
  };
  auto dims = [](TensorView& t, std::initializer_list<int64_t> d) { t = make_view(t.data, t.dtype, d); };

  // ---- FIA-19, the vendor's limits (§3.2 items 1, 3; §2.9) ----
  edit("s3_2_1_heads_le_256", kBsnd, [](FiaAclArgs& a) { a.num_heads = 512, a.kvn = 512; }, "numHeads",
       "FIA-19", "value");
  edit("s3_2_3_batch_le_65536", kBsnd, [=](FiaAclArgs& a) { dims(a.in[0], {65537, 4, 4, 64}); }, "query", "FIA-19",
       "B");
  edit("s3_2_3_tnd_batch_le_4096", kTnd,
       [](FiaAclArgs& a) {
         a.asl_q.assign(4097, 0);
         a.asl_q.back() = 6;
       },
       "actualSeqLengthsOptional", "FIA-19", "TND batch");
  edit("s3_2_3_query_head_dim_le_512", kBsnd,
       [=](FiaAclArgs& a) {
         dims(a.in[0], {2, 4, 4, 528});
         dims(a.in[1], {2, 20, 2, 528});
         dims(a.in[2], {2, 20, 2, 528});
         dims(a.out, {2, 4, 4, 528});
       },
       "query", "FIA-19", "head dim D");
  edit("s3_2_3_value_head_dim_le_512", kBsnd,
       [=](FiaAclArgs& a) {
         dims(a.in[2], {2, 20, 2, 528});
         dims(a.out, {2, 4, 4, 528});
       },
       "value", "FIA-19", "head dim V_D");
  edit("s3_2_3_prefill_q_s_le_20M", kBsnd,
       [=](FiaAclArgs& a) {
         dims(a.in[0], {2, 20971521, 4, 64});
         dims(a.out, {2, 20971521, 4, 64});
       },
       "query", "FIA-19", "a query sequence extent above 20971520");
  edit("s3_2_3_prefill_kv_s_le_20M", kBsnd,
       [=](FiaAclArgs& a) {
         dims(a.in[1], {2, 20971521, 2, 64});
         dims(a.in[2], {2, 20971521, 2, 64});
         a.has_asl_kv = true;
         a.asl_kv = {20, 20};
       },
       "key", "FIA-19", "a key sequence extent above 20971520");
  add("s3_2_3_unaligned_head_dim_prefill_batch_le_128",
      "query:fp16[256, 2, 8] ; key:fp16[256, 1, 8] ; value:fp16[256, 1, 8] ; asl=[2, 4, 6, ... (128 values)] ; "
      "aslKv=[2, 4, 6, ... (128 values)] ; numHeads=2 ; inputLayout=TND ; numKeyValueHeads=1 ; sparseMode=0 ; "
      "attentionOut:fp16[256, 2, 8]",
      {{"[256,", "[258,"}, {"(128 values)", "(129 values)"}}, "query", "FIA-19",
      "a batch above 128");
  add("s3_2_10_int8_kv_paged_block_size_32",
      "query:fp16[2, 1, 128] ; key:int8[4, 32, 128] ; value:int8[4, 32, 128] ; aslKv=[40, 17] ; bt:int32[2, 2] ; "
      "kScale:fp16[1] ; vScale:fp16[1] ; numHeads=1 ; inputLayout=BSH ; numKeyValueHeads=1 ; sparseMode=0 ; "
      "blockSize=32 ; attentionOut:fp16[2, 1, 128]",
      {{"[4, 32, 128]", "[8, 16, 128]"}, {"bt:int32[2, 2]", "bt:int32[2, 3]"}, {"blockSize=32", "blockSize=16"}},
      "blockSize", "FIA-19", "not a multiple of 32");
  add("s3_2_10_prefill_block_size_128_for_other_head_dims",
      "query:fp16[2, 4, 4, 32] ; key:fp16[2, 128, 64] ; value:fp16[2, 128, 64] ; aslKv=[40, 17] ; bt:int32[2, 1] ; "
      "numHeads=4 ; inputLayout=BSND ; numKeyValueHeads=2 ; sparseMode=0 ; blockSize=128 ; "
      "attentionOut:fp16[2, 4, 4, 32]",
      {{"[2, 128, 64]", "[3, 64, 64]"}, {"blockSize=128", "blockSize=64"}}, "blockSize", "FIA-19",
      "not a multiple of 128");
  add("s3_2_10_decode_block_size_le_512_for_other_head_dims",
      "query:fp16[2, 1, 4, 32] ; key:fp16[2, 512, 64] ; value:fp16[2, 512, 64] ; aslKv=[40, 17] ; bt:int32[2, 1] ; "
      "numHeads=4 ; inputLayout=BSND ; numKeyValueHeads=2 ; sparseMode=0 ; blockSize=512 ; "
      "attentionOut:fp16[2, 1, 4, 32]",
      {{"[2, 512, 64]", "[2, 1024, 64]"}, {"blockSize=512", "blockSize=1024"}}, "blockSize", "FIA-19",
      "a blockSize above 512");
  add("s2_9_bnbsh_kvn_times_d_le_65535",
      "query:fp16[1, 1, 65536] ; key:fp16[2, 16, 32768] ; value:fp16[2, 16, 32768] ; aslKv=[20] ; bt:int32[1, 2] ; "
      "numHeads=256 ; inputLayout=BSH ; numKeyValueHeads=128 ; sparseMode=0 ; blockSize=16 ; "
      "attentionOut:fp16[1, 1, 65536]",
      {{"[2, 16, 32768]", "[2, 16, 65536]"}, {"numKeyValueHeads=128", "numKeyValueHeads=256"}}, "key", "FIA-19",
      "KV_N * D above 65535");
  add("s2_16_mla_d512_heads_power_of_two", kMla,
      {{"[2, 8, 1, 512]", "[2, 12, 1, 512]"}, {"[2, 8, 1, 64]", "[2, 12, 1, 64]"}, {"numHeads=8", "numHeads=12"}},
      "numHeads", "FIA-19", "a head count outside");
  add("s2_16_mla_d512_one_kv_head", kMla,
      {{"[6, 1, 16, 512]", "[6, 2, 16, 512]"}, {"[6, 1, 16, 64]", "[6, 2, 16, 64]"},
       {"numKeyValueHeads=1", "numKeyValueHeads=2"}},
      "numKeyValueHeads", "FIA-19", "more than one key / value head");
  add("s2_6_1_paged_mask_covers_the_table",
      apply(kPagedBsnd, {{"aslKv", "mask:bool[2, 4, 48] ; aslKv"}, {"sparseMode=0", "sparseMode=1"}}),
      {{"[2, 4, 48]", "[2, 4, 40]"}}, "attenMaskOptional", "FIA-19", "narrower than blockTable width");
  add("s2_8_paged_pse_covers_the_table", apply(kPagedBsnd, {{"aslKv", "pse:bf16[2, 4, 4, 48] ; aslKv"}}),
      {{"[2, 4, 4, 48]", "[2, 4, 4, 40]"}}, "pseShiftOptional", "FIA-19", "narrower than blockTable width");
  // ---- FIA-21: KV antiquant (§2.11.2) ----
  add("s2_11_2_int8_key0_value1_fp16_query",
      "query:fp16[2, 1, 128] ; key:int8[2, 64, 128] ; value:int8[2, 64, 128] ; kScale:fp16[1, 128] ; "
      "vScale:fp32[1, 2, 64] ; numHeads=1 ; inputLayout=BSH ; numKeyValueHeads=1 ; sparseMode=0 ; "
      "keyAntiquantMode=0 ; valueAntiquantMode=1 ; attentionOut:fp16[2, 1, 128]",
      {{"query:fp16", "query:bf16"}, {"kScale:fp16", "kScale:bf16"}, {"attentionOut:fp16", "attentionOut:bf16"}},
      "query", "FIA-21", "key 0 (per-channel) + value 1");
  // ---- FIA-24: pairs of features (§3.4, §4) ----
  add("s3_4_mla_d512_x_explicit_mask", kMla, {{"aslKv", "mask:bool[2, 1, 1, 48] ; aslKv"}}, "attenMaskOptional",
      "FIA-24", "MLA with D 512 excludes an explicit mask");
  add("s4_tnd_x_mask_sparse0", kTnd, {{"aslKv", "mask:bool[2, 4, 20] ; aslKv"}}, "attenMaskOptional", "FIA-24",
      "a TND / NTD layout excludes an explicit mask");
  add("s4_tnd_x_mask_sparse1", kTnd, {{"aslKv", "mask:bool[2, 4, 20] ; aslKv"}, {"sparseMode=0", "sparseMode=1"}},
      "attenMaskOptional", "FIA-24", "a TND / NTD layout excludes an explicit mask");
  add("s4_tnd_x_sparse2", apply(kTnd, {{"aslKv", std::string(kMask2048) + "aslKv"}, {"sparseMode=0", "sparseMode=3"}}),
      {{"sparseMode=3", "sparseMode=2"}}, "sparseMode", "FIA-24", "excludes sparseMode 2");
  add("s2_11_2_antiquant_prefill_x_post_quant", kAqPrefill,
      {{"vScale:bf16[2, 64] ;", "vScale:bf16[2, 64] ; qs2:fp32[1] ;"}, {"attentionOut:bf16", "attentionOut:int8"}},
      "quantScale2Optional", "FIA-24", "KV antiquant with Q_S > 1 excludes INT8 output");
  add("s2_5_int8_output_x_sparse4_negative_tokens",
      apply(kBsnd, {{"numHeads", std::string(kMask2048) + "qs2:fp32[1] ; numHeads"},
                    {"sparseMode=0", "sparseMode=4 ; preTokens=2 ; nextTokens=0"},
                    {"attentionOut:fp16", "attentionOut:int8"}}),
      {{"nextTokens=0", "nextTokens=-1"}}, "preTokens/nextTokens", "FIA-24", "a negative preTokens / nextTokens");
  add("s2_6_1_2d_mask_x_rope",
      apply(kMlaPrefill, {{"numHeads", "mask:bool[2, 4, 20] ; numHeads"}, {"sparseMode=0", "sparseMode=1"}}),
      {{"mask:bool[2, 4, 20]", "mask:bool[4, 20]"}}, "attenMaskOptional", "FIA-24", "a 2-D mask excludes queryRope");
  add("s2_6_1_2d_mask_x_qd_ne_vd",
      apply(kBsnd, {{"value:fp16[2, 20, 2, 64]", "value:fp16[2, 20, 2, 32]"},
                    {"attentionOut:fp16[2, 4, 4, 64]", "attentionOut:fp16[2, 4, 4, 32]"},
                    {"numHeads", "mask:bool[2, 4, 20] ; numHeads"}}),
      {{"mask:bool[2, 4, 20]", "mask:bool[4, 20]"}}, "attenMaskOptional", "FIA-24", "a value head dim different");
  add("s2_6_1_2d_mask_x_output_layout",
      "query:fp16[2, 4, 256] ; key:fp16[2, 20, 128] ; value:fp16[2, 20, 128] ; mask:bool[2, 4, 20] ; numHeads=4 ; "
      "inputLayout=BSH_NBSD ; numKeyValueHeads=2 ; sparseMode=1 ; attentionOut:fp16[4, 2, 4, 64]",
      {{"mask:bool[2, 4, 20]", "mask:bool[4, 20]"}}, "attenMaskOptional", "FIA-24", "an inputLayout other than");
  // ---- FIA-56: layouts (§2.1, §2.9, §2.16, §2.17) ----
  add("s2_16_mla_d512_layouts", kMla,
      {{"inputLayout=BNSD", "inputLayout=BNSD_BSND"},
       {"attentionOut:bf16[2, 8, 1, 512]", "attentionOut:bf16[2, 1, 8, 512]"}},
      "inputLayout", "FIA-56", "MLA with D 512 excludes this layout");
  add("s2_16_mla_prefill_head_dims_128", kMlaPrefill,
      {{"128]", "64]"}}, "query", "FIA-56", "head dims other than 128 / 128");
  add("s2_16_mla_prefill_layouts", kMlaPrefill,
      {{"inputLayout=BSND", "inputLayout=BSND_NBSD"},
       {"attentionOut:bf16[2, 4, 4, 128]", "attentionOut:bf16[4, 2, 4, 128]"}},
      "inputLayout", "FIA-56", "MLA with D 128 (prefill) excludes this layout");
  add("s2_1_bsh_bnsd_head_dims",
      "query:fp16[2, 4, 256] ; key:fp16[2, 20, 128] ; value:fp16[2, 20, 128] ; numHeads=4 ; inputLayout=BSH_BNSD ; "
      "numKeyValueHeads=2 ; sparseMode=0 ; attentionOut:fp16[2, 4, 4, 64]",
      {{"[2, 4, 256]", "[2, 4, 128]"}, {"[2, 20, 128]", "[2, 20, 64]"}, {"[2, 4, 4, 64]", "[2, 4, 4, 32]"}},
      "inputLayout", "FIA-56", "excludes these head dims");
  add("s2_1_bnsd_bsnd_prefill_only",
      "query:fp16[2, 4, 4, 64] ; key:fp16[2, 2, 20, 64] ; value:fp16[2, 2, 20, 64] ; numHeads=4 ; "
      "inputLayout=BNSD_BSND ; numKeyValueHeads=2 ; sparseMode=0 ; attentionOut:fp16[2, 4, 4, 64]",
      {{"query:fp16[2, 4, 4, 64]", "query:fp16[2, 4, 1, 64]"},
       {"attentionOut:fp16[2, 4, 4, 64]", "attentionOut:fp16[2, 1, 4, 64]"}},
      "inputLayout",
      "FIA-56", "excludes a decode");
  add("s2_9_bsnd_query_x_bnnbsd_cache", kPagedBsnd, {{"[6, 16, 128]", "[6, 2, 16, 64]"}}, "key", "FIA-56",
      "excludes a BnNBsD cache");
  add("s2_17_sink_layouts", apply(kTnd, {{"numHeads", "sink:bf16[4] ; numHeads"}}),
      {{"inputLayout=TND", "inputLayout=TND_NTD"}, {"attentionOut:bf16[6, 4, 64]", "attentionOut:bf16[4, 6, 64]"}},
      "learnableSinkOptional", "FIA-56", "learnableSink excludes this layout");
  // ---- FIA-57: sparse modes and tokens (§2.5, §2.3, §2.16) ----
  add("s2_5_sparse0_mask_band_not_empty",
      apply(kBsnd, {{"numHeads", "mask:bool[2, 4, 20] ; numHeads"},
                    {"sparseMode=0", "sparseMode=0 ; preTokens=2 ; nextTokens=0"}}),
      {{"nextTokens=0", "nextTokens=-3"}}, "preTokens/nextTokens", "FIA-57", "a band the vendor's rule refuses");
  // the sum saturates: both INT64_MIN refused (the wrapped sum was 0); |nextTokens| >= S2, |preTokens| >= S1
  add("s2_5_sparse0_mask_tokens_int64_min",
      apply(kBsnd, {{"numHeads", "mask:bool[2, 4, 20] ; numHeads"},
                    {"sparseMode=0", "sparseMode=0 ; preTokens=2 ; nextTokens=0"}}),
      {{"preTokens=2 ; nextTokens=0", "preTokens=-9223372036854775808 ; nextTokens=-9223372036854775808"}},
      "preTokens/nextTokens", "FIA-57", "got preTokens -9223372036854775808");
  add("s2_5_sparse0_mask_next_beyond_s2",
      apply(kBsnd, {{"numHeads", "mask:bool[2, 4, 20] ; numHeads"},
                    {"sparseMode=0", "sparseMode=0 ; preTokens=2 ; nextTokens=0"}}),
      {{"preTokens=2 ; nextTokens=0", "preTokens=40 ; nextTokens=-20"}}, "preTokens/nextTokens", "FIA-57",
      "nextTokens -20 (batch 0: actQ 4, actKV 20)");
  add("s2_5_sparse0_mask_pre_beyond_s1",
      apply(kBsnd, {{"numHeads", "mask:bool[2, 4, 20] ; numHeads"},
                    {"sparseMode=0", "sparseMode=0 ; preTokens=2 ; nextTokens=0"}}),
      {{"preTokens=2 ; nextTokens=0", "preTokens=-4 ; nextTokens=30"}}, "preTokens/nextTokens", "FIA-57",
      "preTokens -4, nextTokens 30 (batch 0: actQ 4");
  add("s2_5_tnd_sparse4_band_per_batch",
      apply(kTnd, {{"aslKv", std::string(kMask2048) + "aslKv"},
                   {"sparseMode=0", "sparseMode=4 ; preTokens=8 ; nextTokens=0"}}),
      {{"preTokens=8 ; nextTokens=0", "preTokens=-3 ; nextTokens=5"}}, "preTokens/nextTokens", "FIA-57",
      "batch 0: actQ 2");
  add("s2_3_mla_d512_actual_seq_lengths_only_tnd", kMla, {{"aslKv", "asl=[1, 1] ; aslKv"}},
      "actualSeqLengthsOptional", "FIA-57", "actualSeqLengths only with TND");
  // ---- existing rules: clauses without a negative test before the audit ----
  add("s3_2_2_bsh_hidden_multiple_of_heads",
      "query:fp16[2, 4, 256] ; key:fp16[2, 20, 64] ; value:fp16[2, 20, 64] ; numHeads=4 ; inputLayout=BSH ; "
      "numKeyValueHeads=1 ; sparseMode=0 ; attentionOut:fp16[2, 4, 256]",
      {{"numHeads=4", "numHeads=3"}}, "query", "FIA-08", "BSH hidden dim", false);
  add("s3_2_2_bsh_kv_hidden_multiple_of_kv_heads",
      "query:fp16[2, 4, 192] ; key:fp16[2, 20, 64] ; value:fp16[2, 20, 64] ; numHeads=6 ; inputLayout=BSH ; "
      "numKeyValueHeads=2 ; sparseMode=0 ; attentionOut:fp16[2, 4, 192]",
      {{"numKeyValueHeads=2", "numKeyValueHeads=3"}}, "key", "FIA-08", "BSH hidden dim", false);
  add("s3_4_left_padding_x_tree_mask", kTreeBsh,
      {{"numHeads", "kvPad:int64[1] ; aslKv=[20, 20] ; numHeads"}}, "kvPaddingSizeOptional", "FIA-41", "tree mask",
      false);
  add("s3_4_left_padding_x_antiquant_prefill", kAqPrefill,
      {{"numHeads", "kvPad:int64[1] ; aslKv=[20, 20] ; numHeads"}}, "kvPaddingSizeOptional", "FIA-41",
      "KV antiquant with Q_S > 1", false);
  add("s2_10_left_padding_x_per_token_antiquant", kAqTokenDecode,
      {{"numHeads", "kvPad:int64[1] ; aslKv=[64, 64] ; numHeads"}}, "kvPaddingSizeOptional", "FIA-41",
      "per-token antiquant scales", false);
  add("s3_4_left_padding_x_per_channel_post_quant_prefill",
      apply(kBsnd, {{"numHeads", "qs2:fp32[4, 64] ; numHeads"}, {"attentionOut:fp16", "attentionOut:int8"}}),
      {{"numHeads", "kvPad:int64[1] ; aslKv=[20, 20] ; numHeads"}}, "kvPaddingSizeOptional", "FIA-41",
      "per-channel post-quant with Q_S > 1", false);
  add("s3_4_prefix_x_all_int8",
      "query:int8[1, 4, 128] ; key:int8[1, 20, 128] ; value:int8[1, 20, 128] ; deq1:fp32[1] ; qs1:fp32[1] ; "
      "deq2:fp32[1] ; numHeads=1 ; inputLayout=BSH ; numKeyValueHeads=1 ; sparseMode=0 ; attentionOut:fp16[1, 4, 128]",
      {{"deq2:fp32[1] ;", "deq2:fp32[1] ; kPrefix:int8[1, 8, 128] ; vPrefix:int8[1, 8, 128] ;"}},
      "keySharedPrefixOptional", "FIA-48", "INT8 query", false);
  add("s3_4_prefix_x_tree_mask", kTreeBsh,
      {{"numHeads", "kPrefix:bf16[1, 8, 128] ; vPrefix:bf16[1, 8, 128] ; numHeads"}}, "keySharedPrefixOptional",
      "FIA-48", "tree mask", false);
  edit("s3_4_prefix_x_fp8", kPrefixDecode,
       [](FiaAclArgs& a) {
         for (int i : {1, 2, 21, 22}) a.in[i].dtype = DType::kHiFloat8;
       },
       "key", "FIA-03", "dtype");
  return v;
}

// The changed call through the C++ API against the float64 reference (FP16 / BF16 outputs).
void expect_cpp_computes(vendor_st::StData& d, const std::string& name) {
  FiaParams& p = d.p;
  ASSERT_EQ(run_fia_cpp(p), kSuccess) << name << ": " << last_error_message();
  const TensorView& out = p.attention_out;
  // INT8 output: computed, not compared here; INT8 / INT4 key / value: compared by the antiquant
  // suites (test_fia_antiquant*, with their own data).
  if (out.dtype != DType::kFloat16 && out.dtype != DType::kBFloat16) return;
  if (p.key[0].dtype != p.query.dtype) return;
  HostTensor ref_out(DType::kFloat64, std::vector<int64_t>(out.dims, out.dims + out.rank));
  FiaParams r = p;
  r.attention_out = ref_out.view();
  HostTensor ref_lse;
  TensorView lv;
  if (p.softmax_lse_flag && p.softmax_lse != nullptr) {
    const TensorView& l = *p.softmax_lse;
    ref_lse = HostTensor(DType::kFloat32, std::vector<int64_t>(l.dims, l.dims + l.rank));
    lv = ref_lse.view();
    r.softmax_lse = &lv;
  }
  ASSERT_EQ(fused_infer_attention_score_v4_ref(r), kSuccess) << name << ": " << last_error_message();
  const Tolerance t = fia_out_tolerance(out.dtype);
  const Stats st = compare(out, ref_out.view(), t);
  EXPECT_TRUE(within(st, t, false)) << name << ": " << st.str();
}

class FiaAuditClauses : public ::testing::TestWithParam<Case> {};

TEST_P(FiaAuditClauses, RejectedByAclnnWithoutWriting) {
  const Case& c = GetParam();
  // The rules the audit's cases reach (the rows of ops/fia/fia_exclusions.h and older rules' clauses).
  const std::set<std::string> rules = {"FIA-03", "FIA-08", "FIA-19", "FIA-21", "FIA-24",
                                       "FIA-41", "FIA-48", "FIA-56", "FIA-57"};
  EXPECT_TRUE(rules.count(c.rule) == 1) << c.rule;
  // The base call is valid.
  {
    auto base = make(c.base);
    ASSERT_TRUE(base);
    ASSERT_EQ(fia_aclnn_call(acl_args_of_params(base->p)), ACLNN_SUCCESS) << "base: " << aclGetRecentErrMsg();
  }
  auto d = make(c.edit ? c.base : apply(c.base, c.change));
  ASSERT_TRUE(d);
  FiaAclArgs a = acl_args_of_params(d->p);
  if (c.edit) c.edit(a);
  TensorView& out = d->p.attention_out;
  const int64_t out_bytes = out.numel() * dtype_size(out.dtype);
  std::vector<uint8_t> out0(static_cast<size_t>(out_bytes), vendor_st::kCanary), lse0;
  std::memset(out.data, vendor_st::kCanary, static_cast<size_t>(out_bytes));
  if (d->p.softmax_lse != nullptr) {
    const int64_t n = d->p.softmax_lse->numel() * 4;
    lse0.assign(static_cast<size_t>(n), vendor_st::kCanary);
    std::memset(d->p.softmax_lse->data, vendor_st::kCanary, static_cast<size_t>(n));
  }
  const aclnnStatus s = fia_aclnn_call(a);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_EQ(s, ACLNN_ERR_PARAM_INVALID) << msg;
  EXPECT_NE(msg.find("aclnnFusedInferAttentionScoreV4"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::string(c.param) + ": " + c.rule), std::string::npos) << msg;
  EXPECT_NE(msg.find(c.words), std::string::npos) << msg;
  EXPECT_EQ(std::memcmp(out.data, out0.data(), out0.size()), 0) << "attentionOut changed by a rejected call";
  if (!lse0.empty()) {
    EXPECT_EQ(std::memcmp(d->p.softmax_lse->data, lse0.data(), lse0.size()), 0) << "softmaxLse changed";
  }
  if (c.cpp_computes) expect_cpp_computes(*d, c.name);
}

INSTANTIATE_TEST_SUITE_P(Clauses, FiaAuditClauses, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// sparseMode 0 with a mask: preTokens = nextTokens = INT64_MAX (the whole band) is accepted, the
// saturated sum staying positive (it wrapped to a negative value and was refused).
TEST(FiaAuditTokens, Int64MaxBandIsTheWholeMask) {
  auto d = make(apply(kBsnd, {{"numHeads", "mask:bool[2, 4, 20] ; numHeads"},
                              {"sparseMode=0", "sparseMode=0 ; preTokens=9223372036854775807 ; "
                                               "nextTokens=9223372036854775807"}}));
  ASSERT_TRUE(d);
  EXPECT_EQ(fia_aclnn_call(acl_args_of_params(d->p)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

// MLA full quant (§2.14, FIA-28 in aclnn): non-packed Q_S = 1 takes sparse 0, Q_S > 1 sparse 3 or
// 9; the C++ API computes the other modes.
TEST(FiaAuditMlaQuant, SparseModeByQueryLength) {
  const struct {
    const char* name;
    int64_t qs, sparse;
  } rows[] = {{"decode_sparse3", 1, 3}, {"mtp_sparse0", 2, 0}};
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    MqCase c;
    c.name = r.name;
    c.layout = "BSND";
    c.B = 2, c.N = 4, c.QS = r.qs;
    c.act_kv = {40, 17};
    c.bs = 128;
    c.sparse = r.sparse;
    auto d = mq_make(c);
    HostTensor out(DType::kBFloat16, d->out_dims), lse(DType::kFloat32, d->lse_dims);
    std::memset(out.data(), vendor_st::kCanary, out.storage.size() * 8);
    std::memset(lse.data(), vendor_st::kCanary, lse.storage.size() * 8);
    const auto out0 = out.storage, lse0 = lse.storage;
    const TensorView lv = lse.view();
    const FiaParams p = mq_params(*d, out.view(), &lv);
    EXPECT_EQ(fia_aclnn_call(acl_args_of_params(p)), ACLNN_ERR_PARAM_INVALID);
    const std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find("sparseMode: FIA-28"), std::string::npos) << msg;
    EXPECT_NE(msg.find("MLA full quant in BSH / BSND"), std::string::npos) << msg;
    EXPECT_TRUE(out.storage == out0 && lse.storage == lse0) << "output changed by a rejected call";
    EXPECT_EQ(run_fia_cpp(p), kSuccess) << last_error_message();
  }
}

// Every row of ops/fia/fia_exclusions.h is hit by a case above: its "<rule> <context> excludes <what>"
// appears in the message of one of them.
TEST(FiaAuditTable, EveryRowHasACase) {
  std::set<std::string> hit;
  for (const Case& c : cases()) {
    auto d = make(c.edit ? c.base : apply(c.base, c.change));
    FiaAclArgs a = acl_args_of_params(d->p);
    if (c.edit) c.edit(a);
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    if (fia_phase1(a, &ws, &ex) != ACLNN_SUCCESS) hit.insert(aclGetRecentErrMsg());
  }
  hit.insert("sparseMode: FIA-28 MLA full quant in BSH / BSND with Q_S = 1 excludes a sparseMode other than 0");
  hit.insert("sparseMode: FIA-28 MLA full quant in BSH / BSND with Q_S > 1 excludes sparseMode 0");
  for (const FiaVendorRule& r : fia_vendor_rules()) {
    const std::string key = std::string(r.rule) + " " + r.context + " excludes " + r.what;
    bool found = false;
    for (const std::string& m : hit) found = found || m.find(key) != std::string::npos;
    EXPECT_TRUE(found) << "no case hits the row: " << key;
  }
}

}  // namespace
}  // namespace mlaops::testing

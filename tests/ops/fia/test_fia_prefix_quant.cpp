// FusedInferAttentionScoreV4 shared prefix with INT8 / INT4 key / value (KV antiquant) and with
// left padding (docs/ops/fused_infer_attention_score.md "Shared prefix"): the operator against the
// float64 reference under every ISA level and 1 / 2 threads, innerPrecise 0 and 1 (the
// dequantised values unrounded on every path, as tests/ops/fia/test_fia_antiquant.cpp).
//   * INT8 and INT4 (INT32 words) prefix and key / value; every antiquant mode the contiguous
//     path has (separate 0 per-channel / per-tensor, 1, 2, 3, key 0 + value 1; combined 0 / 1),
//     with and without offsets; per-token arrays of Lp + KV_S positions (the prefix's first);
//   * decode and prefill (Q_S > 1: BF16, modes 0 / 1), GQA, BSH / BSND / BNSD, Lp 0 / partial /
//     full, batches without own rows, explicit masks and pseShift over the prefix columns, KV
//     splits (one item per thread);
//   * left padding (kvPaddingSize / queryPaddingSize; the C++ API: the vendor excludes the pair,
//     FIA-24): FP16 / BF16 and INT8, mask and pse at the columns [prefix | padded KV], a decode
//     window starting before 0 (the prefix alone);
//   * actualSharedPrefixLen without the prefix tensors is ignored (the vendor's system test 274);
//   * the rejections that stay (status, message naming operator / parameter / rule, output bytes
//     unchanged).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
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

using fia_test::HostTensor;

enum class Kv { kHalf, kInt8, kInt4 };

struct PqCase {
  std::string name;
  DType dt = DType::kBFloat16;
  Kv kv = Kv::kInt8;
  std::string layout = "BNSD";
  int64_t B = 2, N = 4, KVN = 2, S = 1, L = 37, D = 64;
  std::vector<int64_t> act_kv;  // empty: L for every batch
  std::vector<int64_t> act_q;   // empty: S for every batch (passed only with query padding)
  int64_t Sp = 20, Lp = -1;     // prefix extent, actualSharedPrefixLen (-1: not passed, Lp = Sp)
  int64_t mode_k = 0, mode_v = 0;
  bool combined = false, offset = true, per_tensor = false;
  bool mask = false;            // a random (B, 1, S, Lp + L) mask, column 0 never masked
  bool pse = false;             // a random (B or 1, N, S, Lp + L) pseShift
  bool pse_bcast = false;
  int64_t sparse = 0, pre = 2147483647, next = 2147483647;
  int64_t kv_pad = -1, q_pad = -1;  // left padding values (-1: no tensor)
  uint32_t seed = 1;
};

void PrintTo(const PqCase& c, std::ostream* os) { *os << c.name; }

int64_t lp_of(const PqCase& c) { return c.Lp < 0 ? c.Sp : c.Lp; }
bool quant(const PqCase& c) { return c.kv != Kv::kHalf; }

struct PqData {
  HostTensor q, k, v, kp, vp, out_op, out_ref, lse_op, lse_ref, ks, ko, vs, vo, mask, pse;
  HostTensor kv_pad, q_pad;
  std::vector<int64_t> akv, aq, len;
  TensorView vkp, vvp, vks, vko, vvs, vvo, vmask, vpse, vlse_op, vlse_ref, vkv_pad, vq_pad;
  FiaParams op, ref;
};

// A key-like tensor of the case's layout with `b` batches and `s` positions: the query dtype,
// INT8 in [-127, 127] or INT32 words of 8 random nibbles.
HostTensor kv_tensor(const PqCase& c, int64_t b, int64_t s, std::mt19937& g) {
  const int64_t d = c.kv == Kv::kInt4 ? c.D / 8 : c.D;
  std::vector<int64_t> dims = c.layout == "BNSD"   ? std::vector<int64_t>{b, c.KVN, s, d}
                              : c.layout == "BSND" ? std::vector<int64_t>{b, s, c.KVN, d}
                                                   : std::vector<int64_t>{b, s, c.KVN * d};
  const DType dt = c.kv == Kv::kHalf ? c.dt : c.kv == Kv::kInt8 ? DType::kInt8 : DType::kInt32;
  HostTensor t(dt, dims);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (c.kv == Kv::kInt4) {
      uint32_t w = 0;
      for (int k = 0; k < 8; ++k) w |= static_cast<uint32_t>(g() % 16) << (4 * k);
      t.set_flat(i, static_cast<double>(static_cast<int32_t>(w)));
    } else {
      t.set_flat(i, c.kv == Kv::kInt8 ? std::round(uni(g, -127, 127)) : uni(g, -1, 1));
    }
  }
  return t;
}

// Scale (or offset) of key / value for `mode`: per-token arrays of Lp + L positions.
HostTensor aq_param(const PqCase& c, int64_t mode, bool off, std::mt19937& g) {
  const int64_t lead = c.combined ? 2 : 1, S2 = lp_of(c) + c.L;
  HostTensor t;
  switch (mode) {
    case 0:
      t = c.per_tensor ? HostTensor(c.dt, {lead}) : HostTensor(c.dt, {lead, c.KVN, 1, c.D});
      break;
    case 1: t = c.S > 1 && !c.combined ? HostTensor(DType::kFloat32, {c.B, S2}) : HostTensor(DType::kFloat32, {lead, c.B, S2}); break;
    case 2: t = HostTensor(c.dt, {c.KVN}); break;
    default: t = HostTensor(DType::kFloat32, {c.B, c.KVN, S2}); break;
  }
  const double range = c.kv == Kv::kInt4 ? 7.0 : 127.0;
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set_flat(i, off ? std::round(uni(g, -3, 3)) + (i % 3 == 0 ? 0.5 : 0.0) : uni(g, 0.5, 1.5) / range);
  return t;
}

std::unique_ptr<PqData> setup(const PqCase& c) {
  auto d = std::make_unique<PqData>();
  std::mt19937 g(c.seed * 7717 + 11);
  const int64_t Lp = lp_of(c), S2 = Lp + c.L;
  d->akv = c.act_kv.empty() ? std::vector<int64_t>(static_cast<size_t>(c.B), c.L) : c.act_kv;
  d->aq = c.act_q.empty() ? std::vector<int64_t>(static_cast<size_t>(c.B), c.S) : c.act_q;
  aq_make_query_io(d.get(), c.dt, c.layout, c.B, c.N, c.S, c.D, g);
  d->k = kv_tensor(c, c.B, c.L, g);
  d->v = kv_tensor(c, c.B, c.L, g);
  d->kp = kv_tensor(c, 1, c.Sp, g);
  d->vp = kv_tensor(c, 1, c.Sp, g);
  if (quant(c)) {
    d->ks = aq_param(c, c.mode_k, false, g);
    if (c.offset) d->ko = aq_param(c, c.mode_k, true, g);
    if (!c.combined) {
      d->vs = aq_param(c, c.mode_v, false, g);
      if (c.offset) d->vo = aq_param(c, c.mode_v, true, g);
    }
  }
  if (c.sparse >= 2) {  // the 2048 template (strict upper triangle); the rule is analytic
    d->mask = HostTensor(DType::kBool, {2048, 2048});
    for (int64_t i = 0; i < d->mask.numel(); ++i) d->mask.set_flat(i, i % 2048 > i / 2048 ? 1.0 : 0.0);
  } else if (c.mask) {
    d->mask = HostTensor(DType::kBool, {c.B, 1, c.S, S2});
    for (int64_t i = 0; i < d->mask.numel(); ++i) d->mask.set_flat(i, i % S2 != 0 && g() % 4 == 0 ? 1.0 : 0.0);
  }
  if (c.pse) {
    d->pse = HostTensor(c.dt, {c.pse_bcast ? 1 : c.B, c.N, c.S, S2});
    for (int64_t i = 0; i < d->pse.numel(); ++i) d->pse.set_flat(i, uni(g, -2, 2));
  }
  if (c.kv_pad >= 0) d->kv_pad = HostTensor(DType::kInt64, {1}, static_cast<double>(c.kv_pad));
  if (c.q_pad >= 0) d->q_pad = HostTensor(DType::kInt64, {1}, static_cast<double>(c.q_pad));
  d->len = {Lp};
  d->vkp = d->kp.view();
  d->vvp = d->vp.view();
  d->vks = d->ks.view();
  d->vko = d->ko.view();
  d->vvs = d->vs.view();
  d->vvo = d->vo.view();
  d->vmask = d->mask.view();
  d->vpse = d->pse.view();
  d->vlse_op = d->lse_op.view();
  d->vlse_ref = d->lse_ref.view();
  d->vkv_pad = d->kv_pad.view();
  d->vq_pad = d->q_pad.view();
  for (int w = 0; w < 2; ++w) {
    FiaParams& p = w == 0 ? d->op : d->ref;
    aq_bind_common(&p, *d, w == 0, c.N, c.KVN, c.D, c.layout);
    if (!c.act_q.empty()) p.actual_seq_lengths = &d->aq;
    p.softmax_lse = w == 0 ? &d->vlse_op : &d->vlse_ref;
    p.key_shared_prefix = &d->vkp;
    p.value_shared_prefix = &d->vvp;
    if (c.Lp >= 0) p.actual_shared_prefix_len = &d->len;
    p.sparse_mode = c.sparse;
    p.pre_tokens = c.pre;
    p.next_tokens = c.next;
    if (c.mask || c.sparse >= 2) p.atten_mask = &d->vmask;
    if (c.pse) p.pse_shift = &d->vpse;
    if (c.kv_pad >= 0) p.kv_padding_size = &d->vkv_pad;
    if (c.q_pad >= 0) p.query_padding_size = &d->vq_pad;
    if (!quant(c)) continue;
    aq_bind_antiquant(&p, c.combined, c.offset, c.mode_k, c.mode_v, &d->vks, &d->vko, &d->vvs, &d->vvo);
  }
  return d;
}

// run_fia_cpp, uni and the antiquant tolerances (kLse*, out_tol): tests/ops/fia/fia_antiquant_cases.h

bool plan_has(const FiaParams& op, const char* text) {
  OpPlan plan;
  if (fused_infer_attention_score_v4_plan(op, &plan) != kSuccess) return false;
  return plan.explain().find(text) != std::string::npos;
}

void check_case(const PqCase& c) {
  SCOPED_TRACE(c.name);
  const auto d = setup(c);
  FiaParams& op = d->op;
  ASSERT_EQ(fused_infer_attention_score_v4_ref(d->ref), kSuccess) << last_error_message();
  const HostTensor& out_ref = d->out_ref;
  const HostTensor& lse_ref = d->lse_ref;
  double worst_out = 0, worst_lse = 0;
  int runs = 0;
  for (int64_t ip : {0, 1}) {
    if (!quant(c) && ip == 1) continue;  // FP16 / BF16 key / value: the same math
    op.inner_precise = ip;
    for (Isa isa : test_isas()) {
      if (!set_isa(isa)) continue;
      const bool place = plan_has(op, "row(s): attn_avx512_decode_i8");
      for (int threads : {1, 2}) {
        set_num_threads(threads);
        std::memset(d->out_op.data(), 0xEE, d->out_op.storage.size() * 8);
        std::memset(d->lse_op.data(), 0xEE, d->lse_op.storage.size() * 8);
        const Status s = run_fia_cpp(op);
        set_num_threads(0);
        ASSERT_EQ(s, kSuccess) << isa_name(isa) << ": " << last_error_message();
        const std::string where = std::string(isa_name(isa)) + " innerPrecise " + std::to_string(ip) +
                                  (place ? " (in place)" : "") + " threads " + std::to_string(threads);
        const Stats st = compare(d->out_op.view(), out_ref.view(), out_tol(c.dt));
        EXPECT_TRUE(within(st, out_tol(c.dt), false)) << where << ": " << st.str();
        worst_out = std::max(worst_out, st.max_abs);
        for (int64_t i = 0; i < lse_ref.numel(); ++i) {
          const double x = d->lse_op.flat(i), y = lse_ref.flat(i);
          if (std::isinf(y)) {
            EXPECT_EQ(x, y) << where << " lse " << i;
          } else {
            EXPECT_NEAR(x, y, kLseRel * std::fabs(y) + kLseAbs) << where << " lse " << i;
            worst_lse = std::max(worst_lse, std::fabs(x - y));
          }
        }
        ++runs;
      }
    }
  }
  op.inner_precise = 0;
  reset_isa();
  EXPECT_GT(runs, 0);
  std::printf("[fia-prefix-quant] %s: %d runs, worst out abs %.3g, lse abs %.3g\n", c.name.c_str(), runs, worst_out,
              worst_lse);
}

std::vector<PqCase> cases() {
  std::vector<PqCase> v;
  auto add = [&](PqCase c) {
    c.seed = static_cast<uint32_t>(v.size() + 1);
    v.push_back(c);
  };
  PqCase c;
  // ---- INT8, decode: every mode ----
  c = PqCase();
  c.name = "int8_decode_bsh_gqa4_mode0_channel";
  c.layout = "BSH";
  c.B = 3, c.N = 8, c.KVN = 2, c.L = 40, c.Sp = 50, c.Lp = 33;
  c.act_kv = {40, 0, 17};
  add(c);
  c = PqCase();
  c.name = "int8_decode_bnsd_fp16_mode0_tensor_no_offset";
  c.dt = DType::kFloat16;
  c.per_tensor = true;
  c.offset = false;
  c.Sp = 30;
  add(c);
  c = PqCase();
  c.name = "int8_decode_bsnd_mode1_token_partial";
  c.layout = "BSND";
  c.mode_k = c.mode_v = 1;
  c.Sp = 45, c.Lp = 21;
  c.act_kv = {37, 5};
  add(c);
  c = PqCase();
  c.name = "int8_decode_bnsd_mode2_head_pse";
  c.dt = DType::kFloat16;
  c.mode_k = c.mode_v = 2;
  c.offset = false;
  c.N = 16, c.KVN = 2, c.D = 128, c.L = 64, c.Sp = 96, c.Lp = 48;
  c.pse = true;
  add(c);
  c = PqCase();
  c.name = "int8_decode_bsh_mode3_token_head_mask";
  c.layout = "BSH";
  c.mode_k = c.mode_v = 3;
  c.N = 6, c.KVN = 3, c.Sp = 25;
  c.mask = true;
  add(c);
  c = PqCase();
  c.name = "int8_decode_bnsd_key0_value1_lp0";
  c.dt = DType::kFloat16;
  c.mode_k = 0;
  c.mode_v = 1;
  c.Lp = 0;
  add(c);
  c = PqCase();
  c.name = "int8_decode_bsh_combined0";
  c.layout = "BSH";
  c.combined = true;
  c.Sp = 64, c.Lp = 64;
  add(c);
  c = PqCase();
  c.name = "int8_decode_bnsd_combined1_lp_full";
  c.combined = true;
  c.mode_k = c.mode_v = 1;
  c.N = 5, c.KVN = 5, c.B = 1, c.L = 70;
  add(c);
  c = PqCase();  // one item: KV splits over each source (2 threads)
  c.name = "int8_decode_b1_mqa_kv_splits_mode1";
  c.B = 1, c.N = 8, c.KVN = 1, c.L = 300, c.D = 128, c.Sp = 500, c.Lp = 400;
  c.mode_k = c.mode_v = 1;
  add(c);
  c = PqCase();
  c.name = "int8_decode_b1_mqa_kv_splits_mode0_pse";
  c.B = 1, c.N = 8, c.KVN = 1, c.L = 260, c.D = 128, c.Sp = 300;
  c.pse = true;
  c.pse_bcast = true;
  add(c);
  // ---- INT8, prefill (BF16 query, modes 0 / 1) ----
  c = PqCase();
  c.name = "int8_prefill_bsh_mode0_causal";
  c.layout = "BSH";
  c.S = 4, c.L = 30, c.Sp = 24, c.Lp = 19;
  c.sparse = 3;
  c.mask = false;
  add(c);
  c = PqCase();
  c.name = "int8_prefill_bsnd_mode1_mask";
  c.layout = "BSND";
  c.S = 3, c.mode_k = c.mode_v = 1;
  c.mask = true;
  c.sparse = 1;
  c.act_kv = {37, 12};
  add(c);
  // ---- INT4 (INT32 words, decode) ----
  c = PqCase();
  c.name = "int4_decode_bnsd_mode0";
  c.kv = Kv::kInt4;
  c.Sp = 40, c.Lp = 29;
  add(c);
  c = PqCase();
  c.name = "int4_decode_bsh_mode1_fp16";
  c.kv = Kv::kInt4;
  c.layout = "BSH";
  c.dt = DType::kFloat16;
  c.mode_k = c.mode_v = 1;
  c.act_kv = {37, 0};
  add(c);
  c = PqCase();
  c.name = "int4_decode_bsnd_mode3_mask";
  c.kv = Kv::kInt4;
  c.layout = "BSND";
  c.mode_k = c.mode_v = 3;
  c.mask = true;
  add(c);
  c = PqCase();
  c.name = "int4_decode_bnsd_key0_value1";
  c.kv = Kv::kInt4;
  c.mode_k = 0;
  c.mode_v = 1;
  c.D = 128, c.N = 8, c.KVN = 1;
  add(c);
  c = PqCase();
  c.name = "int4_decode_bnsd_combined1";
  c.kv = Kv::kInt4;
  c.combined = true;
  c.mode_k = c.mode_v = 1;
  c.offset = false;
  add(c);
  // ---- left padding with a prefix (the C++ API) ----
  c = PqCase();
  c.name = "pad_int8_decode_bnsd_mode2_mask_pse";
  c.dt = DType::kFloat16;
  c.mode_k = c.mode_v = 2;
  c.B = 3, c.N = 8, c.KVN = 2, c.L = 50, c.Sp = 30, c.Lp = 22;
  c.act_kv = {30, 45, 0};
  c.kv_pad = 4;
  c.mask = true;
  c.pse = true;
  add(c);
  c = PqCase();  // batch 1's window would start before 0: its own rows are dropped, the prefix stays
  c.name = "pad_int8_decode_bsh_mode0_window_before_0";
  c.layout = "BSH";
  c.L = 40;
  c.act_kv = {20, 39};
  c.kv_pad = 5;
  add(c);
  c = PqCase();
  c.name = "pad_bf16_decode_bsnd_gqa_mask";
  c.kv = Kv::kHalf;
  c.layout = "BSND";
  c.B = 3, c.N = 8, c.KVN = 2, c.L = 60, c.Sp = 40, c.Lp = 35;
  c.act_kv = {10, 55, 33};
  c.kv_pad = 3;
  c.mask = true;
  c.pse = true;
  c.pse_bcast = true;
  add(c);
  c = PqCase();  // query and KV padding, sparse 0 with a band that the padding makes ignored
  c.name = "pad_fp16_prefill_bnsd_q_and_kv_sparse0";
  c.kv = Kv::kHalf;
  c.dt = DType::kFloat16;
  c.S = 12, c.L = 40, c.Sp = 25, c.Lp = 18;
  c.act_q = {7, 12};
  c.act_kv = {30, 21};
  c.q_pad = 0, c.kv_pad = 6;
  c.mask = true;
  c.pre = 3, c.next = 1;
  c.pse = true;
  add(c);
  c = PqCase();
  c.name = "pad_bf16_prefill_bsh_kv_causal";
  c.kv = Kv::kHalf;
  c.layout = "BSH";
  c.S = 9, c.L = 50, c.Sp = 16;
  c.act_kv = {41, 9};
  c.kv_pad = 2;
  c.sparse = 3;
  add(c);
  c = PqCase();  // one item per thread: KV splits over the prefix and the padded window
  c.name = "pad_bf16_decode_b1_kv_splits";
  c.kv = Kv::kHalf;
  c.B = 1, c.N = 8, c.KVN = 1, c.L = 400, c.D = 128, c.Sp = 300, c.Lp = 260;
  c.act_kv = {350};
  c.kv_pad = 17;
  c.pse = true;
  add(c);
  return v;
}

class FiaPrefixQuant : public ::testing::TestWithParam<PqCase> {};

TEST_P(FiaPrefixQuant, MatchesReference) { check_case(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cases, FiaPrefixQuant, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<PqCase>& i) { return i.param.name; });

// The plan takes the prefix work range (the query rows of every batch against the prefix, once
// per KV head; ops/fia/fia_prefix.h) where it qualifies, and the per-batch form elsewhere; both
// forms are compared with the reference above.
TEST(FiaPrefixQuantPlan, WorkRangeWhereItQualifies) {
  const char* kRange = "shared prefix work range";
  int grouped = 0;
  for (const PqCase& c : cases()) {
    const auto d = setup(c);
    d->op.inner_precise = 0;
    const bool g = plan_has(d->op, kRange);
    grouped += g;
    const bool token = quant(c) && (c.mode_k % 2 == 1 || c.mode_v % 2 == 1);  // modes 1 / 3: per-batch scales
    if (c.B < 2 || token) {
      EXPECT_FALSE(g) << c.name;
    }
    if (c.name == "int8_decode_bsh_gqa4_mode0_channel" || c.name == "pad_int8_decode_bnsd_mode2_mask_pse" ||
        c.name == "pad_bf16_decode_bsnd_gqa_mask" || c.name == "int8_prefill_bsh_mode0_causal" ||
        c.name == "int4_decode_bnsd_mode0") {
      EXPECT_TRUE(g) << c.name;
    }
    if (c.name == "pad_fp16_prefill_bnsd_q_and_kv_sparse0") {
      EXPECT_FALSE(g) << c.name << ": BNSD rows of two batches";
    }
  }
  EXPECT_GE(grouped, 8);
}

// The quantised prefix equals the prefix copied into every batch (key / value of Lp + L
// positions, the same per-token arrays): an independent check of the reference's concatenation
// and of the per-token addressing, operator against operator.
TEST(FiaPrefixQuantEquivalence, SameAsCopiedPrefix) {
  for (int64_t mode : {0, 1, 3}) {
    SCOPED_TRACE(mode);
    PqCase c;
    c.name = "equiv";
    c.layout = "BSND";
    c.mode_k = c.mode_v = mode;
    c.Sp = 30, c.Lp = 23;
    c.act_kv = {37, 9};
    const auto d = setup(c);
    ASSERT_EQ(run_fia_cpp(d->op), kSuccess) << last_error_message();
    const int64_t Lp = 23, S2 = Lp + c.L;
    HostTensor ke(DType::kInt8, {c.B, S2, c.KVN, c.D}), ve(DType::kInt8, {c.B, S2, c.KVN, c.D});
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t j = 0; j < S2; ++j)
        for (int64_t h = 0; h < c.KVN; ++h)
          for (int64_t x = 0; x < c.D; ++x) {
            const bool pre = j < Lp;
            ke.set({b, j, h, x}, pre ? d->kp.get({0, j, h, x}) : d->k.get({b, j - Lp, h, x}));
            ve.set({b, j, h, x}, pre ? d->vp.get({0, j, h, x}) : d->v.get({b, j - Lp, h, x}));
          }
    std::vector<int64_t> akv = {Lp + 37, Lp + 9};
    HostTensor out(c.dt, {c.B, c.S, c.N, c.D}), lse(DType::kFloat32, {c.B, c.N, c.S, 1});
    TensorView vlse = lse.view();
    FiaParams e = d->op;
    e.key = {ke.view()};
    e.value = {ve.view()};
    e.key_shared_prefix = e.value_shared_prefix = nullptr;
    e.actual_shared_prefix_len = nullptr;
    e.actual_seq_lengths_kv = &akv;
    e.attention_out = out.view();
    e.softmax_lse = &vlse;
    ASSERT_EQ(run_fia_cpp(e), kSuccess) << last_error_message();
    // the same values up to the order of the online softmax (the prefix runs as its own KV range)
    const Stats st = compare(d->out_op.view(), out.view(), out_tol(c.dt));
    EXPECT_TRUE(within(st, out_tol(c.dt), false)) << st.str();
    for (int64_t i = 0; i < lse.numel(); ++i) EXPECT_NEAR(lse.flat(i), d->lse_op.flat(i), 1e-5) << i;
  }
}

// actualSharedPrefixLen without the prefix tensors is ignored (the vendor's system test 274 passes
// one with neither tensor): the same bytes as the call without it, C++ API and aclnn.
TEST(FiaPrefixQuantRules, LengthWithoutTensorsIsIgnored) {
  PqCase c;
  c.name = "len_alone";
  c.mode_k = c.mode_v = 2;
  c.offset = false;
  c.dt = DType::kFloat16;
  c.kv_pad = 3;
  c.act_kv = {30, 20};
  const auto d = setup(c);
  d->op.key_shared_prefix = d->op.value_shared_prefix = nullptr;
  d->op.actual_shared_prefix_len = nullptr;
  ASSERT_EQ(run_fia_cpp(d->op), kSuccess) << last_error_message();
  const std::vector<uint64_t> without = d->out_op.storage;
  std::vector<int64_t> len = {15};
  d->op.actual_shared_prefix_len = &len;
  std::memset(d->out_op.data(), 0, d->out_op.storage.size() * 8);
  ASSERT_EQ(run_fia_cpp(d->op), kSuccess) << last_error_message();
  EXPECT_TRUE(d->out_op.storage == without);
  std::memset(d->out_op.data(), 0, d->out_op.storage.size() * 8);
  FiaAclArgs a = acl_args_of_params(d->op);
  a.has_prefix = true;
  a.prefix = {15};
  ASSERT_EQ(fia_aclnn_call(a), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_TRUE(d->out_op.storage == without);
}

// ---- rejections: status, message (operator, parameter, rule), output bytes unchanged ----

struct Want {
  Status code;
  const char* param;
  const char* rule;
};

void expect_cpp_rejected(const PqCase& c, const Want& w, const std::function<void(PqData&)>& mutate) {
  SCOPED_TRACE(std::string(w.rule) + " " + w.param);
  const auto d = setup(c);
  mutate(*d);
  std::memset(d->out_op.data(), 0x5A, d->out_op.storage.size() * 8);
  std::memset(d->lse_op.data(), 0x5A, d->lse_op.storage.size() * 8);
  const std::vector<uint64_t> out0 = d->out_op.storage, lse0 = d->lse_op.storage;
  EXPECT_EQ(run_fia_cpp(d->op), w.code);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find("fused_infer_attention_score_v4"), std::string::npos) << msg;
  EXPECT_NE(msg.find(w.param), std::string::npos) << msg;
  EXPECT_NE(msg.find(w.rule), std::string::npos) << msg;
  EXPECT_TRUE(d->out_op.storage == out0 && d->lse_op.storage == lse0) << "output changed by a rejected call";
}

TEST(FiaPrefixQuantRules, FIA21_PerTokenExtentIncludesThePrefix) {
  PqCase c;
  c.name = "extent";
  c.mode_k = c.mode_v = 1;
  c.Sp = 20, c.Lp = 12;
  // (1, B, L): the own positions only; the prefix's come first (Lp + L)
  expect_cpp_rejected(c, {kParamInvalid, "keyAntiquantScaleOptional", "FIA-21"}, [&](PqData& d) {
    d.ks = HostTensor(DType::kFloat32, {1, c.B, c.L}, 0.01);
    d.vks = d.ks.view();
  });
  // (1, B, Sp + L): the prefix tensor's extent instead of actualSharedPrefixLen's
  expect_cpp_rejected(c, {kParamInvalid, "keyAntiquantScaleOptional", "actualSharedPrefixLen"}, [&](PqData& d) {
    d.ks = HostTensor(DType::kFloat32, {1, c.B, c.Sp + c.L}, 0.01);
    d.vks = d.ks.view();
  });
  c.mode_k = c.mode_v = 3;
  expect_cpp_rejected(c, {kParamInvalid, "valueAntiquantScaleOptional", "FIA-21"}, [&](PqData& d) {
    d.vs = HostTensor(DType::kFloat32, {c.B, c.KVN, c.L}, 0.01);
    d.vvs = d.vs.view();
    d.vo = HostTensor(DType::kFloat32, {c.B, c.KVN, c.L});
    d.vvo = d.vo.view();
  });
}

TEST(FiaPrefixQuantRules, FIA46_PrefixDtypeIsTheKeyDtype) {
  PqCase c;
  c.name = "dtype";
  expect_cpp_rejected(c, {kParamInvalid, "keySharedPrefixOptional", "FIA-46 dtype"}, [](PqData& d) {
    d.vkp.dtype = DType::kBFloat16;  // INT8 key with a BF16 prefix
  });
  c.kv = Kv::kInt4;
  expect_cpp_rejected(c, {kParamInvalid, "valueSharedPrefixOptional", "FIA-46 dtype"}, [](PqData& d) {
    d.vvp.dtype = DType::kInt8;  // INT32 (INT4) value with an INT8 prefix
  });
}

TEST(FiaPrefixQuantRules, FIA41_PerTokenScalesWithLeftPadding) {
  PqCase c;
  c.name = "pad_token";
  c.mode_k = c.mode_v = 1;
  c.kv_pad = 2;
  c.act_kv = {30, 20};
  expect_cpp_rejected(c, {kParamInvalid, "kvPaddingSizeOptional", "FIA-41 left padding excludes"}, [](PqData&) {});
}

TEST(FiaPrefixQuantRules, FIA33_Int4Rules) {
  PqCase c;
  c.name = "int4";
  c.kv = Kv::kInt4;
  c.kv_pad = 2;
  c.act_kv = {30, 20};
  expect_cpp_rejected(c, {kParamInvalid, "kvPaddingSizeOptional", "FIA-33"}, [](PqData&) {});
  c.kv_pad = -1;
  c.S = 2;
  c.dt = DType::kBFloat16;
  expect_cpp_rejected(c, {kParamInvalid, "query", "FIA-33"}, [](PqData&) {});
}

TEST(FiaPrefixQuantRules, FIA45_OneTensorOnly) {
  PqCase c;
  c.name = "one";
  expect_cpp_rejected(c, {kParamInvalid, "valueSharedPrefixOptional", "FIA-45 keySharedPrefix and valueSharedPrefix come together"},
                      [](PqData& d) { d.op.value_shared_prefix = nullptr; });
  expect_cpp_rejected(c, {kParamInvalid, "keySharedPrefixOptional", "FIA-45 keySharedPrefix and valueSharedPrefix come together"},
                      [](PqData& d) { d.op.key_shared_prefix = nullptr; });
}

// FIA-24: the vendor rejects a shared prefix with left padding (its decode tiling: "shared prefix
// with kv padding is not supported"); the aclnn layer does too, the C++ API computes the pair
// (the cases above). A padding that does not apply (kvPaddingSize without actualSeqLengthsKv) is
// no left padding.
TEST(FiaPrefixQuantRules, FIA24_AclnnRejectsPrefixWithLeftPadding) {
  for (Kv kv : {Kv::kHalf, Kv::kInt8}) {
    PqCase c;
    c.name = "aclnn_pad";
    c.kv = kv;
    c.mode_k = c.mode_v = 2;
    c.dt = DType::kFloat16;
    c.kv_pad = 3;
    c.act_kv = {30, 20};
    const auto d = setup(c);
    std::memset(d->out_op.data(), 0x5A, d->out_op.storage.size() * 8);
    const std::vector<uint64_t> out0 = d->out_op.storage;
    FiaAclArgs a = acl_args_of_params(d->op);
    EXPECT_EQ(fia_aclnn_call(a), ACLNN_ERR_PARAM_INVALID);
    const std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find("aclnnFusedInferAttentionScoreV4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("keySharedPrefixOptional: FIA-24"), std::string::npos) << msg;
    EXPECT_TRUE(d->out_op.storage == out0);
    EXPECT_EQ(run_fia_cpp(d->op), kSuccess) << last_error_message();  // the C++ API computes it
  }
  // kvPaddingSize without actualSeqLengthsKv: no padding applies, the aclnn call succeeds
  PqCase c;
  c.name = "aclnn_pad_unused";
  c.kv_pad = 3;
  const auto d = setup(c);
  d->op.actual_seq_lengths_kv = nullptr;
  EXPECT_EQ(fia_aclnn_call(acl_args_of_params(d->op)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

// The C API carries an INT8 prefix with per-token parameters (the vendor's system tests 234 /
// 292 / 299 run through it too): the same bytes as the C++ API.
TEST(FiaPrefixQuantApi, AclnnV4MatchesCpp) {
  PqCase c;
  c.name = "api";
  c.layout = "BSND";
  c.mode_k = c.mode_v = 1;
  c.Sp = 40, c.Lp = 31;
  const auto d = setup(c);
  ASSERT_EQ(run_fia_cpp(d->op), kSuccess) << last_error_message();
  const std::vector<uint64_t> cpp = d->out_op.storage, cpp_lse = d->lse_op.storage;
  std::memset(d->out_op.data(), 0, d->out_op.storage.size() * 8);
  std::memset(d->lse_op.data(), 0, d->lse_op.storage.size() * 8);
  ASSERT_EQ(fia_aclnn_call(acl_args_of_params(d->op)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_TRUE(d->out_op.storage == cpp);
  EXPECT_TRUE(d->lse_op.storage == cpp_lse);
}

}  // namespace
}  // namespace mlaops::testing

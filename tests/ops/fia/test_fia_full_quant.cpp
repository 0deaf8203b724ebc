// FusedInferAttentionScoreV4 INT8 full quantisation (INT8 query / key / value, deqScale1 /
// quantScale1 / deqScale2; rules FIA-30..32; docs/ops/fused_infer_attention_score.md "Full
// quantisation (INT8 query)") against the float64 reference (reference/fia_full_quant_ref.h)
// under every ISA level of this host and 1 / 2 threads: GQA / MHA, B 1..3, Q_S 2..300, KV_S up to
// 2600 (three 1024-position chunks), D 32 / 64 / 128, BSH / BSND / BNSD and output variants,
// sparse 0..4 with explicit masks and the template, FP16 pseShift, softmaxLse, UINT64 and FP32
// dequant scales, FP16 and INT8 output (per tensor / per channel, with and without offset); the
// C API with vendor-style UINT64 scales (trans_19bit); then every FIA-30..32 rejection (status,
// message, outputs untouched).
//
// The fast path follows the reference's rounding steps; the integer dots and the score
// roundings are identical (both reproduce fp16(fp16(fp32(qk * deq1)) * fp16(scale))), so what
// differs is the exponential (fp32 polynomial vs double exp, and s - m in fp32) where a P value
// sits on an FP16 or integer rounding boundary, and the fp32 accumulation of o and l. Asserted
// per run (kMax* below): FP16 output within 1 FP16 ulp of the exact (FP64-output) reference value
// (+1e-6) for every element; INT8 output |op - ref| <= 1 with at
// most 0.1 % differing; softmaxLse within 1e-5 relative. Measured over every case, ISA level
// (scalar, avx2, avx512) and thread count: max 0.502 ulp (the final FP16 rounding), none beyond
// 1 ulp, no INT8 difference, lse relative error <= 2.4e-7; P against the double-exp emulation
// (RowsFollowTheRoundingSteps): 0 flips in 1.02e6 scores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "kernels/cpu/flash_quant.h"
#include "mlaops/numeric.h"
#include "mlaops/plan.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_entry_call.h"
#include "reference/fia_test_data.h"
#include "reference/fused_infer_attention_score_v4_ref.h"
#include "tests/support/isa_list.h"
#include "tests/support/kernel_rows.h"

namespace mlaops::testing {
namespace {

using fia_test::HostTensor;
constexpr DType I8 = DType::kInt8;
constexpr DType F16 = DType::kFloat16;
constexpr DType F32 = DType::kFloat32;
constexpr DType U64 = DType::kUInt64;

// Tolerances (measured maxima in the file header / docs).
constexpr double kMaxUlps = 1.0;          // FP16 output: per element, in FP16 ulps of |ref| (+1e-6)
constexpr double kMaxInt8DiffPct = 0.1;   // INT8 output: share of elements differing (by 1)

enum class Mask { kNone, kRank2, kRank3, kRank4Bcast, kTemplate };

struct FqCase {
  std::string name;
  int64_t B = 1, N = 1, KVN = 1, Sq = 2, Skv = 2, D = 32;
  std::string layout = "BSND";
  std::vector<int64_t> act_q, act_kv;
  int64_t sparse = 0, pre = 2147483647, next = 2147483647;
  Mask mask = Mask::kNone;
  bool pse = false, pse_bcast = false, lse = false;
  DType deq_dtype = U64;
  bool int8_out = false, offset = false, channel = false;
  uint32_t seed = 1;
};
void PrintTo(const FqCase& c, std::ostream* os) { *os << c.name; }

FqCase fq(const char* name, int64_t B, int64_t N, int64_t KVN, int64_t Sq, int64_t Skv, int64_t D, const char* layout) {
  FqCase c;
  c.name = name;
  c.B = B, c.N = N, c.KVN = KVN, c.Sq = Sq, c.Skv = Skv, c.D = D;
  c.layout = layout;
  return c;
}

// The float32 bit pattern of v in the low 32 bits of a UINT64 with the low 13 mantissa bits
// cleared: the vendor tool trans_19bit.
uint64_t trans_19bit(float v) {
  uint32_t b = 0;
  std::memcpy(&b, &v, 4);
  return static_cast<uint64_t>(b & 0xffffe000u);
}

HostTensor scale_tensor(DType dt, float v, bool truncate_u64 = true) {
  HostTensor t(dt, {1});
  if (dt == U64) {
    uint32_t b = 0;
    std::memcpy(&b, &v, 4);
    const uint64_t u = truncate_u64 ? trans_19bit(v) : static_cast<uint64_t>(b);
    std::memcpy(t.data(), &u, 8);
  } else {
    t.set_flat(0, v);
  }
  return t;
}

// One materialised case: inputs in the case's layout, scales, mask, pse, and the outputs.
struct FqData {
  FqCase c;
  FiaLayout in_l = FiaLayout::kBSH, out_l = FiaLayout::kBSH;
  HostTensor q, k, v, mask, pse, deq1, qs1, deq2, qs2, qo2, out, lse;
  TensorView mask_v, pse_v, deq1_v, qs1_v, deq2_v, qs2_v, qo2_v, lse_v;
  std::vector<int64_t> asl_q, asl_kv;
  FiaParams params;

  // (Re)binds params to the tensors, with an output of dtype out_dt.
  void bind(DType out_dt) {
    out = HostTensor(out_dt, fia_test::layout_dims(out_l, c.B, c.N, c.Sq, c.D));
    lse = HostTensor(F32, {c.B, c.N, c.Sq, 1});
    FiaParams& p = params;
    p = FiaParams();
    p.query = q.view();
    p.key = {k.view()};
    p.value = {v.view()};
    p.attention_out = out.view();
    p.num_heads = c.N;
    p.num_key_value_heads = c.KVN;
    p.scale_value = 1.0 / std::sqrt(static_cast<double>(c.D));
    p.input_layout = c.layout;
    p.sparse_mode = c.sparse;
    p.pre_tokens = c.pre;
    p.next_tokens = c.next;
    if (!c.act_q.empty()) p.actual_seq_lengths = &asl_q;
    if (!c.act_kv.empty()) p.actual_seq_lengths_kv = &asl_kv;
    deq1_v = deq1.view(), qs1_v = qs1.view(), deq2_v = deq2.view();
    p.deq_scale1 = &deq1_v;
    p.quant_scale1 = &qs1_v;
    p.deq_scale2 = &deq2_v;
    if (c.mask != Mask::kNone) {
      mask_v = mask.view();
      p.atten_mask = &mask_v;
    }
    if (c.pse) {
      pse_v = pse.view();
      p.pse_shift = &pse_v;
    }
    if (c.lse) {
      lse_v = lse.view();
      p.softmax_lse_flag = true;
      p.softmax_lse = &lse_v;
    }
    if (c.int8_out && out_dt == I8) {
      qs2_v = qs2.view();
      p.quant_scale2 = &qs2_v;
      if (c.offset) {
        qo2_v = qo2.view();
        p.quant_offset2 = &qo2_v;
      }
    }
  }
};

std::unique_ptr<FqData> make_data(const FqCase& c) {
  auto d = std::make_unique<FqData>();
  d->c = c;
  EXPECT_TRUE(fia_test::layout_of_string(c.layout, &d->in_l, &d->out_l));
  std::mt19937 gen(c.seed);
  std::uniform_int_distribution<int> qd(-128, 127), kd(-90, 90);
  auto ints = [&](int64_t B, int64_t N, int64_t S, std::uniform_int_distribution<int>& dist) {
    HostTensor t(I8, {B, N, S, c.D});
    for (int64_t i = 0; i < t.numel(); ++i) t.set_flat(i, dist(gen));
    return fia_test::bnsd_to_layout(t, d->in_l);
  };
  d->q = ints(c.B, c.N, c.Sq, qd);
  d->k = ints(c.B, c.KVN, c.Skv, kd);
  d->v = ints(c.B, c.KVN, c.Skv, qd);
  // Scales of a typical calibration: q, k ~ x / 36, v ~ x / 32; P in [0, 127].
  const float sq = 0.0271f, sk = 0.0333f, sv = 0.0311f, sp = 126.7f;
  d->deq1 = scale_tensor(c.deq_dtype, sq * sk, c.seed % 2 == 0);
  d->qs1 = scale_tensor(F32, sp);
  d->deq2 = scale_tensor(c.deq_dtype, sv / sp, c.seed % 2 == 0);
  if (c.int8_out) {
    const int64_t n = c.channel ? c.N * c.D : 1;
    d->qs2 = HostTensor(F32, c.channel ? std::vector<int64_t>{c.N, c.D} : std::vector<int64_t>{1});
    d->qo2 = HostTensor(F32, d->qs2.dims);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int64_t i = 0; i < n; ++i) {
      d->qs2.set_flat(i, 40.0 + 60.0 * u(gen));
      d->qo2.set_flat(i, -10.0 + 20.0 * u(gen));
    }
  }
  const int64_t rows = c.Sq + 3, cols = c.Skv + 5;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto f = [&](int64_t, int64_t i, int64_t) { return i == 1 ? u(gen) < 0.97 : u(gen) < 0.3; };
  switch (c.mask) {
    case Mask::kNone: break;
    case Mask::kRank2: d->mask = fia_test::make_mask3(DType::kBool, 1, rows, cols, f).reshaped({rows, cols}); break;
    case Mask::kRank3: d->mask = fia_test::make_mask3(DType::kUInt8, c.B, rows, cols, f); break;
    case Mask::kRank4Bcast:
      d->mask = fia_test::make_mask3(DType::kInt8, 1, rows, cols, f).reshaped({1, 1, rows, cols});
      break;
    case Mask::kTemplate: d->mask = fia_test::template_mask_2048(DType::kBool, 2 + static_cast<int>(c.seed % 3)); break;
  }
  if (c.pse) {
    d->pse = HostTensor(F16, {c.pse_bcast ? 1 : c.B, c.N, c.Sq, c.Skv});
    for (int64_t i = 0; i < d->pse.numel(); ++i) d->pse.set_flat(i, -1.5 + 3.0 * u(gen));
  }
  d->asl_q = c.act_q;
  d->asl_kv = c.act_kv;
  return d;
}

struct FqStats {
  double max_ulps = 0, over1_pct = 0, int8_pct = 0, max_int8 = 0, lse_rel = 0;
  bool lse_inf_ok = true;
  int64_t n = 0;
};

double ulp_fp16(double v) {
  const double a = std::fabs(v);
  if (a < 6.103515625e-05) return 5.960464477539063e-08;
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  return std::ldexp(1.0, e - 11);
}

FqStats compare_runs(const FqData& op, const FqData& ref) {
  FqStats s;
  const HostTensor a = fia_test::layout_to_bnsd(op.out, op.out_l, op.c.B, op.c.N, op.c.Sq, op.c.D);
  const HostTensor r = fia_test::layout_to_bnsd(ref.out, ref.out_l, ref.c.B, ref.c.N, ref.c.Sq, ref.c.D);
  s.n = a.numel();
  int64_t over = 0, diff8 = 0;
  for (int64_t i = 0; i < s.n; ++i) {
    const double x = a.flat(i), y = r.flat(i);
    if (op.c.int8_out) {
      const double dd = std::fabs(x - y);
      s.max_int8 = std::max(s.max_int8, dd);
      if (dd != 0) ++diff8;
    } else {
      const double u = (std::fabs(x - y) - 1e-6) / ulp_fp16(y);
      s.max_ulps = std::max(s.max_ulps, std::isnan(x - y) ? 1e9 : u);
      if (u > 1.0) ++over;
    }
  }
  s.over1_pct = 100.0 * static_cast<double>(over) / static_cast<double>(std::max<int64_t>(1, s.n));
  s.int8_pct = 100.0 * static_cast<double>(diff8) / static_cast<double>(std::max<int64_t>(1, s.n));
  if (op.c.lse) {
    for (int64_t i = 0; i < op.lse.numel(); ++i) {
      const double x = op.lse.flat(i), y = ref.lse.flat(i);
      if (std::isinf(y) || std::isinf(x)) {
        s.lse_inf_ok = s.lse_inf_ok && x == y;
        continue;
      }
      s.lse_rel = std::max(s.lse_rel, std::fabs(x - y) / (std::fabs(y) + 1e-3));
    }
  }
  return s;
}

Status run_cpp(const FiaParams& p) {
  uint64_t ws = 0;
  const Status s = fused_infer_attention_score_v4_workspace_size(p, &ws);
  if (s != kSuccess) return s;
  std::vector<uint64_t> buf(static_cast<size_t>(ws / 8 + 1));
  return fused_infer_attention_score_v4(p, buf.data(), ws);
}

std::vector<FqCase> cases() {
  std::vector<FqCase> v;
  FqCase c;
  c = fq("mha_bsnd_small_u64", 1, 2, 2, 5, 37, 32, "BSND");
  v.push_back(c);
  c = fq("gqa4_bsh_fp32_scales_lse", 2, 8, 2, 17, 300, 64, "BSH");
  c.deq_dtype = F32;
  c.lse = true;
  c.act_q = {17, 9};
  c.act_kv = {300, 123};
  v.push_back(c);
  c = fq("gqa2_bnsd_three_chunks_lse", 1, 4, 2, 20, 2600, 64, "BNSD");
  c.lse = true;
  v.push_back(c);
  c = fq("gqa8_bnsd_bsnd_causal_two_chunks", 1, 8, 1, 40, 1500, 128, "BNSD_BSND");
  c.sparse = 3;
  c.mask = Mask::kTemplate;
  c.lse = true;
  v.push_back(c);
  c = fq("mha_bsh_bnsd_q300_causal", 1, 2, 2, 300, 300, 32, "BSH_BNSD");
  c.sparse = 3;
  c.mask = Mask::kTemplate;
  c.seed = 4;
  v.push_back(c);
  c = fq("gqa2_bsnd_sparse2_b3", 3, 4, 2, 33, 70, 64, "BSND");
  c.sparse = 2;
  c.mask = Mask::kTemplate;
  c.act_q = {33, 20, 2};
  c.act_kv = {70, 20, 65};
  c.seed = 5;
  v.push_back(c);
  c = fq("gqa4_bsnd_band_sparse4_chunks", 1, 4, 1, 24, 1100, 64, "BSND_BNSD");
  c.sparse = 4;
  c.mask = Mask::kTemplate;
  c.pre = 700;
  c.next = 5;
  c.lse = true;
  v.push_back(c);
  c = fq("gqa2_bsh_rank2_mask_prenext_lse", 2, 4, 2, 19, 90, 32, "BSH");
  c.mask = Mask::kRank2;
  c.pre = 40;
  c.next = 3;
  c.lse = true;
  v.push_back(c);
  c = fq("mha_bnsd_sparse1_rank3_pse", 2, 3, 3, 16, 80, 64, "BNSD");
  c.sparse = 1;
  c.mask = Mask::kRank3;
  c.pse = true;
  c.lse = true;
  c.deq_dtype = F32;
  v.push_back(c);
  c = fq("gqa2_bsnd_rank4_bcast_pse_bcast", 2, 4, 2, 12, 50, 32, "BSND_NBSD");
  c.mask = Mask::kRank4Bcast;
  c.pse = true;
  c.pse_bcast = true;
  v.push_back(c);
  c = fq("gqa4_bsh_int8_out_tensor", 2, 8, 2, 10, 200, 64, "BSH");
  c.int8_out = true;
  c.lse = true;
  v.push_back(c);
  c = fq("gqa2_bnsd_int8_out_offset_causal", 1, 4, 2, 64, 1030, 128, "BNSD");
  c.int8_out = true;
  c.offset = true;
  c.sparse = 3;
  c.mask = Mask::kTemplate;
  v.push_back(c);
  c = fq("mha_bsnd_int8_out_channel_pse", 2, 2, 2, 9, 64, 32, "BSND");
  c.int8_out = true;
  c.channel = true;
  c.pse = true;
  c.deq_dtype = F32;
  v.push_back(c);
  c = fq("gqa16_bsnd_q2", 1, 16, 1, 2, 1025, 64, "BSND");
  c.lse = true;
  v.push_back(c);
  c = fq("gqa2_bsh_nbsd_empty_kv_batch_int8_out", 3, 4, 2, 7, 60, 32, "BSH_NBSD");
  c.act_q = {7, 3, 5};
  c.act_kv = {0, 60, 17};
  c.int8_out = true;
  c.lse = true;
  c.mask = Mask::kRank3;  // row 1: mostly masked, some rows fully
  c.sparse = 1;
  v.push_back(c);
  return v;
}

class FiaFullQuant : public ::testing::TestWithParam<FqCase> {};

TEST_P(FiaFullQuant, MatchesReferenceEveryIsaAndThreads) {
  const FqCase& c = GetParam();
  auto ref = make_data(c);
  ref->bind(c.int8_out ? I8 : DType::kFloat64);
  ASSERT_EQ(fused_infer_attention_score_v4_ref(ref->params), kSuccess) << last_error_message();
  FqStats worst;
  for (Isa isa : test_isas()) {
    ASSERT_TRUE(set_isa(isa));
    for (int t : {1, 2}) {
      set_num_threads(t);
      auto op = make_data(c);
      op->bind(c.int8_out ? I8 : F16);
      const Status s = run_cpp(op->params);
      set_num_threads(0);
      ASSERT_EQ(s, kSuccess) << last_error_message();
      const FqStats r = compare_runs(*op, *ref);
      const std::string where = c.name + " isa=" + isa_name(isa) + " threads=" + std::to_string(t);
      if (c.int8_out) {
        EXPECT_LE(r.max_int8, 1.0) << where;
        EXPECT_LE(r.int8_pct, kMaxInt8DiffPct) << where;
      } else {
        EXPECT_LE(r.max_ulps, kMaxUlps) << where;
      }
      EXPECT_TRUE(r.lse_inf_ok) << where;
      EXPECT_LE(r.lse_rel, 1e-5) << where;
      worst.max_ulps = std::max(worst.max_ulps, r.max_ulps);
      worst.over1_pct = std::max(worst.over1_pct, r.over1_pct);
      worst.int8_pct = std::max(worst.int8_pct, r.int8_pct);
      worst.max_int8 = std::max(worst.max_int8, r.max_int8);
      worst.lse_rel = std::max(worst.lse_rel, r.lse_rel);
    }
  }
  reset_isa();
  std::printf("[ measured ] %s: n %lld, max %.3f ulp, >1 ulp %.4f %%, int8 max %.0f, int8 diff %.4f %%, lse rel %.2e\n",
              c.name.c_str(), (long long)ref->out.numel(), worst.max_ulps, worst.over1_pct, worst.max_int8,
              worst.int8_pct, worst.lse_rel);
}

INSTANTIATE_TEST_SUITE_P(Cases, FiaFullQuant, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<FqCase>& i) { return i.param.name; });

// ---- the flash_quant rows against the rounding steps ----


// A plan made once runs on new tensor contents: the scales are read at run time (changed
// deqScale1 / quantScale1 / deqScale2 give the bytes of a fresh call).
TEST(FiaFullQuantPlan, ScalesAreReadAtRunTime) {
  FqCase c = fq("plan_reuse", 2, 4, 2, 9, 130, 64, "BNSD");
  c.lse = true;
  auto d = make_data(c);
  d->bind(F16);
  OpPlan plan;
  ASSERT_EQ(fused_infer_attention_score_v4_plan(d->params, &plan), kSuccess) << last_error_message();
  std::vector<uint64_t> ws(plan.workspace_size() / 8 + 1);
  ASSERT_EQ(fused_infer_attention_score_v4_run(plan, d->params, ws.data(), plan.workspace_size()), kSuccess);
  const std::vector<uint64_t> first = d->out.storage;
  // new scale values, same tensors
  const HostTensor deq1 = scale_tensor(U64, 0.002f), qs1 = scale_tensor(F32, 60.0f), deq2 = scale_tensor(U64, 0.0007f);
  std::memcpy(d->deq1.data(), deq1.data(), 8);
  std::memcpy(d->qs1.data(), qs1.data(), 4);
  std::memcpy(d->deq2.data(), deq2.data(), 8);
  ASSERT_EQ(fused_infer_attention_score_v4_run(plan, d->params, ws.data(), plan.workspace_size()), kSuccess);
  const std::vector<uint64_t> replanned = d->out.storage;
  EXPECT_FALSE(replanned == first);
  std::fill(d->out.storage.begin(), d->out.storage.end(), 0);
  ASSERT_EQ(run_cpp(d->params), kSuccess) << last_error_message();
  EXPECT_TRUE(d->out.storage == replanned);
}

// ---- the C API (aclnnFusedInferAttentionScoreV4), vendor style ----

FiaAclArgs acl_args(const FqData& d) {
  fia_test::FiaRun tmp;
  tmp.params = d.params;
  FiaAclArgs a = acl_args_of(tmp);
  const TensorView* ts[5] = {d.params.deq_scale1, d.params.quant_scale1, d.params.deq_scale2, d.params.quant_scale2,
                             d.params.quant_offset2};
  for (int i = 0; i < 5; ++i)
    if (ts[i] != nullptr) {
      a.in[7 + i] = *ts[i];
      a.passed[7 + i] = true;
    }
  return a;
}

TEST(FiaFullQuantAclnn, VendorStyleUint64ScalesMatchReference) {
  FqCase c = fq("aclnn_gqa4_bsh", 2, 8, 2, 33, 1200, 128, "BSH");
  c.lse = true;
  c.sparse = 3;
  c.mask = Mask::kTemplate;
  c.seed = 2;  // even seed: deqScale1 / deqScale2 by trans_19bit
  for (bool int8_out : {false, true}) {
    c.int8_out = int8_out;
    c.offset = int8_out;
    auto ref = make_data(c);
    ref->bind(int8_out ? I8 : DType::kFloat64);
    ASSERT_EQ(fused_infer_attention_score_v4_ref(ref->params), kSuccess) << last_error_message();
    auto op = make_data(c);
    op->bind(int8_out ? I8 : F16);
    ASSERT_EQ(fia_aclnn_call(acl_args(*op)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    const FqStats r = compare_runs(*op, *ref);
    if (int8_out) {
      EXPECT_LE(r.max_int8, 1.0);
      EXPECT_LE(r.int8_pct, kMaxInt8DiffPct);
    } else {
      EXPECT_LE(r.max_ulps, kMaxUlps);
    }
    EXPECT_LE(r.lse_rel, 1e-5);
  }
}

// The 19-bit truncation: the kernel reads the float32 pattern of a UINT64 / FP32 scale with the
// low 13 mantissa bits cleared, so an untruncated UINT64 pattern and FP32 scale give the same
// bytes as the trans_19bit one.
TEST(FiaFullQuantAclnn, DequantScalesUseNineteenBits) {
  FqCase c = fq("trunc19", 1, 4, 2, 8, 100, 64, "BSND");
  std::vector<uint64_t> first;
  for (int form = 0; form < 3; ++form) {
    auto d = make_data(c);
    const float s1 = 0.0271f * 0.0333f, s2 = 0.0311f / 126.7f;
    d->deq1 = scale_tensor(form == 2 ? F32 : U64, s1, form == 0);
    d->deq2 = scale_tensor(form == 2 ? F32 : U64, s2, form == 0);
    d->bind(F16);
    ASSERT_EQ(fia_aclnn_call(acl_args(*d)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    if (form == 0)
      first = d->out.storage;
    else
      EXPECT_TRUE(d->out.storage == first) << "form " << form;
  }
}

// The earlier entry points with deqScale1 / quantScale1 / deqScale2 / quantScale2 / quantOffset2
// slots reach the full-quantisation path: FIA V1-V3 and PFA V2 / V3 give the bytes of the V4 call
// of their mapped arguments (prefill, FP16 and INT8 output); IFA V2-V4 (decode, Q_S = 1) reject an
// INT8 query with FIA-32, naming the entry point.
TEST(FiaFullQuantAclnn, EarlierEntryPointsReachThePath) {
  for (bool int8_out : {false, true}) {
    FqCase c = fq("entry", 2, 4, 2, 6, 70, 64, "BSND");
    c.sparse = 3;
    c.mask = Mask::kTemplate;
    c.int8_out = int8_out;
    c.offset = int8_out;
    auto d = make_data(c);
    d->bind(int8_out ? I8 : F16);
    const FiaAclArgs a = acl_args(*d);
    for (Entry e : {Entry::kFiaV1, Entry::kFiaV2, Entry::kFiaV3, Entry::kPfaV2, Entry::kPfaV3}) {
      SCOPED_TRACE(entry_name(e));
      std::fill(d->out.storage.begin(), d->out.storage.end(), 0);
      ASSERT_EQ(entry_call(e, a), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      const std::vector<uint64_t> got = d->out.storage;
      std::fill(d->out.storage.begin(), d->out.storage.end(), 0);
      ASSERT_EQ(fia_aclnn_call(mapped_v4(e, a)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      EXPECT_TRUE(got == d->out.storage);
    }
  }
  FqCase c = fq("entry_decode", 2, 4, 2, 1, 40, 64, "BSND");
  auto d = make_data(c);
  d->bind(F16);
  const FiaAclArgs a = acl_args(*d);
  for (Entry e : {Entry::kIfaV2, Entry::kIfaV3, Entry::kIfaV4}) {
    EXPECT_EQ(entry_call(e, a), ACLNN_ERR_PARAM_INVALID) << entry_name(e);
    const std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find(entry_name(e)), std::string::npos) << msg;
    EXPECT_NE(msg.find("FIA-32"), std::string::npos) << msg;
  }
}

// ---- rejections (FIA-30..32 and the dtype / pairing rules full quantisation relies on) ----

struct Reject {
  const char* what;
  aclnnStatus code;
  const char* param;
  const char* rule;
  std::function<void(FqCase&)> edit_case;     // optional: a different base case
  std::function<void(FiaAclArgs&)> mutate;
};

void expect_rejected_fq(const Reject& r) {
  FqCase c = fq("base", 2, 4, 2, 6, 40, 32, "BSND");
  c.lse = true;
  if (r.edit_case) r.edit_case(c);
  auto d = make_data(c);
  d->bind(c.int8_out ? I8 : F16);
  std::fill(d->out.storage.begin(), d->out.storage.end(), 0x7e007e007e007e00ull);  // NaN canaries
  std::fill(d->lse.storage.begin(), d->lse.storage.end(), 0x7fc000007fc00000ull);
  const std::vector<uint64_t> out0 = d->out.storage, lse0 = d->lse.storage;
  FiaAclArgs a = acl_args(*d);
  a.lse_flag = true;
  a.lse = d->lse.view();
  a.lse_passed = true;
  if (r.mutate) r.mutate(a);
  const aclnnStatus s = fia_aclnn_call(a);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_EQ(s, r.code) << r.what << ": " << msg;
  EXPECT_NE(msg.find(r.param), std::string::npos) << r.what << ": " << msg;
  EXPECT_NE(msg.find(r.rule), std::string::npos) << r.what << ": " << msg;
  EXPECT_TRUE(d->out.storage == out0) << r.what << ": attentionOut changed";
  EXPECT_TRUE(d->lse.storage == lse0) << r.what << ": softmaxLse changed";
}

TEST(FiaFullQuantRules, RejectedWithoutWriting) {
  static float f32_one[2] = {1.0f, 1.0f};
  static int32_t i32_one[2] = {1, 1};
  static uint16_t h_one[8] = {0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00};
  static uint64_t u64_one[1] = {0x3f800000ull};
  static int32_t bt[2] = {0, 1};
  const std::vector<Reject> rejects = {
      {"FP16 query with deqScale1", ACLNN_ERR_PARAM_INVALID, "deqScale1Optional", "FIA-30",
       [](FqCase&) {},
       [](FiaAclArgs& a) {
         static HostTensor q16;
         q16 = HostTensor(F16, {a.in[0].dims[0], a.in[0].dims[1], a.in[0].dims[2], a.in[0].dims[3]});
         static HostTensor k16, v16;
         k16 = HostTensor(F16, {a.in[1].dims[0], a.in[1].dims[1], a.in[1].dims[2], a.in[1].dims[3]});
         v16 = k16;
         a.in[0] = q16.view();
         a.in[1] = k16.view();
         a.in[2] = v16.view();
       }},
      {"FP16 query with quantScale1", ACLNN_ERR_PARAM_INVALID, "quantScale1Optional", "FIA-30",
       [](FqCase&) {},
       [](FiaAclArgs& a) {
         static HostTensor q16, k16, v16;
         q16 = HostTensor(F16, {a.in[0].dims[0], a.in[0].dims[1], a.in[0].dims[2], a.in[0].dims[3]});
         k16 = HostTensor(F16, {a.in[1].dims[0], a.in[1].dims[1], a.in[1].dims[2], a.in[1].dims[3]});
         v16 = k16;
         a.in[0] = q16.view();
         a.in[1] = k16.view();
         a.in[2] = v16.view();
         a.passed[7] = false;
       }},
      {"missing deqScale1", ACLNN_ERR_PARAM_INVALID, "deqScale1Optional", "FIA-30", nullptr,
       [](FiaAclArgs& a) { a.passed[7] = false; }},
      {"missing quantScale1", ACLNN_ERR_PARAM_INVALID, "quantScale1Optional", "FIA-30", nullptr,
       [](FiaAclArgs& a) { a.passed[8] = false; }},
      {"missing deqScale2", ACLNN_ERR_PARAM_INVALID, "deqScale2Optional", "FIA-30", nullptr,
       [](FiaAclArgs& a) { a.passed[9] = false; }},
      {"deqScale1 INT32", ACLNN_ERR_PARAM_INVALID, "deqScale1Optional", "FIA-31", nullptr,
       [](FiaAclArgs& a) { a.in[7] = make_view(i32_one, DType::kInt32, {1}); }},
      {"deqScale2 FLOAT16", ACLNN_ERR_PARAM_INVALID, "deqScale2Optional", "FIA-31", nullptr,
       [](FiaAclArgs& a) { a.in[9] = make_view(h_one, F16, {1}); }},
      {"quantScale1 UINT64", ACLNN_ERR_PARAM_INVALID, "quantScale1Optional", "FIA-31", nullptr,
       [](FiaAclArgs& a) { a.in[8] = make_view(u64_one, U64, {1}); }},
      {"deqScale1 two elements", ACLNN_ERR_PARAM_INVALID, "deqScale1Optional", "FIA-31", nullptr,
       [](FiaAclArgs& a) { a.in[7] = make_view(f32_one, F32, {2}); }},
      {"quantScale1 two elements", ACLNN_ERR_PARAM_INVALID, "quantScale1Optional", "FIA-31", nullptr,
       [](FiaAclArgs& a) { a.in[8] = make_view(f32_one, F32, {1, 2}); }},
      {"Q_S 1 (decode)", ACLNN_ERR_PARAM_INVALID, "query", "FIA-32", [](FqCase& c) { c.Sq = 1; }, nullptr},
      {"head dim 48", ACLNN_ERR_PARAM_INVALID, "query", "FIA-32", [](FqCase& c) { c.D = 48; }, nullptr},
      {"TND layout", ACLNN_ERR_PARAM_INVALID, "inputLayout", "FIA-32", nullptr,
       [](FiaAclArgs& a) {
         static HostTensor q, k;
         q = HostTensor(I8, {12, 4, 32});
         k = HostTensor(I8, {80, 2, 32});
         a.in[0] = q.view();
         a.in[1] = k.view();
         a.in[2] = k.view();
         a.layout = "TND";
         a.has_asl_q = a.has_asl_kv = true;
         a.asl_q = {6, 12};
         a.asl_kv = {40, 80};
         static HostTensor o;
         o = HostTensor(F16, {12, 4, 32});
         a.out = o.view();
         a.lse_passed = false;
         a.lse_flag = false;
       }},
      {"paged KV", ACLNN_ERR_PARAM_INVALID, "blockTableOptional", "FIA-32", [](FqCase& c) {
         c.layout = "BNSD";
         c.Skv = 48;
       },
       [](FiaAclArgs& a) {
         a.in[14] = make_view(bt, DType::kInt32, {2, 1});
         a.passed[14] = true;
         a.block_size = 48;
         a.has_asl_kv = true;
         a.asl_kv = {48, 48};
       }},
      {"tree mask (sparse 9)", ACLNN_ERR_PARAM_INVALID, "sparseMode", "FIA-32", nullptr,
       [](FiaAclArgs& a) {
         static HostTensor tree;
         tree = HostTensor(DType::kUInt8, {2, 6, 6});  // a valid (B, Q_S, Q_S) tree: all zero
         a.in[4] = tree.view();
         a.passed[4] = true;
         a.sparse = 9;
       }},
      {"learnableSink", ACLNN_ERR_PARAM_INVALID, "learnableSinkOptional", "FIA-32", nullptr,
       [](FiaAclArgs& a) {
         a.in[28] = make_view(h_one, DType::kBFloat16, {4});
         a.passed[28] = true;
       }},
      {"KV antiquant scale", ACLNN_ERR_PARAM_INVALID, "keyAntiquantScaleOptional", "FIA-32", nullptr,
       [](FiaAclArgs& a) {
         a.in[17] = make_view(f32_one, F32, {1});
         a.passed[17] = true;
         a.in[19] = make_view(f32_one, F32, {1});
         a.passed[19] = true;
       }},
      {"FP16 key with an INT8 query", ACLNN_ERR_PARAM_INVALID, "key", "FIA-03", nullptr,
       [](FiaAclArgs& a) {
         static HostTensor k16;
         k16 = HostTensor(F16, {a.in[1].dims[0], a.in[1].dims[1], a.in[1].dims[2], a.in[1].dims[3]});
         a.in[1] = k16.view();
       }},
      {"INT32 (packed INT4) key with an INT8 query", ACLNN_ERR_PARAM_INVALID, "key", "FIA-03", nullptr,
       [](FiaAclArgs& a) {
         static HostTensor k32, v32;
         k32 = HostTensor(DType::kInt32, {a.in[1].dims[0], a.in[1].dims[1], a.in[1].dims[2], a.in[1].dims[3] / 8});
         v32 = k32;
         a.in[1] = k32.view();
         a.in[2] = v32.view();
       }},
      {"BF16 pseShift with an INT8 query", ACLNN_ERR_PARAM_INVALID, "pseShiftOptional", "FIA-22", nullptr,
       [](FiaAclArgs& a) {
         static HostTensor pse;
         pse = HostTensor(DType::kBFloat16, {2, 4, 6, 40});
         a.in[3] = pse.view();
         a.passed[3] = true;
       }},
      {"INT8 to FP16 with quantScale2", ACLNN_ERR_PARAM_INVALID, "attentionOut", "FIA-26", nullptr,
       [](FiaAclArgs& a) {
         a.in[10] = make_view(f32_one, F32, {1});
         a.passed[10] = true;
       }},
      {"INT8 to INT8 without quantScale2", ACLNN_ERR_PARAM_INVALID, "attentionOut", "FIA-26", nullptr,
       [](FiaAclArgs& a) {
         static HostTensor o8;
         o8 = HostTensor(I8, {a.out.dims[0], a.out.dims[1], a.out.dims[2], a.out.dims[3]});
         a.out = o8.view();
       }},
      {"BF16 output with an INT8 query", ACLNN_ERR_PARAM_INVALID, "attentionOut", "FIA-03", nullptr,
       [](FiaAclArgs& a) {
         static HostTensor ob;
         ob = HostTensor(DType::kBFloat16, {a.out.dims[0], a.out.dims[1], a.out.dims[2], a.out.dims[3]});
         a.out = ob.view();
       }},
  };
  for (const Reject& r : rejects) expect_rejected_fq(r);
}

}  // namespace
}  // namespace mlaops::testing

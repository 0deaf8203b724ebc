// Shared pieces of the INT8 full-quantisation tests (test_fia_full_quant, test_fia_full_quant_padding):
// one case description, its materialisation (INT8 query / key / value in the case's layout,
// deqScale1 / quantScale1 / deqScale2, masks, pse, post-quant parameters, left-padding tensors),
// the C API arguments (the C++ call is fia_harness.h's), and the comparison with the float64 reference
// (reference/fia/fia_full_quant_ref.h) under the full-quantisation tolerances:
//   * FP16 output: within kMaxUlps FP16 ulps of the exact (FP64-output) reference value (+1e-6)
//     for every element;
//   * INT8 output: |op - ref| <= 1 with at most kMaxInt8DiffPct % of the elements differing;
//   * softmaxLse: relative error <= 1e-5, +inf exactly where the reference has it.
// The measured errors are in tests/ops/fia/test_fia_full_quant.cpp and the operator page.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_harness.h"
#include "testkit/fia_test_data.h"

namespace mlaops::testing {

using fia_test::HostTensor;
inline constexpr DType I8 = DType::kInt8;
inline constexpr DType F16 = DType::kFloat16;
inline constexpr DType F32 = DType::kFloat32;
inline constexpr DType U64 = DType::kUInt64;

// Tolerances (measured maxima in the file header / docs).
inline constexpr double kMaxUlps = 1.0;          // FP16 output: per element, in FP16 ulps of |ref| (+1e-6)
inline constexpr double kMaxInt8DiffPct = 0.1;   // INT8 output: share of elements differing (by 1)

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
  int64_t q_pad = 0, kv_pad = 0;       // left padding values (queryPaddingSize / kvPaddingSize)
  bool pass_q = false, pass_kv = false;  // pass the padding tensors
};
inline void PrintTo(const FqCase& c, std::ostream* os) { *os << c.name; }

inline FqCase fq(const char* name, int64_t B, int64_t N, int64_t KVN, int64_t Sq, int64_t Skv, int64_t D, const char* layout) {
  FqCase c;
  c.name = name;
  c.B = B, c.N = N, c.KVN = KVN, c.Sq = Sq, c.Skv = Skv, c.D = D;
  c.layout = layout;
  return c;
}

// The float32 bit pattern of v in the low 32 bits of a UINT64 with the low 13 mantissa bits
// cleared: the vendor tool trans_19bit.
inline uint64_t trans_19bit(float v) {
  uint32_t b = 0;
  std::memcpy(&b, &v, 4);
  return static_cast<uint64_t>(b & 0xffffe000u);
}

inline HostTensor scale_tensor(DType dt, float v, bool truncate_u64 = true) {
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
  HostTensor q, k, v, mask, pse, deq1, qs1, deq2, qs2, qo2, out, lse, qpad, kvpad;
  TensorView mask_v, pse_v, deq1_v, qs1_v, deq2_v, qs2_v, qo2_v, lse_v, qpad_v, kvpad_v;
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
    if (c.pass_q) {
      qpad_v = qpad.view();
      p.query_padding_size = &qpad_v;
    }
    if (c.pass_kv) {
      kvpad_v = kvpad.view();
      p.kv_padding_size = &kvpad_v;
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

inline std::unique_ptr<FqData> make_data(const FqCase& c) {
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
  d->qpad = HostTensor(DType::kInt64, {1}, static_cast<double>(c.q_pad));
  d->kvpad = HostTensor(DType::kInt64, {1}, static_cast<double>(c.kv_pad));
  return d;
}

struct FqStats {
  double max_ulps = 0, over1_pct = 0, int8_pct = 0, max_int8 = 0, lse_rel = 0;
  bool lse_inf_ok = true;
  int64_t n = 0;
  // The worst of this and r (the error figures; a test's summary over its runs).
  void take_worst(const FqStats& r) {
    max_ulps = std::max(max_ulps, r.max_ulps);
    over1_pct = std::max(over1_pct, r.over1_pct);
    int8_pct = std::max(int8_pct, r.int8_pct);
    max_int8 = std::max(max_int8, r.max_int8);
    lse_rel = std::max(lse_rel, r.lse_rel);
  }
};

inline double ulp_fp16(double v) {
  const double a = std::fabs(v);
  if (a < 6.103515625e-05) return 5.960464477539063e-08;
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  return std::ldexp(1.0, e - 11);
}

inline FqStats compare_runs(const FqData& op, const FqData& ref) {
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

// The tolerances above on one comparison (`where` names the run in the messages).
inline void expect_within_tolerances(const FqStats& r, bool int8_out, const std::string& where) {
  if (int8_out) {
    EXPECT_LE(r.max_int8, 1.0) << where;
    EXPECT_LE(r.int8_pct, kMaxInt8DiffPct) << where;
  } else {
    EXPECT_LE(r.max_ulps, kMaxUlps) << where;
  }
  EXPECT_TRUE(r.lse_inf_ok) << where;
  EXPECT_LE(r.lse_rel, 1e-5) << where;
}

}  // namespace mlaops::testing

// KV antiquant softmaxLse against the float64 reference to 1e-5 relative (of max(|ref|, 1); docs/ops/
// fused_infer_attention_score.md "KV antiquant"): the dequantised K / V are never rounded to the
// query dtype, whatever innerPrecise says, on the in-place INT8 decode kernel and on the
// dequantised chunks alike, and the reference models the same (as the vendor's A2 / A3 decode
// kernels, which multiply the INT8 rows exactly and only change the number of query slices with
// innerPrecise).
//   * The reported case: INT8 key / value with per-tensor scale and offset, BNSD, 12 query heads over
//     4 KV heads (G 3: in place on AVX-512, padded to 4; dequantised on the other levels), Q_S 1, lse requested, BF16 and FP16
//     queries, innerPrecise 0, 1, 2, 3 through the C++ API and 0 / 1 through the C API (the aclnn
//     range at Q_S = 1), every ISA level, 1 and 2 threads. Rounding the dequantised values to
//     the query dtype (what innerPrecise 1 / 3 did before) moves lse by more than 1e-5 relative here.
//   * The same check over G 1 / 4 (in place on AVX-512), G 5 and 10 (the vendor's NZ head ratio),
//     per-channel, per-token (modes 1 / 3), key 0 + value 1, INT4, and D 96 in place, so that every
//     path and parameter form is held to the bound.
// Prints the largest relative lse error per case and path ("[fia-aq-lse]").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_antiquant_cases.h"
#include "reference/fia/fia_ref.h"
#include "testkit/fia_test_data.h"
#include "tests/support/isa_list.h"

namespace mlaops::testing {
namespace {

// The bound: |lse - ref| <= kLseRelBound * max(|ref|, 1) (+inf exactly). The floor: an lse near 0
// (a row with one KV position: lse = its score, which may cancel to about 0) is held to 1e-5
// absolute, as a relative bound on a cancelling fp32 dot product cannot hold.
constexpr double kLseRelBound = 1e-5;

struct LseCase {
  std::string name;
  DType dt = DType::kBFloat16;
  int64_t B = 4, N = 12, KVN = 4, L = 1023, D = 128;
  std::vector<int64_t> act_kv = {1023, 700, 129, 1};
  int64_t mode_k = 0, mode_v = 0;  // separate parameters
  bool per_tensor = true, offset = true, int4 = false;
  std::vector<int64_t> inner = {0, 1, 2, 3};
  bool capi = true;  // also through the C API (innerPrecise 0 / 1)
  uint32_t seed = 1;
};

struct LseData {
  HostTensor q, k, v, out_op, out_ref, lse_op, lse_ref, ks, ko, vs, vo;
  std::vector<int64_t> akv;
  TensorView vks, vko, vvs, vvo, vlse_op, vlse_ref;
  FiaParams op, ref;
};

// A parameter tensor for `mode`: per-tensor (1), per-channel (1, KV_N, 1, D) of the query dtype,
// per-token (1, B, S) / (B, KV_N, S) FP32; scales U[0.5, 1.5) / 127 (INT4: / 7), offsets U[-3, 3]
// (the vendor system tests' ranges).
HostTensor param(const LseCase& c, int64_t mode, bool off, std::mt19937& g) {
  HostTensor t;
  if (mode == 0) t = c.per_tensor ? HostTensor(c.dt, {1}) : HostTensor(c.dt, {1, c.KVN, 1, c.D});
  if (mode == 1) t = HostTensor(DType::kFloat32, {1, c.B, c.L});
  if (mode == 3) t = HostTensor(DType::kFloat32, {c.B, c.KVN, c.L});
  const double range = c.int4 ? 7.0 : 127.0;
  for (int64_t i = 0; i < t.numel(); ++i) t.set_flat(i, off ? uni(g, -3, 3) : uni(g, 0.5, 1.5) / range);
  return t;
}

std::unique_ptr<LseData> build(const LseCase& c) {
  auto d = std::make_unique<LseData>();
  std::mt19937 g(c.seed * 7919 + 5);
  aq_make_query_io(d.get(), c.dt, "BNSD", c.B, c.N, 1, c.D, g);
  const std::vector<int64_t> kd = {c.B, c.KVN, c.L, c.int4 ? c.D / 8 : c.D};
  for (HostTensor* t : {&d->k, &d->v}) {
    *t = HostTensor(c.int4 ? DType::kInt32 : DType::kInt8, kd);
    for (int64_t i = 0; i < t->numel(); ++i)
      t->set_flat(i, c.int4 ? std::round(uni(g, -2147483648.0, 2147483647.0)) : std::round(uni(g, -127, 127)));
  }
  d->akv = c.act_kv;
  d->ks = param(c, c.mode_k, false, g);
  d->vs = param(c, c.mode_v, false, g);
  if (c.offset) {
    d->ko = param(c, c.mode_k, true, g);
    d->vo = param(c, c.mode_v, true, g);
  }
  d->vks = d->ks.view();
  d->vko = d->ko.view();
  d->vvs = d->vs.view();
  d->vvo = d->vo.view();
  d->vlse_op = d->lse_op.view();
  d->vlse_ref = d->lse_ref.view();
  for (FiaParams* p : {&d->op, &d->ref}) {
    aq_bind_common(p, *d, p == &d->op, c.N, c.KVN, c.D, "BNSD");
    aq_bind_antiquant(p, false, c.offset, c.mode_k, c.mode_v, &d->vks, &d->vko, &d->vvs, &d->vvo);
    p->softmax_lse = p == &d->op ? &d->vlse_op : &d->vlse_ref;
  }
  return d;
}

// The largest |lse - ref| / max(|ref|, 1) of the operator's last run (+inf must match exactly).
double lse_rel_error(const LseData& d, const std::string& where) {
  double worst = 0;
  for (int64_t i = 0; i < d.lse_ref.numel(); ++i) {
    const double x = d.lse_op.flat(i), y = d.lse_ref.flat(i);
    if (std::isinf(y)) {
      EXPECT_EQ(x, y) << where << " lse " << i;
      continue;
    }
    const double rel = std::fabs(x - y) / std::max(std::fabs(y), 1.0);
    worst = std::max(worst, std::isnan(rel) ? 1e9 : rel);
    EXPECT_LE(rel, kLseRelBound) << where << " lse " << i << ": " << x << " vs " << y;
  }
  return worst;
}

void check_case(const LseCase& c) {
  SCOPED_TRACE(c.name);
  const auto d = build(c);
  ASSERT_EQ(fused_infer_attention_score_v4_ref(d->ref), kSuccess) << last_error_message();
  for (int64_t ip : c.inner) {
    d->op.inner_precise = ip;
    for (Isa isa : test_isas()) {
      if (!set_isa(isa)) continue;
      const std::string path = in_place(d->op) ? "in place" : "dequantised";
      double worst = 0;
      for (int threads : {1, 2}) {
        set_num_threads(threads);
        const std::string where = std::string(isa_name(isa)) + " innerPrecise " + std::to_string(ip) + " (" + path +
                                  ") threads " + std::to_string(threads);
        std::memset(d->lse_op.data(), 0xEE, d->lse_op.storage.size() * 8);
        ASSERT_EQ(run_fia_cpp(d->op), kSuccess) << where << ": " << last_error_message();
        worst = std::max(worst, lse_rel_error(*d, where + " C++ API"));
        if (c.capi && ip <= 1) {  // the C API (aclnn: innerPrecise 0 / 1 at Q_S = 1)
          std::memset(d->lse_op.data(), 0xEE, d->lse_op.storage.size() * 8);
          ASSERT_EQ(fia_aclnn_call(acl_args_of_params(d->op)), ACLNN_SUCCESS) << where << ": " << aclGetRecentErrMsg();
          worst = std::max(worst, lse_rel_error(*d, where + " C API"));
        }
      }
      std::printf("[fia-aq-lse] %s %s innerPrecise %lld %s: lse max rel %.3g (bound %.0e)\n", c.name.c_str(),
                  isa_name(isa), static_cast<long long>(ip), path.c_str(), worst, kLseRelBound);
    }
  }
  reset_isa();
  set_num_threads(0);
}

// The reported case: INT8, per-tensor scale and offset, BNSD, N 12 over KV_N 4, BF16 and FP16.
TEST(FiaAntiquantLse, ReportedCasePerTensorOffsetG3) {
  for (DType dt : {DType::kBFloat16, DType::kFloat16}) {
    LseCase c;
    c.name = std::string(dt == DType::kFloat16 ? "fp16" : "bf16") + " per-tensor + offset N12 KV_N4";
    c.dt = dt;
    check_case(c);
  }
}

// The other parameter forms and group sizes (in place where the decode kernel takes them).
TEST(FiaAntiquantLse, ModesAndGroupSizes) {
  std::vector<LseCase> v;
  auto add = [&](LseCase c) {
    c.seed = static_cast<uint32_t>(v.size() + 2);
    v.push_back(c);
  };
  for (DType dt : {DType::kBFloat16, DType::kFloat16}) {
    const std::string t = dt == DType::kFloat16 ? "fp16 " : "bf16 ";
    LseCase c;
    c.dt = dt;
    c.inner = {0, 1};
    c.B = 2;
    c.act_kv = {1023, 300};
    for (auto [N, KVN] : std::vector<std::pair<int64_t, int64_t>>{{4, 4}, {16, 4}, {10, 2}, {10, 1}}) {
      c.N = N;
      c.KVN = KVN;
      c.per_tensor = false;
      c.name = t + "per-channel N" + std::to_string(N) + " KV_N" + std::to_string(KVN);
      add(c);
    }
    c.N = 12;
    c.KVN = 4;
    for (int64_t m : {1, 3}) {
      c.mode_k = c.mode_v = m;
      c.name = t + "per-token mode " + std::to_string(m) + " N12 KV_N4";
      add(c);
    }
    c.mode_k = 0;
    c.mode_v = 1;
    c.per_tensor = false;
    c.name = t + "key 0 + value 1 N12 KV_N4";
    c.capi = dt == DType::kFloat16;  // aclnn: INT8 key 0 + value 1 need a FLOAT16 query (FIA-21)
    add(c);
    c.capi = true;
    c.int4 = true;
    c.mode_v = 0;
    c.name = t + "INT4 per-channel N12 KV_N4";
    add(c);
    // D 96 (in place on AVX-512 with G 4: the last 64-channel chunk of the query's int8 slice is half)
    c.N = 16;
    c.D = 96;
    c.name = t + "INT4 per-channel N16 KV_N4 D96";
    c.capi = false;  // aclnn: INT4 head dims are multiples of 64 (FIA-33)
    add(c);
    c.capi = true;
    c.int4 = false;
    c.mode_k = c.mode_v = 3;
    c.name = t + "per-token mode 3 N16 KV_N4 D96";
    add(c);
  }
  for (const LseCase& c : v) check_case(c);
}

}  // namespace
}  // namespace mlaops::testing

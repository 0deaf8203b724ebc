// Shared pieces of the KV antiquant operator tests (test_fia_antiquant: INT8, test_fia_antiquant_int4:
// INT32-packed INT4, test_fia_antiquant_nz: the INT8 paged NZ cache; test_fia_prefix_quant): the
// case set-up (query / output tensors, the common and the antiquant parameters), the tolerances,
// which path a plan takes, the comparison of the operator with the float64 reference under every
// ISA level, innerPrecise value and 1 / 2 threads, the C API arguments of a case, and the
// rejection check (status, message, output and lse untouched).
//
// The golden: the reference, whose dequantised K / V are never rounded to the query dtype, as
// neither operator path rounds them (in place: the INT8 / INT4 decode kernel; dequantised: the
// chunks carry each value as two parts), whatever innerPrecise says.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/plan.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_harness.h"
#include "reference/fia/fia_ref.h"
#include "testkit/compare.h"
#include "testkit/fia_test_data.h"
#include "tests/support/isa_list.h"

namespace mlaops::testing {

using fia_test::HostTensor;

inline double uni(std::mt19937& g, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(g); }

// The shape of a query / output (n heads, S rows, head dim D) or contiguous key / value tensor in
// a BSH / BSND / BNSD layout.
inline std::vector<int64_t> aq_seq_shape(const std::string& layout, int64_t B, int64_t n, int64_t S, int64_t D) {
  if (layout == "BNSD") return {B, n, S, D};
  if (layout == "BSND") return {B, S, n, D};
  return {B, S, n * D};
}

// A case's query (uniform in [-1, 1), drawn from g), the operator's and the reference's output
// (query dtype / FP64) and lse (B, N, S, 1) into d's q, out_op, out_ref, lse_op, lse_ref.
template <class Data>
void aq_make_query_io(Data* d, DType dt, const std::string& layout, int64_t B, int64_t N, int64_t S, int64_t D,
                      std::mt19937& g) {
  d->q = HostTensor(dt, aq_seq_shape(layout, B, N, S, D));
  for (int64_t i = 0; i < d->q.numel(); ++i) d->q.set_flat(i, uni(g, -1, 1));
  d->out_op = HostTensor(dt, aq_seq_shape(layout, B, N, S, D));
  d->out_ref = HostTensor(DType::kFloat64, aq_seq_shape(layout, B, N, S, D));
  d->lse_op = HostTensor(DType::kFloat32, {B, N, S, 1});
  d->lse_ref = HostTensor(DType::kFloat32, {B, N, S, 1});
}

// The parameters every antiquant case sets: d's query, key, value, actual KV lengths and the
// operator's (op) or the reference's output; lse requested (the lse tensor is the caller's).
template <class Data>
void aq_bind_common(FiaParams* p, const Data& d, bool op, int64_t N, int64_t KVN, int64_t D, const std::string& layout) {
  p->query = d.q.view();
  p->key = {d.k.view()};
  p->value = {d.v.view()};
  p->num_heads = N;
  p->num_key_value_heads = KVN;
  p->scale_value = 1.0 / std::sqrt(static_cast<double>(D));
  p->input_layout = layout;
  p->actual_seq_lengths_kv = &d.akv;
  p->attention_out = op ? d.out_op.view() : d.out_ref.view();
  p->softmax_lse_flag = true;
}

// The KV antiquant parameters: combined (antiquantScale / Offset, mode_k) or separate key / value
// parameters (offsets only with `offset`).
inline void aq_bind_antiquant(FiaParams* p, bool combined, bool offset, int64_t mode_k, int64_t mode_v,
                              const TensorView* ks, const TensorView* ko, const TensorView* vs, const TensorView* vo) {
  if (combined) {
    p->antiquant_scale = ks;
    p->antiquant_offset = offset ? ko : nullptr;
    p->antiquant_mode = mode_k;
  } else {
    p->key_antiquant_scale = ks;
    p->key_antiquant_offset = offset ? ko : nullptr;
    p->value_antiquant_scale = vs;
    p->value_antiquant_offset = offset ? vo : nullptr;
    p->key_antiquant_mode = mode_k;
    p->value_antiquant_mode = mode_v;
  }
}

// lse tolerance, |x - y| <= rel * |y| + abs, on every path: the dequantised chunks and the in-place
// INT8 kernel (its query in two int16 slices) follow the golden's scores to fp32 accuracy
// (measured max 4.8e-7 absolute over the antiquant tests; the in-place kernel with one int16
// slice left up to 1.3e-5); rounding the dequantised values to the query dtype would move lse by
// up to about 1e-3.
inline constexpr double kLseRel = 1e-6, kLseAbs = 4e-6;

// The output tolerance of the antiquant tests (fp32 attention over the unrounded dequantised
// values, P and the output rounded as on the FP16 / BF16 caches).
inline Tolerance out_tol(DType dt) {
  if (dt == DType::kFloat16) return {5e-3, 5e-3, 2e-3, 0.9999, 0, 0, 0, 0};
  return {7.8e-3, 1e-2, 1.5e-2, 0.9995, 0, 0, 0, 0};
}

// True when the plan of `op` at the active level runs the INT8 / INT4 rows in place (the INT8
// decode row of the attention family); the other paths dequantise chunk by chunk.
inline bool in_place(const FiaParams& op) {
  OpPlan plan;
  if (fused_infer_attention_score_v4_plan(op, &plan) != kSuccess) return false;
  return plan.explain().find("row(s): attn_avx512_decode_i8") != std::string::npos;
}

// The per-element bound of a BF16 output from its rounding steps (`abs_out`: check_against_golden):
// P is rounded to BF16 before P x V (relative error <= 2^-8 for each weight, so <= 2^-8 * A on the
// output, A = sum_j p_j |v_j|, the attention of |V|) and the output to BF16 (<= 2^-8 |out|); 1 %
// on top for the second-order and fp32 terms (exp, accumulation: ~1e-6 relative).
inline double bf16_pv_bound(double abs_attention, double ref) {
  return 1.01 * std::ldexp(abs_attention + std::fabs(ref), -8) + 1e-7;
}

// `op` (writing `out_op` / `lse_op`) under every ISA level, each innerPrecise of `inner` and 1 / 2
// threads against the golden `out_ref` / `lse_ref`: output within `tol`, lse within the bounds
// above (+inf exactly).
// With `abs_out` (the reference's output with every value element replaced by its magnitude, same
// layout), each output element is held to bf16_pv_bound instead of tol's elementwise bound (tol's
// mean relative error and cosine still apply): a bound that covers outputs that cancel (|ref| much
// below sum_j p_j |v_j|), which tol's |ref|- and rms-relative bound does not.
// Prints "[tag] name isa innerPrecise ip out max_abs .. lse max_abs .." per level (2 threads).
// Leaves innerPrecise at inner.front(), the ISA and thread count at their defaults.
inline void check_against_golden(const std::string& name, const char* tag, const Tolerance& tol,
                                  const std::vector<int64_t>& inner, FiaParams& op, HostTensor& out_op,
                                  const HostTensor& lse_op, const HostTensor& out_ref, const HostTensor& lse_ref,
                                  const HostTensor* abs_out = nullptr) {
  for (int64_t ip : inner) {
    op.inner_precise = ip;
    for (Isa isa : test_isas()) {
      if (!set_isa(isa)) continue;
      const bool place = in_place(op);
      for (int threads : {1, 2}) {
        set_num_threads(threads);
        std::memset(out_op.data(), 0xEE, out_op.storage.size() * 8);
        ASSERT_EQ(run_fia_cpp(op), kSuccess) << isa_name(isa) << ": " << last_error_message();
        const Stats s = compare(out_op.view(), out_ref.view(), tol);
        double pv_ratio = 0;  // max |op - ref| / bf16_pv_bound
        int64_t beyond = 0;
        if (abs_out != nullptr) {
          for (int64_t i = 0; i < out_ref.numel(); ++i) {
            const double r = out_ref.flat(i), e = std::fabs(out_op.flat(i) - r);
            const double bound = bf16_pv_bound(abs_out->flat(i), r);
            pv_ratio = std::max(pv_ratio, std::isnan(e) ? 1e9 : e / bound);
            if (!(e <= bound) && beyond++ < 3)
              ADD_FAILURE() << isa_name(isa) << " innerPrecise " << ip << " element " << i << ": |op - ref| " << e
                            << " > " << bound << " (ref " << r << ", sum p |v| " << abs_out->flat(i) << ")";
          }
        }
        EXPECT_EQ(beyond, 0) << "elements beyond the P x V rounding bound";
        const bool ok = abs_out != nullptr ? s.mean_rel <= tol.max_mean_rel && s.cosine >= tol.min_cosine
                                           : within(s, tol, false);
        EXPECT_TRUE(ok) << isa_name(isa) << " innerPrecise " << ip << (place ? " (in place)" : "")
                        << " threads " << threads << ": " << s.str();
        double lse_err = 0;
        for (int64_t i = 0; i < lse_ref.numel(); ++i) {
          const double x = lse_op.flat(i), y = lse_ref.flat(i);
          if (std::isinf(y)) {
            EXPECT_EQ(x, y) << i;
          } else {
            EXPECT_NEAR(x, y, kLseRel * std::fabs(y) + kLseAbs)
                << isa_name(isa) << " innerPrecise " << ip << (place ? " (in place)" : "") << " lse " << i;
            lse_err = std::max(lse_err, std::fabs(x - y));
          }
        }
        if (threads == 2)
          std::printf("[%s] %s %s innerPrecise %lld%s out max_abs %.3g%s lse max_abs %.3g\n", tag, name.c_str(),
                      isa_name(isa), (long long)ip, place ? " in-place" : "", s.max_abs,
                      abs_out != nullptr ? (" (" + std::to_string(pv_ratio) + " of the P x V bound)").c_str() : "",
                      lse_err);
      }
    }
  }
  op.inner_precise = inner.front();
  reset_isa();
  set_num_threads(0);
}

// `op` (already mutated) must be rejected with kParamInvalid and a message naming `param` and
// `rule`, through the C++ API (workspace size, then the call) or the C API (`aclnn`), leaving
// `out` and `lse` untouched.
inline void expect_rejected_call(const FiaParams& op, HostTensor& out, HostTensor& lse, bool aclnn, const char* param,
                                 const char* rule) {
  std::memset(out.data(), 0x5A, out.storage.size() * 8);
  std::memset(lse.data(), 0x5A, lse.storage.size() * 8);
  const std::vector<uint64_t> before = out.storage, lse_before = lse.storage;
  std::string msg;
  if (aclnn) {
    EXPECT_EQ(fia_aclnn_call(acl_args_of_params(op)), ACLNN_ERR_PARAM_INVALID);
    msg = aclGetRecentErrMsg();
  } else {
    uint64_t ws = 0;
    EXPECT_EQ(fused_infer_attention_score_v4_workspace_size(op, &ws), kParamInvalid) << param;
    msg = last_error_message();
    std::vector<uint64_t> buf(1 << 16);
    EXPECT_EQ(fused_infer_attention_score_v4(op, buf.data(), buf.size() * 8), kParamInvalid);
  }
  EXPECT_NE(msg.find(param), std::string::npos) << msg;
  EXPECT_NE(msg.find(rule), std::string::npos) << msg;
  EXPECT_EQ(out.storage, before) << "output changed on error: " << msg;
  EXPECT_EQ(lse.storage, lse_before) << "lse changed on error: " << msg;
}

}  // namespace mlaops::testing

// The vendor's FusedInferAttentionScoreV4 system-test list (tests/ops/fia/data/
// fia_vendor_st_cases.txt, 165 cases) as a test table: each case gets deterministic data
// (testkit/fia_vendor_st.h), runs through the aclnn C API on a stream as a vendor program
// calls it, and is compared with the float64 reference (docs/testing.md, "Vendor system tests"):
//  * acc "default": FP16 |d| <= 5e-3 + 5e-3 |ref|, BF16 |d| <= 1e-2 + 7.8e-3 |ref|, each on at
//    least 99.5 % of the elements (none NaN); INT8 |d| <= 1 everywhere; softmaxLse
//    |d| <= 1e-4 max(1, |ref|) with +inf exactly where the reference has it.
//  * acc "cvdouble(a, b, c)" (the vendor's dual benchmark): the operator's max relative error,
//    mean relative error and RMSE against the float64 golden may be at most a, b, c times those
//    of a benchmark against the same golden. The benchmark (below) is a plain mixed-precision CPU
//    attention as an NPU-style kernel computes it: FP32 scores from the 16-bit inputs, FP32
//    softmax, the probabilities rounded to the query dtype before P.V, FP32 accumulation, the
//    output rounded to its dtype. Relative errors divide by max(|ref|, 1e-3).
// Cases needing a feature this build does not have yet are listed in kPending with the feature:
// they must be rejected with 161002 and an "FIA-02 ... not supported yet" message, every output
// byte unchanged; a pending case that succeeds fails (the list must shrink with the feature).
// kKnownMismatch lists supported cases whose result differs (with the reason); they assert the
// current behaviour so that the finding stays visible without breaking the build.
// Cases whose cost (reference work and data size) exceeds kSlowCost are instantiated as
// Slow/...; the ASan+UBSan build leaves them out (tests/CMakeLists.txt), the release build runs
// them all.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "ops/fia/fia_aclnn_call.h"
#include "testkit/fia_vendor_st.h"
#include "reference/fia/fia_ref.h"

namespace mlaops {
namespace {

using fia_test::HostTensor;
using testing::FiaAclArgs;
using vendor_st::StCase;
using vendor_st::StData;
using vendor_st::TensorSpec;

// ---------------------------------------------------------------------------------------------
// The tables
// ---------------------------------------------------------------------------------------------

struct Pending {
  int id;
  const char* feature;
};
// Cases that need a feature this build rejects with FIA-02 (docs/ops/fused_infer_attention_score.md,
// "Not yet"). Remove a case when its feature lands: the test fails once it succeeds.
// (The INT8 shared prefix cases 231, 234, 273, 274, 292, 299 left the list with the feature.)
constexpr std::array<Pending, 0> kPending{};

struct KnownMismatch {
  int id;
  const char* reason;
};
// Supported cases whose result differs from the reference or that are rejected unexpectedly;
// each asserts the behaviour recorded here.
constexpr std::array<KnownMismatch, 0> kKnownMismatch{};

const Pending* pending_of(int id) {
  for (const Pending& p : kPending)
    if (p.id == id) return &p;
  return nullptr;
}
const KnownMismatch* mismatch_of(int id) {
  for (const KnownMismatch& k : kKnownMismatch)
    if (k.id == id) return &k;
  return nullptr;
}

const std::vector<StCase>& all_cases() {
  static const std::vector<StCase> cases = vendor_st::load_cases(MLAOPS_FIA_VENDOR_ST_CASES);
  return cases;
}

// Estimated work of a case: the reference's multiply-adds plus its K / V element reads (INT8
// K / V weigh 6: the reference dequantises every element through its generic accessors).
double case_cost(const StCase& c) {
  const TensorSpec& q = *c.tensor("query");
  const TensorSpec& k = *c.tensor("key");
  const TensorSpec& v = *c.tensor("value");
  const int64_t n = c.attr_int("numHeads", 1);
  const std::string layout = c.attr("inputLayout", "BSH");
  const int64_t qd = layout.rfind("BSH", 0) == 0 ? q.dims.back() / n : q.dims.back();
  const double q_rows = static_cast<double>(q.numel()) / static_cast<double>(std::max<int64_t>(qd, 1));  // B*N*Q_S
  double kv_s = 0;
  if (const TensorSpec* bt = c.tensor("bt")) {
    kv_s = static_cast<double>(bt->dims[1] * c.attr_int("blockSize", 0));
  } else if (layout.rfind("TND", 0) == 0) {
    kv_s = static_cast<double>(k.dims[0]) / static_cast<double>(c.array("asl") ? c.array("asl")->size() : 1);
  } else {
    kv_s = static_cast<double>(layout.rfind("BNSD", 0) == 0 ? k.dims[2] : k.dims[1]);
  }
  const double hd = static_cast<double>(qd) * 2.0;
  const double per_element = k.dtype == DType::kInt8 ? 6.0 : 2.0;
  return q_rows * kv_s * hd + per_element * static_cast<double>(k.numel() + v.numel());
}
// Above this, a case is Slow/ (measured on the release build: about 1 s or more per case).
constexpr double kSlowCost = 4e8;

std::vector<StCase> cases_where(bool slow) {
  std::vector<StCase> r;
  for (const StCase& c : all_cases())
    if ((pending_of(c.id) == nullptr && case_cost(c) > kSlowCost) == slow) r.push_back(c);
  return r;
}

// ---------------------------------------------------------------------------------------------
// The C API call
// ---------------------------------------------------------------------------------------------

aclnnStatus call_on_stream(const FiaParams& p) {
  aclrtStream stream = nullptr;
  if (aclrtCreateStream(&stream) != ACL_SUCCESS) return ACLNN_ERR_RUNTIME_ERROR;
  const aclnnStatus s = testing::fia_aclnn_call(testing::acl_args_of_params(p), stream);
  aclrtDestroyStream(stream);
  return s;
}

// ---------------------------------------------------------------------------------------------
// The reference
// ---------------------------------------------------------------------------------------------

struct Golden {
  HostTensor out;  // FP64 (INT8 with a post-quant output); NaN where not computed (sampled cases)
  HostTensor lse;  // FP32; NaN where not computed
  int64_t slices = 0, slices_checked = 0;  // slices of a sliced case (0: the reference in one piece)
};

// K + V elements above which a case runs the reference slice by slice, above which only a
// sample of the slices, and the sample's budget in K + V elements (the reference reads every
// element through its generic accessors: 15 to 90 ns per element here, dequantisation included).
constexpr double kSliceAbove = 1.5e8;
constexpr double kSampleAbove = 1.5e8;
constexpr double kSampleBudget = 6e7;

// The view of index i of dim `dim` of a contiguous tensor whose dims before `dim` are all 1 (or
// dim == 0): a contiguous chunk, with that dim set to 1.
TensorView slice_view(const TensorView& t, int dim, int64_t i) {
  int64_t dims[kMaxRank] = {};
  std::copy(t.dims, t.dims + t.rank, dims);
  int64_t chunk = dtype_size(t.dtype);
  for (int k = dim + 1; k < t.rank; ++k) chunk *= t.dims[k];
  dims[dim] = 1;
  return make_view(static_cast<char*>(t.data) + i * chunk, t.dtype, dims, t.rank);
}

// The float64 reference on the case's inputs.
//
// A large contiguous BSH / BSND / BNSD case (K + V above kSliceAbove elements; no paged cache,
// rope, query lengths or combined antiquant parameters) runs one slice at a time on contiguous
// sub-views, which the reference computes independently: per batch when B > 1 (query, K, V,
// output and lse of batch b; the mask, pseShift and per-token antiquant parameters of batch b
// when they have a batch dim; actualSeqLengthsKv[b]), per KV head when B == 1 in BNSD without
// pseShift, sink, antiquant or post-quant (the query heads of KV head h). The reference holds one
// batch of K and V in float64: 10.7 GB for case 213 in one piece. Above kSampleAbove only a
// sample of the slices is computed, the first, the last and evenly spaced ones in between, as
// many as kSampleBudget elements allow (at least one: the last); the other golden elements stay
// NaN and compare_default checks only that the operator's are finite there.
Status run_reference(const StData& d, Golden* g, double slice_above = kSliceAbove, double sample_above = kSampleAbove,
                     double sample_budget = kSampleBudget) {
  const FiaParams& p = d.p;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  g->out = HostTensor(p.attention_out.dtype == DType::kInt8 ? DType::kInt8 : DType::kFloat64,
                      std::vector<int64_t>(p.attention_out.dims, p.attention_out.dims + p.attention_out.rank));
  FiaParams r = p;
  r.attention_out = g->out.view();
  TensorView lse_view;
  if (p.softmax_lse != nullptr) {
    g->lse = HostTensor(DType::kFloat32, std::vector<int64_t>(p.softmax_lse->dims, p.softmax_lse->dims + p.softmax_lse->rank));
    lse_view = g->lse.view();
    r.softmax_lse = &lse_view;
  }
  const TensorView& K = p.key[0];
  const TensorView& V = p.value[0];
  const int64_t B = p.query.dims[0], N = p.num_heads, KVN = p.num_key_value_heads == 0 ? N : p.num_key_value_heads;
  const double kv_elems = static_cast<double>(K.numel() + V.numel());
  const std::string& l = p.input_layout;
  const bool quant_kv = K.dtype != p.query.dtype;
  const bool per_token = [&] {
    for (int64_t m : {p.key_antiquant_mode, p.value_antiquant_mode})
      if (m != 0 && m != 1 && m != 2 && m != 3) return false;
    return true;
  }();
  const bool by_batch = B > 1 && (l == "BSH" || l == "BSND" || l == "BNSD") && p.block_table == nullptr &&
                        p.query_rope == nullptr && p.actual_seq_lengths == nullptr && p.antiquant_scale == nullptr &&
                        per_token;
  const bool by_head = B == 1 && l == "BNSD" && p.block_table == nullptr && p.query_rope == nullptr &&
                       p.pse_shift == nullptr && p.learnable_sink == nullptr && !quant_kv && p.quant_scale2 == nullptr &&
                       KVN > 1;
  if ((!by_batch && !by_head) || kv_elems <= slice_above) return fused_infer_attention_score_v4_ref(r);

  g->slices = by_batch ? B : KVN;
  std::vector<int64_t> pick;
  const double per_slice = kv_elems / static_cast<double>(g->slices);
  if (kv_elems <= sample_above) {
    for (int64_t i = 0; i < g->slices; ++i) pick.push_back(i);
  } else {
    const int64_t n = std::clamp<int64_t>(static_cast<int64_t>(sample_budget / per_slice), 1, g->slices);
    for (int64_t k = 0; k < n; ++k) pick.push_back(n == 1 ? g->slices - 1 : (g->slices - 1) * k / (n - 1));
    pick.erase(std::unique(pick.begin(), pick.end()), pick.end());
    g->out.fill(nan);
    if (r.softmax_lse != nullptr) g->lse.fill(nan);
  }
  g->slices_checked = static_cast<int64_t>(pick.size());
  for (int64_t i : pick) {
    FiaParams s = r;
    TensorView lse, mask, pse, ks, ko, vs, vo, kp, vp;
    std::vector<int64_t> kv_len;
    if (by_batch) {
      s.query = slice_view(p.query, 0, i);
      s.key = {slice_view(K, 0, i)};
      s.value = {slice_view(V, 0, i)};
      s.attention_out = slice_view(r.attention_out, 0, i);
      if (r.softmax_lse != nullptr) s.softmax_lse = &(lse = slice_view(*r.softmax_lse, 0, i));
      if (p.atten_mask != nullptr && p.atten_mask->dims[0] == B) s.atten_mask = &(mask = slice_view(*p.atten_mask, 0, i));
      if (p.pse_shift != nullptr && p.pse_shift->dims[0] == B) s.pse_shift = &(pse = slice_view(*p.pse_shift, 0, i));
      // per-token scales / offsets: mode 1 (1, B, S) or (B, S): batch dim rank-2; mode 3 (B, KV_N, S): dim 0
      auto tok = [&](const TensorView* t, int64_t mode, TensorView* keep) -> const TensorView* {
        if (t == nullptr || (mode != 1 && mode != 3)) return t;
        return &(*keep = slice_view(*t, mode == 1 ? t->rank - 2 : 0, i));
      };
      s.key_antiquant_scale = tok(p.key_antiquant_scale, p.key_antiquant_mode, &ks);
      s.key_antiquant_offset = tok(p.key_antiquant_offset, p.key_antiquant_mode, &ko);
      s.value_antiquant_scale = tok(p.value_antiquant_scale, p.value_antiquant_mode, &vs);
      s.value_antiquant_offset = tok(p.value_antiquant_offset, p.value_antiquant_mode, &vo);
      if (p.actual_seq_lengths_kv != nullptr) {
        const std::vector<int64_t>& a = *p.actual_seq_lengths_kv;
        kv_len = {a.size() == 1 ? a[0] : a[static_cast<size_t>(i)]};
        s.actual_seq_lengths_kv = &kv_len;
      }
    } else {  // KV head i of a batch-1 BNSD case: query heads [i * G, (i + 1) * G)
      const int64_t G = N / KVN;
      auto heads = [&](const TensorView& t, int64_t first, int64_t count) {
        int64_t dims[kMaxRank] = {};
        std::copy(t.dims, t.dims + t.rank, dims);
        dims[1] = count;
        return make_view(static_cast<char*>(t.data) + first * t.dims[2] * t.dims[3] * dtype_size(t.dtype), t.dtype, dims,
                         t.rank);
      };
      s.query = heads(p.query, i * G, G);
      s.key = {heads(K, i, 1)};
      s.value = {heads(V, i, 1)};
      if (p.key_shared_prefix != nullptr) {  // the shared prefix (1, KV_N, Sp, D): its head i too
        s.key_shared_prefix = &(kp = heads(*p.key_shared_prefix, i, 1));
        s.value_shared_prefix = &(vp = heads(*p.value_shared_prefix, i, 1));
      }
      s.attention_out = heads(r.attention_out, i * G, G);
      if (r.softmax_lse != nullptr) s.softmax_lse = &(lse = heads(*r.softmax_lse, i * G, G));
      s.num_heads = G;
      s.num_key_value_heads = 1;
    }
    const Status st = fused_infer_attention_score_v4_ref(s);
    if (st != kSuccess) return st;
  }
  return kSuccess;
}

// ---------------------------------------------------------------------------------------------
// The default standard
// ---------------------------------------------------------------------------------------------

struct DefaultStats {
  int64_t n = 0, ok = 0, nan = 0, int_beyond = 0, unchecked = 0;
  double max_abs = 0, max_rel = 0;
  int64_t lse_n = 0, lse_bad = 0, lse_inf_mismatch = 0;
  double lse_max_rel = 0;
  bool pass(DType out_dtype) const {
    const double checked = static_cast<double>(n - unchecked);
    const bool out_ok = out_dtype == DType::kInt8 ? int_beyond == 0 : nan == 0 && static_cast<double>(ok) >= 0.995 * checked;
    return out_ok && lse_bad == 0 && lse_inf_mismatch == 0;
  }
  std::string str() const {
    char b[400];
    std::snprintf(b, sizeof b,
                  "out n=%lld (unchecked %lld) within=%.4f%% nan=%lld int>1=%lld max_abs=%.3g max_rel=%.3g | lse n=%lld bad=%lld "
                  "inf_mismatch=%lld max_rel=%.3g",
                  static_cast<long long>(n), static_cast<long long>(unchecked),
                  n > unchecked ? 100.0 * static_cast<double>(ok) / static_cast<double>(n - unchecked) : 100.0,
                  static_cast<long long>(nan), static_cast<long long>(int_beyond), max_abs, max_rel,
                  static_cast<long long>(lse_n), static_cast<long long>(lse_bad),
                  static_cast<long long>(lse_inf_mismatch), lse_max_rel);
    return b;
  }
};

DefaultStats compare_default(const StData& d, const Golden& g) {
  DefaultStats s;
  const HostTensor& out = d.t.at("attentionOut");
  const bool bf16 = out.dtype == DType::kBFloat16;
  const double rtol = bf16 ? 7.8e-3 : 5e-3, atol = bf16 ? 1e-2 : 5e-3;
  s.n = out.numel();
  for (int64_t i = 0; i < s.n; ++i) {
    const double a = out.flat(i), r = g.out.flat(i);
    if (std::isnan(r) && g.slices_checked < g.slices) {  // not computed (sampled case): finite only
      ++s.unchecked;
      if (!std::isfinite(a)) ++s.nan;
      continue;
    }
    if (std::isnan(a) || std::isnan(r)) {
      ++s.nan;
      continue;
    }
    const double e = std::fabs(a - r);
    s.max_abs = std::max(s.max_abs, e);
    s.max_rel = std::max(s.max_rel, e / std::max(std::fabs(r), 1e-3));
    if (out.dtype == DType::kInt8) {
      if (e > 1) ++s.int_beyond;
      else ++s.ok;
    } else if (e <= atol + rtol * std::fabs(r)) {
      ++s.ok;
    }
  }
  auto it = d.t.find("softmaxLse");
  if (it != d.t.end() && d.p.softmax_lse_flag) {
    const HostTensor& lse = it->second;
    s.lse_n = lse.numel();
    for (int64_t i = 0; i < s.lse_n; ++i) {
      const double a = lse.flat(i), r = g.lse.flat(i);
      if (std::isnan(r) && g.slices_checked < g.slices) {
        if (std::isnan(a)) ++s.lse_inf_mismatch;
        continue;
      }
      if (std::isinf(r) || std::isinf(a) || std::isnan(a)) {
        if (!(std::isinf(r) && a == r)) ++s.lse_inf_mismatch;
        continue;
      }
      const double e = std::fabs(a - r) / std::max(1.0, std::fabs(r));
      s.lse_max_rel = std::max(s.lse_max_rel, e);
      if (e > 1e-4) ++s.lse_bad;
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// The cvdouble standard: a mixed-precision benchmark (TND layouts: every cvdouble case of the list)
// ---------------------------------------------------------------------------------------------

struct Bench {
  std::vector<float> out;  // in the attentionOut element order (TND)
  std::vector<float> lse;  // [T, N]
};

float round_to(DType dt, float v) { return dt == DType::kBFloat16 ? round_bf16(v) : round_fp16(v); }

// FP32 attention of a TND case with contiguous TND or paged BnBsH K/V, sparse 0 (no mask) / 3 / 4,
// an optional sink: s = fp32(scale) * sum_d q*k (FP32), softmax in FP32 with m = max(s, sink),
// P = round_qdtype(exp(s - m)), o = sum_j P v (FP32) / den, out = round_outdtype(o).
bool run_bench(const StData& d, Bench* bench, std::string* why) {
  const FiaParams& p = d.p;
  if (p.input_layout != "TND" || p.actual_seq_lengths == nullptr || p.actual_seq_lengths_kv == nullptr ||
      p.pse_shift != nullptr || p.quant_scale2 != nullptr || p.key[0].dtype != p.query.dtype) {
    *why = "the benchmark covers TND cases without pse / quantisation";
    return false;
  }
  const HostTensor& q = d.t.at("query");
  const HostTensor& k = d.t.at("key");
  const HostTensor& v = d.t.at("value");
  const int64_t T = q.dims[0], N = q.dims[1], QD = q.dims[2];
  const int64_t KVN = p.num_key_value_heads == 0 ? N : p.num_key_value_heads, G = N / KVN;
  const int64_t VD = p.attention_out.dims[2];
  const bool paged = p.block_table != nullptr;
  const HostTensor* bt = paged ? &d.t.at("bt") : nullptr;
  const int64_t bs = p.block_size;
  const std::vector<int64_t>& aq = *p.actual_seq_lengths;
  const std::vector<int64_t>& akv = *p.actual_seq_lengths_kv;
  const int64_t B = static_cast<int64_t>(aq.size());
  auto to_float = [](const HostTensor& t) {
    std::vector<float> r(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) r[static_cast<size_t>(i)] = static_cast<float>(t.flat(i));
    return r;
  };
  const std::vector<float> qf = to_float(q), kf = to_float(k), vf = to_float(v);
  // first element of row (b, h, j) of key / value
  auto kv_row = [&](const std::vector<float>& t, int64_t D, int64_t b, int64_t h, int64_t j, int64_t kv0) {
    if (paged) {
      const int64_t blk = static_cast<int64_t>(bt->get({b, j / bs}));
      return &t[static_cast<size_t>(((blk * bs) + j % bs) * KVN * D + h * D)];
    }
    return &t[static_cast<size_t>(((kv0 + j) * KVN + h) * D)];
  };
  std::vector<float> sink;
  if (p.learnable_sink != nullptr)
    for (int64_t n = 0; n < N; ++n) sink.push_back(static_cast<float>(d.t.at("sink").flat(n)));
  bench->out.assign(static_cast<size_t>(T * N * VD), 0.0f);
  bench->lse.assign(static_cast<size_t>(T * N), std::numeric_limits<float>::infinity());
  const float scale = static_cast<float>(p.scale_value);
  const DType qdt = p.query.dtype, odt = p.attention_out.dtype;
  int64_t q0 = 0, kv0 = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t s1 = aq[static_cast<size_t>(b)] - (b ? aq[static_cast<size_t>(b - 1)] : 0);
    const int64_t s2 = paged ? akv[static_cast<size_t>(b)] : akv[static_cast<size_t>(b)] - (b ? akv[static_cast<size_t>(b - 1)] : 0);
    for (int64_t n = 0; n < N; ++n) {
      const int64_t h = n / G;
      for (int64_t i = 0; i < s1; ++i) {
        std::vector<float> s(static_cast<size_t>(s2));
        std::vector<char> ok(static_cast<size_t>(s2), 1);
        float m = -std::numeric_limits<float>::infinity();
        bool any = false;
        for (int64_t j = 0; j < s2; ++j) {
          const int64_t diag = s2 - s1;
          if (p.sparse_mode == 3) ok[static_cast<size_t>(j)] = j <= i + diag;
          if (p.sparse_mode == 4)
            ok[static_cast<size_t>(j)] = !(j > i + diag + p.next_tokens || j < i + diag - p.pre_tokens);
          if (!ok[static_cast<size_t>(j)]) continue;
          float dot = 0.0f;
          const float* qr = &qf[static_cast<size_t>(((q0 + i) * N + n) * QD)];
          const float* kr = kv_row(kf, QD, b, h, j, kv0);
          for (int64_t dd = 0; dd < QD; ++dd) dot += qr[dd] * kr[dd];
          s[static_cast<size_t>(j)] = scale * dot;
          m = any ? std::max(m, s[static_cast<size_t>(j)]) : s[static_cast<size_t>(j)];
          any = true;
        }
        if (!any) continue;
        if (!sink.empty()) m = std::max(m, sink[static_cast<size_t>(n)]);
        std::vector<float> acc(static_cast<size_t>(VD), 0.0f);
        float den = 0.0f;
        for (int64_t j = 0; j < s2; ++j) {
          if (!ok[static_cast<size_t>(j)]) continue;
          const float e = std::exp(s[static_cast<size_t>(j)] - m);
          den += e;
          const float pr = round_to(qdt, e);
          const float* vr = kv_row(vf, VD, b, h, j, kv0);
          for (int64_t dd = 0; dd < VD; ++dd) acc[static_cast<size_t>(dd)] += pr * vr[dd];
        }
        if (!sink.empty()) den += std::exp(sink[static_cast<size_t>(n)] - m);
        for (int64_t dd = 0; dd < VD; ++dd)
          bench->out[static_cast<size_t>(((q0 + i) * N + n) * VD + dd)] = round_to(odt, acc[static_cast<size_t>(dd)] / den);
        bench->lse[static_cast<size_t>((q0 + i) * N + n)] = m + std::log(den);
      }
    }
    q0 += s1;
    if (!paged) kv0 += s2;
  }
  return true;
}

struct ErrMetrics {
  double max_rel = 0, mean_rel = 0, rmse = 0;
};
template <class Get>
ErrMetrics metrics(int64_t n, const HostTensor& gold, Get get) {
  ErrMetrics m;
  int64_t cnt = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double r = gold.flat(i), a = get(i);
    if (std::isinf(r)) continue;
    const double e = std::fabs(a - r), rel = e / std::max(std::fabs(r), 1e-3);
    m.max_rel = std::max(m.max_rel, rel);
    m.mean_rel += rel;
    m.rmse += e * e;
    ++cnt;
  }
  if (cnt) m.mean_rel /= static_cast<double>(cnt), m.rmse = std::sqrt(m.rmse / static_cast<double>(cnt));
  return m;
}

// "cvdouble(a,b,c)" -> limits
void cv_limits(const std::string& acc, double lim[3]) {
  lim[0] = 2, lim[1] = 1.2, lim[2] = 1.2;
  const size_t open = acc.find('(');
  if (open == std::string::npos) return;
  const std::vector<std::string> parts = vendor_st::split(acc.substr(open + 1, acc.size() - open - 2), ",");
  for (size_t i = 0; i < parts.size() && i < 3; ++i) lim[i] = std::strtod(parts[i].c_str(), nullptr);
}

// ---------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool bytes_are(const HostTensor& t, uint8_t value) {
  const auto* b = static_cast<const uint8_t*>(t.data());
  const int64_t n = t.numel() * dtype_size(t.dtype);
  for (int64_t i = 0; i < n; ++i)
    if (b[i] != value) return false;
  return true;
}

class FiaVendorSt : public ::testing::TestWithParam<StCase> {};

TEST_P(FiaVendorSt, Case) {
  const StCase& c = GetParam();
  ASSERT_EQ(c.err, "None") << "the list only holds cases expected to succeed";
  const Pending* pend = pending_of(c.id);
  const KnownMismatch* known = mismatch_of(c.id);
  auto t0 = std::chrono::steady_clock::now();
  auto d = vendor_st::materialise(c, pend == nullptr);
  const double gen_ms = ms_since(t0);

  t0 = std::chrono::steady_clock::now();
  const aclnnStatus st = call_on_stream(d->p);
  const double op_ms = ms_since(t0);
  const std::string msg = st == ACLNN_SUCCESS ? "" : aclGetRecentErrMsg();

  if (pend != nullptr) {
    EXPECT_NE(st, ACLNN_SUCCESS) << "pending case #" << c.id << " (" << pend->feature
                                 << ") succeeds now: compare it and remove it from kPending";
    EXPECT_EQ(st, 161002) << msg;
    EXPECT_NE(msg.find("FIA-02"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not supported yet"), std::string::npos) << msg;
    EXPECT_TRUE(bytes_are(d->t.at("attentionOut"), vendor_st::kCanary)) << "attentionOut written";
    if (d->t.count("softmaxLse")) {
      EXPECT_TRUE(bytes_are(d->t.at("softmaxLse"), vendor_st::kCanary)) << "lse written";
    }
    std::printf("[vendor-st] #%d pending (%s): %d %s | gen %.0f ms\n", c.id, pend->feature, static_cast<int>(st),
                msg.c_str(), gen_ms);
    return;
  }
  if (st != ACLNN_SUCCESS) {
    if (known != nullptr) {
      std::printf("[vendor-st] #%d known mismatch (%s): %d %s\n", c.id, known->reason, static_cast<int>(st), msg.c_str());
      return;
    }
    FAIL() << "case #" << c.id << " rejected: " << st << " " << msg << "\n" << c.line;
  }

  Golden g;
  t0 = std::chrono::steady_clock::now();
  const Status rs = run_reference(*d, &g);
  const double ref_ms = ms_since(t0);
  ASSERT_EQ(rs, kSuccess) << "reference: " << last_error_message();

  const DefaultStats ds = compare_default(*d, g);
  bool pass = true;
  std::string detail = "default: " + ds.str();
  if (!c.cvdouble()) {
    pass = ds.pass(d->p.attention_out.dtype);
  } else {
    Bench bench;
    std::string why;
    t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(run_bench(*d, &bench, &why)) << why;
    const double bench_ms = ms_since(t0);
    double lim[3];
    cv_limits(c.acc, lim);
    const HostTensor& out = d->t.at("attentionOut");
    const ErrMetrics ours = metrics(out.numel(), g.out, [&](int64_t i) { return out.flat(i); });
    const ErrMetrics ben = metrics(out.numel(), g.out, [&](int64_t i) { return static_cast<double>(bench.out[static_cast<size_t>(i)]); });
    const double our_m[3] = {ours.max_rel, ours.mean_rel, ours.rmse}, ben_m[3] = {ben.max_rel, ben.mean_rel, ben.rmse};
    char b[300];
    std::snprintf(b, sizeof b, " | cvdouble out ratios max_rel %.3f (%.3g/%.3g) mean_rel %.3f (%.3g/%.3g) rmse %.3f (%.3g/%.3g)",
                  our_m[0] / std::max(ben_m[0], 1e-300), our_m[0], ben_m[0], our_m[1] / std::max(ben_m[1], 1e-300),
                  our_m[1], ben_m[1], our_m[2] / std::max(ben_m[2], 1e-300), our_m[2], ben_m[2]);
    detail += b;
    // Both standards: the ratios, and the default rule on the elements.
    pass = ds.pass(d->p.attention_out.dtype);
    for (int k = 0; k < 3; ++k) pass = pass && our_m[k] <= lim[k] * ben_m[k] + 1e-12;
    if (d->p.softmax_lse_flag) {
      const HostTensor& lse = d->t.at("softmaxLse");
      const ErrMetrics ol = metrics(lse.numel(), g.lse, [&](int64_t i) { return lse.flat(i); });
      const ErrMetrics bl = metrics(lse.numel(), g.lse, [&](int64_t i) { return static_cast<double>(bench.lse[static_cast<size_t>(i)]); });
      std::snprintf(b, sizeof b, " | lse max_rel %.3g (bench %.3g) mean_rel %.3g (bench %.3g)", ol.max_rel, bl.max_rel,
                    ol.mean_rel, bl.mean_rel);
      detail += b;
      // (lse is FP32 on both sides: held to the default rule above, 1e-4 relative, +inf exact.)
    }
    std::snprintf(b, sizeof b, " | bench %.0f ms", bench_ms);
    detail += b;
  }
  if (g.slices > 0) detail += " | reference slices " + std::to_string(g.slices_checked) + "/" + std::to_string(g.slices);
  std::printf("[vendor-st] #%d %s %s: %s | gen %.0f ms, op %.0f ms, ref %.0f ms\n", c.id, pass ? "match" : "MISMATCH",
              c.acc.c_str(), detail.c_str(), gen_ms, op_ms, ref_ms);
  if (known != nullptr) {
    EXPECT_FALSE(pass) << "known mismatch #" << c.id << " matches now: remove it from kKnownMismatch";
    return;
  }
  EXPECT_TRUE(pass) << "case #" << c.id << ": " << detail << "\n" << c.line;
}

std::string case_name(const ::testing::TestParamInfo<StCase>& i) { return "c" + std::to_string(i.param.id); }

INSTANTIATE_TEST_SUITE_P(Fast, FiaVendorSt, ::testing::ValuesIn(cases_where(false)), case_name);
INSTANTIATE_TEST_SUITE_P(Slow, FiaVendorSt, ::testing::ValuesIn(cases_where(true)), case_name);

// KV antiquant (INT8 / INT4 key / value with an FP16 / BF16 query): softmaxLse within 1e-5 of
// max(|ref|, 1) (the cases without softmaxLseFlag request it here), at the case's innerPrecise and
// with bit 0 flipped, through the C API (docs/ops/fused_infer_attention_score.md "KV antiquant":
// the dequantised values are never rounded to the query dtype). Prints the largest relative
// error per case and innerPrecise ("[vendor-st-aq-lse]").
bool antiquant(const StCase& c) {
  const DType k = c.tensor("key")->dtype, q = c.tensor("query")->dtype;
  return (k == DType::kInt8 || k == DType::kInt32) && q != DType::kInt8;
}
std::vector<StCase> antiquant_cases(bool slow) {
  std::vector<StCase> r;
  for (const StCase& c : cases_where(slow))
    if (antiquant(c) && mismatch_of(c.id) == nullptr) r.push_back(c);
  return r;
}

class FiaVendorStAntiquantLse : public ::testing::TestWithParam<StCase> {};

TEST_P(FiaVendorStAntiquantLse, Within1e5) {
  const StCase& c = GetParam();
  auto d = vendor_st::materialise(c);
  FiaParams& p = d->p;
  if (!p.softmax_lse_flag) {  // (B, N, Q_S, 1)
    const TensorView& q = p.query;
    const int64_t qs = p.input_layout.rfind("BNSD", 0) == 0 ? q.dims[2] : q.dims[1];
    d->t["softmaxLse"] = HostTensor(DType::kFloat32, {q.dims[0], p.num_heads, qs, 1});
    p.softmax_lse = d->opt("softmaxLse");
    p.softmax_lse_flag = true;
  }
  Golden g;
  ASSERT_EQ(run_reference(*d, &g), kSuccess) << "reference: " << last_error_message();
  const HostTensor& lse = d->t.at("softmaxLse");
  const int64_t ip0 = p.inner_precise;
  for (int64_t ip : {ip0, ip0 ^ 1}) {
    p.inner_precise = ip;
    std::memset(lse.data(), vendor_st::kCanary, static_cast<size_t>(lse.numel()) * 4);
    ASSERT_EQ(call_on_stream(p), ACLNN_SUCCESS) << "innerPrecise " << ip << ": " << aclGetRecentErrMsg();
    double worst = 0;
    int64_t checked = 0;
    for (int64_t i = 0; i < lse.numel(); ++i) {
      const double a = lse.flat(i), r = g.lse.flat(i);
      if (std::isnan(r) && g.slices_checked < g.slices) continue;  // not computed (sampled case)
      if (std::isinf(r)) {
        EXPECT_EQ(a, r) << "innerPrecise " << ip << " lse " << i;
        continue;
      }
      const double e = std::fabs(a - r) / std::max(1.0, std::fabs(r));
      worst = std::max(worst, std::isnan(e) ? 1e9 : e);
      ++checked;
      EXPECT_LE(e, 1e-5) << "innerPrecise " << ip << " lse " << i << ": " << a << " vs " << r;
    }
    std::printf("[vendor-st-aq-lse] #%d innerPrecise %lld: %lld lse, max rel %.3g\n", c.id, static_cast<long long>(ip),
                static_cast<long long>(checked), worst);
  }
}

INSTANTIATE_TEST_SUITE_P(Fast, FiaVendorStAntiquantLse, ::testing::ValuesIn(antiquant_cases(false)), case_name);
INSTANTIATE_TEST_SUITE_P(Slow, FiaVendorStAntiquantLse, ::testing::ValuesIn(antiquant_cases(true)), case_name);

// The sliced and the sampled reference of run_reference equal the reference in one piece: by
// batch (205: BNSD, [B, 1, 1, S] mask; 201: BSH, actualSeqLengthsKv of B values; 229: BSH,
// broadcast pseShift, actualSeqLengthsKv [432, 0], per-token INT8 antiquant scales (1, B, S);
// 255: per-token-per-head antiquant (B, KV_N, S) with offsets), by KV head (a batch-1 BNSD case
// of G 2 written here, with a mask and lse).
TEST(FiaVendorStTable, SlicedReferenceEqualsWhole) {
  StCase by_head;
  std::string why;
  ASSERT_TRUE(vendor_st::parse_case_line(
      "#-1 err=None acc=\"default\" | query:fp16[1, 6, 3, 64] ; key:fp16[1, 3, 300, 64] ; value:fp16[1, 3, 300, 64] ; "
      "mask:bool[1, 1, 3, 300] ; numHeads=6 ; scaleValue=0.125 ; inputLayout=BNSD ; numKeyValueHeads=3 ; sparseMode=0 ; "
      "softmaxLseFlag=True ; attentionOut:fp16[1, 6, 3, 64] ; softmaxLse:fp32[1, 6, 3, 1]",
      &by_head, &why))
      << why;
  for (int id : {205, 201, 229, 255, -1}) {
    const StCase* c = id < 0 ? &by_head : nullptr;
    for (const StCase& x : all_cases())
      if (x.id == id) c = &x;
    ASSERT_NE(c, nullptr);
    auto d = vendor_st::materialise(*c);
    Golden whole, sliced, sampled;
    ASSERT_EQ(run_reference(*d, &whole, 1e18), kSuccess);
    ASSERT_EQ(run_reference(*d, &sliced, 0, 1e18), kSuccess);
    ASSERT_EQ(run_reference(*d, &sampled, 0, 0, 0), kSuccess);  // one slice: the last
    EXPECT_EQ(whole.slices, 0);
    EXPECT_EQ(sliced.slices_checked, sliced.slices);
    EXPECT_GT(sampled.slices_checked, 0);
    EXPECT_LT(sampled.slices_checked, sampled.slices);
    int64_t nan = 0;
    for (int64_t i = 0; i < whole.out.numel(); ++i) {
      ASSERT_EQ(sliced.out.flat(i), whole.out.flat(i)) << "case " << id << " element " << i;
      if (std::isnan(sampled.out.flat(i))) ++nan;
      else ASSERT_EQ(sampled.out.flat(i), whole.out.flat(i)) << "case " << id << " element " << i;
    }
    EXPECT_GT(nan, 0);
  }
}

// The table itself: 165 cases, distinct ids, every pending / known-mismatch id in it; prints the
// summary by feature.
TEST(FiaVendorStTable, Summary) {
  const std::vector<StCase>& cases = all_cases();
  EXPECT_EQ(cases.size(), 165u);
  std::map<int, int> ids;
  for (const StCase& c : cases) ++ids[c.id];
  for (const auto& [id, n] : ids) EXPECT_EQ(n, 1) << "case id " << id << " repeats";
  std::map<std::string, int> by_feature;
  int pending = 0, known = 0, slow = 0, cv = 0;
  for (const Pending& p : kPending) {
    EXPECT_EQ(ids.count(p.id), 1u) << "pending id " << p.id << " is not in the table";
    ++by_feature[p.feature];
    ++pending;
  }
  for (const KnownMismatch& k : kKnownMismatch) {
    EXPECT_EQ(ids.count(k.id), 1u) << "known-mismatch id " << k.id << " is not in the table";
    EXPECT_EQ(pending_of(k.id), nullptr) << k.id << " is both pending and a known mismatch";
    ++known;
  }
  for (const StCase& c : cases) {
    slow += pending_of(c.id) == nullptr && case_cost(c) > kSlowCost;
    cv += c.cvdouble() && pending_of(c.id) == nullptr;
  }
  std::string features;
  for (const auto& [f, n] : by_feature) features += (features.empty() ? "" : ", ") + f + " " + std::to_string(n);
  const int matched = static_cast<int>(cases.size()) - pending - known;
  std::printf("[vendor-st] %zu cases: %d compared with the reference (%d of them cvdouble), %d pending (%s), "
              "%d known mismatch; %d slow (left out under ASan)\n",
              cases.size(), matched, cv, pending, features.c_str(), known, slow);
}

}  // namespace
}  // namespace mlaops

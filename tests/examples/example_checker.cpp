// Checks every aclnn call a program makes against the float64 reference: linked into the
// examples' test builds (examples/CMakeLists.txt), it installs a RunObserver before main runs.
// Before each phase-2 run it copies every tensor the call reads or writes (overlapping tensors
// share one copy, so in-place caches stay in place); after the run it runs the reference on the
// copies and compares each output with the operator's, with the operator tests' tolerances
// (docs/testing.md). The program's exit status becomes 3 when a call failed, an output differs,
// or no call was checked; each check prints one line to stderr.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "api/runtime/executor.h"
#include "reference/fia/fia_ref.h"
#include "reference/mla_preprocess/mla_preprocess_ref.h"
#include "reference/mla_prolog/mla_prolog_ref.h"
#include "testkit/compare.h"

namespace mlaops::examples {
namespace {

using api::CallParams;

// Calls f(name, view, is_output) for every tensor of the parameters (present optional ones too).
// The views are the structs' own members, so f may re-point them.
struct Visitor {
  std::function<void(const char*, TensorView&, bool)> f;
  std::deque<TensorView>* owned;  // storage for re-pointed optional views

  void view(const char* name, TensorView& v, bool out) { f(name, v, out); }
  void opt(const char* name, const TensorView*& p, bool out) {
    if (p == nullptr) return;
    owned->push_back(*p);
    p = &owned->back();
    f(name, owned->back(), out);
  }
  void list(const char* name, std::vector<TensorView>& l) {
    for (auto& v : l) f(name, v, false);
  }

  void visit(FiaParams& p) {
    view("query", p.query, false);
    list("key", p.key);
    list("value", p.value);
    opt("pseShift", p.pse_shift, false);
    opt("attenMask", p.atten_mask, false);
    opt("deqScale1", p.deq_scale1, false);
    opt("quantScale1", p.quant_scale1, false);
    opt("deqScale2", p.deq_scale2, false);
    opt("quantScale2", p.quant_scale2, false);
    opt("quantOffset2", p.quant_offset2, false);
    opt("antiquantScale", p.antiquant_scale, false);
    opt("antiquantOffset", p.antiquant_offset, false);
    opt("blockTable", p.block_table, false);
    opt("queryPaddingSize", p.query_padding_size, false);
    opt("kvPaddingSize", p.kv_padding_size, false);
    opt("keyAntiquantScale", p.key_antiquant_scale, false);
    opt("keyAntiquantOffset", p.key_antiquant_offset, false);
    opt("valueAntiquantScale", p.value_antiquant_scale, false);
    opt("valueAntiquantOffset", p.value_antiquant_offset, false);
    opt("keySharedPrefix", p.key_shared_prefix, false);
    opt("valueSharedPrefix", p.value_shared_prefix, false);
    opt("queryRope", p.query_rope, false);
    opt("keyRope", p.key_rope, false);
    opt("keyRopeAntiquantScale", p.key_rope_antiquant_scale, false);
    opt("dequantScaleQuery", p.dequant_scale_query, false);
    opt("learnableSink", p.learnable_sink, false);
    view("attentionOut", p.attention_out, true);
    opt("softmaxLse", p.softmax_lse, true);
  }
  void visit(MlaPrologParams& p) {
    view("tokenX", p.token_x, false);
    view("weightDq", p.weight_dq, false);
    view("weightUqQr", p.weight_uq_qr, false);
    view("weightUk", p.weight_uk, false);
    view("weightDkvKr", p.weight_dkv_kr, false);
    view("rmsnormGammaCq", p.rmsnorm_gamma_cq, false);
    view("rmsnormGammaCkv", p.rmsnorm_gamma_ckv, false);
    view("ropeSin", p.rope_sin, false);
    view("ropeCos", p.rope_cos, false);
    view("cacheIndex", p.cache_index, false);
    view("kvCache", p.kv_cache, true);
    view("krCache", p.kr_cache, true);
    opt("dequantScaleX", p.dequant_scale_x, false);
    opt("dequantScaleWDq", p.dequant_scale_w_dq, false);
    opt("dequantScaleWUqQr", p.dequant_scale_w_uq_qr, false);
    opt("dequantScaleWDkvKr", p.dequant_scale_w_dkv_kr, false);
    opt("quantScaleCkv", p.quant_scale_ckv, false);
    opt("quantScaleCkr", p.quant_scale_ckr, false);
    opt("smoothScalesCq", p.smooth_scales_cq, false);
    opt("actualSeqLen", p.actual_seq_len, false);
    opt("kNopeClipAlpha", p.k_nope_clip_alpha, false);
    view("queryOut", p.query_out, true);
    view("queryRopeOut", p.query_rope_out, true);
    opt("dequantScaleQNopeOut", p.dequant_scale_q_nope_out, true);
    opt("queryNormOut", p.query_norm_out, true);
    opt("dequantScaleQNormOut", p.dequant_scale_q_norm_out, true);
  }
  void visit(MlaPreprocessParams& p) {
    view("input", p.input, false);
    view("gamma0", p.gamma0, false);
    view("beta0", p.beta0, false);
    opt("quantScale0", p.quant_scale0, false);
    opt("quantOffset0", p.quant_offset0, false);
    view("wdqkv", p.wdqkv, false);
    opt("deScale0", p.de_scale0, false);
    opt("bias0", p.bias0, false);
    view("gamma1", p.gamma1, false);
    view("beta1", p.beta1, false);
    opt("quantScale1", p.quant_scale1, false);
    opt("quantOffset1", p.quant_offset1, false);
    view("wuq", p.wuq, false);
    opt("deScale1", p.de_scale1, false);
    opt("bias1", p.bias1, false);
    view("gamma2", p.gamma2, false);
    view("cos", p.cos, false);
    view("sin", p.sin, false);
    view("wuk", p.wuk, false);
    view("kvCache", p.kv_cache, true);
    opt("kvCacheRope", p.kv_cache_rope, true);  // the caches: compared too (in place, or untouched)
    view("slotMapping", p.slot_mapping, false);
    opt("ctkvScale", p.ctkv_scale, false);
    opt("qNopeScale", p.q_nope_scale, false);
    view("qOut", p.q_out, true);
    view("kvCacheOut", p.kv_cache_out, true);
    opt("qRopeOut", p.q_rope_out, true);
    opt("krCacheOut", p.kr_cache_out, true);
    opt("qDownOut", p.q_down_out, true);
  }
};

// Byte span [lo, hi) of a view (strides are non-negative for every accepted tensor).
bool span(const TensorView& v, const char** lo, const char** hi) {
  if (v.data == nullptr || v.rank < 0 || v.numel() == 0) return false;
  int64_t last = 0;
  for (int i = 0; i < v.rank; ++i) last += (v.dims[i] - 1) * v.strides[i];
  const int64_t esize = std::max<int64_t>(1, dtype_size(v.dtype));
  *lo = static_cast<const char*>(v.data);
  *hi = *lo + (last + 1) * esize;
  return true;
}

struct Pending {
  CallParams ref;                // the reference's parameters, on the copies
  std::deque<TensorView> owned;
  std::vector<std::pair<const char*, std::vector<char>>> regions;  // original start, copy
};

class Checker : public api::RunObserver {
 public:
  void before(const std::string& /*op*/, const CallParams& params) override {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ = std::make_unique<Pending>();
    Pending& pd = *pending_;
    pd.ref = params;
    // Spans of every tensor, merged where they overlap.
    std::vector<std::pair<const char*, const char*>> spans;
    for_each(pd, [&](const char*, TensorView& v, bool) {
      const char *lo, *hi;
      if (span(v, &lo, &hi)) spans.emplace_back(lo, hi);
    });
    std::sort(spans.begin(), spans.end());
    std::vector<std::pair<const char*, const char*>> merged;
    for (const auto& s : spans) {
      if (!merged.empty() && s.first < merged.back().second) merged.back().second = std::max(merged.back().second, s.second);
      else merged.push_back(s);
    }
    for (const auto& m : merged) pd.regions.emplace_back(m.first, std::vector<char>(m.first, m.second));
    // Re-point every view into its region's copy (data keeps its offset inside the region).
    for_each(pd, [&](const char*, TensorView& v, bool) {
      const char *lo, *hi;
      if (!span(v, &lo, &hi)) return;
      for (auto& r : pd.regions)
        if (lo >= r.first && hi <= r.first + r.second.size()) {
          v.data = r.second.data() + (lo - r.first);
          return;
        }
    });
  }

  void after(const std::string& op, const CallParams& params, int status) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++calls_;
    std::unique_ptr<Pending> pd = std::move(pending_);
    if (status != 0 || !pd) {
      std::fprintf(stderr, "[example check] %s: the call failed with status %d\n", op.c_str(), status);
      ++failures_;
      return;
    }
    Status rs = kSuccess;
    if (auto* f = std::get_if<FiaParams>(&pd->ref)) rs = fused_infer_attention_score_v4_ref(*f);
    else if (auto* m = std::get_if<MlaPrologParams>(&pd->ref)) rs = mla_prolog_ref(*m);
    else if (auto* q = std::get_if<MlaPreprocessParams>(&pd->ref)) rs = mla_preprocess_ref(*q);
    if (rs != kSuccess) {
      std::fprintf(stderr, "[example check] %s: the float64 reference refused the call (%d): %s\n", op.c_str(),
                   static_cast<int>(rs), last_error_message());
      ++failures_;
      return;
    }
    // Outputs of the operator's call, in visiting order, against the reference's.
    std::vector<std::pair<const char*, TensorView>> got, want;
    CallParams mine = params;
    std::deque<TensorView> scratch;
    collect(mine, scratch, &got);
    collect(pd->ref, pd->owned, &want);
    split_per_tile(mine, &got);
    split_per_tile(pd->ref, &want);
    // Self-test of the checker (MLAOPS_EXAMPLE_CHECK_SELFTEST=1): spoil the operator's first output
    // element so that the check must fail.
    if (const char* st = std::getenv("MLAOPS_EXAMPLE_CHECK_SELFTEST"); st != nullptr && st[0] == '1' && !got.empty())
      spoil(got[0].second);
    for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
      const TensorView& a = got[i].second;
      const TensorView& r = want[i].second;
      if (a.data == nullptr || a.numel() == 0) continue;
      const bool integer = r.dtype == DType::kInt8 || r.dtype == DType::kInt32 || r.dtype == DType::kInt64;
      const testing::Tolerance tol = tolerance(r.dtype, std::strstr(got[i].first, "Cache") != nullptr);
      const testing::Stats s = testing::compare(a, r, tol);
      const bool ok = testing::within(s, tol, integer);
      std::fprintf(stderr, "[example check] %s: %s vs the float64 reference: %s (%s)\n", op.c_str(), got[i].first,
                   ok ? "ok" : "MISMATCH", s.str().c_str());
      if (!ok) ++failures_;
      ++outputs_;
    }
  }

  int exit_code() const {
    if (calls_ == 0) {
      std::fprintf(stderr, "[example check] no aclnn call was checked\n");
      return 3;
    }
    if (failures_ > 0) {
      std::fprintf(stderr, "[example check] %d of %d calls or outputs failed the check\n", failures_, calls_);
      return 3;
    }
    std::fprintf(stderr, "[example check] %d calls, %d outputs match the float64 reference\n", calls_, outputs_);
    return 0;
  }

 private:
  template <class F>
  static void for_each(Pending& pd, F&& f) {
    Visitor v{f, &pd.owned};
    std::visit([&](auto& p) {
      if constexpr (!std::is_same_v<std::decay_t<decltype(p)>, std::monostate>) v.visit(p);
    }, pd.ref);
  }
  static void collect(CallParams& params, std::deque<TensorView>& owned,
                      std::vector<std::pair<const char*, TensorView>>* out) {
    Visitor v{[&](const char* name, TensorView& t, bool is_out) {
                if (is_out) out->emplace_back(name, t);
              },
              &owned};
    std::visit([&](auto& p) {
      if constexpr (!std::is_same_v<std::decay_t<decltype(p)>, std::monostate>) v.visit(p);
    }, params);
  }
  // The operator tests' rules (testkit/compare.h), the widest of each kind: half outputs 4 ulps
  // with the rounding-cascade allowance (MlaProlog's rule for a re-quantized c_Q), int8 within 1
  // on at most 2 % of the elements, fp32 (LSE, dequant scales) 2 %. Caches are compared whole
  // (their unwritten rows must be untouched) without the cascade allowance: its cap is a fraction
  // of the tensor's RMS, which the untouched rows of a mostly empty cache make meaningless; the
  // elementwise 4-ulp bound applies to every row.
  // A per-tile KV-quant cache row (MlaProlog V3 kvCacheQuantMode 3) is Hckv int8 values, Dr bf16
  // rope values and Hckv/128 fp32 scales in one INT8 row: compared part by part, each by its dtype's
  // rule, as the operator tests do.
  static void split_per_tile(const CallParams& params, std::vector<std::pair<const char*, TensorView>>* outs) {
    const auto* m = std::get_if<MlaPrologParams>(&params);
    if (m == nullptr || !m->kv_quant_per_tile) return;
    const int64_t hckv = m->weight_uk.dims[m->weight_uk.rank - 1], dr = m->rope_sin.dims[m->rope_sin.rank - 1];
    for (auto it = outs->begin(); it != outs->end(); ++it) {
      if (std::strcmp(it->first, "kvCache") != 0) continue;
      const TensorView kv = it->second;
      const int64_t row = kv.dims[kv.rank - 1], rows = kv.numel() / row;
      auto part = [&](int64_t offset, DType dt, int64_t n) {
        const int64_t es = dtype_size(dt);
        const int64_t dims[2] = {rows, n};
        TensorView v = make_view(static_cast<char*>(kv.data) + offset, dt, dims, 2);
        v.strides[0] = row / es;
        return v;
      };
      const TensorView q = part(0, DType::kInt8, hckv), rope = part(hckv, DType::kBFloat16, dr),
                       scales = part(hckv + 2 * dr, DType::kFloat32, hckv / 128);
      it = outs->erase(it);
      outs->insert(it, {{"kvCache (int8 part)", q}, {"kvCache (rope part)", rope}, {"kvCache (tile scales)", scales}});
      return;
    }
  }

  static void spoil(const TensorView& t) {
    if (t.data == nullptr || t.numel() == 0) return;
    auto* b = static_cast<unsigned char*>(t.data);
    b[dtype_size(t.dtype) - 1] ^= 0x40;  // a high exponent / magnitude bit of element 0
  }
  static testing::Tolerance tolerance(DType dt, bool cache) {
    switch (dt) {
      case DType::kFloat16:
      case DType::kBFloat16:
        return cache ? testing::half_tolerance(dt, 4) : testing::with_rounding_cascade(testing::half_tolerance(dt, 4), dt);
      case DType::kInt8: return testing::int8_tolerance(0.02);
      default: return testing::fp32_tolerance(0.02);
    }
  }

  std::mutex mu_;
  std::unique_ptr<Pending> pending_;
  int calls_ = 0, failures_ = 0, outputs_ = 0;
};

Checker* g_checker = nullptr;

void finish() {
  const int code = g_checker->exit_code();
  api::set_run_observer(nullptr);
  if (code != 0) std::_Exit(code);
}

struct Install {
  Install() {
    g_checker = new Checker();
    api::set_run_observer(g_checker);
    std::atexit(finish);
  }
} g_install;

}  // namespace
}  // namespace mlaops::examples

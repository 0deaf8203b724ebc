// GEMM routes: the setting, the measured and cached decision, the report (gemm_route.h).
#include "ops/common/gemm_route.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu/gemm/gemm.h"

namespace mlaops {

namespace {

using kernels::GemmElem;
using kernels::OnednnType;

// ---- the setting ----
std::atomic<int> g_route_override{-1};  // -1: MLAOPS_GEMM; else a GemmRouteSetting

GemmRouteSetting env_setting() {
  static const GemmRouteSetting value = [] {
    const char* env = std::getenv("MLAOPS_GEMM");
    GemmRouteSetting s = GemmRouteSetting::kAuto;
    if (env != nullptr && *env != '\0' && !parse_gemm_route(env, &s)) {
      std::fprintf(stderr, "mlaops: MLAOPS_GEMM=%s is not one of auto|own|onednn|onednn-bf16|onednn-f32; using auto\n",
                   env);
      s = GemmRouteSetting::kAuto;
    }
    return s;
  }();
  return value;
}

// ---- the decisions of this process ----
using Key = std::tuple<int, int, int, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int>;
struct Decision {
  GemmRouteInfo info;
  bool onednn = false;
  OnednnType type = OnednnType::kBf16;
  // The plan of the query's own strides and chunks, made once (its primitives are shared by every
  // plan of this shape; executing them is thread-safe, the scratchpad being each call's workspace).
  kernels::OnednnGemmPlan plan;
};
std::mutex g_mu;
std::map<Key, Decision>& decisions() {
  static std::map<Key, Decision> m;
  return m;
}
std::vector<GemmRouteInfo>& decision_log() {  // in the order they were made
  static std::vector<GemmRouteInfo> v;
  return v;
}

int64_t elem_bytes(GemmElem e) { return e == GemmElem::kS8 ? 1 : 2; }

char* align64(std::vector<char>& v) {
  return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(v.data()) + 63) / 64 * 64);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The library's kernels on synthetic operands of the query's shape (m_max rows), split over the
// threads as the operators split them (column groups); returns a callable timing one product.
struct OwnBench {
  std::vector<char> a, w, c, scratch;
  std::vector<int32_t> rowsum;
  kernels::GemmFn fn = nullptr;
  kernels::GemmTFn tfn = nullptr;
  int64_t width = 16, groups = 0, scratch_each = 0;
  const GemmRouteQuery* q = nullptr;

  explicit OwnBench(const GemmRouteQuery& query) : q(&query) {
    using namespace kernels;
    const int64_t es = elem_bytes(q->elem), M = q->m_max, K = q->K, N = q->N;
    a.assign(static_cast<size_t>(M * K * es), 0);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<char>(es == 1 ? int(i * 7 % 9) - 4 : (i % 2 ? 0x3f : int(i * 5 % 7)));
    GemmKind kind;
    if (!q->transposed) {
      width = q->elem == GemmElem::kS8 ? 32 : 16;
      const auto& fam = q->elem == GemmElem::kS8 ? gemm_s8_family() : q->elem == GemmElem::kF16 ? gemm_f16_family()
                                                                                                  : gemm_bf16_family();
      fn = fam.value(gemm_select(fam, q->isa, {gemm_layout(width, width)})).run;
      kind = q->elem == GemmElem::kS8 ? GemmKind::kS8 : q->elem == GemmElem::kF16 ? GemmKind::kF16 : GemmKind::kBf16;
      w.assign(static_cast<size_t>((N + width - 1) / width * ((K + 15) / 16 * 16) * width * es), 1);
    } else {
      width = 16;
      const auto& fam = q->elem == GemmElem::kS8 ? gemm_s8_t_family() : q->elem == GemmElem::kF16 ? gemm_f16_t_family()
                                                                                                    : gemm_bf16_t_family();
      tfn = fam.value(gemm_select(fam, q->isa, {GemmTArgs{}})).run;
      kind = q->elem == GemmElem::kS8 ? GemmKind::kS8T : q->elem == GemmElem::kF16 ? GemmKind::kF16T : GemmKind::kBf16T;
      const int64_t c0 = 32 / es;
      w.assign(static_cast<size_t>((K + c0 - 1) / c0 * c0 * ((N + 15) / 16) * 16 * es), 1);
    }
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<char>(es == 1 ? int(i * 3 % 7) - 3 : (i % 2 ? 0x3f : int(i % 5)));
    groups = (N + width - 1) / width;
    const int64_t per = (groups + q->threads - 1) / q->threads * width;
    scratch_each = std::max<int64_t>(64, gemm_scratch_bytes(kind, M, K, per)) + 64;
    scratch.assign(static_cast<size_t>(scratch_each * q->threads + 64), 0);
    c.assign(static_cast<size_t>(M * N * 4 + 64), 0);
    rowsum.assign(static_cast<size_t>(M), 0);
    if (q->elem == GemmElem::kS8) gemm_s8_rowsum(q->isa, false)(reinterpret_cast<const int8_t*>(a.data()), K, M, K, rowsum.data());
  }
  void run() {
    struct Ctx {
      OwnBench* b;
    } ctx{this};
    parallel_chunks(
        groups, 1, q->threads,
        [](void* p, int64_t gb, int64_t ge, int slot) {
          OwnBench& b = *static_cast<Ctx*>(p)->b;
          const GemmRouteQuery& qq = *b.q;
          char* scr = align64(b.scratch) + slot * b.scratch_each;
          const int32_t* rs = qq.elem == GemmElem::kS8 ? b.rowsum.data() : nullptr;
          if (b.fn != nullptr) {
            kernels::GemmArgs g;
            g.M = qq.m_max, g.N = qq.N, g.K = qq.K;
            g.A = b.a.data(), g.lda = qq.K;
            g.B = b.w.data(), g.ldb = b.width, g.panel_stride = (qq.K + 15) / 16 * 16 * b.width, g.panel_width = b.width;
            g.C = b.c.data(), g.ldc = qq.N;
            g.n_begin = gb * b.width, g.n_end = std::min(ge * b.width, qq.N);
            g.scratch = scr, g.a_rowsum = rs;
            b.fn(g);
          } else {
            kernels::GemmTArgs g;
            g.M = qq.m_max, g.N = qq.N, g.K = qq.K;
            g.A = b.a.data(), g.lda = qq.K;
            g.W = b.w.data(), g.r1 = (qq.N + 15) / 16;
            g.C = b.c.data(), g.ldc = qq.N;
            g.n_begin = gb * 16, g.n_end = std::min(ge * 16, qq.N);
            g.scratch = scr, g.a_rowsum = rs;
            b.tfn(g);
          }
        },
        &ctx);
  }
  kernels::WeightSource source() const {
    kernels::WeightSource s;
    s.transposed = q->transposed;
    s.data = w.data();
    s.ldb = width, s.panel_width = width, s.panel_stride = (q->K + 15) / 16 * 16 * width;
    s.r1 = (q->N + 15) / 16;
    return s;
  }
};

struct OnednnBench {
  kernels::OnednnGemmPlan plan;
  std::vector<char> ws;
  double pack_s = 1e30, run_s = 1e30;
};

// The oneDNN types that can run an element type, the likely fastest first.
std::vector<OnednnType> candidates(GemmElem e, GemmRouteSetting s) {
  if (e == GemmElem::kS8) return {OnednnType::kU8S8};
  if (e == GemmElem::kF16) return {OnednnType::kF32};
  if (s == GemmRouteSetting::kOnednnBf16) return {OnednnType::kBf16};
  if (s == GemmRouteSetting::kOnednnF32) return {OnednnType::kF32};
  return {OnednnType::kBf16, OnednnType::kF32};
}

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

// Times own and the oneDNN candidates; fills d (route, type, times, why).
void measure(const GemmRouteQuery& q, GemmRouteSetting s, Decision* d) {
  using clock = std::chrono::steady_clock;
  OwnBench own(q);
  std::vector<OnednnBench> one;
  for (OnednnType t : candidates(q.elem, s)) {
    OnednnBench b;
    // the step's own strides: oneDNN's implementation and weight layout depend on them
    b.plan = kernels::onednn_gemm_plan(t, q.elem, q.m_max, q.m_max, q.K, q.N, q.lda, q.ldc, q.threads);
    if (!b.plan.ok()) continue;
    b.ws.assign(static_cast<size_t>(b.plan.workspace_bytes() + 64), 0);
    one.push_back(std::move(b));
  }
  const kernels::WeightSource src = own.source();
  // A and C of the step's strides for the oneDNN side
  const int64_t es = elem_bytes(q.elem);
  std::vector<char> a_strided(static_cast<size_t>(q.m_max * std::max(q.lda, q.K) * es), 1);
  std::vector<char> c_strided(static_cast<size_t>(q.m_max * std::max(q.ldc, q.N) * 4), 0);
  double own_s = 1e30;
  for (int r = 0; r < kGemmRouteRules.rounds; ++r) {
    auto t = clock::now();
    own.run();
    if (r > 0) own_s = std::min(own_s, seconds_since(t));
    for (OnednnBench& b : one) {
      char* ws = align64(b.ws);
      t = clock::now();
      kernels::onednn_gemm_pack(b.plan, src, ws);
      const double pk = seconds_since(t);
      t = clock::now();
      kernels::onednn_gemm_run(b.plan, q.m_max, a_strided.data(), q.lda, c_strided.data(), q.ldc, ws);
      if (r > 0) b.pack_s = std::min(b.pack_s, pk), b.run_s = std::min(b.run_s, seconds_since(t));
    }
  }
  const double own_call = own_s * static_cast<double>(q.chunks);
  d->info.own_ms = own_call * 1e3;
  const OnednnBench* best = nullptr;
  double best_call = 1e30;
  for (const OnednnBench& b : one) {
    const double call = b.pack_s + b.run_s * static_cast<double>(q.chunks);
    if (call < best_call) best_call = call, best = &b;
  }
  if (best == nullptr) {
    d->info.why = "oneDNN has no matmul for this shape; own";
    return;
  }
  d->info.onednn_ms = best_call * 1e3;
  d->type = best->plan.type();
  d->info.impl = best->plan.impl_name();
  const bool forced = s != GemmRouteSetting::kAuto;
  d->onednn = forced || best_call < kGemmRouteRules.margin * own_call;
  d->info.why = fmt("measured per call: oneDNN %.2f ms (weight conversion %.2f ms), own %.2f ms", best_call * 1e3,
                    best->pack_s * 1e3, own_call * 1e3) +
                (forced ? "; forced by the setting" : d->onednn ? "; oneDNN is faster" : "; oneDNN is not faster by 5 %");
}

}  // namespace

bool parse_gemm_route(const char* text, GemmRouteSetting* out) {
  if (text == nullptr) return false;
  static const std::pair<const char*, GemmRouteSetting> names[] = {
      {"auto", GemmRouteSetting::kAuto},           {"own", GemmRouteSetting::kOwn},
      {"onednn", GemmRouteSetting::kOnednn},       {"onednn-bf16", GemmRouteSetting::kOnednnBf16},
      {"onednn-f32", GemmRouteSetting::kOnednnF32}};
  for (const auto& [n, v] : names)
    if (std::strcmp(text, n) == 0) {
      *out = v;
      return true;
    }
  return false;
}

const char* gemm_route_name(GemmRouteSetting s) {
  switch (s) {
    case GemmRouteSetting::kAuto: return "auto";
    case GemmRouteSetting::kOwn: return "own";
    case GemmRouteSetting::kOnednn: return "onednn";
    case GemmRouteSetting::kOnednnBf16: return "onednn-bf16";
    case GemmRouteSetting::kOnednnF32: return "onednn-f32";
  }
  return "?";
}

GemmRouteSetting gemm_route_setting() {
  const int o = g_route_override.load(std::memory_order_relaxed);
  return o >= 0 ? static_cast<GemmRouteSetting>(o) : env_setting();
}

bool set_gemm_route(const char* text) {
  if (text == nullptr || *text == '\0') {
    g_route_override.store(-1);
    return true;
  }
  GemmRouteSetting s;
  if (!parse_gemm_route(text, &s)) return false;
  g_route_override.store(static_cast<int>(s));
  return true;
}

std::string onednn_info() {
  if (!kernels::onednn_built()) return "not built with oneDNN";
  return "oneDNN " + kernels::onednn_version() + " (" + kernels::onednn_cpu_isa() + ")";
}

std::vector<GemmRouteInfo> gemm_route_decisions() {
  std::lock_guard<std::mutex> lock(g_mu);
  return decision_log();
}

GemmRoute choose_gemm_route(const GemmRouteQuery& q) {
  const GemmRouteSetting s = gemm_route_setting();
  const Key key{static_cast<int>(s), static_cast<int>(q.elem), static_cast<int>(q.isa), q.transposed, q.m_max,
                q.m_last, q.chunks, q.K, q.N, q.lda, q.ldc, q.threads};
  Decision d;
  bool have = false;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = decisions().find(key);
    if (it != decisions().end()) d = it->second, have = true;
  }
  if (!have) {
    d.info.op = q.op;
    d.info.what = q.what;
    d.info.elem = q.elem == GemmElem::kS8 ? "int8" : q.elem == GemmElem::kF16 ? "fp16" : "bf16";
    d.info.m = q.m_max, d.info.k = q.K, d.info.n = q.N;
    d.info.threads = q.threads;
    const double work = 2.0 * static_cast<double>(q.m_max) * static_cast<double>(q.chunks) * static_cast<double>(q.K) *
                        static_cast<double>(q.N);
    const bool forced = s != GemmRouteSetting::kAuto && s != GemmRouteSetting::kOwn;
    if (s == GemmRouteSetting::kOwn) {
      d.info.why = "own: the setting says own";
    } else if (!kernels::onednn_built()) {
      d.info.why = "own: this build has no oneDNN";
    } else if (!forced && q.isa != detected_isa()) {
      d.info.why = std::string("own: the ISA is forced to ") + isa_name(q.isa) + " (oneDNN would not follow it)";
    } else if (!forced && q.m_max < kGemmRouteRules.min_rows) {
      d.info.why = fmt("own: %.0f rows per chunk, under %.0f (the weights are streamed once; the conversion "
                       "would read and write them again)", static_cast<double>(q.m_max),
                       static_cast<double>(kGemmRouteRules.min_rows));
    } else if (!forced && work < kGemmRouteRules.min_work) {
      d.info.why = fmt("own: %.0f MFLOP per call, under %.0f (not measured)", work / 1e6, kGemmRouteRules.min_work / 1e6);
    } else if (forced && work < kGemmRouteRules.min_work) {
      // forced on a small product: the rule's type, unmeasured
      d.onednn = true;
      d.type = candidates(q.elem, s).front();
      d.info.why = "forced by the setting (not measured)";
    } else {
      measure(q, s, &d);
      if (!d.onednn) d.info.why = "own: " + d.info.why;
    }
    if (d.onednn) {
      d.plan = kernels::onednn_gemm_plan(d.type, q.elem, q.m_max, q.m_last, q.K, q.N, q.lda, q.ldc, q.threads);
      if (!d.plan.ok()) {
        d.onednn = false;
        d.info.why = "own: oneDNN cannot run it: " + d.plan.why_not();
      }
    }
    d.info.route = d.onednn ? std::string("onednn-") + kernels::onednn_type_name(d.type) : std::string("own");
    if (d.onednn) d.info.impl = d.plan.impl_name();
    std::lock_guard<std::mutex> lock(g_mu);
    if (decisions().emplace(key, d).second) decision_log().push_back(d.info);
  }
  GemmRoute r;
  r.onednn = d.onednn;
  r.plan = d.plan;
  r.why = d.onednn ? d.info.route + " (" + d.info.impl + "): " + d.info.why : d.info.why;
  return r;
}

}  // namespace mlaops

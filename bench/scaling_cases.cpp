// The cases of `mlaops bench --scaling` (scaling.h): the benchmark suite's cases (cases_*.cpp)
// at the same shapes (their definitions: case_defs.h, the full tables), as plans only. Tensors are
// anonymous zero pages (never written, never read): phase 1 reads shapes, dtypes, formats and host
// arrays, not data. The FIA cases' FLOPs / OPs and bytes are the case tables' (case_defs.h); the
// phases take from the plan how that work splits (ops/mla_prolog/mla_prolog.h MlaPrologPlan, ops/mla_preprocess/mla_preprocess.h MlaPreprocessPlan,
// ops/fia/fia.h FiaPlan).
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/case_defs.h"
#include "bench/scaling.h"
#include "core/checked_math.h"
#include "core/fractal_nz.h"
#include "kernels/cpu/attention/flash_mlaq.h"
#include "mlaops/status.h"
#include "ops/fia/fia.h"
#include "ops/mla_preprocess/mla_preprocess.h"
#include "ops/mla_prolog/mla_prolog.h"

namespace bench {
namespace {

using mlaops::DType;
using mlaops::Format;
using mlaops::TensorView;

// An anonymous mapping: zero pages the plan never touches (no memory is committed, even for the
// 300 MB caches of the long-context cases).
class Mapping {
 public:
  explicit Mapping(size_t bytes) : bytes_(bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    p_ = p == MAP_FAILED ? nullptr : p;
  }
  ~Mapping() {
    if (p_ != nullptr) ::munmap(p_, bytes_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  void* data() const { return p_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Distinct zeroed buffers (page-aligned, so every alignment rule holds), views and host arrays
// that live as long as one plan.
class Mem {
 public:
  TensorView t(DType dt, std::vector<int64_t> dims, Format f = Format::kND) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    bufs_.push_back(std::make_unique<Mapping>(static_cast<size_t>(n * mlaops::dtype_size(dt)) + 64));
    return mlaops::make_view(bufs_.back()->data(), dt, dims.data(), static_cast<int>(dims.size()), f);
  }
  TensorView nz(DType dt, int64_t rows, int64_t cols) {
    int64_t s[4];
    mlaops::nz_storage_shape(rows, cols, mlaops::dtype_size(dt), s);
    return t(dt, {s[0], s[1], s[2], s[3]}, Format::kFractalNZ);
  }
  const TensorView* keep(TensorView v) {
    views_.push_back(std::make_unique<TensorView>(v));
    return views_.back().get();
  }
  const std::vector<int64_t>* vec(std::vector<int64_t> v) {
    vecs_.push_back(std::make_unique<std::vector<int64_t>>(std::move(v)));
    return vecs_.back().get();
  }

 private:
  std::vector<std::unique_ptr<Mapping>> bufs_;
  std::vector<std::unique_ptr<TensorView>> views_;
  std::vector<std::unique_ptr<std::vector<int64_t>>> vecs_;
};

// The MLA weights of the prolog / preprocess tables (case_defs.h).
const MlaDims kMla = mla_dims(Size::kFull);
const int64_t kHe = kMla.He, kHcq = kMla.Hcq, kHckv = kMla.Hckv, kD = kMla.D, kDr = kMla.Dr;

std::string fmt(const char* f, long long a = 0, long long b = 0, long long c = 0, long long d = 0, long long e = 0,
                long long g = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d, e, g);
  return buf;
}

// Units of `cols` columns in panels of `width` (the last one partial).
void add_panels(int64_t cols, int64_t width, std::vector<double>* w) {
  for (int64_t c = 0; c < cols; c += width) w->push_back(static_cast<double>(std::min(width, cols - c)));
}

// The token-row step of a chunk of `tc` tokens (not charged: RmsNorm / RoPE / quant rows).
ScalingPhase rows_phase(const char* name, int64_t tc, int64_t min_chunk, int threads, int64_t repeats) {
  ScalingPhase ph;
  ph.name = name;
  ph.repeats = repeats;
  split_static(std::vector<double>(static_cast<size_t>(tc), 1.0), min_chunk, threads, &ph);
  return ph;
}

// ---- MlaPrologV2 (cases_mla_prolog.cpp) ----

bool prolog_plan(bool int8, int64_t N, int64_t T, int threads, ScalingPoint* out, std::string* error) {
  Mem m;
  const DType wdt = int8 ? DType::kInt8 : DType::kBFloat16;
  mlaops::MlaPrologParams p;
  p.token_x = m.t(wdt, {T, kHe});
  p.weight_dq = m.nz(wdt, kHe, kHcq);
  p.weight_uq_qr = m.nz(wdt, kHcq, N * (kD + kDr));
  p.weight_uk = m.t(DType::kBFloat16, {N, kD, kHckv});
  p.weight_dkv_kr = m.nz(wdt, kHe, kHckv + kDr);
  p.rmsnorm_gamma_cq = m.t(DType::kBFloat16, {kHcq});
  p.rmsnorm_gamma_ckv = m.t(DType::kBFloat16, {kHckv});
  p.rope_sin = m.t(DType::kBFloat16, {T, kDr});
  p.rope_cos = m.t(DType::kBFloat16, {T, kDr});
  p.cache_index = m.t(DType::kInt64, {T});
  const int64_t bs = 128, blocks = (T + bs - 1) / bs;
  p.kv_cache = m.t(wdt, {blocks, bs, 1, kHckv});
  p.kr_cache = m.t(DType::kBFloat16, {blocks, bs, 1, kDr});
  p.cache_mode = int8 ? mlaops::MlaPrologCacheMode::kPaNz : mlaops::MlaPrologCacheMode::kPaBsnd;
  p.query_out = m.t(wdt, {T, N, kHckv});
  p.query_rope_out = m.t(DType::kBFloat16, {T, N, kDr});
  if (int8) {
    p.dequant_scale_x = m.keep(m.t(DType::kFloat32, {T, 1}));
    p.dequant_scale_w_dq = m.keep(m.t(DType::kFloat32, {1, kHcq}));
    p.dequant_scale_w_uq_qr = m.keep(m.t(DType::kFloat32, {1, N * (kD + kDr)}));
    p.dequant_scale_w_dkv_kr = m.keep(m.t(DType::kFloat32, {1, kHckv + kDr}));
    p.quant_scale_ckv = m.keep(m.t(DType::kFloat32, {1, kHckv}));
    p.dequant_scale_q_nope_out = m.keep(m.t(DType::kFloat32, {T, N, 1}));
  }
  mlaops::OpPlan plan;
  if (mlaops::mla_prolog_make_plan(p, mlaops::MlaPrologCheckOptions{}, &plan) != mlaops::kSuccess) {
    *error = mlaops::last_error_message();
    return false;
  }
  const auto& pl = *dynamic_cast<const mlaops::MlaPrologPlan*>(plan.state());
  const mlaops::MlaPrologDims& d = pl.dims;
  const double es = int8 ? 1.0 : 2.0;
  const int64_t proj = d.Hcq + d.Hckv + d.Dr;
  out->plan = fmt("%lld chunk(s) of %lld tokens; x projection over %lld + %lld panels (%lld columns wide), %lld heads",
                  (long long)mlaops::ceil_div(d.T, pl.chunk), (long long)pl.chunk,
                  (long long)mlaops::ceil_div(d.Hcq, pl.wdq.panel_width),
                  (long long)mlaops::ceil_div(d.Hckv + d.Dr, pl.wdkvkr.panel_width), (long long)pl.wdq.panel_width,
                  (long long)d.N);
  // Chunks of equal size run the same phases; a shorter last chunk gets its own.
  const int64_t full = d.T / pl.chunk, rest = d.T % pl.chunk;
  for (const auto& [tc, reps] : {std::pair<int64_t, int64_t>{pl.chunk, full}, {rest, rest > 0 ? 1 : 0}}) {
    if (reps == 0) continue;
    const double t = static_cast<double>(tc);
    ScalingPhase x;
    x.name = "x proj";
    x.repeats = reps;
    std::vector<double> cols;
    add_panels(d.Hcq, pl.wdq.panel_width, &cols);
    add_panels(d.Hckv + d.Dr, pl.wdkvkr.panel_width, &cols);
    split_static(cols, 1, pl.threads, &x);
    (int8 ? x.ops_int8 : x.flops_bf16) = 2.0 * t * static_cast<double>(d.He * proj);
    x.bytes = es * static_cast<double>(d.He * proj) + es * t * static_cast<double>(d.He);
    out->phases.push_back(x);
    out->phases.push_back(rows_phase("rows", tc, mlaops::kMlaPrologRowsMinChunk, pl.threads, reps));
    ScalingPhase h;
    h.name = "heads";
    h.repeats = reps;
    split_dynamic(std::vector<double>(static_cast<size_t>(d.N), 1.0), pl.threads, &h);
    (int8 ? h.ops_int8 : h.flops_bf16) = 2.0 * t * static_cast<double>(d.N * d.Hcq * (d.D + d.Dr));
    h.flops_bf16 += 2.0 * t * static_cast<double>(d.N * d.D * d.Hckv);
    h.bytes = es * static_cast<double>(d.Hcq * d.N * (d.D + d.Dr)) + 2.0 * static_cast<double>(d.N * d.D * d.Hckv) +
              t * static_cast<double>(d.N) * (es * static_cast<double>(d.Hckv) + 2.0 * static_cast<double>(d.Dr));
    out->phases.push_back(h);
  }
  return true;
}

// ---- MlaPreprocess (cases_mla_preprocess.cpp) ----

bool preprocess_plan(int64_t N, int64_t T, int threads, ScalingPoint* out, std::string* error) {
  Mem m;
  const int64_t QKV = kHckv + kDr + kHcq;
  mlaops::MlaPreprocessParams p;
  p.input = m.t(DType::kBFloat16, {T, kHe});
  p.gamma0 = m.t(DType::kBFloat16, {kHe});
  p.beta0 = m.t(DType::kBFloat16, {kHe});
  p.quant_scale0 = m.keep(m.t(DType::kBFloat16, {1}));
  p.quant_offset0 = m.keep(m.t(DType::kInt8, {1}));
  p.wdqkv = m.nz(DType::kInt8, QKV, kHe);
  p.de_scale0 = m.keep(m.t(DType::kFloat32, {QKV}));
  p.bias0 = m.keep(m.t(DType::kInt32, {QKV}));
  p.gamma1 = m.t(DType::kBFloat16, {kHcq});
  p.beta1 = m.t(DType::kBFloat16, {kHcq});
  p.quant_scale1 = m.keep(m.t(DType::kBFloat16, {1}));
  p.quant_offset1 = m.keep(m.t(DType::kInt8, {1}));
  p.wuq = m.nz(DType::kInt8, N * (kD + kDr), kHcq);
  p.de_scale1 = m.keep(m.t(DType::kFloat32, {N * (kD + kDr)}));
  p.bias1 = m.keep(m.t(DType::kInt32, {N * (kD + kDr)}));
  p.gamma2 = m.t(DType::kBFloat16, {kHckv});
  p.cos = m.t(DType::kBFloat16, {T, kDr});
  p.sin = m.t(DType::kBFloat16, {T, kDr});
  p.wuk = m.t(DType::kBFloat16, {N, kD, kHckv});
  const int64_t bs = 128, blocks = (T + bs - 1) / bs;
  p.kv_cache = m.t(DType::kBFloat16, {blocks, bs, 1, kHckv});
  p.kv_cache_rope = m.keep(m.t(DType::kBFloat16, {blocks, bs, 1, kDr}));
  p.slot_mapping = m.t(DType::kInt32, {T});
  p.cache_mode = mlaops::MlaPreprocessCacheMode::kKropeCtkv;
  p.q_out = m.t(DType::kBFloat16, {T, N, kHckv});
  p.q_rope_out = m.keep(m.t(DType::kBFloat16, {T, N, kDr}));
  mlaops::OpPlan plan;
  if (mlaops::mla_preprocess_make_plan(p, mlaops::MlaPreprocessCheckOptions{}, &plan) != mlaops::kSuccess) {
    *error = mlaops::last_error_message();
    return false;
  }
  const auto& pl = *dynamic_cast<const mlaops::MlaPreprocessPlan*>(plan.state());
  const mlaops::MlaPreprocessShape& d = pl.dims;
  out->plan = fmt("%lld chunk(s) of %lld tokens; wdqkv over %lld 16-channel groups, %lld heads",
                  (long long)mlaops::ceil_div(d.T, pl.chunk), (long long)pl.chunk,
                  (long long)mlaops::ceil_div(d.m1_cols, 16), (long long)d.N);
  const int64_t full = d.T / pl.chunk, rest = d.T % pl.chunk;
  for (const auto& [tc, reps] : {std::pair<int64_t, int64_t>{pl.chunk, full}, {rest, rest > 0 ? 1 : 0}}) {
    if (reps == 0) continue;
    const double t = static_cast<double>(tc);
    if (pl.quant) out->phases.push_back(rows_phase("rows1", tc, mlaops::kMlaPreprocessRowsMinChunk, pl.threads, reps));
    // a GEMM over `ncols` weight columns in 16-column groups, split statically (t_gemm_all)
    auto gemm_phase = [&](const char* name, int64_t ncols, double ops, double bytes) {
      ScalingPhase x;
      x.name = name;
      x.repeats = reps;
      std::vector<double> cols;
      add_panels(ncols, 16, &cols);
      split_static(cols, 1, pl.threads, &x);
      x.ops_int8 = ops;
      x.bytes = bytes;
      out->phases.push_back(x);
    };
    gemm_phase("wdqkv", d.m1_cols, 2.0 * t * static_cast<double>(d.He * d.m1_cols),
               static_cast<double>(d.He * d.m1_cols) + 2.0 * t * static_cast<double>(d.He));
    out->phases.push_back(rows_phase("rows2", tc, mlaops::kMlaPreprocessRowsMinChunk, pl.threads, reps));
    const double wuq_ops = 2.0 * t * static_cast<double>(d.m2_cols * d.Hcq);
    const double wuq_bytes = static_cast<double>(d.m2_cols * d.Hcq);
    // decode chunks: one wuq GEMM of all heads first, then the heads run W_UK only
    if (pl.wuq_whole) gemm_phase("wuq", d.m2_cols, wuq_ops, wuq_bytes);
    ScalingPhase h;
    h.name = "heads";
    h.repeats = reps;
    split_dynamic(std::vector<double>(static_cast<size_t>(d.N), 1.0), pl.threads, &h);
    h.ops_int8 = pl.wuq_whole ? 0.0 : wuq_ops;
    h.flops_bf16 = 2.0 * t * static_cast<double>(d.N * d.D * d.Hckv);
    h.bytes = (pl.wuq_whole ? 0.0 : wuq_bytes) + 2.0 * static_cast<double>(d.N * d.D * d.Hckv) +
              2.0 * t * static_cast<double>(d.N * (d.Hckv + d.Dr));
    out->phases.push_back(h);
  }
  return true;
}

// ---- FusedInferAttentionScoreV4 (cases_fia.cpp) ----

// KV positions row `row` of batch b sees inside [begin, end) under the plan's rule.
double seen(const mlaops::FiaPlan& P, int64_t b, int64_t row, int64_t begin, int64_t end) {
  int64_t lo, hi;
  mlaops::fia_row_deltas(P, b, &lo, &hi);
  const int64_t a = std::max(begin, row + lo), z = std::min(end - 1, row + hi);
  return z >= a ? static_cast<double>(z - a + 1) : 0.0;
}

// Work of item i in split s of `splits` (query rows x heads x KV positions seen), replaying the
// run's split ranges (ops/fia/fia_run.cpp item_at, ops/fia/fia_prefix.cpp).
double item_work(const mlaops::FiaPlan& P, size_t i, int64_t s, int64_t splits) {
  const mlaops::FiaPlan::Item& w = P.items[i];
  const int64_t kv = P.act_kv[static_cast<size_t>(w.b)];
  const int64_t tile = P.mq.on ? mlaops::kernels::kFlashMlaqBlock : P.tile;
  int64_t begin = 0, end = kv + P.prefix.len;
  if (P.pgroup) {  // the prefix work range: the item covers its own rows [Lp, Lp + kv) only
    const int64_t chunk = mlaops::round_up(mlaops::ceil_div(std::max<int64_t>(kv, 1), splits), tile);
    begin = P.prefix.len + std::min(kv, s * chunk);
    end = P.prefix.len + std::min(kv, s * chunk + chunk);
  } else if (P.prefix.on && splits > 1) {  // first half of the splits over the prefix, then the own rows
    const int64_t half = splits / 2, len = s < half ? P.prefix.len : kv, off = s < half ? 0 : P.prefix.len;
    const int64_t chunk = mlaops::round_up(mlaops::ceil_div(std::max<int64_t>(len, 1), half), tile);
    begin = off + std::min(len, (s % half) * chunk);
    end = off + std::min(len, (s % half) * chunk + chunk);
  } else if (splits > 1) {
    const int64_t chunk = mlaops::round_up(mlaops::ceil_div(std::max<int64_t>(end, 1), splits), tile);
    begin = std::min(end, s * chunk);
    end = std::min(end, begin + chunk);
  }
  if (P.mq.on) return static_cast<double>(w.rows * P.R) * static_cast<double>(end - begin);  // rows = heads
  double sum = 0;
  for (int64_t r = w.r0; r < w.r0 + w.rows; ++r) sum += seen(P, w.b, r, begin, end);
  return sum * static_cast<double>(P.G);
}

bool fia_phases(const mlaops::FiaParams& p, const FiaWork& work, int threads, ScalingPoint* out, std::string* error) {
  mlaops::FiaCall call;
  mlaops::FiaPlan P;
  if (mlaops::fia_check(p, mlaops::FiaCheckOptions{}, &call) != mlaops::kSuccess ||
      mlaops::fia_plan(call, "fused_infer_attention_score_v4", &P) != mlaops::kSuccess) {
    *error = mlaops::last_error_message();
    return false;
  }
  ScalingPhase ph;
  ph.name = "attention";
  std::vector<double> w;
  int64_t tasks = static_cast<int64_t>(P.tasks.size());
  if (P.mq.on) {  // MLA full quant: items x splits (ops/fia/fia_mla_quant.cpp)
    tasks = static_cast<int64_t>(P.items.size());
    for (size_t i = 0; i < P.items.size(); ++i)
      for (int64_t s = 0; s < P.splits; ++s) w.push_back(item_work(P, i, s, P.splits));
  } else if (P.pgroup) {  // prefix units (every row sees every prefix column), then the tasks' splits
    const int64_t chunk = mlaops::round_up(mlaops::ceil_div(std::max<int64_t>(P.prefix.len, 1), P.psplits), P.tile);
    for (const mlaops::FiaPlan::PUnit& u : P.punits)
      for (int64_t s = 0; s < P.psplits; ++s) {
        const int64_t b0 = std::min(P.prefix.len, s * chunk), e0 = std::min(P.prefix.len, b0 + chunk);
        w.push_back(static_cast<double>(P.G * u.rows) * static_cast<double>(e0 - b0));
      }
    for (const mlaops::FiaPlan::Task& t : P.tasks)
      for (int64_t s = 0; s < P.splits; ++s) {
        double x = 0;
        for (int64_t i = t.first; i < t.first + t.n; ++i) x += item_work(P, static_cast<size_t>(i), s, P.splits);
        w.push_back(x);
      }
    tasks = static_cast<int64_t>(w.size());
  } else if (P.prefix.on && P.splits == 2) {  // one unit per task: its prefix split, own split, merge
    for (const mlaops::FiaPlan::Task& t : P.tasks) {
      double x = 0;
      for (int64_t i = t.first; i < t.first + t.n; ++i) x += item_work(P, static_cast<size_t>(i), 0, 1);
      w.push_back(x);
    }
  } else {
    for (const mlaops::FiaPlan::Task& t : P.tasks)
      for (int64_t s = 0; s < P.splits; ++s) {
        double x = 0;
        for (int64_t i = t.first; i < t.first + t.n; ++i) x += item_work(P, static_cast<size_t>(i), s, P.splits);
        w.push_back(x);
      }
  }
  ph.tasks = tasks;
  split_dynamic(w, P.threads, &ph);
  ph.flops_bf16 = work.flops_bf16;
  ph.ops_int8 = work.ops_int8;
  ph.bytes = work.bytes;
  out->phases.push_back(ph);
  const int64_t per_task = P.tasks.empty() ? 1 : P.tasks.front().n;
  out->plan = fmt("%lld items of up to %lld query rows x %lld heads, %lld KV split(s), ", (long long)P.items.size(),
                  (long long)P.R, (long long)(P.mq.on ? P.mq.heads : P.G), (long long)P.splits) +
              fmt("%lld tasks (%lld items each)", (long long)tasks, (long long)(P.mq.on ? 1 : per_task)) +
              (P.pgroup ? fmt(", shared prefix work range: %lld units x %lld chunk(s), merged per KV head",
                              (long long)P.punits.size(), (long long)P.psplits)
               : P.prefix.on && P.splits == 2 ? ", each task runs its prefix split, own split and merge"
               : P.splits > 1              ? ", then a merge over the items"
                                           : "");
  return true;
}

// MLA decode (and MTP when QS > 1), paged BnNBsD cache, KV_N 1, value = the key latent.
bool fia_mla(int64_t N, int64_t L, int64_t B, int64_t QS, int mode, int threads, ScalingPoint* out, std::string* e) {
  Mem m;
  const FiaShapes sh = fia_shapes(Size::kFull);
  const int64_t D = sh.D, Dr = sh.Dr, bs = 128, per = (L + bs - 1) / bs, nb = B * per, T = B * QS;
  const bool fq = mode == 1, mtp = QS > 1, tree = mode == 9;
  mlaops::FiaParams p;
  FiaWork w;
  if (fq) {
    p.query = m.t(DType::kInt8, {B, 1, N, D});
    p.query_rope = m.keep(m.t(DType::kBFloat16, {B, 1, N, Dr}));
    p.key = {m.t(DType::kInt8, {nb, 1, D / 32, bs, 32}, Format::kFractalNZ)};
    p.key_rope = m.keep(m.t(DType::kBFloat16, {nb, 1, Dr / 16, bs, 16}, Format::kFractalNZ));
    p.dequant_scale_query = m.keep(m.t(DType::kFloat32, {B, 1, N}));
    p.query_quant_mode = 3;
    p.key_antiquant_scale = m.keep(m.t(DType::kFloat32, {1}));
    p.value_antiquant_scale = p.key_antiquant_scale;
    p.input_layout = "BSND_NBSD";
    w = mla_decode_fq_work(N, L, B, D, Dr);
  } else {
    p.query = mtp ? m.t(DType::kBFloat16, {T, N, D}) : m.t(DType::kBFloat16, {B, N, 1, D});
    p.query_rope = m.keep(mtp ? m.t(DType::kBFloat16, {T, N, Dr}) : m.t(DType::kBFloat16, {B, N, 1, Dr}));
    p.key = {m.t(DType::kBFloat16, {nb, 1, bs, D})};
    p.key_rope = m.keep(m.t(DType::kBFloat16, {nb, 1, bs, Dr}));
    p.input_layout = mtp ? "TND" : "BNSD_NBSD";
    w = mla_decode_work(N, L, B, D, Dr);
    if (mtp) {
      std::vector<int64_t> aq;
      for (int64_t b = 1; b <= B; ++b) aq.push_back(b * QS);
      p.actual_seq_lengths = m.vec(aq);
      p.sparse_mode = tree ? 9 : 3;
      p.atten_mask = m.keep(tree ? m.t(DType::kBool, {B * QS * QS}) : m.t(DType::kBool, {2048, 2048}));
      w = mla_mtp_work(N, L, B, QS, D, Dr, tree);
    }
  }
  p.value = {p.key[0]};
  p.block_table = m.keep(m.t(DType::kInt32, {B, per}));
  p.block_size = bs;
  p.actual_seq_lengths_kv = m.vec(std::vector<int64_t>(static_cast<size_t>(B), L));
  p.num_heads = N;
  p.num_key_value_heads = 1;
  p.scale_value = 1.0 / std::sqrt(static_cast<double>(D + Dr));
  p.attention_out = mtp ? m.t(DType::kBFloat16, {T, N, D}) : m.t(DType::kBFloat16, {N, B, 1, D});
  p.softmax_lse = m.keep(mtp ? m.t(DType::kFloat32, {T, N, 1}) : m.t(DType::kFloat32, {B, N, 1, 1}));
  p.softmax_lse_flag = true;
  return fia_phases(p, w, threads, out, e);
}

// GQA decode 32q / 8kv, D 128: kind 0 paged BF16, 1 paged INT8 (per-channel), 2 paged BF16 with
// post-quant INT8 output, 3 contiguous BSH INT8 / INT4 (quant modes), 4 paged INT8 NZ; prefix:
// a shared prefix of Lp (copied: the prefix copied into every batch).
struct Gqa {
  int kind = 0;
  bool int4 = false;
  int64_t mode = 0, ip = 1, Lp = 0;
  bool copied = false;
};

bool fia_gqa(const Gqa& g, int threads, ScalingPoint* out, std::string* e) {
  Mem m;
  const FiaShapes sh = fia_shapes(Size::kFull);
  const int64_t B = sh.gB, N = sh.gN, KVN = sh.gKVN, D = sh.gD, bs = 128;
  const int64_t L = g.Lp > 0 ? sh.prefix_L : sh.gL, per = (L + bs - 1) / bs, nb = B * per;
  mlaops::FiaParams p;
  p.num_heads = N;
  p.num_key_value_heads = KVN;
  p.scale_value = 1.0 / std::sqrt(static_cast<double>(D));
  p.actual_seq_lengths_kv = m.vec(std::vector<int64_t>(static_cast<size_t>(B), L));
  if (g.Lp > 0) {  // BNSD contiguous, own KV of L (copied: Lp + L)
    const int64_t S = g.copied ? g.Lp + L : L;
    p.query = m.t(DType::kBFloat16, {B, N, 1, D});
    p.key = {m.t(DType::kBFloat16, {B, KVN, S, D})};
    p.value = {m.t(DType::kBFloat16, {B, KVN, S, D})};
    if (!g.copied) {
      p.key_shared_prefix = m.keep(m.t(DType::kBFloat16, {1, KVN, g.Lp, D}));
      p.value_shared_prefix = m.keep(m.t(DType::kBFloat16, {1, KVN, g.Lp, D}));
    }
    p.actual_seq_lengths_kv = nullptr;
    p.input_layout = "BNSD";
    p.attention_out = m.t(DType::kBFloat16, {B, N, 1, D});
    return fia_phases(p, gqa_prefix_work(B, N, KVN, D, g.Lp, L, g.copied), threads, out, e);
  }
  if (g.kind == 3) {  // contiguous BSH INT8 / INT4
    const int64_t W = g.int4 ? KVN * D / 8 : KVN * D;
    const DType kt = g.int4 ? DType::kInt32 : DType::kInt8;
    p.query = m.t(DType::kBFloat16, {B, 1, N * D});
    p.key = {m.t(kt, {B, L, W})};
    p.value = {m.t(kt, {B, L, W})};
    p.key_antiquant_scale = m.keep(g.mode == 0 ? m.t(DType::kBFloat16, {1, KVN, D}) : m.t(DType::kFloat32, {1, B, L}));
    p.value_antiquant_scale = m.keep(g.mode == 0 ? m.t(DType::kBFloat16, {1, KVN, D}) : m.t(DType::kFloat32, {1, B, L}));
    p.key_antiquant_mode = p.value_antiquant_mode = g.mode;
    p.inner_precise = g.ip;
    p.input_layout = "BSH";
    p.attention_out = m.t(DType::kBFloat16, {B, 1, N * D});
    return fia_phases(p, gqa_decode_work(B, N, KVN, D, L, g.int4 ? 0.5 : 1.0), threads, out, e);
  }
  const bool int8 = g.kind == 1 || g.kind == 4, pq = g.kind == 2;
  p.query = m.t(DType::kBFloat16, {B, N, 1, D});
  if (g.kind == 4) {
    p.key = {m.t(DType::kInt8, {nb, KVN, D / 32, bs, 32}, Format::kFractalNZ)};
    p.value = {m.t(DType::kInt8, {nb, KVN, D / 32, bs, 32}, Format::kFractalNZ)};
    p.key_antiquant_scale = m.keep(m.t(DType::kBFloat16, {KVN, D}));
    p.value_antiquant_scale = m.keep(m.t(DType::kBFloat16, {KVN, D}));
    p.inner_precise = 1;
  } else {
    p.key = {m.t(int8 ? DType::kInt8 : DType::kBFloat16, {nb, bs, KVN * D})};
    p.value = {m.t(int8 ? DType::kInt8 : DType::kBFloat16, {nb, bs, KVN * D})};
    if (int8) {
      p.key_antiquant_scale = m.keep(m.t(DType::kBFloat16, {1, KVN, D}));
      p.value_antiquant_scale = m.keep(m.t(DType::kBFloat16, {1, KVN, D}));
      p.key_antiquant_offset = m.keep(m.t(DType::kBFloat16, {1, KVN, D}));
      p.value_antiquant_offset = m.keep(m.t(DType::kBFloat16, {1, KVN, D}));
    }
  }
  if (pq) {
    p.quant_scale2 = m.keep(m.t(DType::kFloat32, {N, D}));
    p.quant_offset2 = m.keep(m.t(DType::kFloat32, {N, D}));
  }
  p.block_table = m.keep(m.t(DType::kInt32, {B, per}));
  p.block_size = bs;
  p.input_layout = "BNSD";
  p.attention_out = m.t(pq ? DType::kInt8 : DType::kBFloat16, {B, N, 1, D});
  return fia_phases(p, gqa_decode_work(B, N, KVN, D, L, int8 ? 1.0 : 2.0), threads, out, e);
}

// MLA prefill: 128 tokens x 4096 KV, N 128, D 128 + rope 64, TND, sparse mode 3.
bool fia_mla_prefill(int threads, ScalingPoint* out, std::string* e) {
  Mem m;
  const FiaShapes sh = fia_shapes(Size::kFull);
  const int64_t T = sh.pre_T, L = sh.pre_L, N = sh.pre_N, D = sh.pre_D, Dr = sh.Dr, bs = 128, per = L / bs;
  mlaops::FiaParams p;
  p.query = m.t(DType::kBFloat16, {T, N, D});
  p.query_rope = m.keep(m.t(DType::kBFloat16, {T, N, Dr}));
  p.key = {m.t(DType::kBFloat16, {per, bs, N * D})};
  p.value = {m.t(DType::kBFloat16, {per, bs, N * D})};
  p.key_rope = m.keep(m.t(DType::kBFloat16, {per, bs, N * Dr}));
  p.block_table = m.keep(m.t(DType::kInt32, {1, per}));
  p.block_size = bs;
  p.actual_seq_lengths = m.vec({T});
  p.actual_seq_lengths_kv = m.vec({L});
  p.atten_mask = m.keep(m.t(DType::kBool, {2048, 2048}));
  p.sparse_mode = 3;
  p.num_heads = N;
  p.num_key_value_heads = N;
  p.scale_value = 1.0 / std::sqrt(static_cast<double>(D + Dr));
  p.input_layout = "TND";
  p.attention_out = m.t(DType::kBFloat16, {T, N, D});
  return fia_phases(p, mla_prefill_work(T, L, N, D, Dr), threads, out, e);
}

// GQA prefill 32q / 8kv, D 128, 512 x 2048, BSND: BF16 or INT8 full quantisation.
bool fia_gqa_prefill(bool int8, int threads, ScalingPoint* out, std::string* e) {
  Mem m;
  const FiaShapes sh = fia_shapes(Size::kFull);
  const int64_t B = 1, N = sh.gN, KVN = sh.gKVN, D = sh.gD, S = sh.gpre_S, L = sh.gpre_L;
  const DType dt = int8 ? DType::kInt8 : DType::kBFloat16;
  mlaops::FiaParams p;
  p.query = m.t(dt, {B, S, N, D});
  p.key = {m.t(dt, {B, L, KVN, D})};
  p.value = {m.t(dt, {B, L, KVN, D})};
  p.num_heads = N;
  p.num_key_value_heads = KVN;
  p.scale_value = 1.0 / std::sqrt(static_cast<double>(D));
  p.input_layout = "BSND";
  p.attention_out = m.t(int8 ? DType::kFloat16 : DType::kBFloat16, {B, S, N, D});
  if (int8) {
    p.deq_scale1 = m.keep(m.t(DType::kFloat32, {1}));
    p.quant_scale1 = m.keep(m.t(DType::kFloat32, {1}));
    p.deq_scale2 = m.keep(m.t(DType::kFloat32, {1}));
  }
  return fia_phases(p, gqa_prefill_work(B, N, KVN, D, S, L, int8), threads, out, e);
}

void add(std::vector<ScalingCase>& v, const std::string& id, const std::string& label,
         std::function<bool(int, ScalingPoint*, std::string*)> f) {
  v.push_back({id, label, std::move(f)});
}

}  // namespace

std::vector<ScalingCase> scaling_cases() {
  std::vector<ScalingCase> v;
  // the full tables' shapes (case_defs.h)
  const FiaShapes sh = fia_shapes(Size::kFull);
  const std::string gqa = fmt("FIA GQA decode %lldq/%lldkv D=%lld", sh.gN, sh.gKVN, sh.gD);
  const std::string gqa_lb = gqa + fmt(" L=%lld B=%lld", sh.gL, sh.gB);
  for (bool int8 : {false, true})
    for (int64_t N : mla_heads(Size::kFull))
      for (int64_t T : prolog_tokens(Size::kFull))
        add(v, std::string("mla_prolog.") + (int8 ? "int8" : "bf16") + fmt(".N%lld.T%lld", N, T),
            std::string("MlaPrologV2 ") + (int8 ? "int8" : "bf16") + fmt(" N=%lld T=%lld", N, T),
            [=](int t, ScalingPoint* o, std::string* e) { return prolog_plan(int8, N, T, t, o, e); });
  for (int64_t N : mla_heads(Size::kFull))
    for (int64_t T : preprocess_tokens(Size::kFull))
      add(v, fmt("mla_preprocess.int8.N%lld.T%lld", N, T), fmt("MlaPreprocess int8 N=%lld T=%lld", N, T),
          [=](int t, ScalingPoint* o, std::string* e) { return preprocess_plan(N, T, t, o, e); });
  for (int64_t N : sh.Ns)
    for (int64_t L : sh.Ls)
      for (int64_t B : sh.Bs)
        add(v, fmt("fia.mla_decode.N%lld.L%lld.B%lld", N, L, B), fmt("FIA MLA decode N=%lld L=%lld B=%lld", N, L, B),
            [=](int t, ScalingPoint* o, std::string* e) { return fia_mla(N, L, B, 1, 0, t, o, e); });
  const char* gqa_names[] = {"bf16", "int8kv", "postquant"};
  const char* gqa_labels[] = {"", " int8 KV", " int8 out"};
  for (int k = 0; k < 3; ++k)
    add(v, std::string("fia.gqa_decode.") + gqa_names[k] + fmt(".B%lld", sh.gB), gqa_lb + gqa_labels[k],
        [=](int t, ScalingPoint* o, std::string* e) { return fia_gqa(Gqa{k}, t, o, e); });
  for (bool copied : {false, true})
    add(v, std::string(copied ? "fia.gqa_decode.prefix_copied" : "fia.gqa_decode.prefix") + fmt(".B%lld", sh.gB),
        gqa + fmt(" prefix %lld", sh.prefix_Lp) + (copied ? " copied" : "") +
            fmt(" + own %lld B=%lld", sh.prefix_L, sh.gB),
        [=](int t, ScalingPoint* o, std::string* e) {
          Gqa g;
          g.Lp = sh.prefix_Lp;
          g.copied = copied;
          return fia_gqa(g, t, o, e);
        });
  for (int64_t B : sh.mtp_Bs)
    for (bool tree : {false, true})
      add(v,
          std::string("fia.mla_mtp.") + (tree ? "tree" : "causal") +
              fmt(".N%lld.L%lld.B%lld.Q%lld", sh.mtp_N, sh.mtp_L, B, sh.mtp_QS),
          fmt("FIA MLA MTP N=%lld L=%lld B=%lld Q_S=%lld ", sh.mtp_N, sh.mtp_L, B, sh.mtp_QS) +
              (tree ? "tree (sparse 9)" : "causal (sparse 3)"),
          [=](int t, ScalingPoint* o, std::string* e) {
            return fia_mla(sh.mtp_N, sh.mtp_L, B, sh.mtp_QS, tree ? 9 : 3, t, o, e);
          });
  for (int64_t N : sh.fq_Ns)
    add(v, fmt("fia.mla_decode_fq.N%lld.L%lld.B1", N, sh.fq_L), fmt("FIA MLA decode full quant N=%lld L=%lld B=1", N, sh.fq_L),
        [=](int t, ScalingPoint* o, std::string* e) { return fia_mla(N, sh.fq_L, 1, 1, 1, t, o, e); });
  for (bool int4 : {false, true})
    for (int64_t mode : {0, 1})
      for (int64_t ip : {1, 0})
        add(v,
            std::string("fia.gqa_decode.") + (int4 ? "int4kv" : "int8kv_bsh") +
                fmt(".m%lld.ip%lld.B%lld", mode, ip, sh.gB),
            gqa_lb + " " + (int4 ? "int4" : "int8") + fmt(" KV BSH mode %lld ip %lld", mode, ip),
            [=](int t, ScalingPoint* o, std::string* e) {
              Gqa g;
              g.kind = 3;
              g.int4 = int4;
              g.mode = mode;
              g.ip = ip;
              return fia_gqa(g, t, o, e);
            });
  add(v, fmt("fia.gqa_decode.int8kv_nz.B%lld", sh.gB), gqa_lb + " int8 KV NZ",
      [](int t, ScalingPoint* o, std::string* e) { return fia_gqa(Gqa{4}, t, o, e); });
  add(v, fmt("fia.mla_prefill.T%lld.L%lld.N%lld", sh.pre_T, sh.pre_L, sh.pre_N),
      fmt("FIA MLA prefill T=%lld L=%lld N=%lld D=%lld+%lld", sh.pre_T, sh.pre_L, sh.pre_N, sh.pre_D, sh.Dr),
      [](int t, ScalingPoint* o, std::string* e) { return fia_mla_prefill(t, o, e); });
  for (bool int8 : {false, true})
    add(v, std::string("fia.gqa_prefill.") + (int8 ? "int8fq" : "bf16") + fmt(".S%lld.L%lld", sh.gpre_S, sh.gpre_L),
        fmt("FIA GQA prefill %lldq/%lldkv D=%lld", sh.gN, sh.gKVN, sh.gD) + fmt(" S=%lld L=%lld", sh.gpre_S, sh.gpre_L) +
            (int8 ? " INT8 full quant" : ""),
        [=](int t, ScalingPoint* o, std::string* e) { return fia_gqa_prefill(int8, t, o, e); });
  return v;
}

}  // namespace bench

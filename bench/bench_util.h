// Shared pieces of the operator benchmark cases (cases_*.cpp): random host buffers, NZ weights,
// best/median timing, and the oneDNN peer
// (the projection GEMMs through matmul with weights pre-packed, rotated over copies so that
// every call streams from DRAM).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <random>
#include <utility>
#include <vector>

#ifdef MLAOPS_HAVE_DNNL
#include <dnnl.hpp>
#endif

#include "bench/suite.h"
#include "core/fractal_nz.h"
#include "mlaops/numeric.h"
#include "mlaops/tensor_view.h"

namespace bench {

using clk = std::chrono::steady_clock;

struct Buf {
  std::vector<uint8_t> b;
  mlaops::TensorView v;
};

// A buffer of `dims` with uniform random content in [lo, hi) (int8: rounded; int64: 0, 1, 2, ...).
inline Buf make(mlaops::DType dt, std::vector<int64_t> dims, uint32_t seed, float lo, float hi,
                mlaops::Format f = mlaops::Format::kND) {
  Buf x;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  x.b.resize(static_cast<size_t>(n * mlaops::dtype_size(dt)) + 1);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < n; ++i) {
    const float r = u(rng);
    switch (dt) {
      case mlaops::DType::kBFloat16: reinterpret_cast<uint16_t*>(x.b.data())[i] = mlaops::float_to_bf16(r); break;
      case mlaops::DType::kFloat16: reinterpret_cast<uint16_t*>(x.b.data())[i] = mlaops::float_to_fp16(r); break;
      case mlaops::DType::kInt8: reinterpret_cast<int8_t*>(x.b.data())[i] = static_cast<int8_t>(std::lrint(r)); break;
      case mlaops::DType::kInt32: reinterpret_cast<int32_t*>(x.b.data())[i] = static_cast<int32_t>(std::lrint(r)); break;
      case mlaops::DType::kFloat32: reinterpret_cast<float*>(x.b.data())[i] = r; break;
      case mlaops::DType::kInt64: reinterpret_cast<int64_t*>(x.b.data())[i] = i; break;
      default: break;
    }
  }
  x.v = mlaops::make_view(x.b.data(), dt, dims.data(), static_cast<int>(dims.size()), f);
  return x;
}

// A FRACTAL_NZ weight of logical [rows, cols] (4-D storage view) with random content.
inline Buf make_nz(mlaops::DType dt, int64_t rows, int64_t cols, uint32_t seed) {
  int64_t s[4];
  mlaops::nz_storage_shape(rows, cols, mlaops::dtype_size(dt), s);
  const bool i8 = dt == mlaops::DType::kInt8;
  return make(dt, {s[0], s[1], s[2], s[3]}, seed, i8 ? -100.f : -0.05f, i8 ? 100.f : 0.05f, mlaops::Format::kFractalNZ);
}

struct Times {
  double best = 0, median = 0;
};

// Best and median of `reps` timed runs after one warm-up run (seconds).
template <class F>
Times time_it(F&& f, int reps) {
  f();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = clk::now();
    f();
    t.push_back(std::chrono::duration<double>(clk::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

// Copies of a set of weight buffers, >= `total` bytes in all (default 1 GiB), laid out back to back
// (64-byte aligned) and handed out round robin, so that every call reads its weights from DRAM.
struct WeightPool {
  std::vector<size_t> off;
  std::vector<std::vector<uint8_t>> copies;
  size_t next = 0;
  explicit WeightPool(const std::vector<const Buf*>& ws, size_t total = size_t{1} << 30) {
    off.assign(ws.size() + 1, 0);
    for (size_t i = 0; i < ws.size(); ++i) off[i + 1] = (off[i] + ws[i]->b.size() + 63) / 64 * 64;
    const size_t n = total / off.back() + 1;
    copies.resize(n);
    for (auto& c : copies) {
      c.resize(off.back() + 64);
      for (size_t i = 0; i < ws.size(); ++i) std::memcpy(c.data() + off[i], ws[i]->b.data(), ws[i]->b.size());
    }
  }
  int count() const { return static_cast<int>(copies.size()); }
  // The next copy: weight i at the returned pointer + off[i].
  uint8_t* take() { return copies[next++ % copies.size()].data(); }
};

// Times an operator whose weights rotate through `pool`: `ws_size(&bytes)` (a status), then
// `reps` timed runs of `bind(copy base)` + `call(workspace, bytes)`. Fills r's best / median,
// or r.error with the library's message when the size query or a call fails. Returns one more
// such call (true on success; it owns the workspace) for timing pairs against a peer, or an empty
// function after an error.
template <class WsSize, class Bind, class Call>
std::function<bool()> time_rotated(Row& r, WeightPool& pool, int reps, WsSize&& ws_size, Bind bind, Call call) {
  uint64_t ws_bytes = 0;
  if (ws_size(&ws_bytes) != mlaops::kSuccess) {
    r.error = mlaops::last_error_message();
    return {};
  }
  auto ws = std::make_shared<std::vector<uint8_t>>(ws_bytes + 1);
  std::function<bool()> once = [&pool, ws, ws_bytes, bind, call] {
    bind(pool.take());
    return call(ws->data(), ws_bytes) == mlaops::kSuccess;
  };
  bool ok = true;
  const Times t = time_it([&] { ok = once() && ok; }, reps);
  if (!ok) {
    r.error = mlaops::last_error_message();
    return {};
  }
  r.best_us = t.best * 1e6;
  r.median_us = t.median * 1e6;
  return once;
}

// The median over `pairs` alternated pairs (ours then the peer, the peer then ours, ...) of the
// ratio peer time / our time: both sides see the same moment of a noisy machine.
template <class Ours, class Peer>
double paired_ratio_median(int pairs, Ours&& ours, Peer&& peer) {
  std::vector<double> ratio;
  for (int i = 0; i < pairs; ++i) {
    double t_ours = 0, t_peer = 0;
    for (int k = 0; k < 2; ++k) {
      const bool ours_now = (k == 0) == (i % 2 == 0);
      const auto t0 = clk::now();
      if (ours_now) ours();
      else peer();
      (ours_now ? t_ours : t_peer) = std::chrono::duration<double>(clk::now() - t0).count();
    }
    ratio.push_back(t_peer / t_ours);
  }
  std::sort(ratio.begin(), ratio.end());
  return ratio.empty() ? 0 : ratio[ratio.size() / 2];
}

// A case of a weight-streaming operator (MlaPrologV2, MlaPreprocess) measured by `run`, with the
// The targets: T = 1 streams at >= 80 % of the memory bound and is no slower than oneDNN's GEMMs
// as the median of alternated pairs (`t1_target`), T = 1024 at the run's thread count is no
// slower than oneDNN's GEMMs alone (`peer_target`).
inline Case weight_case(std::string id, std::string op, std::string label, int threads, bool t1_target,
                        bool peer_target, std::function<Row(RunContext&)> run) {
  Case c;
  c.id = std::move(id);
  c.op = std::move(op);
  c.label = std::move(label);
  c.threads = threads;
  c.run = [run = std::move(run), t1_target, peer_target](RunContext& ctx) {
    Row r = run(ctx);
    if (t1_target) r.target_pct = 80, r.target_pair_ratio = 1.0;
    if (peer_target) r.target_peer_ratio = 1.0;
    return r;
  };
  return c;
}

// The thread counts of a case: the run's, plus 1 for the largest T (the 1 -> N scaling target).
inline std::vector<int> weight_case_threads(bool largest_t, int threads) {
  return largest_t && threads > 1 ? std::vector<int>{threads, 1} : std::vector<int>{threads};
}

// One GEMM of a peer: `batch` independent products [T, K] x [K, N] (batch > 1: a per-head
// batched product such as the absorbed W_UK), int8 (s8 x s8 -> f32 with per-column scales) or bf16.
struct PeerGemm {
  int64_t K = 0, N = 0;
  bool int8 = false;
  int64_t batch = 1;
};

// Adds the oneDNN peer to `r` (suite.cpp): the GEMMs of `gemms` at T rows, weights pre-packed
// and rotated over `copies`, `reps` timed runs; a note instead when built without oneDNN.
// With `ours` (one call of the operator, as time_rotated returns), also `reps` alternated pairs
// of ours and the peer: their median ratio goes to the peer's pair_ratio.
void add_dnnl_peer(Row& r, const RunContext& ctx, const char* name, int64_t T, const std::vector<PeerGemm>& gemms,
                   int copies, int reps, const std::function<bool()>& ours = {});

#ifdef MLAOPS_HAVE_DNNL
// The GEMMs of a peer through oneDNN matmul, weights pre-packed (format any, not timed).
struct DnnlProjections {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream s{eng};
  struct One {
    dnnl::matmul mm;
    dnnl::memory a, c;
    std::vector<dnnl::memory> w;  // rotated copies of the packed weights
  };
  std::vector<One> gemms;
  size_t next = 0;
  DnnlProjections(int64_t T, const std::vector<PeerGemm>& list, int copies) {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    for (const PeerGemm& g : list) {
      const dt in = g.int8 ? dt::s8 : dt::bf16, out = g.int8 ? dt::f32 : dt::bf16;
      const bool b = g.batch > 1;
      auto dims = [&](int64_t r, int64_t c) {
        return b ? dnnl::memory::dims{g.batch, r, c} : dnnl::memory::dims{r, c};
      };
      const tag plain = b ? tag::abc : tag::ab;
      dnnl::memory::desc a_md(dims(T, g.K), in, plain);
      dnnl::memory::desc w_any(dims(g.K, g.N), in, tag::any);
      dnnl::memory::desc w_plain(dims(g.K, g.N), in, plain);
      dnnl::memory::desc c_md(dims(T, g.N), out, plain);
      dnnl::primitive_attr attr;
      if (g.int8) attr.set_output_scales(b ? 4 : 2, std::vector<float>(static_cast<size_t>(g.N), 0.01f));
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, w_any, c_md), attr, eng);
      One o{dnnl::matmul(pd), dnnl::memory(a_md, eng), dnnl::memory(c_md, eng), {}};
      dnnl::memory wp(w_plain, eng);
      std::memset(wp.get_data_handle(), 1, w_plain.get_size());
      std::memset(o.a.get_data_handle(), 1, a_md.get_size());
      for (int i = 0; i < copies; ++i) {
        o.w.emplace_back(pd.weights_desc(), eng);
        dnnl::reorder(wp, o.w.back()).execute(s, wp, o.w.back());
      }
      gemms.push_back(std::move(o));
    }
    s.wait();
  }
  void run() {
    for (auto& g : gemms)
      g.mm.execute(s, {{DNNL_ARG_SRC, g.a}, {DNNL_ARG_WEIGHTS, g.w[next % g.w.size()]}, {DNNL_ARG_DST, g.c}});
    s.wait();
    ++next;
  }
};
#endif

}  // namespace bench

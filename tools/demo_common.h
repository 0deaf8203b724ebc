// Shared pieces of `mlaops demo` (tools/cmd_demo.cpp: the options and the bf16 flow;
// tools/cmd_demo_int8.cpp: the W8A8 flow of `--int8`): the dimensions and options, the paged
// latent cache and its block table, the MlaPrologV2 inputs and parameters, timing, the float64
// checks and the report.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/limits_cache.h"
#include "core/host_tensor.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/mla_prolog.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"
#include "reference/fia/fia_ref.h"
#include "testkit/compare.h"

namespace mlaops::tools::demo {

// The roofline rates the report's %bound uses: this host's, at the run's thread count
// (bench/limits_cache.h: saved by the last `mlaops bench` on this CPU, or probed quickly).
struct Bounds {
  double bw = 0, bf16 = 0, int8 = 0;  // bytes/s, FLOP/s, OP/s
  std::string source;
  std::string noisy;  // why the limits cannot be trusted (a probe disagreed with itself), empty when steady
};

struct Dims {
  int64_t He = 7168, Hcq = 1536, Hckv = 512, D = 128, Dr = 64, N = 32, block = 128;
};

struct Options {
  Dims d;
  std::vector<int64_t> prompts = {37, 64, 100};
  int64_t steps = 4;
  uint64_t seed = 1;
  bool check = true;
  bool int8 = false;
  Bounds bounds;  // filled before the run
};

inline HostTensor random_bf16(const std::vector<int64_t>& dims, std::mt19937_64& rng, double scale) {
  HostTensor h = make_tensor(DType::kBFloat16, dims);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto* p = h.view.ptr<uint16_t>();
  for (int64_t i = 0; i < h.numel(); ++i) p[i] = float_to_bf16(static_cast<float>(scale) * u(rng));
  return h;
}


// The paged latent cache and its block table.
struct Cache {
  HostTensor kv, kr;           // [blocks, block, 1, Hckv], [blocks, block, 1, Dr] bf16 (PA_BSND)
  HostTensor table;            // [R, max_blocks] int32
  int64_t blocks = 0, max_blocks = 0, block = 0;
  int64_t slot(int64_t r, int64_t pos) const {
    return static_cast<int64_t>(table.view.ptr<int32_t>()[r * max_blocks + pos / block]) * block + pos % block;
  }
};

inline Cache make_cache(const Dims& d, const std::vector<int64_t>& final_lens, uint64_t seed) {
  Cache c;
  c.block = d.block;
  for (int64_t len : final_lens) {
    c.blocks += (len + d.block - 1) / d.block;
    c.max_blocks = std::max(c.max_blocks, (len + d.block - 1) / d.block);
  }
  c.blocks += 1;  // one block nobody uses
  c.kv = make_tensor(DType::kBFloat16, {c.blocks, d.block, 1, d.Hckv});
  c.kr = make_tensor(DType::kBFloat16, {c.blocks, d.block, 1, d.Dr});
  const int64_t R = static_cast<int64_t>(final_lens.size());
  c.table = make_tensor(DType::kInt32, {R, c.max_blocks});
  std::vector<int32_t> ids(static_cast<size_t>(c.blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::mt19937_64 rng(seed * 7 + 3);
  std::shuffle(ids.begin(), ids.end(), rng);  // requests own scattered blocks
  size_t next = 0;
  auto* t = c.table.view.ptr<int32_t>();
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < c.max_blocks; ++j)
      t[r * c.max_blocks + j] = j < (final_lens[static_cast<size_t>(r)] + d.block - 1) / d.block ? ids[next++] : -1;
  return c;
}

// One MlaPrologV2 call's tensors for tokens at (request, position) pairs, TND.
struct PrologIo {
  HostTensor x, sin, cos, index, q, qr;
};

inline PrologIo make_prolog_io(const Dims& d, const Cache& c, const std::vector<std::pair<int64_t, int64_t>>& tokens,
                        std::mt19937_64& rng) {
  const int64_t T = static_cast<int64_t>(tokens.size());
  PrologIo io;
  io.x = random_bf16({T, d.He}, rng, 1.0);
  io.sin = make_tensor(DType::kBFloat16, {T, d.Dr});
  io.cos = make_tensor(DType::kBFloat16, {T, d.Dr});
  io.index = make_tensor(DType::kInt64, {T});
  const int64_t h = d.Dr / 2;
  for (int64_t t = 0; t < T; ++t) {
    const double pos = static_cast<double>(tokens[static_cast<size_t>(t)].second);
    for (int64_t i = 0; i < h; ++i) {
      const double theta = pos * std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(d.Dr));
      for (int64_t half = 0; half < 2; ++half) {  // the "doubled halves" layout callers pass
        io.sin.set(t * d.Dr + half * h + i, std::sin(theta));
        io.cos.set(t * d.Dr + half * h + i, std::cos(theta));
      }
    }
    io.index.view.ptr<int64_t>()[t] = c.slot(tokens[static_cast<size_t>(t)].first, tokens[static_cast<size_t>(t)].second);
  }
  io.q = make_tensor(DType::kBFloat16, {T, d.N, d.Hckv});
  io.qr = make_tensor(DType::kBFloat16, {T, d.N, d.Dr});
  return io;
}

// The weights a MlaProlog call reads (the bf16 layer's, or the int8 one's).
struct LayerView {
  const HostTensor &wdq, &wuq, &wuk, &wdkv, &gamma_cq, &gamma_ckv;
};

inline MlaPrologParams prolog_params(const LayerView& l, const PrologIo& io, const Cache& c, HostTensor* q, HostTensor* qr,
                              HostTensor* kv, HostTensor* kr) {
  MlaPrologParams p;
  p.token_x = io.x.view;
  p.weight_dq = l.wdq.view;
  p.weight_uq_qr = l.wuq.view;
  p.weight_uk = l.wuk.view;
  p.weight_dkv_kr = l.wdkv.view;
  p.rmsnorm_gamma_cq = l.gamma_cq.view;
  p.rmsnorm_gamma_ckv = l.gamma_ckv.view;
  p.rope_sin = io.sin.view;
  p.rope_cos = io.cos.view;
  p.cache_index = io.index.view;
  p.kv_cache = (kv ? kv : &c.kv)->view;
  p.kr_cache = (kr ? kr : &c.kr)->view;
  p.query_out = q->view;
  p.query_rope_out = qr->view;
  return p;
}

// A view of `base` with other dims (same memory, contiguous).
inline TensorView reshaped(const TensorView& base, std::initializer_list<int64_t> dims) {
  TensorView v = make_view(base.data, base.dtype, dims, base.format);
  return v;
}

// Best of two runs: the first call of a process also pays for starting the thread pool and
// faulting in the workspace. Both operators are idempotent on their inputs (the same rows are
// written to the same cache slots), so running them twice changes nothing.
template <class F>
double time_us(F&& f) {
  double best = 0;
  for (int i = 0; i < 2; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    best = i == 0 ? us : std::min(best, us);
  }
  return best;
}

// ---- progress and reporting ----

struct Progress {
  int total = 1, done = 0;
  bool tty = isatty(2) != 0;
  void step(const char* what) {
    ++done;
    if (!tty) return;
    const int width = 30, filled = done * width / std::max(1, total);
    std::fprintf(stderr, "\r[%.*s%*s] %d/%d %-40s", filled, "##############################", width - filled, "", done,
                 total, what);
    if (done == total) std::fputc('\n', stderr);
    std::fflush(stderr);
  }
};

struct CheckResult {
  bool ok = true;
  bool skipped = false;  // the call was not made
  double max_abs = 0, max_rel_rms = 0, cosine = 1;
};

inline CheckResult check_tensor(const TensorView& a, const TensorView& r, const testing::Tolerance& tol,
                         bool integer = false) {
  const testing::Stats s = testing::compare(a, r, tol);
  CheckResult c;
  c.ok = testing::within(s, tol, integer);
  if (!c.ok && std::getenv("MLAOPS_DEMO_DEBUG")) std::fprintf(stderr, "check failed: %s\n", s.str().c_str());
  c.max_abs = s.max_abs;
  c.max_rel_rms = s.rms_ref > 0 ? s.max_abs / s.rms_ref : 0;
  c.cosine = s.cosine;
  return c;
}

inline void merge(CheckResult* into, const CheckResult& c) {
  into->ok = into->ok && c.ok;
  into->max_abs = std::max(into->max_abs, c.max_abs);
  into->max_rel_rms = std::max(into->max_rel_rms, c.max_rel_rms);
  into->cosine = std::min(into->cosine, c.cosine);
}

// One row of the report: a step's two calls (attention not run: attn_us 0, its check skipped).
struct Row {
  std::string phase;
  int64_t tokens;
  double prolog_us, prolog_bound_us, attn_us, attn_bound_us;
  CheckResult prolog_check, attn_check;
};

inline void print_report(const std::vector<Row>& rows, bool check, int64_t R, const Bounds& bounds) {
  std::printf("\n%-10s %6s | %11s %7s | %11s %7s | %10s | %-26s | %-26s\n", "phase", "tokens", "MlaProlog", "%bound",
              "FIA", "%bound", "tokens/s", "MlaProlog vs float64", "FIA vs float64");
  bool any_noisy = false;
  for (const Row& r : rows) {
    auto chk = [&](const CheckResult& c) {
      char b[64];
      if (!check || c.skipped) return std::string("-");
      std::snprintf(b, sizeof b, "%s err %.1e cos %.6f", c.ok ? "ok  " : "FAIL", c.max_rel_rms, c.cosine);
      return std::string(b);
    };
    const double total = r.prolog_us + r.attn_us;
    const std::string prolog_pct = bench::bound_cell(r.prolog_bound_us, r.prolog_us, !bounds.noisy.empty(), &any_noisy);
    const std::string attn_pct = bench::bound_cell(r.attn_bound_us, r.attn_us, !bounds.noisy.empty(), &any_noisy);  // "-": not run
    std::printf("%-10s %6lld | %8.0f us %7s | %8.0f us %7s | %10.1f | %-26s | %-26s\n", r.phase.c_str(),
                (long long)r.tokens, r.prolog_us, prolog_pct.c_str(), r.attn_us, attn_pct.c_str(),
                static_cast<double>(r.tokens) / (total * 1e-6), chk(r.prolog_check).c_str(), chk(r.attn_check).c_str());
  }
  if (rows.size() > 1) {
    double us = 0;
    for (size_t i = 1; i < rows.size(); ++i) us += rows[i].prolog_us + rows[i].attn_us;
    std::printf("decode: %.1f ms per step for %lld requests = %.1f tokens/s\n", us / 1e3 / (rows.size() - 1),
                (long long)R, static_cast<double>(R) * static_cast<double>(rows.size() - 1) / (us * 1e-6));
  }
  std::printf("err = max |fast - float64| / rms(float64) over every output, cache and LSE; %%bound = roofline lower "
              "bound / time with this host's limits at %d threads: DRAM %.1f GB/s, bf16 %.0f GFLOP/s, int8 %.0f GOP/s "
              "(%s)\n",
              num_threads(), bounds.bw / 1e9, bounds.bf16 / 1e9, bounds.int8 / 1e9, bounds.source.c_str());
  if (any_noisy)
    std::printf("noisy: %s; run `mlaops bench` on a quiet machine to measure and save this host's limits\n",
                bounds.noisy.empty() ? "a call ran faster than its bound, so a limit was measured low (another process "
                                       "was running while it was probed)"
                                     : ("the limits probe disagreed with itself (" + bounds.noisy + ")").c_str());
}


// Runs one operator call, timed (time_us): `size(&bytes)` sizes its workspace, `run(ws, bytes)`
// makes the call; false (message printed, naming `op`) when it is rejected or fails.
template <class Size, class Run>
bool run_timed(const char* op, Size&& size, Run&& run, double* us) {
  uint64_t ws_bytes = 0;
  if (size(&ws_bytes) != kSuccess) {
    std::fprintf(stderr, "mlaops demo: %s rejected the call: %s\n", op, last_error_message());
    return false;
  }
  std::vector<uint8_t> ws(ws_bytes + 1);
  Status st = kSuccess;
  *us = time_us([&] { st = run(ws.data(), ws_bytes); });
  if (st != kSuccess) {
    std::fprintf(stderr, "mlaops demo: %s failed: %s\n", op, last_error_message());
    return false;
  }
  return true;
}

inline bool run_prolog(const MlaPrologParams& pp, double* us) {
  return run_timed(
      "MlaPrologV2", [&](uint64_t* bytes) { return mla_prolog_workspace_size(pp, bytes); },
      [&](void* ws, uint64_t bytes) { return mla_prolog(pp, ws, bytes); }, us);
}

inline bool run_fia(const FiaParams& fp, double* us) {
  return run_timed(
      "FusedInferAttentionScoreV4",
      [&](uint64_t* bytes) { return fused_infer_attention_score_v4_workspace_size(fp, bytes); },
      [&](void* ws, uint64_t bytes) { return fused_infer_attention_score_v4(fp, ws, bytes); }, us);
}

// The FusedInferAttentionScoreV4 call `fp` (its output `out`, lse `lse`) against the float64
// reference on the same inputs with an fp64 output (no final rounding): bf16 output 7.8e-3 |ref|
// + 1e-2 rms (P rounded to bf16 before P.V, as on the NPU), lse 1e-4; merged into `into`. False
// (message printed) when the reference fails.
inline bool check_fia_call(const FiaParams& fp, const HostTensor& out, const HostTensor& lse, CheckResult* into) {
  FiaParams rf = fp;
  HostTensor rout = make_tensor(DType::kFloat64, std::vector<int64_t>(out.view.dims, out.view.dims + out.view.rank));
  HostTensor rlse = make_tensor(DType::kFloat32, std::vector<int64_t>(lse.view.dims, lse.view.dims + lse.view.rank));
  rf.attention_out = rout.view;
  rf.softmax_lse = &rlse.view;
  if (fused_infer_attention_score_v4_ref(rf) != kSuccess) {
    std::fprintf(stderr, "mlaops demo: the FusedInferAttentionScoreV4 reference failed: %s\n", last_error_message());
    return false;
  }
  merge(into, check_tensor(out.view, rout.view, {7.8e-3, 1e-2, 1.5e-2, 0.9995, 0, 0, 0, 0}));
  merge(into, check_tensor(lse.view, rlse.view, testing::fp32_tolerance(1e-4)));
  return true;
}

// A finished step: its checks into `all_ok`, its row into `rows`, one step of the progress bar.
inline void record_step(const Row& row, std::vector<Row>* rows, bool* all_ok, Progress* progress) {
  *all_ok = *all_ok && row.prolog_check.ok && row.attn_check.ok;
  rows->push_back(row);
  progress->step(row.phase.c_str());
}

// The prefill step and o.steps decode steps (`step(prefill, s)`: false stops the run, exit status
// 1), then the report and the verdict: the exit status (1 when a check failed).
template <class Step>
int run_steps(const Options& o, Step&& step, const std::vector<Row>& rows, const bool& all_ok) {
  if (!step(true, 0)) return 1;
  for (int64_t s = 0; s < o.steps; ++s)
    if (!step(false, s)) return 1;
  print_report(rows, o.check, static_cast<int64_t>(o.prompts.size()), o.bounds);
  if (o.check) std::printf("%s\n", all_ok ? "all checks passed" : "CHECK FAILED");
  return all_ok ? 0 : 1;
}

// The W8A8 configuration of `--int8` (tools/cmd_demo_int8.cpp); returns the exit status.
int run_int8(const Options& o);

}  // namespace mlaops::tools::demo

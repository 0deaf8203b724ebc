// GEMM routes (docs/runtime.md "GEMM routes"): where a plan's GEMM-shaped step runs, decided at
// plan time per shape: the library's kernels ("own", kernels/cpu/gemm/gemm.h) or oneDNN's matmul
// over the weights converted on each call (kernels/cpu/gemm/gemm_onednn.h).
//
// The decision (the rules are data: kGemmRouteRules below):
//   * MLAOPS_GEMM / set_gemm_route forces one: own, onednn (its type measured or by rule),
//     onednn-bf16, onednn-f32; a forced oneDNN route that cannot run says why and runs own;
//   * auto (the default): own when oneDNN is not built, the ISA is forced below the host's, a chunk
//     has fewer than kMinRows rows, or the call does under kMinWork operations; else both routes
//     are timed on synthetic operands of the step's shape (alternated, best of kRounds; the oneDNN
//     side with its per-call weight conversion) and oneDNN runs when it is faster by kMargin.
// Decisions are kept per process (one measurement per shape, thread count and ISA) and listed by
// gemm_route_decisions() (mlaops info, the bench).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/cpu/gemm/gemm_onednn.h"
#include "mlaops/runtime.h"

namespace mlaops {

struct GemmRouteRules {
  int64_t min_rows = 16;              // rows per chunk below which own runs (weight streaming)
  double min_work = 1.0e9;            // operations per call (2 M K N) below which own runs unmeasured
  double margin = 0.95;               // oneDNN's time must be below margin x own's
  int rounds = 3;                     // timed rounds, alternated; the first warms and is not counted
};
inline constexpr GemmRouteRules kGemmRouteRules{};

// One GEMM-shaped step of a plan: C[m, N] = A[m, K] x W for chunks of m_max rows (the last m_last),
// `chunks` chunks per call, A rows lda apart, C rows ldc apart.
struct GemmRouteQuery {
  const char* op = "";    // "mla_prolog"
  const char* what = "";  // "x @ W_DQ"
  kernels::GemmElem elem = kernels::GemmElem::kBf16;
  bool transposed = false;  // the weights are W^T in FRACTAL_NZ (GemmTArgs), else panels (GemmArgs)
  int64_t m_max = 0, m_last = 0, chunks = 1, K = 0, N = 0, lda = 0, ldc = 0;
  int threads = 1;
  Isa isa = Isa::kScalar;
};

struct GemmRoute {
  bool onednn = false;
  kernels::OnednnGemmPlan plan;  // when onednn
  std::string why;               // one line: the route and the reason
  int64_t workspace_bytes() const { return onednn ? plan.workspace_bytes() : 0; }
};

GemmRoute choose_gemm_route(const GemmRouteQuery& q);

}  // namespace mlaops

// MlaProlog V1 / V2WeightNz / V3WeightNz inside mlaops: the rules (mla_prolog_check.{h,cpp}), the plan
// (mla_prolog_plan.cpp) and the run (mla_prolog_run.cpp). The public parameters and the plan / run
// entry points are in include/mlaops/mla_prolog.h.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan_state.h"
#include "kernels/cpu/layout/convert.h"
#include "kernels/cpu/gemm/gemm.h"
#include "mlaops/mla_prolog.h"
#include "mlaops/plan.h"
#include "ops/common/auto_contiguous.h"
#include "ops/common/check_util.h"
#include "ops/common/gemm_route.h"
#include "ops/mla_prolog/mla_prolog_check.h"

namespace mlaops {

// PlanState::op of every MlaProlog plan.
inline constexpr const char* kMlaPrologOp = "mla_prolog";
// The fewest tokens of a chunk one thread takes in the token-row step (RmsNorm, RoPE, quant rows).
inline constexpr int64_t kMlaPrologRowsMinChunk = 8;

// A weight as the panel GEMM sees it (kernels/cpu/gemm/gemm.h GemmArgs): logical [rows = K, cols = N]
// in panels of panel_width columns. The data pointer is bound at run time.
struct PanelMatrix {
  int64_t rows = 0, cols = 0;
  int64_t ldb = 0, panel_stride = 0, panel_width = 0;
};

// Everything phase 2 does, decided in phase 1.
struct MlaPrologPlan final : detail::PlanState {
  MlaPrologCheckOptions options;  // the name in messages, V1 / V2, vendor ranges
  MlaPrologDims dims;
  MlaPrologScenario scenario = MlaPrologScenario::kNoQuant;
  MlaPrologCacheMode cache_mode = MlaPrologCacheMode::kPaBsnd;
  PanelMatrix wdq, wuqqr, wdkvkr;
  // V3 α scales as float32; `scale_q` / `scale_kv`: |α - 1| >= FLT_EPSILON (else no multiply).
  float alpha_q = 1.0f, alpha_kv = 1.0f;
  bool scale_q = false, scale_kv = false;
  bool query_norm = false;  // queryNormOut (and, when quantized, dequantScaleQNormOut) written
  // The kernels, from the tables of level `isa` (kernels/cpu/gemm/gemm.h, convert.h).
  Isa isa = Isa::kScalar;
  kernels::GemmFn x_gemm = nullptr;   // x @ [W_DQ | W_DKV_KR]: bf16 -> fp32 or int8 -> int32 panels
  kernels::GemmFn uq_gemm = nullptr;  // c_Q' @ W_UQ_QR per head: bf16 or int8 A
  kernels::GemmFn uk_gemm = nullptr;  // bf16(q_nope) @ W_UK[n]
  const kernels::ConvertKernels* cv = nullptr;  // bf16 rounding / conversion, absmax, int8 quant, RoPE of rows
  kernels::S8RowSumFn rowsum = nullptr;         // int8 A's row sums, once per chunk for all panel / head calls
  std::array<check::KernelPick, 4> picks{};     // the four above, for explain()
  // The GEMM routes of the projections (ops/common/gemm_route.h): the library's panel kernels above,
  // or oneDNN's matmul over the weights converted once per call into the workspace: x @ [W_DQ |
  // W_DKV_KR] as one product, and c_Q' @ W_UQ_QR for every head before the heads (into off_q_all).
  GemmRoute route_x, route_uq;
  // Work split: chunks of `chunk` tokens; per chunk the x projection over weight panels and the
  // token rows (parallel_for), the heads on `threads` threads (parallel_items), the scatter.
  int64_t chunk = 0;
  int threads = 1;
  // Workspace layout (byte offsets).
  int64_t off_acc1 = 0;     // [chunk, Hcq + Hckv + Dr] fp32/int32 projections of x
  int64_t off_a2 = 0;       // [chunk, Hcq] bf16 or int8: the A operand of the W_UQ_QR GEMM
  int64_t off_scale = 0;    // [chunk] fp32 per-token dynamic-quant scale of c_Q
  int64_t off_rowsum = 0;   // [2, chunk] int32 row sums of the int8 A operands: x, then c_Q'
  int64_t off_kv = 0;       // [chunk, kv_row] kv rows in the cache dtype, staged for the scatter
  int64_t off_kr = 0;       // [chunk, Dr] kr rows in the cache dtype
  int64_t off_thread = 0;   // per-thread buffers, thread_bytes each
  int64_t off_slots = 0;    // [T] int64 cache slot of each token (-1: no write), filled by the run's pre-pass
  int64_t off_route_x = 0, off_route_uq = 0;  // the oneDNN routes' parts (packed weights, ...)
  int64_t off_q_all = 0;    // [chunk, N * (D + Dr)] fp32/int32 c_Q' @ W_UQ_QR of every head (route_uq on oneDNN)
  int64_t thread_bytes = 0;
  int64_t off_scratch = 0;  // within a thread's buffers: GEMM scratch and row vectors (run), all
                            // in the workspace so a call allocates nothing once it writes outputs
  int64_t head_cols = 0;    // panel-aligned column window of one head in W_UQ_QR (see run)
  int64_t uk_rows = 0;      // tokens per W_UK product and epilogue block (ops/common/mla_uk.h)
  // Strided inputs (ops/common/auto_contiguous.h): their dense copies at the workspace's front; the
  // offsets above count from the end of that region (workspace_bytes covers both).
  StagePlan stage;

  std::string explain() const override;
};

// The facts of a call a plan depends on, in a fixed order (every tensor's dtype, format, dims
// and strides, both epsilons, the cache mode); used at plan time and at run time.
CallSignature mla_prolog_signature(const MlaPrologParams& p);

// The inputs read as their logical views when strided (every input; not the caches, which are
// updated in place, nor the outputs), as slots pointing into `p`; optional inputs are copied into
// *store (which must outlive the slots) and repointed.
std::vector<StageSlot> mla_prolog_stage_slots(MlaPrologParams* p, std::vector<TensorView>* store);

// Phase 1 with the given options (the C++ API: defaults; the aclnn layer: its entry point's
// name, V1 / V2, vendor ranges). On error *plan is left invalid.
Status mla_prolog_make_plan(const MlaPrologParams& p, const MlaPrologCheckOptions& o, OpPlan* plan);

}  // namespace mlaops

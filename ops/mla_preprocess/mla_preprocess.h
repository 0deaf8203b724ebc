// MlaPreprocess inside mlaops: the rules (mla_preprocess_check.{h,cpp}), the plan
// (mla_preprocess_plan.cpp) and the run (mla_preprocess_run.cpp). The public parameters and the
// plan / run entry points are in include/mlaops/mla_preprocess.h; the rules and choices in
// docs/ops/mla_preprocess.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan_state.h"
#include "kernels/cpu/layout/convert.h"
#include "kernels/cpu/gemm/gemm.h"
#include "kernels/cpu/rows/mla_preprocess_rows.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/mlapo.h"
#include "mlaops/plan.h"
#include "ops/common/auto_contiguous.h"
#include "ops/common/check_util.h"
#include "ops/common/gemm_route.h"
#include "ops/mla_preprocess/mla_preprocess_check.h"

namespace mlaops {

// PlanState::op of every MlaPreprocess plan, and of the serving stacks' MLAPO op's (mlaops/mlapo.h).
inline constexpr const char* kMlaPreprocessOp = "mla_preprocess";
inline constexpr const char* kMlapoOp = "mlapo";
// The fewest tokens of a chunk one thread takes in the token-row steps (RmsNormQuant, dequant, RoPE rows).
inline constexpr int64_t kMlaPreprocessRowsMinChunk = 4;

// One cache as the scatter sees it (the input cache's geometry, applied to the output's memory):
// element (slot, j) at
//   ND: (slot / bs) * block_stride + (slot % bs) * width + j
//   NZ: (slot / bs) * block_stride + (j / c0) * bs * c0 + (slot % bs) * c0 + j % c0
struct MlaPreprocessCacheGeom {
  int64_t width = 0;         // row width in elements (Hckv + Dr, Hckv or Dr)
  int64_t c0 = 0;            // NZ only
  int64_t block_stride = 0;  // elements between blocks (the view's stride of dim 0; >= one block)
  int64_t elem_size = 0;
  bool nz = false;
};

// Everything phase 2 does, decided in phase 1.
struct MlaPreprocessPlan final : detail::PlanState {
  MlaPreprocessCheckOptions options;  // the name in messages, vendor ranges
  // Strided inputs (ops/common/auto_contiguous.h): their dense copies at the workspace's front; the
  // offsets below count from the end of that region (workspace_bytes covers both).
  StagePlan stage;
  MlaPreprocessShape dims;
  bool quant = true;        // INT8 weights (RmsNormQuant stages) vs weights in the input dtype
  bool per_token = false;   // quantMode 1
  bool fp16 = true;         // input dtype FP16 (else BF16)
  bool wuk_nz = false;
  bool q_down = false;      // qDownOut is written
  bool first_norm = true;   // stage 1 RmsNormQuant (MlaPreprocess); false: the quant alone (the MLAPO op)
  bool rope = true;         // RoPE rotation of q_rope / k_rope (false: the MLAPO op without cos / sin)
  MlaPreprocessCacheMode cache_mode = MlaPreprocessCacheMode::kKvCache;
  int64_t wdqkv_r1 = 0, wuq_r1 = 0;  // ceil(rows / 16) of the NZ weights (kernels/cpu/gemm/gemm.h GemmTArgs)
  int64_t wuk_ldb = 0, wuk_panel_stride = 0, wuk_head_stride = 0;  // wuk[h] as B [D, Hckv] panels (W = 16)
  int64_t q_nope_scale_n = 0;  // 1 (broadcast) or N
  MlaPreprocessCacheGeom kv, kr;  // kr unused in cacheMode 0 (the rope part is in kv's row)
  // The kernels, from the tables of level `isa` (kernels/cpu/gemm/gemm.h, mla_preprocess_rows.h, convert.h).
  Isa isa = Isa::kScalar;
  kernels::GemmTFn wdqkv_gemm = nullptr;  // A @ wdqkv^T: int8 -> int32, or fp16 / bf16 -> fp32
  kernels::GemmTFn wuq_gemm = nullptr;    // a1 @ wuq[head]^T, the same kind
  kernels::GemmFn wuk_gemm = nullptr;     // qn @ wuk[head]: fp16 or bf16 panels -> fp32
  const kernels::MlaPreprocessRowKernels* rows = nullptr;  // RmsNorm, quant, dequant, dtype conversion
  const kernels::ConvertKernels* cv = nullptr;             // absmax (per-token quant), the RoPE rows
  kernels::S8RowSumFn rowsum = nullptr;  // int8 A's row sums, once per chunk for all group / head calls
  std::array<check::KernelPick, 5> picks{};                // the five above, for explain()
  // Work split: chunks of `chunk` tokens; per chunk the token rows and the wdqkv GEMM
  // (parallel_for), the heads on `threads` threads (parallel_items), the scatter.
  int64_t chunk = 0;
  int threads = 1;
  // Decode-sized chunks (chunk <= kernels::kGemmTStreamMaxM): the wuq GEMM of all heads runs as
  // one GEMM over 16-channel groups split evenly across the threads, before the heads, instead
  // of one 192-column window per head (ops/mla_preprocess/mla_preprocess_run.cpp, docs/performance.md).
  bool wuq_whole = false;
  // The GEMM routes of the two projections (ops/common/gemm_route.h): the library's transposed-NZ
  // kernels above, or oneDNN's matmul over the weights converted once per call into the workspace
  // (the wuq product then runs for every head at once, as wuq_whole).
  GemmRoute route_x, route_uq;
  // Workspace layout (byte offsets).
  int64_t off_a0 = 0;      // [chunk, He] int8: RmsNormQuant(input) (quantized path)
  int64_t off_scale = 0;   // [chunk, 2] double: per-token scales of the two stages (quantMode 1)
  int64_t off_rowsum = 0;  // [2, chunk] int32 row sums of the int8 A operands a0, a1 (quantized path)
  int64_t off_acc1 = 0;    // [chunk, m1_cols] int32 / fp32: the first projection
  int64_t off_m1 = 0;      // [chunk, m1_cols] fp32: m1 in the input dtype's values
  int64_t off_a1 = 0;      // [chunk, Hcq] int8 or dtype bits: the A operand of the wuq GEMM
  int64_t off_acc2 = 0;    // [chunk, m2_cols] int32 / fp32: the wuq GEMM of all heads (wuq_whole)
  int64_t off_kv = 0;      // [chunk, kv width] kv rows in the cache dtype, staged for the scatter
  int64_t off_kr = 0;      // [chunk, Dr] kr rows (cacheMode 1..3)
  int64_t off_thread = 0;  // per-thread buffers, thread_bytes each
  int64_t off_route_x = 0, off_route_uq = 0;  // the oneDNN routes' parts (packed weights, ...)
  int64_t thread_bytes = 0;
  int64_t off_scratch = 0;  // within a thread's buffers: GEMM scratch and row vectors (run), all
                            // in the workspace so a call allocates nothing once it writes outputs
  int64_t head_gemm_scratch = 0;  // a head's GEMM scratch bytes there; its rope vector follows
  int64_t head_cols = 0;   // 16-aligned column window of one head in wuq (see run)
  int64_t uk_rows = 0;     // tokens per wuk product and epilogue block (ops/common/mla_uk.h)

  std::string explain() const override;
};

// The facts of a call a plan depends on, in a fixed order (every tensor's dtype, format, dims
// and strides, the attributes the rules read); used at plan time and at run time on the params
// with their unread tensors dropped (mla_preprocess_unread_dropped).
CallSignature mla_preprocess_signature(const MlaPreprocessParams& p);

// Phase 1 with the given options (the C++ API: defaults; the aclnn layer: its name and the
// vendor ranges). On error *plan is left invalid.
// The inputs read as their logical views when strided: every input but the caches (kvCache,
// kvCacheRope: the vendor passes them with their strides, and their block axis may be padded,
// mla_preprocess_check.cpp), as slots pointing into `p`; optional inputs are copied into *store
// (which must outlive the slots) and repointed.
std::vector<StageSlot> mla_preprocess_stage_slots(MlaPreprocessParams* p, std::vector<TensorView>* store);

Status mla_preprocess_make_plan(const MlaPreprocessParams& p, const MlaPreprocessCheckOptions& o, OpPlan* plan);

// Phase 2 of a plan whose state the caller has checked (mla_preprocess_run, mlapo_run), on the
// params with their unread tensors dropped: the call signature (MPP-18), the pointer rules, the
// slot values and the workspace, then the run.
Status mla_preprocess_execute(const MlaPreprocessPlan& plan, const MlaPreprocessParams& p, void* workspace,
                              uint64_t workspace_size);

// Phase 1 of the MLAPO op with `op` as the name in messages (the Python layer passes the serving
// function's name).
Status mlapo_make_plan(const MlapoParams& p, const char* op, OpPlan* plan);

}  // namespace mlaops

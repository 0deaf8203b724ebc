// MlaProlog V1 / V2WeightNz inside mlaops: validation (mla_prolog_check.cpp), plan and run
// (mla_prolog.cpp). The public parameters are in include/mlaops/mla_prolog.h.
#pragma once

#include <cstdint>

#include "mlaops/mla_prolog.h"
#include "mlaops/status.h"

namespace mlaops {

// A weight as the panel GEMM sees it (kernels/cpu/gemm.h): logical [rows = K, cols = N].
struct PanelMatrix {
  const void* data = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t ldb = 0, panel_stride = 0, panel_width = 0;
};

struct MlaPrologCheckOptions {
  const char* op = "mla_prolog";  // the name used in messages (the aclnn entry point)
  bool v2 = true;                 // V2 has dequantScaleQNopeOut; V1 cannot express full quant + KV quant
  bool vendor_ranges = false;     // the aclnn layer: He, Hcq, N, D, ... limited to the vendor's sets
};

struct MlaPrologPlan {
  MlaPrologDims dims;
  MlaPrologScenario scenario = MlaPrologScenario::kNoQuant;
  PanelMatrix wdq, wuqqr, wdkvkr;
  int64_t chunk = 0;  // tokens per chunk (bounds the workspace; weights are streamed once per chunk)
  int threads = 1;
  // workspace layout (byte offsets)
  int64_t off_acc1 = 0;     // [chunk, Hcq + Hckv + Dr] fp32/int32 projections of x
  int64_t off_a2 = 0;       // [chunk, Hcq] bf16 or int8: the A operand of the W_UQ_QR GEMM
  int64_t off_scale = 0;    // [chunk] fp32 per-token dynamic-quant scale of c_Q
  int64_t off_kv = 0;       // [chunk, Hckv] kv rows in the cache dtype, staged for the scatter
  int64_t off_kr = 0;       // [chunk, Dr] kr rows in the cache dtype
  int64_t off_thread = 0;   // per-thread buffers, thread_bytes each
  int64_t thread_bytes = 0;
  int64_t head_cols = 0;    // panel-aligned column window of one head in W_UQ_QR (see run)
  int64_t workspace_bytes = 0;
};

// Phase 1: every rule of docs/ops/mla_prolog.md on shapes, dtypes, formats, nullness,
// attributes and aliasing; nothing is read from tensor contents and nothing is written.
Status mla_prolog_check(const MlaPrologParams& p, const MlaPrologCheckOptions& o, MlaPrologPlan* plan);

// Phase 2: the read-only pre-pass over cacheIndex (every value < BlockNum*BlockSize; negative
// values skip), then the computation. Requires a plan from mla_prolog_check on the same shapes.
Status mla_prolog_run(const MlaPrologParams& p, const MlaPrologPlan& plan, void* workspace, uint64_t workspace_size,
                      const char* op);

}  // namespace mlaops

// MlaPreprocess inside mlaops: validation (mla_preprocess_check.cpp), plan and run
// (mla_preprocess.cpp). The public parameters are in include/mlaops/mla_preprocess.h; the rules
// and choices in docs/ops/mla_preprocess.md.
#pragma once

#include <cstdint>

#include "mlaops/mla_preprocess.h"
#include "mlaops/status.h"

namespace mlaops {

struct MlaPreprocessCheckOptions {
  const char* op = "mla_preprocess";  // the name used in messages (the aclnn entry point)
  bool vendor_ranges = false;         // the aclnn layer: the vendor's shape ranges and combinations
};

// The shape symbols of one call (include/mlaops/mla_preprocess.h).
struct MlaPreprocessShape {
  int64_t T = 0, He = 0, Hckv = 0, Dr = 0, Hcq = 0, N = 0, D = 0;
  int64_t block_num = 0, block_size = 0;
  int64_t m1_cols = 0;  // Hckv + Dr + Hcq: output channels of wdqkv, [ckv | kpe | cq]
  int64_t m2_cols = 0;  // N * (D + Dr): output channels of wuq, per head [qn | qp]
};

// One cache as the scatter sees it: element (slot, j) at
//   ND: (slot / bs) * block_stride + (slot % bs) * width + j
//   NZ: (slot / bs) * block_stride + (j / c0) * bs * c0 + (slot % bs) * c0 + j % c0
struct MlaPreprocessCacheGeom {
  int64_t width = 0;         // row width in elements (Hckv + Dr, Hckv or Dr)
  int64_t c0 = 0;            // NZ only
  int64_t block_stride = 0;  // elements between blocks (the view's stride of dim 0; >= one block)
  int64_t elem_size = 0;
  bool nz = false;
};

struct MlaPreprocessPlan {
  MlaPreprocessShape dims;
  bool quant = true;        // INT8 weights (RmsNormQuant stages) vs weights in the input dtype
  bool per_token = false;   // quantMode 1
  bool fp16 = true;         // input dtype FP16 (else BF16)
  bool wuk_nz = false;
  MlaPreprocessCacheMode cache_mode = MlaPreprocessCacheMode::kKvCache;
  int64_t wdqkv_r1 = 0, wuq_r1 = 0;  // ceil(rows / 16) of the NZ weights (kernels/cpu/gemm.h GemmTArgs)
  int64_t wuk_ldb = 0, wuk_panel_stride = 0, wuk_head_stride = 0;  // wuk[h] as B [D, Hckv] panels (W = 16)
  int64_t q_nope_scale_n = 0;  // 1 (broadcast) or N
  MlaPreprocessCacheGeom kv, kr;  // kr unused in cacheMode 0 (the rope part is in kv's row)
  int64_t chunk = 0;  // tokens per chunk (bounds the workspace; weights are streamed once per chunk)
  int threads = 1;
  // workspace layout (byte offsets)
  int64_t off_a0 = 0;      // [chunk, He] int8: RmsNormQuant(input) (quantized path)
  int64_t off_scale = 0;   // [chunk, 2] double: per-token scales of the two stages (quantMode 1)
  int64_t off_acc1 = 0;    // [chunk, m1_cols] int32 / fp32: the first projection
  int64_t off_m1 = 0;      // [chunk, m1_cols] fp32: m1 in the input dtype's values
  int64_t off_a1 = 0;      // [chunk, Hcq] int8 or dtype bits: the A operand of the wuq GEMM
  int64_t off_kv = 0;      // [chunk, kv width] kv rows in the cache dtype, staged for the scatter
  int64_t off_kr = 0;      // [chunk, Dr] kr rows (cacheMode 1..3)
  int64_t off_thread = 0;  // per-thread buffers, thread_bytes each
  int64_t thread_bytes = 0;
  int64_t head_cols = 0;   // 16-aligned column window of one head in wuq (see run)
  int64_t workspace_bytes = 0;
};

// Phase 1: every rule of docs/ops/mla_preprocess.md on shapes, dtypes, formats, nullness,
// attributes and aliasing; nothing is read from tensor contents and nothing is written.
Status mla_preprocess_check(const MlaPreprocessParams& p, const MlaPreprocessCheckOptions& o, MlaPreprocessPlan* plan);

// Phase 2: the read-only pre-pass over slotMapping (each value -1 or in [0, BlockNum*BlockSize)),
// then the computation. Requires a plan from mla_preprocess_check on the same shapes.
Status mla_preprocess_run(const MlaPreprocessParams& p, const MlaPreprocessPlan& plan, void* workspace,
                          uint64_t workspace_size, const char* op);

}  // namespace mlaops

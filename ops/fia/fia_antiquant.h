// FusedInferAttentionScoreV4 KV antiquant (docs/ops/fused_infer_attention_score.md): INT8 key / value, or INT4 key / value
// packed in INT32 (8 nibbles per word, rule FIA-33), with FP16 / BF16 query, dequantised element by element as
//   x_deq = (x + offset) * scale, never rounded to the query dtype (whatever innerPrecise says),
// with scale / offset looked up per mode. fia_check_antiquant validates the parameters (rule
// FIA-21, docs/ops/fused_infer_attention_score.md) and resolves each of key and value into the
// index arithmetic below; the operator then dequantises the rows a work item reads.
#pragma once

#include <cstdint>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

namespace mlaops {

namespace kernels {
struct AttnRow;
struct FlashItem;
}
struct FiaPlan;
struct FiaKvStrides;

// Where the scale (and offset) of element (batch b, kv head h, position t, channel d) of key or
// value is:
//   kChannel:  base + h * sh + d * sd                      (per-channel, per-tensor, per-head)
//   kRow:      base + b * sb + h * sh + t * st             (per-token, per-token x per-head)
//   kPagedRow: base + blk * sblk + h * sh + slot * sslot   (t's paged location; modes 4 / 5)
struct FiaAntiquantParam {
  enum class Kind { kNone, kChannel, kRow, kPagedRow };
  Kind kind = Kind::kNone;
  int64_t mode = 0;
  // The scale and offset tensors as members of the call's FiaParams, read from the tensors a run
  // is given (p.*scale is set when kind != kNone; p.*offset may be null: symmetric).
  const TensorView* FiaParams::*scale = nullptr;
  const TensorView* FiaParams::*offset = nullptr;
  int64_t base = 0, sh = 0, sd = 0, sb = 0, st = 0, sblk = 0, sslot = 0;
};

// The parts a dequantised value is carried in (FiaAntiquant::split with INT8 / INT4 key / value).
inline constexpr int64_t kFiaAntiquantParts = 2;

struct FiaAntiquant {
  bool on = false;
  bool int4 = false;  // INT4 key / value in INT32 words: rows addressed in nibbles (FIA-33)
  // The dequantised chunks carry each value v = (x + offset) * scale (fp32) in kFiaAntiquantParts parts
  // side by side, v rounded to the query dtype and the rounded residual (kernels/cpu/quant/dequant_row.h),
  // 2 x D channels, against a query duplicated likewise, so that the scores and P x V see v to
  // about 2^-17 (BF16) / 2^-22 (FP16) relative, for every innerPrecise: the vendor's A2 / A3 kernels
  // never round the dequantised K / V (innerPrecise only sets how many slices their query is
  // split into). The in-place INT8 kernel reads the rows unrounded too. The plan sizes the chunks
  // and the attention shapes by it: kFiaAntiquantParts with INT8 / INT4 key / value (fia_check_antiquant),
  // 1 without.
  int64_t split = 1;
  FiaAntiquantParam k, v;
};

// The shapes fia_check has parsed that the antiquant rules depend on.
struct FiaAntiquantShape {
  const char* op = "";
  DType q_dtype = DType::kBFloat16;
  int64_t B = 0, KVN = 0, QS = 0, KD = 0, VD = 0;
  int64_t kv_s = 0;  // non-paged: the key's sequence extent; paged: blockTable width * blockSize
  bool paged = false, packed = false, rope = false, nz = false;
  bool vendor_ranges = false;  // the aclnn layer's ranges (FiaCheckOptions)
  FiaLayout in_l = FiaLayout::kBSH;
  int64_t N = 0;
  int64_t max_q = 0;  // the longest query of a batch (Q_S; TND / NTD: the largest actual length)
  int64_t block_num = 0, block_size = 0;
  int64_t prefix_len = 0;  // shared prefix Lp (ops/fia/fia_prefix.h): per-token arrays have Lp + KV_S positions
};

// Validates the antiquant parameters against INT8 / INT4 key / value (or their absence against
// FP16 / BF16 key / value) and resolves them. Returns kParamInvalid with a FIA-21 / FIA-33 / FIA-02
// message.
Status fia_check_antiquant(const FiaParams& p, const FiaAntiquantShape& s, FiaAntiquant* out);

// INT4 key / value in INT32 words (FIA-33): the head dims and strides fia_check parsed from the
// words (last dim D / 8) become nibble counts (x 8), so that element (b, h, t, d) of the cache is
// nibble d of its row, byte offset / 2 from the data.
void fia_antiquant_int4_dims(int64_t* kd, int64_t* vd, FiaKvStrides* k, FiaKvStrides* v);

// The float value of element `i` of a FP32 / FP16 / BF16 tensor (scale or offset).
float fia_antiquant_value(const TensorView& t, int64_t i);

// The per-channel parameters as floats, built once per call: [KV_N, D] scale and offset of key
// (D = K_D) and of value (D = V_D), in `floats` (2 * KV_N * (K_D + V_D) floats). Row modes
// leave their part unused.
struct FiaAntiquantChannels {
  const float *k_scale = nullptr, *k_offset = nullptr, *v_scale = nullptr, *v_offset = nullptr;
};
FiaAntiquantChannels fia_antiquant_channels(const FiaParams& p, const FiaAntiquant& aq, int64_t KVN, int64_t KD, int64_t VD,
                              float* floats);

// KV positions per dequantisation chunk: the chunk's rows of a task's heads stay in L2.
inline constexpr int64_t kFiaAntiquantChunk = 128;

// Per-thread workspace of the INT8 / INT4 path: the chunk buffer (kFiaAntiquantChunk rows of up to `heads`
// heads, split x (K_D + V_D) channels, 2 bytes), the duplicated query rows (M x split x K_D per
// head), and two attention states per head (running: M rows x (V_D + 2) floats, chunk:
// M x (split x V_D + 2), M = query rows per item). 64-byte multiple.
int64_t fia_antiquant_thread_bytes(int64_t heads, int64_t M, int64_t KD, int64_t VD, int64_t split);

// What a task of the INT8 path runs: the attention family row the plan chose
// (kernels/cpu/attention/attn.h), in place (the INT8 decode kind) or over dequantised chunks.
struct FiaAntiquantRun {
  const kernels::AttnRow* row = nullptr;
  bool dequant = false;
  void* scratch = nullptr;  // the thread's attention scratch (FiaPlan::thread_bytes)
  void* buf = nullptr;      // the thread's INT8 / INT4 buffers (FiaPlan::aq_thread_bytes)
  bool prefix = false;      // the items' KV range is the shared prefix's rows (ops/fia/fia_prefix.h)
};

// Runs `n` items (heads h0 .. h0 + n - 1 of batch b, same KV range and query rows) over INT8 /
// INT4 key / value. In place: the INT8 decode kernel reads the rows (INT8, packed INT4 or INT8 NZ
// chunks) with the per-channel parameters folded into the query and the per-token ones into the
// scores and P x V (FlashDecodeI8). Dequantised: chunk by chunk, the chunk's rows of the n heads
// are dequantised into `buf` ([chunk, n * split * K_D] keys, [chunk, n * split * V_D] values: rows
// shared by the heads, the decode kernel's order; rounded + residual parts, against the
// duplicated query rows), the row's kernel runs over the chunk into chunk states,
// which merge online (the combine step); finally each item's output (or its KV-split partial)
// is written. With a shared prefix the rows are the prefix's (k.prefix) or the batch's own, and
// per-token parameters are read at column j (prefix row j) or Lp + t (own row t).
void fia_antiquant_run_task(const FiaParams& p, const FiaPlan& plan, const FiaAntiquantChannels& ch, int64_t b, int64_t h0,
                     kernels::FlashItem* items, int64_t n, const FiaAntiquantRun& k);

}  // namespace mlaops

// FusedInferAttentionScoreV4 KV antiquant (spec §2.11): INT8 key / value with FP16 / BF16 query,
// dequantised element by element as
//   x_deq = (x + offset) * scale, rounded to the query dtype,
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
struct FlashItem;
}
struct FiaPlan;

// Where the scale (and offset) of element (batch b, kv head h, position t, channel d) of key or
// value is:
//   kChannel:  base + h * sh + d * sd                      (per-channel, per-tensor, per-head)
//   kRow:      base + b * sb + h * sh + t * st             (per-token, per-token x per-head)
//   kPagedRow: base + blk * sblk + h * sh + slot * sslot   (t's paged location; modes 4 / 5)
struct FiaAqParam {
  enum class Kind { kNone, kChannel, kRow, kPagedRow };
  Kind kind = Kind::kNone;
  int64_t mode = 0;
  const TensorView* scale = nullptr;
  const TensorView* offset = nullptr;  // nullable (symmetric)
  int64_t base = 0, sh = 0, sd = 0, sb = 0, st = 0, sblk = 0, sslot = 0;
};

struct FiaAntiquant {
  bool on = false;
  FiaAqParam k, v;
};

// The shapes fia_check has parsed that the antiquant rules depend on.
struct FiaAqShape {
  const char* op = "";
  DType q_dtype = DType::kBFloat16;
  int64_t B = 0, KVN = 0, QS = 0, KD = 0, VD = 0;
  int64_t kv_s = 0;  // non-paged: the key's sequence extent; paged: blockTable width * blockSize
  bool paged = false, packed = false, rope = false, nz = false;
  int64_t block_num = 0, block_size = 0;
};

// Validates the antiquant parameters against INT8 key / value (or their absence against FP16 /
// BF16 key / value) and resolves them. Returns kParamInvalid with a FIA-21 / FIA-02 message.
Status fia_check_antiquant(const FiaParams& p, const FiaAqShape& s, FiaAntiquant* out);

// The float value of element `i` of a FP32 / FP16 / BF16 tensor (scale or offset).
float fia_aq_value(const TensorView& t, int64_t i);

// The per-channel parameters as floats, built once per call: [KV_N, D] scale and offset of key
// (D = K_D) and of value (D = V_D), in `floats` (2 * KV_N * (K_D + V_D) floats). Row modes
// leave their part unused.
struct FiaAqChannels {
  const float *k_scale = nullptr, *k_offset = nullptr, *v_scale = nullptr, *v_offset = nullptr;
};
FiaAqChannels fia_aq_channels(const FiaAntiquant& aq, int64_t KVN, int64_t KD, int64_t VD, float* floats);

// Where the INT8 rows of one KV head of one batch are (element strides, as FiaKvStrides):
// position t at base + (block_ids ? block_ids[t / block_size] * blk + (t % block_size) * slot
// : t * slot), channels contiguous.
struct FiaAqRows {
  const int8_t* base = nullptr;
  const int32_t* block_ids = nullptr;
  int64_t block_size = 1, blk = 0, slot = 0;
};

// Dequantises positions [t0, t1) of key (K_D channels) and value (V_D channels) of batch b, kv
// head h into `dst`: [t1 - t0, K_D] keys then [t1 - t0, V_D] values in the query dtype
// (kernels/cpu/dequant_kv.h). Returns the value rows' start.
uint16_t* fia_dequant_rows(const FiaAntiquant& aq, const FiaAqChannels& ch, const FiaAqRows& k, const FiaAqRows& v,
                           int64_t b, int64_t h, int64_t t0, int64_t t1, int64_t KD, int64_t VD, bool fp16,
                           uint16_t* dst);

// The operator's hook (fia_run, per work item): dequantises the KV range [kv_begin, kv_end) of
// item `it` (batch b, kv head h) into `buf` (plan.aq_thread_bytes) and points the item at it;
// positions shift to start at 0, the mask deltas and the mask pointer with them.
void fia_aq_bind_item(const FiaParams& p, const FiaPlan& plan, const FiaAqChannels& ch, int64_t b, int64_t h,
                      kernels::FlashItem* it, void* buf);

}  // namespace mlaops

// The flash_quant family: the kernels of FusedInferAttentionScore's INT8 full-quantisation path
// (INT8 query / key / value, deqScale1 / quantScale1 / deqScale2; docs/ops/fused_infer_attention_score.md
// "Full quantisation (INT8 query)"). Raw pointers and sizes only; flash_quant_loop.h runs the
// online softmax over KV chunks of kFqChunk positions on a row of this family.
//
// Every step that decides a value is the same in every row: integer dots are exact, the score
// and P roundings are IEEE fp32 / fp16 operations (round to nearest even), and the exponential is
// fq_exp (one polynomial, the same operations in the scalar and the AVX-512 code), so the rows
// give identical scores, P and sums up to the order of the fp32 sums of e.
//
// Packed layouts (shared by the rows; bytes biased by +128, i.e. x ^ 0x80, so that the
// unsigned x signed VNNI dot product reads them; the kernels subtract 128 * sum of the signed
// operand):
//   K: positions in groups of 16, channels in quads: byte i of channel quad c of position
//      16 t + j at ((t * D/4 + c) * 16 + j) * 4 + i. Positions padded to a multiple of 16 with 0.
//   V: positions in quads: byte i (position 4 t + i) of channel d at (t * VD + d) * 4 + i.
//      Positions padded to a multiple of 4 with 0.
#pragma once

#include <cstdint>

#include "core/kernel_registry.h"

namespace mlaops::kernels {

// KV positions per online-softmax step (the vendor golden's chunk, docs/ops/fused_infer_attention_score.md).
inline constexpr int64_t kFqChunk = 1024;

inline int64_t fq_pad(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// Packs n <= kFqChunk rows of K (int8, row r at k + r * stride, D channels, D % 4 == 0) into the
// K layout (fq_pad(n, 16) * D bytes).
void fq_pack_k(const int8_t* k, int64_t stride, int64_t n, int64_t D, uint8_t* out);
// Packs n rows of V (row r at v + r * stride, VD channels) into the V layout (fq_pad(n, 4) * VD bytes).
void fq_pack_v(const int8_t* v, int64_t stride, int64_t n, int64_t VD, uint8_t* out);

// exp(x) in fp32: x < -87.25 (and -inf) gives 0, x > 88.5 gives +inf; otherwise
// 2^n * poly(r), n = rint(x * log2(e)), r = x - n * ln2 (two-part ln2, fused), a degree-7 Taylor
// polynomial in Estrin's form with fused multiply-adds (max error ~1 ulp; short dependency
// chains). The AVX-512 row evaluates the same operations lane by lane.
float fq_exp(float x);

struct FlashQuantKernels {
  // fq_pack_k / fq_pack_v (the same layouts; a row may vectorise them: the AVX-512 row's V
  // packing interleaves 4 rows by byte unpacks; its K packing is the portable one, which measured
  // as fast as a 16-row gather per channel quad on Zen 5).
  void (*pack_k)(const int8_t* k, int64_t stride, int64_t n, int64_t D, uint8_t* out);
  void (*pack_v)(const int8_t* v, int64_t stride, int64_t n, int64_t VD, uint8_t* out);
  // Scores of M query rows (int8, row m at q + m * q_stride, D channels) against n16 packed K
  // positions (n16 % 16 == 0): s[m * s_stride + j] = fp16(fp16(clamp(fp32(qk * deq1), +-65504)) *
  // scale_h), qk the exact int32 dot, deq1 the 19-bit dequant scale, scale_h the FP16-rounded
  // scaleValue; the last rounding overflows to +-inf as IEEE.
  void (*scores)(const int8_t* q, int64_t q_stride, int64_t M, const uint8_t* kp, int64_t n16, int64_t D,
                 float deq1, float scale_h, float* s, int64_t s_stride);
  // One row of one chunk, n scores (masked positions -inf): m' = max(*m, max_j s[j]);
  // e_j = fq_exp(s[j] - m'); p[j] = clamp(rint(fp16(fp16(e_j) * qs_h)), -128, 127) (NaN: 0); *m = m';
  // *esum = sum e_j (fp32), *psum = sum p[j]. A row whose n scores are all -inf keeps *m and
  // gets p = 0, *esum = 0, *psum = 0.
  void (*row_quant)(const float* s, int64_t n, float qs_h, float* m, int8_t* p, float* esum, int32_t* psum);
  // acc[m * acc_stride + d] = sum_j p[m * p_stride + j] * v[j][d] (exact int32) for M rows over n4
  // packed V positions (n4 % 4 == 0; p readable and zero up to n4), d < VD (VD % 16 == 0);
  // psum[m] = sum_j p[m][j] (the bias correction).
  void (*pv)(const int8_t* p, int64_t p_stride, const int32_t* psum, int64_t M, const uint8_t* vp, int64_t n4,
             int64_t VD, int32_t* acc, int64_t acc_stride);
};

const KernelTable<const FlashQuantKernels*>& flash_quant_family();
const FlashQuantKernels& flash_quant_kernels(Isa isa);  // *flash_quant_family().pick(isa)
extern const FlashQuantKernels flash_quant_scalar;
#if defined(MLAOPS_ARCH_X86_64)
extern const FlashQuantKernels flash_quant_avx512_vnni;
#endif

}  // namespace mlaops::kernels

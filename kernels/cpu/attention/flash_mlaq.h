// MLA full quant attention rows (FusedInferAttentionScoreV4 with an INT8 query,
// docs/ops/fused_infer_attention_score.md "MLA full quant"): M query rows that share one paged
// FRACTAL_NZ latent cache (INT8 key / value [blockNum, 1, D/32, blockSize, 32], BF16 key rope
// [blockNum, 1, DR/16, blockSize, 16]). For row m and position j:
//   s[m][j] = fac[m] * ( sum_d q[m][d] * k[j][d]  +  sum_r qr[m][r] * kr[j][r] )
//   (the INT8 dot product exact in int32, converted once to fp32; the rope part in fp32)
// (j inside [jlo[m], jhi[m]) and, with a tree mask, not masked by it) online softmax per block of kFlashMlaqBlock positions in fp32; o[m] += P[m][j] * v[j] with the
// INT8 values exact. The portable row keeps P in fp32; the AVX-512 row rounds P to BF16 for
// vdpbf16ps (as the BF16 attention rows do); l sums the fp32 P in both.
// The caller applies the value scale and normalises (kernels/cpu/attention/attn_combine.h).
//
// Raw pointers and validated sizes only; the operator (ops/fia/fia_mla_quant.cpp) has checked every
// shape, length and block id.
#pragma once

#include <cstdint>

#include "core/kernel_registry.h"
#include "kernels/cpu/attention/attn_variant.h"

namespace mlaops::kernels {

// Positions per online-softmax block.
inline constexpr int64_t kFlashMlaqBlock = 64;

// The paged NZ caches of one batch. Element (position p, channel d) of key / value:
//   k + row(p) + (d / 32) * k_c1 + d % 32,   row(p) = block_ids[p / block_size] * k_blk + (p % block_size) * k_slot
// and of the key rope likewise with chunks of 16 (kr_c1, kr_blk, kr_slot).
struct MlaqCache {
  const int8_t* k = nullptr;
  const int8_t* v = nullptr;
  const uint16_t* kr = nullptr;  // BF16 bits
  const int32_t* block_ids = nullptr;
  int64_t block_size = 1;
  int64_t k_blk = 0, k_slot = 0, k_c1 = 0;
  int64_t v_blk = 0, v_slot = 0, v_c1 = 0;
  int64_t kr_blk = 0, kr_slot = 0, kr_c1 = 0;
};

struct MlaqArgs {
  int64_t M = 0;           // query rows
  int64_t D = 0, DR = 0;   // D % 64 == 0, D <= 1024 (exact int32 / fp32 sums); DR % 32 == 0
  const int8_t* q = nullptr;     // [M][D]
  const uint16_t* qr = nullptr;  // [M][DR] BF16 bits
  const float* fac = nullptr;    // [M] scaleValue * dequantScaleQuery * keyScale
  const int64_t* jlo = nullptr;  // [M] row m reads positions [jlo[m], jhi[m]) (empty: none)
  const int64_t* jhi = nullptr;
  int64_t p0 = 0, p1 = 0;        // positions of the cache read: [p0, p1) covers every row's range
  // Tree mask (sparseMode 9; off: none): row m also loses position j when
  //   mask.masked(m % mask_rows, j)   (the attention variant's explicit mask, attn_variant.h).
  AttnMask mask;
  int64_t mask_rows = 1;
  MlaqCache kv;
  float* o = nullptr;  // [M][D] out: unnormalised sum_j P[m][j] * v[j] (INT8 units)
  float* m = nullptr;  // [M] out: running max (-inf: no valid position)
  float* l = nullptr;  // [M] out: sum of P
};

using FlashMlaqFn = void (*)(const MlaqArgs& a, void* scratch);

// Scratch bytes of a call with M rows (64-byte multiple), for every row of the family.
int64_t flash_mlaq_scratch_bytes(int64_t M, int64_t D, int64_t DR);

// The family: mlaq_avx512 (AVX-512 BF16 + VNNI), mlaq_scalar (portable).
const KernelTable<FlashMlaqFn>& flash_mlaq_family();

void flash_mlaq_scalar(const MlaqArgs& a, void* scratch);
#if defined(MLAOPS_ARCH_X86_64)
void flash_mlaq_avx512(const MlaqArgs& a, void* scratch);
#endif

}  // namespace mlaops::kernels

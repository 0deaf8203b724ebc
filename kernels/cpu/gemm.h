// Panel GEMM kernels for the MLA projections: C[M, N] = A[M, K] x B[K, N], with B stored as
// column panels (FRACTAL_NZ weights, or a row-major ND matrix seen as 16-column panels).
//
// B layout: panel p holds columns [p*W, p*W + W) (W = panel_width: 16 for bf16, 32 for int8);
// element B[k][p*W + j] is at B + p*panel_stride + k*ldb + j.
//   * FRACTAL_NZ [C1, R1, 16, c0]: W = c0, ldb = c0, panel_stride = R1*16*c0 (the padding rows
//     and columns are zero).
//   * ND row-major [K, N] (bf16 only): W = 16, ldb = N, panel_stride = 16; the last panel may
//     be partial (only columns < N are read).
// A is row-major [M, K] with row stride lda; C is row-major [M, N] with row stride ldc; only
// columns [n_begin, n_end) of C are computed (n_begin a multiple of W), so callers split N
// across threads by panels.
//
// bf16: fp32 accumulation of bf16 products (C is float). The summation order differs between
//       ISAs; results agree to fp32 rounding.
// int8: exact int32 accumulation of int8 x int8 (C is int32); identical on every ISA.
//
// Kernels never see API structs; the operator validates shapes before calling.
#pragma once

#include <cstdint>

#include "core/kernel_registry.h"
#include "mlaops/runtime.h"

namespace mlaops::kernels {

struct GemmArgs {
  int64_t M = 0, N = 0, K = 0;
  const void* A = nullptr;  // [M, K] bf16 (uint16_t bits) or int8
  int64_t lda = 0;
  const void* B = nullptr;  // panels, see above
  int64_t ldb = 0;
  int64_t panel_stride = 0;
  int64_t panel_width = 16;
  void* C = nullptr;        // [M, N] float (bf16 GEMM) or int32_t (int8 GEMM)
  int64_t ldc = 0;
  int64_t n_begin = 0, n_end = 0;
  void* scratch = nullptr;  // the caller's: gemm_scratch_bytes(kind, M, K, n_end - n_begin) bytes, 16-aligned
  // int8 only, optional: the row sums of A (GemmKernels::s8_rowsum of these M rows and K), for
  // callers whose calls share one A; kernels that use row sums read them instead of summing A.
  const int32_t* a_rowsum = nullptr;
};

using GemmFn = void (*)(const GemmArgs&);

// C[M, N] = A[M, K] x W^T for a weight W [N, K] stored FRACTAL_NZ (the transposed weights of
// MlaPreprocess; FRACTAL_NZ: docs/numerics.md): storage [C1 = ceil(K/c0), R1 = ceil(N/16), 16, c0],
// W[n][k] at ((k / c0) * R1 + n / 16) * 16 * c0 + (n % 16) * c0 + k % c0, padding zero. So for
// 16 consecutive outputs n and c0 consecutive k there is one contiguous row-major 16 x c0 tile
// (dot products along k). c0 = 32 bytes / element size. n_begin is a multiple of 16; only
// columns [n_begin, n_end) of C are written; A is never read past K (W's padding may be read).
struct GemmTArgs {
  int64_t M = 0, N = 0, K = 0;
  const void* A = nullptr;  // [M, K] row-major, lda
  int64_t lda = 0;
  const void* W = nullptr;  // NZ storage of W [N, K]
  int64_t r1 = 0;           // ceil(N / 16)
  void* C = nullptr;        // [M, N] fp32 (float types) or int32 (int8), ldc
  int64_t ldc = 0;
  int64_t n_begin = 0, n_end = 0;
  void* scratch = nullptr;  // the caller's: gemm_scratch_bytes(kind, M, K, n_end - n_begin) bytes, 16-aligned
  const int32_t* a_rowsum = nullptr;  // int8 only, optional: as GemmArgs::a_rowsum
};
using GemmTFn = void (*)(const GemmTArgs&);
// out[m] = sum over k < K of A[m * lda + k] for m < M (int32, wrapping like the kernels' sums).
using S8RowSumFn = void (*)(const int8_t* A, int64_t lda, int64_t M, int64_t K, int32_t* out);

// Kernels allocate nothing: the scratch they need (widened or paired A blocks, row sums, folded
// sums) is the caller's, planned before the call writes any output (a failed allocation then
// leaves every output as it was; docs/reliability/guard_and_faults.md). The kind of a call:
enum class GemmKind { kBf16, kS8, kF16, kBf16T, kS8T, kF16T };
// Bytes of GemmArgs/GemmTArgs::scratch one call of `kind` needs in any row of the family, for at
// most M rows, depth K and at most n_cols columns in [n_begin, n_end); 0 if none, else a multiple of 64.
int64_t gemm_scratch_bytes(GemmKind kind, int64_t M, int64_t K, int64_t n_cols);
// A transposed kernel's scratch: int32 row sums [M] at its start, its block from the next 64-byte
// boundary on (the folded sums are 64-byte vectors; a workspace is only 16-aligned).
inline void* gemm_t_block(void* scratch, int64_t M) {
  const auto p = reinterpret_cast<uintptr_t>(scratch) + static_cast<uintptr_t>(M) * 4;
  return reinterpret_cast<void*>((p + 63) / 64 * 64);
}
// The loop of every ISA's s8_rowsum, compiled with that file's instruction set: internal linkage
// (static), so no file's copy stands in for another's.
static inline void s8_row_sums(const int8_t* A, int64_t lda, int64_t M, int64_t K, int32_t* out) {
  for (int64_t m = 0; m < M; ++m) {
    const int8_t* a = A + m * lda;
    int32_t s = 0;
    for (int64_t k = 0; k < K; ++k) s += a[k];
    out[m] = s;
  }
}

// The largest M the AVX-512 transposed kernels run on the W-streaming path (gemm_t_avx512.cpp).
inline constexpr int64_t kGemmTStreamMaxM = 8;

struct GemmKernels {
  GemmFn bf16;    // A bf16, B bf16 panels, C fp32
  GemmFn s8;      // A int8, B int8 (W = 32), C int32
  GemmFn f16;     // A fp16, B fp16 panels (W = 16), C fp32 (fp32 products of fp16 values)
  GemmTFn bf16_t; // A bf16, W^T bf16 NZ (c0 16), C fp32
  GemmTFn s8_t;   // A int8, W^T int8 NZ (c0 32), C int32 (exact)
  GemmTFn f16_t;  // A fp16, W^T fp16 NZ (c0 16), C fp32
  S8RowSumFn s8_rowsum;  // the row sums of an int8 A (GemmArgs / GemmTArgs::a_rowsum)
};

// The family "gemm" (gemm.cpp): rows gemm_avx512 (all six kernels AVX-512), gemm_avx512_vnni and
// gemm_avx512_f16 (for AVX-512 CPUs without AVX512_BF16, or without it and AVX512_VNNI: the
// AVX-512 kernels whose instructions they have, AVX2 for the rest), gemm_avx2, gemm_scalar.
const KernelTable<const GemmKernels*>& gemm_family();
// The set the family picks for the active level `isa` (counted as a use).
const GemmKernels& gemm_kernels(Isa isa);

// The kernel sets of gemm_<isa>.cpp, constant-initialised (listing them runs no ISA code).
extern const GemmKernels gemm_scalar;
#if defined(MLAOPS_ARCH_X86_64)
extern const GemmKernels gemm_avx2;
extern const GemmKernels gemm_avx512;
#endif

}  // namespace mlaops::kernels

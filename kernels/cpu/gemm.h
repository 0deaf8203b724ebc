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
};

using GemmFn = void (*)(const GemmArgs&);

struct GemmKernels {
  GemmFn bf16;  // A bf16, B bf16, C fp32
  GemmFn s8;    // A int8, B int8 (W = 32), C int32
  const char* name;
};

// The kernel set of an ISA level (falls back to the best lower level that exists).
const GemmKernels& gemm_kernels(Isa isa);

// Per-ISA tables (defined in gemm_<isa>.cpp).
const GemmKernels& gemm_kernels_scalar();
const GemmKernels& gemm_kernels_avx2();
const GemmKernels& gemm_kernels_avx512();

}  // namespace mlaops::kernels

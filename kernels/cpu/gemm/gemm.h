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
#include <initializer_list>

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

// The opening guard of every GEMM driver (GemmArgs or GemmTArgs; Acc: float or int32_t): the
// calls with nothing to multiply, no rows or no columns (nothing written) or K <= 0 (C's columns
// [n_begin, n_end) set to zero). True when g is one; the driver then returns.
template <class Acc, class Args>
inline bool gemm_trivial(const Args& g) {
  if (g.M <= 0 || g.n_end <= g.n_begin) return true;
  if (g.K > 0) return false;
  auto* C = static_cast<Acc*>(g.C);
  for (int64_t m = 0; m < g.M; ++m)
    for (int64_t n = g.n_begin; n < g.n_end; ++n) C[m * g.ldc + n] = Acc{0};
  return true;
}

// One ISA's kernels (the set of one gemm_<isa>.cpp file). The registry does not pick sets: each
// data type below is its own family, whose rows are these sets' members.
struct GemmKernels {
  GemmFn bf16;    // A bf16, B bf16 panels, C fp32
  GemmFn s8;      // A int8, B int8 (W = 32), C int32
  GemmFn f16;     // A fp16, B fp16 panels (W = 16), C fp32 (fp32 products of fp16 values)
  GemmTFn bf16_t; // A bf16, W^T bf16 NZ (c0 16), C fp32
  GemmTFn s8_t;   // A int8, W^T int8 NZ (c0 32), C int32 (exact)
  GemmTFn f16_t;  // A fp16, W^T fp16 NZ (c0 16), C fp32
  S8RowSumFn s8_rowsum;  // the row sums of an int8 A (GemmArgs / GemmTArgs::a_rowsum)
};

// ---- the GEMM rows, one family per data type (docs/runtime.md) ----
// A row of a GEMM family: its kernel and which calls it runs. can_run == nullptr: every call;
// else the row runs only the calls for which it returns true (the layout it was written for),
// and the next row (at the end the scalar one, which runs every call) takes the others. The
// row's KernelRowInfo::calls says the same in words.
template <class Args, class Fn>
struct GemmRowOf {
  Fn run = nullptr;
  bool (*can_run)(const Args&) = nullptr;
  bool runs(const Args& call) const { return can_run == nullptr || can_run(call); }
};
using GemmRow = GemmRowOf<GemmArgs, GemmFn>;
using GemmTRow = GemmRowOf<GemmTArgs, GemmTFn>;
using GemmFamily = KernelTable<GemmRow>;
using GemmTFamily = KernelTable<GemmTRow>;

// The families (gemm.cpp), each with rows <family>_avx512, <family>_avx2 (x86-64) and
// <family>_scalar, best first:
//   gemm_bf16 (AVX512_BF16; the SIMD rows run 16-column panels), gemm_s8 (AVX512_VNNI; the
//   AVX-512 row runs 32-column panels of 32-byte rows (FRACTAL_NZ), the AVX2 row 32-column
//   panels), gemm_f16 (16-column panels), gemm_bf16_t (AVX512_BF16), gemm_s8_t (AVX512_VNNI),
//   gemm_f16_t, and gemm_s8_rowsum (the row sums of an int8 A).
const GemmFamily& gemm_bf16_family();
const GemmFamily& gemm_s8_family();
const GemmFamily& gemm_f16_family();
const GemmTFamily& gemm_bf16_t_family();
const GemmTFamily& gemm_s8_t_family();
const GemmTFamily& gemm_f16_t_family();
const KernelTable<S8RowSumFn>& gemm_s8_rowsum_family();

// The row of `fam` for calls like `calls` (only the fields a row's can_run reads matter: the
// panel layout) at the active level `isa`: the first row the registry allows (KernelFamily::
// allowed) that runs every one of them, else the last row. gemm_pick also counts it as used and
// returns its kernel; a plan picks once for all its calls of one kind of work.
template <class Args, class Fn>
int gemm_select(const KernelTable<GemmRowOf<Args, Fn>>& fam, Isa isa, std::initializer_list<Args> calls) {
  return fam.select_where(isa, [&](int i) {
    for (const Args& c : calls)
      if (!fam.value(i).runs(c)) return false;
    return true;
  });
}
template <class Args, class Fn>
Fn gemm_pick(const KernelTable<GemmRowOf<Args, Fn>>& fam, Isa isa, std::initializer_list<Args> calls) {
  const int i = gemm_select(fam, isa, calls);
  fam.note_use(i);
  return fam.value(i).run;
}
// The row sums kernel of gemm_s8_rowsum_family() at `isa`, counted as used when `used` (a plan
// whose A operands are int8).
S8RowSumFn gemm_s8_rowsum(Isa isa, bool used);
// The panel layouts the rows are written for (FRACTAL_NZ bf16 / fp16: 16 columns, int8: 32), as
// calls for gemm_select / gemm_pick.
inline GemmArgs gemm_layout(int64_t panel_width, int64_t ldb) {
  GemmArgs g;
  g.panel_width = panel_width;
  g.ldb = ldb;
  return g;
}

// The kernel sets of gemm_<isa>.cpp, constant-initialised (listing them runs no ISA code). Their
// kernels run only the calls their rows' can_run accept; call them through the families.
extern const GemmKernels gemm_scalar;
#if defined(MLAOPS_ARCH_X86_64)
extern const GemmKernels gemm_avx2;
extern const GemmKernels gemm_avx512;
#endif

}  // namespace mlaops::kernels

// The absorbed W_UK product of MlaProlog and MlaPreprocess (q_nope @ W_UK[head], bf16 or fp16,
// ND [D, Hckv] per head or FRACTAL_NZ): both operators run it uk_rows tokens at a time so the
// fp32 block stays in L1 for the epilogue that follows, and copy an ND W_UK[head] into NZ panels
// first when the chunk has more than kMlaUkPackRows tokens (the panel GEMM then loads a row pair
// with one 64-byte load, and one copy serves every block; docs/performance.md).
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/checked_math.h"
#include "core/fractal_nz.h"
#include "kernels/cpu/gemm/gemm.h"

namespace mlaops {

inline constexpr int64_t kMlaUkRows = 16;     // tokens per W_UK product block
inline constexpr int64_t kMlaUkPackRows = 8;  // chunks longer than this copy an ND W_UK[head] into NZ

// Rows of the per-thread fp32 block for a chunk of `chunk` tokens.
inline int64_t mla_uk_rows(int64_t chunk) { return std::min(chunk, kMlaUkRows); }
// Bytes of the per-thread NZ copy of one head's W_UK (2-byte elements) for chunks of `chunk`
// tokens and W_UK in ND (`nd`): none when no chunk is long enough to use it.
inline int64_t mla_uk_nz_bytes(int64_t D, int64_t Hckv, int64_t chunk, bool nd) {
  return nd && chunk > kMlaUkPackRows ? round_up(D, 16) * round_up(Hckv, 16) * 2 : 0;
}

// B of the W_UK GEMM for one head and a chunk of tc tokens: the head's weights as given (ND:
// ldb = Hckv, 16-column panels; NZ: ldb = 16, panel_stride D1 * 16), or, for ND and
// tc > kMlaUkPackRows, their NZ copy in `nz` (mla_uk_nz_bytes). Sets B, ldb, panel_stride,
// panel_width, K = D, N = Hckv and the full column range of g.
inline void mla_uk_operand(const uint16_t* head, bool nd, int64_t nz_panel_stride, int64_t D, int64_t Hckv,
                           int64_t tc, void* nz, kernels::GemmArgs* g) {
  g->K = D;
  g->N = Hckv;
  g->n_begin = 0;
  g->n_end = Hckv;
  g->panel_width = 16;
  if (!nd) {
    g->B = head;
    g->ldb = 16;
    g->panel_stride = nz_panel_stride;
  } else if (tc > kMlaUkPackRows) {
    nd_to_nz(head, nz, D, Hckv, 2);
    g->B = nz;
    g->ldb = 16;
    g->panel_stride = round_up(D, 16) * 16;
  } else {
    g->B = head;
    g->ldb = Hckv;
    g->panel_stride = 16;
  }
}

// Runs g (the W_UK product: mla_uk_operand, lda = D, ldc and scratch set) on the tc rows of
// q_nope [tc, D] into qo, uk_rows rows at a time (all tc rows when tc <= kMlaUkPackRows: the
// weights are then used as given), and calls epilogue(r0, m) after the block of rows [r0, r0 + m),
// whose products are qo's first m rows.
template <class Epilogue>
void mla_uk_blocks(kernels::GemmFn fn, kernels::GemmArgs g, const uint16_t* qn, int64_t tc, int64_t uk_rows, float* qo,
                   Epilogue&& epilogue) {
  const int64_t rows = tc > kMlaUkPackRows ? uk_rows : tc;
  g.C = qo;
  for (int64_t r0 = 0; r0 < tc; r0 += rows) {
    g.M = std::min(rows, tc - r0);
    g.A = qn + r0 * g.K;
    fn(g);
    epilogue(r0, g.M);
  }
}

}  // namespace mlaops

// The compute tiles of the AVX-512 BF16 lane-major flash attention (attn_lanes.h has the
// layouts and the math, attn_lanes_avx512.cpp the item driver that calls these): S^T = K . QT
// and O^T = O^T * alpha + VB . PT register tiles, the online softmax of one tile per lane, and
// the final O^T -> O transpose. Compiled with the AVX-512 flags (attn_lanes_tiles_avx512.cpp);
// the driver picks tile functions by shape and variant through s_fn / pv_fn / softmax_fn.
#pragma once

#include <cstdint>

namespace mlaops::kernels::lanes {

// ------------------------------------------------------------------ S^T = K . QT

struct SArgs {
  const uint32_t* qt;            // group block at pair 0: [pairs][MV * 16]
  const uint16_t* const* rows0;  // NK key rows of segment 0 (kl0 channel pairs)
  const uint16_t* const* rows1;  // NK key rows of segment 1 (kl1 pairs, QT continues)
  int64_t kl0, kl1;
  float* st;                     // ST + key0 * mp + v0 * 16
  int64_t mp;
  // Rows whose segment bytes (kl0 / kl1 pairs) are prefetched into L2 during the tile (s_fn's
  // prefetch variant; null: none)
  const uint16_t* const* pf0 = nullptr;
  const uint16_t* const* pf1 = nullptr;
  int64_t pfn = 0;
  int64_t pf_bytes0 = 0;  // bytes from each pf0 pointer (0: the segment's, kl0 * 4)
};

// ------------------------------------------------------------------ O^T = O^T * alpha + VB . PT

struct PvArgs {
  const uint32_t* pt;   // group block: [kl][MV * 16]
  const uint32_t* vb;   // VB + d0: [kl][dvp]
  int64_t dvp, kl;
  float* ot;            // OT + d0 * mp + v0 * 16
  int64_t mp;
  const float* alpha;   // Alpha + v0 * 16
};

// Register tiles per group width MV (1..4): NK keys (S) or ND channels (P x V), <= 24
// accumulators. S keeps NK <= 8: more key rows spill their pointers (measured: 1 x 16 and
// 2 x 12 run at 80-91 % of the vdpbf16ps rate, 1 x 8 / 2 x 8 / 4 x 6 at 97-99 %, in L1).
constexpr int kKeys[4] = {8, 8, 8, 6};
constexpr int kChannels[4] = {16, 12, 8, 6};

using STileFn = void (*)(const SArgs&);
using PvTileFn = void (*)(const PvArgs&);

// The S^T tile of mv row vectors (1..4) x nk keys (1..kKeys[mv - 1]); prefetch: the variant that
// prefetches SArgs::pf0 / pf1 inside its loop.
STileFn s_fn(int64_t mv, int64_t nk, bool prefetch);
// The P x V tile of mv row vectors (1..4) x nd channels (1..kChannels[mv - 1]).
PvTileFn pv_fn(int64_t mv, int64_t nd);

// ------------------------------------------------------------------ online softmax per lane

struct SoftmaxArgs {
  float* st;              // [nb][mp] scores, scaled in place
  int64_t mp, nv, nb, kpn;
  const uint16_t* lm;     // lane masks [nb][nv], null: every lane valid at every position
  float scale;
  float *mx, *l, *alpha;  // [mp]
  uint32_t* pt;           // PT
  int64_t kpv;            // pairs per PT group row block (group block = v0 * 16 * kpv)
  const float* bt;        // [nb][mp] additive bias (kBias)
};

using SoftmaxFn = void (*)(const SoftmaxArgs&);
// The softmax of one tile: masked (lane masks lm), bias (s = scale * s + bias), fp16 (P stored as
// the exact split [hi; hi; lo]).
SoftmaxFn softmax_fn(bool masked, bool bias, bool fp16);

// ------------------------------------------------------------------ O^T -> O rows

// O [M][dvp] (rows m < M) from O^T [dvp][mp].
void transpose_out(const float* OT, int64_t mp, int64_t M, int64_t dvp, float* O);

}  // namespace mlaops::kernels::lanes

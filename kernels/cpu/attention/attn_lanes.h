// Lane-major flash attention (AVX-512 BF16, kernels/cpu/attention/attn_lanes_avx512.cpp): the M = G * R
// query rows of a work item are the 16 lanes of zmm vectors ("row vectors", M padded to Mp, a
// multiple of 16), so that neither K nor the scores are ever transposed:
//
//   S^T[key][m]  = sum_kp  K[key][2kp, 2kp+1] . QT[kp][m]       K pair broadcast from the key
//                                                               row in place, QT = Q^T in pairs
//   softmax      per lane: the running max / sum are vectors, alpha is a vector
//   PT[kp][m]    = (P[m][2kp], P[m][2kp+1]) bf16 pair           (P rounded to bf16 as the NPU)
//   VB[kp][d]    = (V[2kp][d], V[2kp+1][d]) bf16 pair           two V rows interleaved once per tile
//   O^T[d][m]    = O^T[d][m] * alpha[m] + sum_kp VB[kp][d] . PT[kp][m]
//
// FP16 operands are split exactly into bf16 hi + lo (x = hi + lo) as in the panel path: K rows
// [hi | lo | hi | lo] against QT [hi | hi | lo | lo] (every product: exact FP16 scores); VB
// segments [hi; lo; hi] against PT [hi; hi; lo] (P is fp32, hi + lo approximates it).
// The item's setup (QT) and its final rows (O / l, lse) are written by attn_panel.cpp.
//
// Layouts inside the scratch (dwords = bf16 pairs, floats fp32, all 64-byte aligned):
//   QT  group block g (vectors [v0, v0 + mv)) at v0 * 16 * kpq: [kpq][mv * 16]
//   PT  group block g at v0 * 16 * kpv: [sp * kpn][mv * 16]        (kpn = key pairs of the tile)
//   ST  [tile][Mp] floats;  VB [sp * kpn][dvp];  OT [dvp][Mp];  O [M][dvp] (final rows)
//   BT  [tile][Mp] floats: the additive bias of the tile (items with a bias only)
// The row vectors are processed in groups of at most 4 (register blocking of the kernels).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/attention/attn_panel.h"

namespace mlaops::kernels::lanes {

// FP16 operands split into exact BF16 parts multiply as [hi | hi | lo (| lo)] against
// [hi | lo | hi (| lo)]: the segment of hi parts that meets the other operand's lo parts gets 0 for an infinite hi (hi x hi
// already carries it; lo x inf would be NaN where lo is 0, docs/reliability/numerics.md). Bits
// of finite and NaN values are copied as they are.
// Segments per operand with FP16 operands (1 with BF16): Q x K^T forms all four products of the
// parts (exact FP16 products, as on the NPU); P x V three (P is fp32, its hi + lo approximates it).
constexpr int64_t kFp16QkSplit = 4;
constexpr int64_t kFp16PvSplit = 3;

inline uint16_t hi_for_lo(uint16_t hi) { return (hi & 0x7FFF) == 0x7F80 ? uint16_t{0} : hi; }
inline void copy_hi_for_lo(const uint16_t* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = hi_for_lo(src[i]);
}

constexpr int64_t kTile = 128;     // KV positions per tile
constexpr int64_t kMinRows = 16;   // items with fewer rows take the panel path
constexpr int64_t kMaxGroup = 4;   // row vectors per group
constexpr int64_t kMaxGroupItems = 8;  // items of adjacent heads run together (run_group_avx512)

struct Geo {
  int64_t Mp = 0;   // max rows of an item, rounded up to 16
  int64_t sp = 1;   // P x V segments: 1 (bf16) or kFp16PvSplit (fp16 hi/lo)
  int64_t kseg = 0; // QD + DR rounded up to 32
  int64_t kq = 0;   // Q x K^T segments (1, or kFp16QkSplit) * kseg channels of a (packed) key row
  int64_t kpq = 0;  // kq / 2 pairs
  int64_t kpv = 0;  // sp * kTile / 2 pairs of the P x V reduction
  int64_t dvp = 0;  // VD rounded up to 16
  int64_t off_qt = 0, off_kb = 0, off_st = 0, off_pt = 0, off_vb = 0, off_ot = 0, off_o = 0;
  int64_t off_m = 0, off_l = 0, off_alpha = 0, off_lm = 0, off_vt = 0, off_bits = 0, off_bt = 0, total = 0;
  int64_t copy_rows = 0, off_copy = 0;  // dense copy chunk (FlashShape::copy_rows): [rows][QD + DR + VD] bf16
};

// Group g of the nv row vectors: [*v0, *v0 + *mv), sizes balanced, at most kMaxGroup each.
// (Internal linkage: each file compiles its own copy with its own ISA flags.)
namespace {

inline int64_t group_count(int64_t nv) { return (nv + kMaxGroup - 1) / kMaxGroup; }

inline void group_of(int64_t nv, int64_t g, int64_t* v0, int64_t* mv) {
  const int64_t ng = group_count(nv), base = nv / ng, extra = nv % ng;
  *v0 = g * base + std::min(g, extra);
  *mv = base + (g < extra ? 1 : 0);
}

inline Geo geometry(const FlashShape& s) {
  constexpr int64_t kAlign = 64;
  auto ru = [](int64_t a, int64_t b) { return (a + b - 1) / b * b; };
  Geo g;
  g.Mp = ru(std::max<int64_t>(s.M, 1), 16);
  g.sp = s.fp16 ? kFp16PvSplit : 1;
  g.kseg = ru(s.QD + s.DR, 32);
  g.kq = (s.fp16 ? kFp16QkSplit : 1) * g.kseg;
  g.kpq = g.kq / 2;
  g.kpv = g.sp * kTile / 2;
  g.dvp = ru(std::max<int64_t>(s.VD, 1), 16);
  int64_t off = 0;
  auto take = [&](int64_t bytes) {
    const int64_t o = off;
    off = ru(off + bytes, kAlign);
    return o;
  };
  g.off_qt = take(g.kpq * g.Mp * 4);
  g.off_kb = take(kTile * g.kq * 2);
  g.off_st = take(kTile * g.Mp * 4);
  g.off_pt = take(g.kpv * g.Mp * 4);
  g.off_vb = take(g.kpv * g.dvp * 4);
  g.off_ot = take(g.dvp * g.Mp * 4);
  g.off_o = take(g.Mp * g.dvp * 4);
  g.off_m = take(g.Mp * 4);
  g.off_l = take(g.Mp * 4);
  g.off_alpha = take(g.Mp * 4);
  g.off_lm = take(kTile * (g.Mp / 16) * 2);
  g.off_vt = take(4 * g.dvp * 2);
  g.off_bits = take(std::max<int64_t>(s.R, 1) * 2 * 8);
  g.off_bt = take(s.bias ? kTile * g.Mp * 4 : 0);
  g.copy_rows = s.fp16 ? 0 : s.copy_rows;
  g.off_copy = take(g.copy_rows * (s.QD + s.DR + s.VD) * 2);
  g.total = off;
  return g;
}

}  // namespace

// Runs the KV tiles of `it` (M = it.G * it.R >= kMinRows rows) with QT already in the scratch:
// leaves O [M][dvp] (unnormalised), the running max Mx [M] and sum L [M] at their offsets.
void run_avx512(const FlashItem& it, const Geo& geo, char* scratch);

// Runs n items (2..kMaxGroupItems, QT in each bases[i]) that read adjacent heads of the same KV rows
// through the dense copy (head i's rows = head 0's + i * D; same shape, KV range, query rows and
// masks): chunk by chunk, the heads' rows are copied together, then each item's tiles run. Leaves
// what run_avx512 leaves in each scratch. Returns false, having done nothing, when the items do
// not qualify.
bool run_group_avx512(const FlashItem* items, int64_t n, const Geo& geo, char* const* bases);

}  // namespace mlaops::kernels::lanes

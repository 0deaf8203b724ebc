// Flash attention work items (see attn_panel.h). The panel path, per KV block of `tile` positions:
//   1. mask tile [R, tile] (shared by the G heads); a block with no valid position is skipped
//   2. pack K^T (nope + rope, fp16: hi/lo split) into 16-column panels  [Kq, tile]
//   3. S[M, tile] = A[M, Kq] x K^T panels        (bf16 panel GEMM, fp32 accumulation)
//   4. online softmax per row: m_new, alpha = exp(m_old - m_new), P = exp(s*scale - m_new) -> bf16
//   5. pack V rows [tile, Dvp] (fp16: hi/lo), PV[M, Dvp] = P x V; O = O * alpha + PV
// Finally the combine step (attn_combine.h) writes the rows.
//
// The lane path (items with >= 16 query rows, attn_lanes.h, AVX-512 BF16): this file builds
// its Q^T pairs and hands its state to the combine step.
#include "kernels/cpu/attention/attn_panel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/attention/attn_combine.h"
#include "kernels/cpu/attention/attn_fp16_softmax.h"
#include "kernels/cpu/attention/attn_variant.h"
#include "kernels/cpu/attention/attn_lanes.h"
#include "mlaops/numeric.h"

namespace mlaops::kernels {
namespace {

constexpr int64_t kAlign = 64;
constexpr int64_t ru(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

struct Geo {
  int64_t sp;    // P x V segments: 1 (bf16) or lanes::kFp16PvSplit (fp16 hi/lo)
  int64_t kseg;  // QD + DR rounded up to 32
  int64_t kq;    // Q x K^T segments (1, or lanes::kFp16QkSplit) * kseg
  int64_t dvp;   // VD rounded up to 16
  int64_t tile;
  int64_t off_a, off_k, off_s, off_p, off_v, off_pv, off_o, off_m, off_l, off_alpha, off_mask, off_gemm, total;
};

Geo geometry(const FlashShape& s) {
  Geo g;
  g.sp = s.fp16 ? lanes::kFp16PvSplit : 1;
  g.kseg = ru(s.QD + s.DR, 32);
  g.kq = (s.fp16 ? lanes::kFp16QkSplit : 1) * g.kseg;
  g.dvp = ru(std::max<int64_t>(s.VD, 1), 16);
  g.tile = s.tile;
  int64_t off = 0;
  auto take = [&](int64_t bytes) {
    const int64_t o = off;
    off = ru(off + bytes, kAlign);
    return o;
  };
  g.off_a = take(s.M * g.kq * 2);
  g.off_k = take(g.kq * g.tile * 2);
  g.off_s = take(s.M * g.tile * 4);
  g.off_p = take(s.M * g.sp * g.tile * 2);
  g.off_v = take(g.sp * g.tile * g.dvp * 2);
  g.off_pv = take(s.M * g.dvp * 4);
  g.off_o = take(s.M * g.dvp * 4);
  g.off_m = take(s.M * 4);
  g.off_l = take(s.M * 4);
  g.off_alpha = take(s.M * 4);
  g.off_mask = take(s.R * g.tile);
  // the GEMM rows' scratch (kernels/cpu/gemm/gemm.h): the FP16 gemm widens its A block to fp32; K is at
  // most kq (S = A x K^T) or sp * tile (P x V); the bf16 gemm needs none
  g.off_gemm = take(s.fp16 ? gemm_scratch_bytes(GemmKind::kF16, s.M, std::max(g.kq, g.sp * g.tile), 0) : 0);
  g.total = off;
  return g;
}

// hi + lo == x exactly for an FP16 value x (11 significant bits <= 8 + 8).
inline void split_bf16(float x, uint16_t* hi, uint16_t* lo) {
  *hi = float_to_bf16(x);
  const float h = bf16_to_float(*hi);
  *lo = float_to_bf16(std::isinf(h) ? 0.0f : x - h);  // +-inf: hi carries it (inf - inf would be NaN)
}

inline const uint16_t* kv_row(const FlashKv& kv, int64_t p) { return kv.base + kv.row(p); }

// Element policies of the panel path: how FP16 / BF16 operands reach the bf16 GEMM.
//   kQSplit bf16 segments of Q and K^T: 1 (BF16), 4 (FP16 as hi / lo: [hi | hi | lo | lo] against
//           [hi | lo | hi | lo], every product of the parts, so each score is the fp32 sum of
//           exact FP16 products as on the NPU)
//   kSplit  bf16 segments of P and V: 1 (BF16), 3 (FP16: P's [hi | hi | lo] against V's
//           [hi | lo | hi]; P is an fp32 value, its hi + lo already an approximation)
//   value   an element as float
//   gather  channels [0, D) of one row into dst[d * stride] (FP16: hi parts, lo parts into lo)
struct Bf16Elem {
  static constexpr int64_t kQSplit = 1;
  static constexpr int64_t kSplit = 1;
  static constexpr bool kF16Gemm = false;  // true: the FP16 gemm row (Fp16RawElem)
  static float value(uint16_t b) { return bf16_to_float(b); }
  static void gather(const FlashKv& kv, const uint16_t* row, int64_t D, uint16_t* dst, uint16_t* /*lo*/,
                     int64_t stride) {
    for (int64_t d0 = 0; d0 < D; d0 += kv.c0) {
      const uint16_t* src = row + (d0 / kv.c0) * kv.c0_stride;
      const int64_t n = std::min(kv.c0, D - d0);
      for (int64_t d = 0; d < n; ++d) dst[(d0 + d) * stride] = src[d];
    }
  }
};
struct Fp16Elem {
  static constexpr int64_t kQSplit = lanes::kFp16QkSplit;
  static constexpr int64_t kSplit = lanes::kFp16PvSplit;
  static constexpr bool kF16Gemm = false;
  static float value(uint16_t b) { return fp16_to_float(b); }
  static void gather(const FlashKv& kv, const uint16_t* row, int64_t D, uint16_t* dst, uint16_t* lo, int64_t stride) {
    for (int64_t d0 = 0; d0 < D; d0 += kv.c0) {
      const uint16_t* src = row + (d0 / kv.c0) * kv.c0_stride;
      const int64_t n = std::min(kv.c0, D - d0);
      for (int64_t d = 0; d < n; ++d) split_bf16(fp16_to_float(src[d]), &dst[(d0 + d) * stride], &lo[(d0 + d) * stride]);
    }
  }
};

// FP16 operands as they are, for the FP16 gemm rows (exact products, fp32 sums): the FP16
// high-performance softmax (attn_fp16_softmax.h), whose FP16 roundings need the scores and P x V
// to fp32 accuracy and P as its FP16 value (the split approximates P x V).
struct Fp16RawElem : Bf16Elem {
  static constexpr bool kF16Gemm = true;
  static float value(uint16_t b) { return fp16_to_float(b); }
};

inline void prefetch_row(const FlashKv& kv, const uint16_t* row, int64_t D) {
  for (int64_t d0 = 0; d0 < D; d0 += kv.c0) {
    const char* src = reinterpret_cast<const char*>(row + (d0 / kv.c0) * kv.c0_stride);
    const int64_t bytes = std::min(kv.c0, D - d0) * 2;
    for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(src + b);
  }
}

// bf16 K^T panels for up to 16 keys starting at position p0 (n valid): channel d of key kk goes
// to panel[d * 16 + kk] for d in [0, D), whole 16-channel chunks through the 16 x 16 transpose
// kernel, a channel tail (D % 16) and missing keys element by element.
void pack_keys_bf16(const FlashKv& kv, int64_t p0, int64_t n, int64_t D, Transpose16Fn transpose, uint16_t* panel) {
  static const uint16_t kZeros[16] = {};
  const uint16_t* rows[16];
  for (int64_t kk = 0; kk < 16; ++kk) rows[kk] = kk < n ? kv_row(kv, p0 + kk) : nullptr;
  int64_t d0 = 0;
  const bool chunked = kv.c0 % 16 == 0;  // a 16-channel chunk never straddles two c0 chunks
  for (; chunked && d0 + 16 <= D; d0 += 16) {
    const uint16_t* src[16];
    for (int64_t kk = 0; kk < 16; ++kk)
      src[kk] = rows[kk] ? rows[kk] + (d0 / kv.c0) * kv.c0_stride + d0 % kv.c0 : kZeros;
    transpose(src, panel + d0 * 16);
  }
  for (; d0 < D; ++d0)
    for (int64_t kk = 0; kk < 16; ++kk)
      panel[d0 * 16 + kk] = rows[kk] ? rows[kk][(d0 / kv.c0) * kv.c0_stride + d0 % kv.c0] : uint16_t{0};
}

}  // namespace

int64_t flash_scratch_bytes(const FlashShape& s) {
  // lanes: + 64 to align the base (the workspace may be only 32-byte aligned)
  return s.M >= lanes::kMinRows ? std::max(geometry(s).total, lanes::geometry(s).total + 64) : geometry(s).total;
}

FlashKernels flash_kernels(Isa isa) {
  const GemmArgs panels = gemm_layout(16, 16);  // the rows' condition is the panel width (gemm.cpp)
  return FlashKernels{gemm_pick(gemm_bf16_family(), isa, {panels}), gemm_pick(gemm_f16_family(), isa, {panels}),
                      &softmax_kernels(isa), &convert_kernels(isa), transpose16_kernel(isa)};
}

namespace {

// Query row (g, r) as [q | qrope] bf16 into a[0, QD + DR) (fp16: the exact split x = hi + lo as
// [hi | hi | lo | lo], segments kseg apart); the caller has zeroed the padding.
void query_row(const FlashItem& it, int64_t g, int64_t r, int64_t kseg, uint16_t* a) {
  const int64_t QD = it.QD, DR = it.DR;
  const uint16_t* q = it.q + g * it.q_n_stride + r * it.q_s_stride;
  const uint16_t* qr = DR > 0 ? it.qr + g * it.qr_n_stride + r * it.qr_s_stride : nullptr;
  for (int64_t d = 0; d < QD + DR; ++d) {
    const uint16_t bits = d < QD ? q[d] : qr[d - QD];
    if (!it.fp16 || it.fp16_softmax) {  // BF16, or FP16 bits for the FP16 gemm (Fp16RawElem)
      a[d] = bits;
    } else {
      uint16_t hi, lo;
      split_bf16(fp16_to_float(bits), &hi, &lo);
      a[d] = hi;
      a[kseg + d] = hi;
      a[2 * kseg + d] = lo;
      a[3 * kseg + d] = lo;
    }
  }
}

// Lane-major item setup: QT pairs [kp][m] (group blocks, attn_lanes.h) from the query rows
// [q | qrope | 0] (fp16: [hi | hi | lo | lo]) into the item's scratch `base` (64-byte aligned).
void lanes_setup(const FlashItem& it, const lanes::Geo& geo, char* base) {
  const int64_t M = it.G * it.R, nv = (M + 15) / 16, kq = geo.kq, kseg = geo.kseg, kpq = geo.kpq;
  auto* QT = reinterpret_cast<uint32_t*>(base + geo.off_qt);
  auto* a = reinterpret_cast<uint16_t*>(base + geo.off_kb);  // one query row, [kq]
  std::memset(QT, 0, static_cast<size_t>(kpq * nv * 16) * 4);
  for (int64_t m = 0; m < M; ++m) {
    std::memset(a, 0, static_cast<size_t>(kq) * 2);
    query_row(it, m / it.R, m % it.R, kseg, a);
    const int64_t v = m / 16;
    int64_t g0 = 0, v0 = 0, mv = 0;
    for (;; ++g0) {
      lanes::group_of(nv, g0, &v0, &mv);
      if (v < v0 + mv) break;
    }
    uint32_t* dst = QT + v0 * 16 * kpq + (v - v0) * 16 + m % 16;
    for (int64_t kp = 0; kp < kpq; ++kp)
      dst[kp * mv * 16] = static_cast<uint32_t>(a[2 * kp]) | static_cast<uint32_t>(a[2 * kp + 1]) << 16;
  }
}

// The item's final rows from what the lane kernel left in `base`.
void lanes_finish(const FlashItem& it, const lanes::Geo& geo, const char* base) {
  attn_finish(it, reinterpret_cast<const float*>(base + geo.off_o), geo.dvp,
              reinterpret_cast<const float*>(base + geo.off_m), reinterpret_cast<const float*>(base + geo.off_l));
}

char* align64(void* p) {
  char* c = static_cast<char*>(p);
  return c + ((64 - reinterpret_cast<uintptr_t>(c) % 64) % 64);
}

int64_t lanes_stride(const lanes::Geo& geo) { return (geo.total + 63) / 64 * 64; }

}  // namespace

int64_t flash_group_max_items(const FlashShape& s) {
  return s.M >= lanes::kMinRows && s.copy_rows > 0 && !s.fp16 ? lanes::kMaxGroupItems : 1;
}

int64_t flash_group_scratch_bytes(const FlashShape& s, int64_t n) {
  if (n <= 1) return flash_scratch_bytes(s);
  return std::max(flash_scratch_bytes(s), n * lanes_stride(lanes::geometry(s)) + 64);
}

bool flash_attn_lanes_group(const FlashItem* items, int64_t n, const FlashShape& shape, FlashLanesGroupFn fn,
                            void* scratch) {
  if (n < 2 || n > flash_group_max_items(shape)) return false;
  for (int64_t i = 0; i < n; ++i)
    if (items[i].G * items[i].R < lanes::kMinRows) return false;
  const lanes::Geo geo = lanes::geometry(shape);
  char* bases[lanes::kMaxGroupItems];
  for (int64_t i = 0; i < n; ++i) {
    bases[i] = align64(scratch) + i * lanes_stride(geo);
    lanes_setup(items[i], geo, bases[i]);
  }
  if (!fn(items, n, geo, bases)) return false;
  for (int64_t i = 0; i < n; ++i) lanes_finish(items[i], geo, bases[i]);
  return true;
}

void flash_attn_lanes(const FlashItem& it, const FlashShape& shape, FlashLanesFn fn, void* scratch) {
  const lanes::Geo geo = lanes::geometry(shape);
  char* base = align64(scratch);
  lanes_setup(it, geo, base);
  fn(it, geo, base);
  lanes_finish(it, geo, base);
}

namespace {

// K^T panels of positions [j0, j0 + nb) (nbc = nb rounded up to 16): column c, row k (channel);
// FP16: rows [hi | lo | hi | lo].
template <class E>
void pack_keys(const FlashItem& it, int64_t j0, int64_t nb, int64_t nbc, int64_t kq, int64_t kseg,
               Transpose16Fn transpose16, uint16_t* KP) {
  const int64_t QD = it.QD, DR = it.DR;
  if constexpr (E::kSplit == 1) {
    for (int64_t c = 0; c < nbc; c += 16) {
      uint16_t* panel = KP + (c / 16) * kq * 16;
      const int64_t n = std::min<int64_t>(16, nb - c);
      pack_keys_bf16(it.k, j0 + c, n, QD, transpose16, panel);
      if (DR > 0) pack_keys_bf16(it.kr, j0 + c, n, DR, transpose16, panel + QD * 16);
      std::memset(panel + (QD + DR) * 16, 0, static_cast<size_t>((kq - QD - DR) * 16 * 2));
    }
  } else {
    std::memset(KP, 0, static_cast<size_t>(kq * nbc * 2));
    for (int64_t c = 0; c < nb; ++c) {
      uint16_t* col = KP + (c / 16) * kq * 16 + (c % 16);
      const int64_t p = j0 + c;
      E::gather(it.k, kv_row(it.k, p), QD, col, col + kseg * 16, 16);
      if (DR > 0) E::gather(it.kr, kv_row(it.kr, p), DR, col + QD * 16, col + (kseg + QD) * 16, 16);
      for (int64_t d = 0; d < QD + DR; ++d) {
        col[(2 * kseg + d) * 16] = lanes::hi_for_lo(col[d * 16]);  // third = hi (meets the query's lo)
        col[(3 * kseg + d) * 16] = col[(kseg + d) * 16];           // fourth = lo
      }
    }
  }
}

// S[m][c] = scale * S[m][c] + bias of row m at position j0 + c (the scale is then 1).
template <class E>
void add_bias(const FlashItem& it, int64_t j0, int64_t nb, float* S, int64_t lds) {
  for (int64_t m = 0; m < it.G * it.R; ++m) {
    const uint16_t* b = attn_bias_row(it, m / it.R, it.row0 + m % it.R) + j0;
    float* s = S + m * lds;
    for (int64_t c = 0; c < nb; ++c) s[c] = attn_biased(it, s[c], E::value(b[c]));
  }
}

// P of one row for P x V (rows [sp * tile]): BF16 P (rounded as the NPU does); FP16: the exact
// split [hi; hi; lo] of the valid positions.
template <class E>
void store_p(const float* e, const uint8_t* mt, int64_t nb, int64_t tile, const ConvertKernels& cv, uint16_t* pr) {
  const int64_t pld = E::kSplit * tile;
  if constexpr (E::kF16Gemm) {  // P = fp16(e) (attn_fp16_softmax.h)
    for (int64_t c = 0; c < nb; ++c) pr[c] = mt[c] ? float_to_fp16(e[c]) : uint16_t{0};
    std::memset(pr + nb, 0, static_cast<size_t>((pld - nb) * 2));
  } else if constexpr (E::kSplit == 1) {
    cv.f32_to_bf16(e, pr, nb);
    std::memset(pr + nb, 0, static_cast<size_t>((pld - nb) * 2));
  } else {
    std::memset(pr, 0, static_cast<size_t>(pld * 2));
    for (int64_t c = 0; c < nb; ++c) {
      uint16_t hi = 0, lo = 0;
      if (mt[c]) split_bf16(e[c], &hi, &lo);
      pr[c] = hi;
      pr[tile + c] = lo;
      pr[2 * tile + c] = hi;
    }
  }
}

template <class E, class Mask, bool kBias>
void panel_item(const FlashItem& it, const FlashShape& shape, const FlashKernels& kern, void* scratch) {
  const Geo geo = geometry(shape);
  char* base = static_cast<char*>(scratch);
  uint16_t* A = reinterpret_cast<uint16_t*>(base + geo.off_a);   // [M, kq]
  uint16_t* KP = reinterpret_cast<uint16_t*>(base + geo.off_k);  // panels: [tile/16][kq][16]
  float* S = reinterpret_cast<float*>(base + geo.off_s);         // [M, tile]
  uint16_t* P = reinterpret_cast<uint16_t*>(base + geo.off_p);   // [M, sp * tile]
  uint16_t* VP = reinterpret_cast<uint16_t*>(base + geo.off_v);  // [sp * tile, dvp]
  float* PV = reinterpret_cast<float*>(base + geo.off_pv);       // [M, dvp]
  float* O = reinterpret_cast<float*>(base + geo.off_o);         // [M, dvp]
  float* Mx = reinterpret_cast<float*>(base + geo.off_m);        // [M]
  float* L = reinterpret_cast<float*>(base + geo.off_l);         // [M]
  float* Alpha = reinterpret_cast<float*>(base + geo.off_alpha); // [M]
  uint8_t* MT = reinterpret_cast<uint8_t*>(base + geo.off_mask); // [R, tile] 1 = valid
  void* const gemm_scratch = base + geo.off_gemm;
  constexpr int64_t sp = E::kSplit;
  const int64_t M = it.G * it.R, R = it.R, tile = geo.tile, kq = E::kQSplit * geo.kseg, kseg = geo.kseg;
  const int64_t dvp = geo.dvp, QD = it.QD, VD = it.VD;
  const float ninf = -std::numeric_limits<float>::infinity();
  const bool h16 = it.fp16_softmax;  // FP16 softmax emulation (attn_fp16_softmax.h): S rounded below
  const float scale = kBias || h16 ? 1.0f : it.scale;  // with a bias, add_bias scales
  const float scale_h = round_fp16(it.scale);

  // Query tile A: row m = g * R + r: [q | qrope | 0 pad] (fp16: [hi | hi | lo | lo]).
  std::memset(A, 0, static_cast<size_t>(M * kq * 2));
  for (int64_t g = 0; g < it.G; ++g)
    for (int64_t r = 0; r < R; ++r) query_row(it, g, r, kseg, A + (g * R + r) * kq);
  std::memset(O, 0, static_cast<size_t>(M * dvp * 4));
  for (int64_t m = 0; m < M; ++m) {
    Mx[m] = ninf;
    L[m] = 0.0f;
  }

  for (int64_t j0 = it.kv_begin; j0 < it.kv_end; j0 += tile) {
    const int64_t nb = std::min(tile, it.kv_end - j0);
    const int64_t nbc = ru(nb, 16);
    // 1. mask tile
    if (!attn_tile_valid<Mask>(it, j0, nb, tile, MT)) continue;
    // Prefetch the next block's K / V rows (the gathers below are the DRAM-bound part of decode).
    for (int64_t c = 0, nn = std::min(tile, it.kv_end - j0 - nb); c < nn; ++c) {
      prefetch_row(it.k, kv_row(it.k, j0 + nb + c), QD);
      if (it.v.base != it.k.base || it.v.slot_stride != it.k.slot_stride)
        prefetch_row(it.v, kv_row(it.v, j0 + nb + c), VD);
    }
    // 2. K^T panels
    pack_keys<E>(it, j0, nb, nbc, kq, kseg, kern.transpose16, KP);
    // 3. S = A x K^T (+ bias)
    GemmArgs g1;
    g1.M = M;
    g1.N = nbc;
    g1.K = kq;
    g1.A = A;
    g1.lda = kq;
    g1.B = KP;
    g1.ldb = 16;
    g1.panel_stride = kq * 16;
    g1.panel_width = 16;
    g1.C = S;
    g1.ldc = tile;
    g1.n_begin = 0;
    g1.n_end = nbc;
    g1.scratch = gemm_scratch;
    (E::kF16Gemm ? kern.gemm_f16 : kern.gemm_bf16)(g1);
    if constexpr (kBias) add_bias<E>(it, j0, nb, S, tile);
    for (int64_t m = 0; h16 && m < M; ++m)
      for (int64_t c = 0; c < nb; ++c) S[m * tile + c] = fp16_softmax_score(S[m * tile + c], scale_h);
    // 4. online softmax (SIMD scale/max and exp; the exp values overwrite the scores)
    const int64_t pld = sp * tile;
    for (int64_t m = 0; m < M; ++m) {
      const uint8_t* mt = MT + (m % R) * tile;
      float* s = S + m * tile;
      uint16_t* pr = P + m * pld;
      const float rmax = kern.softmax->scale_max(s, mt, nb, scale);
      if (rmax == ninf) {  // no valid position in this block for this row, or all its scores -inf
        std::memset(pr, 0, static_cast<size_t>(pld * 2));
        Alpha[m] = 1.0f;
        // valid positions, all -inf, nothing finite before: the all -inf state (attn_combine.h)
        if (Mx[m] == ninf && std::memchr(mt, 1, static_cast<size_t>(nb)) != nullptr) L[m] = kAllNegInfL;
        continue;
      }
      const float mnew = std::max(Mx[m], rmax);
      Alpha[m] = Mx[m] == ninf ? 0.0f : std::exp(Mx[m] - mnew);
      // the fp32 sum keeps the lse fp32-accurate; P*V uses P rounded to bf16 as the NPU does
      const float sum = kern.softmax->exp_sum(s, mt, nb, mnew, s);
      store_p<E>(s, mt, nb, tile, *kern.convert, pr);
      L[m] = L[m] * Alpha[m] + sum;
      Mx[m] = mnew;
    }
    // 5. PV[M, VD] = P x V. bf16 rows with a constant stride inside this block (contiguous KV, or
    //    a tile inside one cache block, channels contiguous): read V in place as ND panels.
    //    Otherwise pack V rows [sp * tile, dvp] (fp16: [hi; hi; lo]; pad rows / columns zero).
    const bool v_in_place = sp == 1 && !E::kF16Gemm && it.v.c0 >= VD &&  // ND B: the bf16 gemm only
                            (it.v.block_ids == nullptr || (j0 % it.v.block_size) + nb <= it.v.block_size);
    GemmArgs g2;
    g2.M = M;
    g2.A = P;
    g2.lda = pld;
    g2.panel_width = 16;
    g2.C = PV;
    g2.ldc = dvp;
    g2.n_begin = 0;
    g2.scratch = gemm_scratch;
    if (v_in_place) {
      g2.N = VD;
      g2.K = nb;
      g2.B = kv_row(it.v, j0);
      g2.ldb = it.v.slot_stride;
      g2.panel_stride = 16;
      g2.n_end = VD;
    } else {
      std::memset(VP, 0, static_cast<size_t>(sp * tile * dvp * 2));
      for (int64_t c = 0; c < nb; ++c) {
        uint16_t* row = VP + c * dvp;
        E::gather(it.v, kv_row(it.v, j0 + c), VD, row, row + 2 * tile * dvp, 1);
        if constexpr (sp == 3) lanes::copy_hi_for_lo(row, row + tile * dvp, VD);  // meets P's lo
      }
      g2.N = dvp;
      g2.K = sp * tile;
      g2.B = VP;
      g2.ldb = dvp;
      g2.panel_stride = 16;
      g2.n_end = dvp;
    }
    (E::kF16Gemm ? kern.gemm_f16 : kern.gemm_bf16)(g2);
    for (int64_t m = 0; m < M; ++m) {
      float* o = O + m * dvp;
      const float* pv = PV + m * dvp;
      const float a = Alpha[m];
      if (h16) {
        for (int64_t d = 0; d < VD; ++d) o[d] = fp16_softmax_update(o[d], round_fp16(a), pv[d]);
      } else if (a == 1.0f) {
        for (int64_t d = 0; d < VD; ++d) o[d] += pv[d];
      } else {
        for (int64_t d = 0; d < VD; ++d) o[d] = o[d] * a + pv[d];
      }
    }
  }

  attn_finish(it, O, dvp, Mx, L);
}

template <class E>
void panel_for_element(const FlashItem& it, const FlashShape& shape, const FlashKernels& kern, void* scratch) {
  const bool mask = it.mask != nullptr, bias = it.bias != nullptr;
  if (mask) {
    if (bias) panel_item<E, AttnExplicitMask, true>(it, shape, kern, scratch);
    else panel_item<E, AttnExplicitMask, false>(it, shape, kern, scratch);
  } else {
    if (bias) panel_item<E, AttnBandOnly, true>(it, shape, kern, scratch);
    else panel_item<E, AttnBandOnly, false>(it, shape, kern, scratch);
  }
}

}  // namespace

void flash_attn_panel(const FlashItem& it, const FlashShape& shape, const FlashKernels& kern, void* scratch) {
  if (it.fp16 && it.fp16_softmax) panel_for_element<Fp16RawElem>(it, shape, kern, scratch);
  else if (it.fp16) panel_for_element<Fp16Elem>(it, shape, kern, scratch);
  else panel_for_element<Bf16Elem>(it, shape, kern, scratch);
}

}  // namespace mlaops::kernels

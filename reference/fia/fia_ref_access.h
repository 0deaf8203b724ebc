// Access helpers of the float64 FusedInferAttentionScoreV4 reference
// (reference/fia/fia_ref.cpp): how the reference reads sequence tensors
// of every layout, paged KV pools, masks, pseShift and KV antiquant parameters, and its shape /
// length parsing. Reference-only code: it shares nothing with the fast path (reference/common/ref_util.h).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"
#include "reference/common/ref_util.h"

namespace mlaops::fia_ref {

constexpr const char* kOp = "fused_infer_attention_score_v4_ref";

// Shape of a (non-paged) sequence tensor in a layout. For packed layouts b = -1 and s = T.
struct SeqShape {
  int64_t b = -1;
  int64_t s = 0;
  int64_t d = 0;
};

// Element (b, n, s, k) of a non-paged sequence tensor; for packed layouts `s` is the absolute
// token index (the caller adds the batch start) and b is unused.
struct SeqAccess {
  const TensorView* t = nullptr;
  FiaLayout layout = FiaLayout::kBSH;
  int64_t d = 0;  // head dim (BSH: the hidden dim is heads * d)

  int64_t offset(int64_t b, int64_t n, int64_t s, int64_t k) const {
    int64_t idx[4] = {0, 0, 0, 0};
    switch (layout) {
      case FiaLayout::kBSH: idx[0] = b; idx[1] = s; idx[2] = n * d + k; break;
      case FiaLayout::kBSND: idx[0] = b; idx[1] = s; idx[2] = n; idx[3] = k; break;
      case FiaLayout::kBNSD: idx[0] = b; idx[1] = n; idx[2] = s; idx[3] = k; break;
      case FiaLayout::kNBSD: idx[0] = n; idx[1] = b; idx[2] = s; idx[3] = k; break;
      case FiaLayout::kTND: idx[0] = s; idx[1] = n; idx[2] = k; break;
      case FiaLayout::kNTD: idx[0] = n; idx[1] = s; idx[2] = k; break;
    }
    return ref::offset(*t, idx);
  }
  double load(int64_t b, int64_t n, int64_t s, int64_t k) const { return ref::load(*t, offset(b, n, s, k)); }
};

// Parses a non-paged input tensor (query, key, value, ropes) of layout `l` with `heads` heads.
Status parse_seq(const TensorView& t, FiaLayout l, int64_t heads, const char* name, SeqShape* out);

// A paged KV pool, layout decided by rank:
//   3 BnBsH [blockNum, blockSize, KV_N*D], 4 BnNBsD [blockNum, KV_N, blockSize, D],
//   5 NZ [blockNum, KV_N, D/c0, blockSize, c0] (c0 = 16 for FP16/BF16, 32 for INT8).
struct PagedAccess {
  const TensorView* t = nullptr;
  int64_t block_num = 0;
  int64_t block_size = 0;
  int64_t d = 0;
  int64_t c0 = 0;

  int64_t offset(int64_t blk, int64_t h, int64_t slot, int64_t k) const {
    int64_t idx[5] = {blk, 0, 0, 0, 0};
    if (t->rank == 3) {
      idx[1] = slot;
      idx[2] = h * d + k;
    } else if (t->rank == 4) {
      idx[1] = h;
      idx[2] = slot;
      idx[3] = k;
    } else {
      idx[1] = h;
      idx[2] = k / c0;
      idx[3] = slot;
      idx[4] = k % c0;
    }
    return ref::offset(*t, idx);
  }
  double load(int64_t blk, int64_t h, int64_t slot, int64_t k) const { return ref::load(*t, offset(blk, h, slot, k)); }
};

Status parse_paged(const TensorView& t, int64_t kv_heads, const char* name, PagedAccess* out);

// Per-batch lengths from a (1) / (B) / (>B) array; nullptr => the extent.
Status decode_lengths(const std::vector<int64_t>* a, int64_t batch, int64_t extent, const char* name,
                      std::vector<int64_t>* out);

// Cumulative lengths of a packed (TND/NTD) tensor: a[b] - a[b-1], starts a[b-1], last == total.
Status decode_cumulative(const std::vector<int64_t>* a, int64_t batch, int64_t total, const char* name,
                         std::vector<int64_t>* len, std::vector<int64_t>* start);

// How the mask is read for sparse modes 0/1 (explicit full mask).
struct MaskAccess {
  const TensorView* t = nullptr;
  bool batch_broadcast = false;  // batch dim is 1
  bool rank2_rows_are_batch = false;  // 2-D (B, KV_S) form of Q_S == 1

  bool masked(int64_t b, int64_t i, int64_t j) const {
    int64_t idx[4] = {0, 0, 0, 0};
    const int64_t bb = batch_broadcast ? 0 : b;
    switch (t->rank) {
      case 2:
        if (rank2_rows_are_batch) {
          idx[0] = bb;
        } else {
          idx[0] = i;
        }
        idx[1] = j;
        break;
      case 3: idx[0] = bb; idx[1] = i; idx[2] = j; break;
      default: idx[0] = bb; idx[1] = 0; idx[2] = i; idx[3] = j; break;
    }
    return ref::load(*t, ref::offset(*t, idx)) != 0.0;
  }
};

// The tree mask of sparse mode 9: batch b's S1 x S1 block (S1 = actQ[b]), element (i, t) at
// tree[b][i][t] of a (B, Q_S, Q_S) mask, or at start[b] + i * S1 + t of the 1-D TND / NTD mask
// (the blocks concatenated). Row i attends every position j < S2 - S1 and position S2 - S1 + t iff
// element (i, t) is 0.
struct TreeAccess {
  const TensorView* t = nullptr;
  std::vector<int64_t> start;  // 1-D form: first element of each batch's block

  bool masked(int64_t b, int64_t i, int64_t j, int64_t s1, int64_t s2) const {
    const int64_t c = j - (s2 - s1);
    if (c < 0) return false;  // the committed context
    if (t->rank == 1) {
      const int64_t idx[1] = {start[static_cast<size_t>(b)] + i * s1 + c};
      return ref::load(*t, ref::offset(*t, idx)) != 0.0;
    }
    const int64_t idx[3] = {b, i, c};
    return ref::load(*t, ref::offset(*t, idx)) != 0.0;
  }
};

inline bool is_2048_template(const TensorView& m) {
  if (m.rank < 2 || m.rank > 4) return false;
  for (int i = 0; i < m.rank - 2; ++i)
    if (m.dims[i] != 1) return false;
  return m.dim(-1) == 2048 && m.dim(-2) == 2048;
}

// pseShift (docs/ops/fused_infer_attention_score.md): a 4-D (B or 1, N, S1p, S2p) FP16 / BF16
// bias read at (b or 0, n, i, j), i the query row and j the KV position in the tensors (the prefix
// columns come first: reference/fia/fia_prefix_ref.h; with left padding: the padded coordinates).
struct PseAccess {
  const TensorView* t = nullptr;
  bool batch_broadcast = false;  // dim 0 is 1

  double at(int64_t b, int64_t n, int64_t i, int64_t j) const {
    const int64_t idx[4] = {batch_broadcast ? 0 : b, n, i, j};
    return ref::load(*t, ref::offset(*t, idx));
  }
};

// KV antiquant of key (which = 0) or value (1): x_deq = (x + offset) * scale in double, not
// rounded to the query dtype (the vendor kernels never round it). Scale / offset element of
// (b, h, t, d) and the paged location (blk, slot) of t, straight from the shape table
// (docs/ops/fused_infer_attention_score.md):
// separate parameters (leading dim 1 optional), or combined (2, ...) with key at index 0 and
// value at index 1.
struct AntiquantRef {
  const TensorView* scale = nullptr;
  const TensorView* offset = nullptr;
  int64_t mode = 0;
  int which = 0;
  bool combined = false;
  int64_t KVN = 1, D = 1, block_size = 1;

  // the scale tensor's geometry, set by load_params: elements per tensor (half of a combined
  // key + value tensor), this tensor's first element, the last dim
  int64_t half = 1, base = 0, S = 1;
  int64_t index(int64_t b, int64_t h, int64_t t, int64_t d, int64_t blk, int64_t slot) const {
    switch (mode) {
      case 0: return half == 1 ? base : base + h * D + d;  // per-tensor / per-channel (KV_N, [1,] D) or (H)
      case 1: return base + b * S + t;                       // ([1,] B, S)
      case 2: return h;                                      // (KV_N)
      case 3: return (b * KVN + h) * S + t;                  // (B, KV_N, S)
      case 4: return blk * block_size + slot;                // (blockNum, blockSize)
      default: return (blk * KVN + h) * block_size + slot;   // 5: (blockNum, KV_N, blockSize)
    }
  }
  // Every scale / offset element, read once in linear order after the parameter checks; dequant
  // indexes these instead of walking the tensors' strides for each K / V element.
  std::vector<double> scale_v, offset_v;
  void load_params() {
    const int64_t n = scale->numel();
    half = combined ? n / 2 : n;
    base = combined ? which * half : 0;
    S = scale->dim(-1);
    for (auto [t, v] : {std::pair{scale, &scale_v}, std::pair{offset, &offset_v}})
      for (int64_t i = 0; t != nullptr && i < t->numel(); ++i) v->push_back(ref::load(*t, ref::linear_offset(*t, i)));
  }
  double dequant(double x, int64_t b, int64_t h, int64_t t, int64_t d, int64_t blk, int64_t slot) const {
    const size_t i = static_cast<size_t>(index(b, h, t, d, blk, slot));
    return (x + (offset ? offset_v[i] : 0.0)) * scale_v[i];
  }
};

// INT4 key / value in INT32 words: element d of a row is nibble d % 8 of word d / 8, bits
// [4k, 4k + 3] (k = d % 8), two's complement. `word` is the loaded INT32 value.
inline double int4_at(double word, int64_t d) {
  const uint32_t w = static_cast<uint32_t>(static_cast<int32_t>(word));
  const int nib = static_cast<int>((w >> (4 * (d % 8))) & 15u);
  return nib >= 8 ? nib - 16 : nib;
}

// Inputs outside the scope of this build.
Status check_scope(const FiaParams& p);

// Writes `v` to every element of t (rank-generic, through its strides).
void fill_all(const TensorView& t, double v);

}  // namespace mlaops::fia_ref

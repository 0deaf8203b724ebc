// Reusable test data for FusedInferAttentionScoreV4 (reference and operator tests).
//
//  * HostTensor: an owning contiguous host tensor with a TensorView.
//  * random_tensor: seeded uniform data rounded to the dtype.
//  * layout converters between the canonical [B, N, S, D] form and BSH/BSND/BNSD/NBSD and the
//    packed TND/NTD forms (and back, for outputs and lse).
//  * paged-cache builders: shuffled block tables and BnBsH / BnNBsD / NZ pools.
//  * masks: explicit masks of any rank and the 2048x2048 template.
//  * FiaCanonical + build_fia_run: one logical problem materialised in any layout / cache form
//    with FiaParams pointing at owned buffers, and readers that bring the outputs back to the
//    canonical form.
//  * pseShift and learnableSink: random or hand-set biases / sinks in the canonical problem
//    (set_random_pse, set_alibi_pse, set_random_sink; alibi_slopes), passed by build_fia_run.
//  * The inputLayout strings are parsed by this file's own table (layout_of_string), not by the
//    library's parser nor the reference's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/element_access.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/tensor_view.h"

namespace mlaops::fia_test {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// HostTensor
// ---------------------------------------------------------------------------------------------

struct HostTensor {
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;
  std::vector<uint64_t> storage;  // 8-byte aligned backing store

  HostTensor() = default;
  HostTensor(DType dt, std::vector<int64_t> d, double fill_value = 0.0) : dtype(dt), dims(std::move(d)) {
    const int64_t bytes = numel() * std::max<int64_t>(dtype_size(dtype), 1);
    storage.assign(static_cast<size_t>((bytes + 7) / 8 + 1), 0);
    if (fill_value != 0.0) fill(fill_value);
  }

  int rank() const { return static_cast<int>(dims.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  void* data() const { return const_cast<uint64_t*>(storage.data()); }
  TensorView view() const { return make_view(data(), dtype, dims.data(), rank()); }
  int64_t index(std::initializer_list<int64_t> idx) const {
    int64_t off = 0;
    size_t i = 0;
    for (int64_t v : idx) off = off * dims[i++] + v;
    return off;
  }
  // element access on the dense buffer (no view built per element: the test data's hot loop)
  double flat(int64_t i) const { return load_f64(data(), dtype, i); }
  void set_flat(int64_t i, double v) { store_f64(data(), dtype, i, v); }
  // elements [i, i + n) of this tensor := elements [si, si + n) of src (the stored bytes when the
  // dtypes match)
  void copy_run(int64_t i, const HostTensor& src, int64_t si, int64_t n) {
    const int64_t es = dtype_size(dtype);
    if (src.dtype == dtype && es > 0) {
      std::memcpy(static_cast<char*>(data()) + i * es, static_cast<const char*>(src.data()) + si * es,
                  static_cast<size_t>(n * es));
    } else {
      for (int64_t k = 0; k < n; ++k) set_flat(i + k, src.flat(si + k));
    }
  }
  double get(std::initializer_list<int64_t> idx) const { return flat(index(idx)); }
  void set(std::initializer_list<int64_t> idx, double v) { set_flat(index(idx), v); }
  void fill(double v) {  // the first element converted once, its bytes repeated
    const int64_t n = numel(), es = dtype_size(dtype);
    if (n == 0) return;
    set_flat(0, v);
    if (es <= 0) {
      for (int64_t i = 1; i < n; ++i) set_flat(i, v);
      return;
    }
    char* p = static_cast<char*>(data());
    for (int64_t i = 1; i < n; ++i) std::memcpy(p + i * es, p, static_cast<size_t>(es));
  }
  // Same data, new dims (same element count).
  HostTensor reshaped(std::vector<int64_t> new_dims) const {
    HostTensor r = *this;
    r.dims = std::move(new_dims);
    return r;
  }
  // Same values converted (rounded) to another dtype.
  HostTensor as(DType dt) const {
    HostTensor r(dt, dims);
    for (int64_t i = 0, n = numel(); i < n; ++i) r.set_flat(i, flat(i));
    return r;
  }
};

// Uniform values in [lo, hi) rounded to the dtype, deterministic for a seed.
inline HostTensor random_tensor(DType dt, std::vector<int64_t> dims, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  HostTensor t(dt, std::move(dims));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0, n = t.numel(); i < n; ++i) t.set_flat(i, dist(gen));
  return t;
}

// ---------------------------------------------------------------------------------------------
// Layouts: canonical [B, N, S, D] <-> BSH / BSND / BNSD / NBSD, and packed TND / NTD.
// ---------------------------------------------------------------------------------------------

// The 13 inputLayout strings "IN" / "IN_OUT": IN one of BSH, BSND, BNSD, TND, NTD; OUT as listed
// (docs/ops/fused_infer_attention_score.md). False (nothing written) for any other string.
inline bool layout_of_string(const std::string& s, FiaLayout* in, FiaLayout* out) {
  struct Side {
    const char* name;
    FiaLayout layout;
  };
  static const Side kSides[] = {{"BSH", FiaLayout::kBSH}, {"BSND", FiaLayout::kBSND}, {"BNSD", FiaLayout::kBNSD},
                                {"TND", FiaLayout::kTND}, {"NTD", FiaLayout::kNTD},   {"NBSD", FiaLayout::kNBSD}};
  // The accepted output sides of each input side (the input side itself when there is no "_").
  static const char* const kOuts[][2] = {{"BSH", "BNSD"}, {"BSH", "NBSD"}, {"BSND", "BNSD"}, {"BSND", "NBSD"},
                                         {"BNSD", "BSND"}, {"BNSD", "NBSD"}, {"TND", "NTD"},   {"NTD", "TND"}};
  const size_t cut = s.find('_');
  const std::string a = s.substr(0, cut), b = cut == std::string::npos ? a : s.substr(cut + 1);
  static const char* const kIns[] = {"BSH", "BSND", "BNSD", "TND", "NTD"};
  bool ok = false;
  if (cut == std::string::npos) {
    for (const char* i : kIns) ok = ok || a == i;
  } else {
    for (const auto& o : kOuts) ok = ok || (a == o[0] && b == o[1]);
  }
  if (!ok) return false;
  for (const Side& x : kSides)
    if (x.name == a) *in = x.layout;
  for (const Side& x : kSides)
    if (x.name == b) *out = x.layout;
  return true;
}
inline bool layout_is_packed(FiaLayout l) { return l == FiaLayout::kTND || l == FiaLayout::kNTD; }

inline std::vector<int64_t> layout_dims(FiaLayout l, int64_t B, int64_t N, int64_t S, int64_t D) {
  switch (l) {
    case FiaLayout::kBSH: return {B, S, N * D};
    case FiaLayout::kBSND: return {B, S, N, D};
    case FiaLayout::kBNSD: return {B, N, S, D};
    case FiaLayout::kNBSD: return {N, B, S, D};
    case FiaLayout::kTND: return {S, N, D};  // S = T
    case FiaLayout::kNTD: return {N, S, D};
  }
  return {};
}

// Linear index of (b, n, s, d) in a contiguous tensor of layout l (packed: s = token, b unused).
inline int64_t layout_index(FiaLayout l, int64_t B, int64_t N, int64_t S, int64_t D, int64_t b, int64_t n, int64_t s,
                            int64_t d) {
  switch (l) {
    case FiaLayout::kBSH: return (b * S + s) * N * D + n * D + d;
    case FiaLayout::kBSND: return ((b * S + s) * N + n) * D + d;
    case FiaLayout::kBNSD: return ((b * N + n) * S + s) * D + d;
    case FiaLayout::kNBSD: return ((n * B + b) * S + s) * D + d;
    case FiaLayout::kTND: return (s * N + n) * D + d;
    case FiaLayout::kNTD: return (n * S + s) * D + d;
  }
  return 0;
}

// Canonical [B, N, S, D] -> a non-packed layout (same dtype).
inline HostTensor bnsd_to_layout(const HostTensor& c, FiaLayout l) {
  const int64_t B = c.dims[0], N = c.dims[1], S = c.dims[2], D = c.dims[3];
  HostTensor r(c.dtype, layout_dims(l, B, N, S, D));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s) r.copy_run(layout_index(l, B, N, S, D, b, n, s, 0), c, c.index({b, n, s, 0}), D);
  return r;
}

// Canonical [B, N, S, D] -> packed TND / NTD holding rows [0, lens[b]) of each batch in order.
inline HostTensor bnsd_to_packed(const HostTensor& c, const std::vector<int64_t>& lens, FiaLayout l) {
  const int64_t B = c.dims[0], N = c.dims[1], D = c.dims[3];
  const int64_t T = std::accumulate(lens.begin(), lens.end(), int64_t{0});
  HostTensor r(c.dtype, layout_dims(l, B, N, T, D));
  int64_t t0 = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t s = 0; s < lens[static_cast<size_t>(b)]; ++s)
      for (int64_t n = 0; n < N; ++n) r.copy_run(layout_index(l, B, N, T, D, b, n, t0 + s, 0), c, c.index({b, n, s, 0}), D);
    t0 += lens[static_cast<size_t>(b)];
  }
  return r;
}

// Non-packed layout -> canonical [B, N, S, D] FP64.
inline HostTensor layout_to_bnsd(const HostTensor& t, FiaLayout l, int64_t B, int64_t N, int64_t S, int64_t D) {
  HostTensor r(DType::kFloat64, {B, N, S, D});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t d = 0; d < D; ++d) r.set({b, n, s, d}, t.flat(layout_index(l, B, N, S, D, b, n, s, d)));
  return r;
}

// Packed layout -> canonical [B, N, S, D] FP64; rows >= lens[b] get `absent`.
inline HostTensor packed_to_bnsd(const HostTensor& t, FiaLayout l, const std::vector<int64_t>& lens, int64_t N,
                                 int64_t S, int64_t D, double absent = 0.0) {
  const int64_t B = static_cast<int64_t>(lens.size());
  const int64_t T = std::accumulate(lens.begin(), lens.end(), int64_t{0});
  HostTensor r(DType::kFloat64, {B, N, S, D}, absent);
  int64_t t0 = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t s = 0; s < lens[static_cast<size_t>(b)]; ++s)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t d = 0; d < D; ++d) r.set({b, n, s, d}, t.flat(layout_index(l, B, N, T, D, b, n, t0 + s, d)));
    t0 += lens[static_cast<size_t>(b)];
  }
  return r;
}

inline std::vector<int64_t> cumulative(const std::vector<int64_t>& lens) {
  std::vector<int64_t> r(lens.size());
  std::partial_sum(lens.begin(), lens.end(), r.begin());
  return r;
}

// ---------------------------------------------------------------------------------------------
// Paged caches
// ---------------------------------------------------------------------------------------------

// Block table [B, width] INT32: every needed block gets a distinct id from a shuffled range of
// *num_blocks = (needed blocks + spare) ids; entries not needed are -1.
inline HostTensor make_block_table(const std::vector<int64_t>& kv_lens, int64_t block_size, int64_t width,
                                   uint32_t seed, int64_t* num_blocks, int64_t spare = 3) {
  const int64_t B = static_cast<int64_t>(kv_lens.size());
  int64_t needed = 0;
  for (int64_t l : kv_lens) needed += (l + block_size - 1) / block_size;
  *num_blocks = needed + spare;
  std::vector<int32_t> ids(static_cast<size_t>(*num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::mt19937 gen(seed);
  std::shuffle(ids.begin(), ids.end(), gen);
  HostTensor bt(DType::kInt32, {B, width}, -1.0);
  size_t next = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < (kv_lens[static_cast<size_t>(b)] + block_size - 1) / block_size; ++k) {
      if (k < width) bt.set({b, k}, ids[next]);  // a too-narrow table (negative tests) is cut
      ++next;
    }
  return bt;
}

// Pool dims of a cache rank: 3 BnBsH [nb, bs, KVN*D], 4 BnNBsD [nb, KVN, bs, D],
// 5 NZ [nb, KVN, D/16, bs, 16].
inline std::vector<int64_t> paged_dims(int cache_rank, int64_t num_blocks, int64_t block_size, int64_t kvn, int64_t d) {
  if (cache_rank == 3) return {num_blocks, block_size, kvn * d};
  if (cache_rank == 4) return {num_blocks, kvn, block_size, d};
  return {num_blocks, kvn, d / 16, block_size, 16};
}
inline int64_t paged_index(int cache_rank, int64_t block_size, int64_t kvn, int64_t d_all, int64_t blk, int64_t h,
                           int64_t slot, int64_t d) {
  if (cache_rank == 3) return (blk * block_size + slot) * kvn * d_all + h * d_all + d;
  if (cache_rank == 4) return ((blk * kvn + h) * block_size + slot) * d_all + d;
  return (((blk * kvn + h) * (d_all / 16) + d / 16) * block_size + slot) * 16 + d % 16;
}

// Scatters canonical [B, KVN, S, D] positions [0, kv_lens[b]) into a pool through the table;
// every other pool element holds `fill` (NaN by default, so a stray read shows up).
inline HostTensor paged_pool(const HostTensor& c, const std::vector<int64_t>& kv_lens, const HostTensor& block_table,
                             int64_t block_size, int64_t num_blocks, int cache_rank, double fill = kNaN) {
  const int64_t B = c.dims[0], KVN = c.dims[1], D = c.dims[3];
  HostTensor pool(c.dtype, paged_dims(cache_rank, num_blocks, block_size, KVN, D), fill);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t p = 0; p < kv_lens[static_cast<size_t>(b)]; ++p) {
      const int64_t blk = static_cast<int64_t>(block_table.get({b, p / block_size}));
      // contiguous channels: all D (ranks 3, 4), 16 per (block, head, chunk, slot) in NZ (paged_index)
      const int64_t run = cache_rank == 3 || cache_rank == 4 ? D : 16;
      for (int64_t h = 0; h < KVN; ++h)
        for (int64_t d = 0; d < D; d += run)
          pool.copy_run(paged_index(cache_rank, block_size, KVN, D, blk, h, p % block_size, d), c, c.index({b, h, p, d}),
                        std::min(run, D - d));
    }
  return pool;
}

// ---------------------------------------------------------------------------------------------
// Masks
// ---------------------------------------------------------------------------------------------

// [mb, rows, cols] mask with value f(b, i, j) (true = masked, stored as 1).
inline HostTensor make_mask3(DType dt, int64_t mb, int64_t rows, int64_t cols,
                             const std::function<bool(int64_t, int64_t, int64_t)>& f) {
  HostTensor m(dt, {mb, rows, cols});
  for (int64_t b = 0; b < mb; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) m.set({b, i, j}, f(b, i, j) ? 1.0 : 0.0);
  return m;
}

// The sparse 2/3/4 template: strict upper triangle of 2048x2048, with `rank` 2, 3 or 4.
inline HostTensor template_mask_2048(DType dt, int rank) {
  HostTensor m = make_mask3(dt, 1, 2048, 2048, [](int64_t, int64_t i, int64_t j) { return j > i; });
  if (rank == 2) return m.reshaped({2048, 2048});
  if (rank == 4) return m.reshaped({1, 1, 2048, 2048});
  return m;
}

// ---------------------------------------------------------------------------------------------
// One logical problem and its materialisation
// ---------------------------------------------------------------------------------------------

struct FiaCanonical {
  DType dtype = DType::kBFloat16;
  int64_t B = 1, N = 1, KVN = 1, Sq = 1, Skv = 1, D = 16, Dv = 16, Dr = 0;
  HostTensor q;   // [B, N, Sq, D]
  HostTensor k;   // [B, KVN, Skv, D]
  HostTensor v;   // [B, KVN, Skv, Dv]
  HostTensor qr;  // [B, N, Sq, Dr]   (Dr > 0: MLA rope split)
  HostTensor kr;  // [B, KVN, Skv, Dr]
  // Optional pseShift [B or 1, N, S1p >= Sq, S2p >= Skv] (no dims: none); dim 0 == 1 broadcasts
  // over the batches. The reference reads (b or 0, n, i, j) for i < len_q(b), j < len_kv(b);
  // every element it never reads holds NaN (poison_pse), so a stray read shows up.
  HostTensor pse;
  HostTensor sink;  // optional learnableSink [N] (no dims: none)
  std::vector<int64_t> act_q;   // per-batch query lengths (empty = Sq each)
  std::vector<int64_t> act_kv;  // per-batch kv lengths (empty = Skv each)

  int64_t len_q(int64_t b) const { return act_q.empty() ? Sq : act_q[static_cast<size_t>(b)]; }
  int64_t len_kv(int64_t b) const { return act_kv.empty() ? Skv : act_kv[static_cast<size_t>(b)]; }
  std::vector<int64_t> lens_q() const { return act_q.empty() ? std::vector<int64_t>(static_cast<size_t>(B), Sq) : act_q; }
  std::vector<int64_t> lens_kv() const {
    return act_kv.empty() ? std::vector<int64_t>(static_cast<size_t>(B), Skv) : act_kv;
  }
  int64_t max_len_q() const {
    int64_t m = 0;
    for (int64_t b = 0; b < B; ++b) m = std::max(m, len_q(b));
    return m;
  }
  int64_t max_len_kv() const {
    int64_t m = 0;
    for (int64_t b = 0; b < B; ++b) m = std::max(m, len_kv(b));
    return m;
  }

  bool has_pse() const { return !pse.dims.empty(); }
  bool has_sink() const { return !sink.dims.empty(); }
  bool pse_broadcast() const { return has_pse() && pse.dims[0] == 1; }
  // The bias added to score (b, n, i, j); 0 without a pse.
  double pse_at(int64_t b, int64_t n, int64_t i, int64_t j) const {
    return has_pse() ? pse.get({pse_broadcast() ? 0 : b, n, i, j}) : 0.0;
  }
  // NaN into every pse element that is never read: rows >= len_q(b) and columns >= len_kv(b) of
  // batch b (a broadcast pse: beyond the longest batch).
  void poison_pse() {
    if (!has_pse()) return;
    for (int64_t pb = 0; pb < pse.dims[0]; ++pb) {
      const int64_t rows = pse_broadcast() ? max_len_q() : len_q(pb);
      const int64_t cols = pse_broadcast() ? max_len_kv() : len_kv(pb);
      for (int64_t n = 0; n < pse.dims[1]; ++n)
        for (int64_t i = 0; i < pse.dims[2]; ++i)
          for (int64_t j = 0; j < pse.dims[3]; ++j)
            if (i >= rows || j >= cols) pse.set({pb, n, i, j}, kNaN);
    }
  }

  // Sets per-batch lengths and writes NaN into every row beyond them (q/qr rows >= act_q[b],
  // k/v/kr rows >= act_kv[b]) so that a read of a padding row poisons the result.
  void set_lengths(std::vector<int64_t> aq, std::vector<int64_t> akv) {
    act_q = std::move(aq);
    act_kv = std::move(akv);
    auto poison = [](HostTensor& t, const std::function<int64_t(int64_t)>& len) {
      if (t.numel() == 0) return;
      for (int64_t b = 0; b < t.dims[0]; ++b)
        for (int64_t n = 0; n < t.dims[1]; ++n)
          for (int64_t s = len(b); s < t.dims[2]; ++s) {
            t.set({b, n, s, 0}, kNaN);
            for (int64_t d = 1; d < t.dims[3]; ++d) t.copy_run(t.index({b, n, s, d}), t, t.index({b, n, s, 0}), 1);
          }
    };
    auto lq = [this](int64_t b) { return len_q(b); };
    auto lkv = [this](int64_t b) { return len_kv(b); };
    poison(q, lq);
    poison(qr, lq);
    poison(k, lkv);
    poison(v, lkv);
    poison(kr, lkv);
    poison_pse();
  }
};

inline FiaCanonical make_canonical(DType dt, int64_t B, int64_t N, int64_t KVN, int64_t Sq, int64_t Skv, int64_t D,
                                   int64_t Dv, int64_t Dr, uint32_t seed) {
  FiaCanonical c;
  c.dtype = dt;
  c.B = B, c.N = N, c.KVN = KVN, c.Sq = Sq, c.Skv = Skv, c.D = D, c.Dv = Dv, c.Dr = Dr;
  c.q = random_tensor(dt, {B, N, Sq, D}, seed * 7 + 1);
  c.k = random_tensor(dt, {B, KVN, Skv, D}, seed * 7 + 2);
  c.v = random_tensor(dt, {B, KVN, Skv, Dv}, seed * 7 + 3);
  c.qr = random_tensor(dt, {B, N, Sq, Dr}, seed * 7 + 4);
  c.kr = random_tensor(dt, {B, KVN, Skv, Dr}, seed * 7 + 5);
  return c;
}

// ---------------------------------------------------------------------------------------------
// pseShift and learnableSink
// ---------------------------------------------------------------------------------------------

// A random pseShift of the query dtype, values U[lo, hi): [1, N, ...] when `broadcast` (one bias
// for every batch) or [B, N, ...], with Sq + pad_rows rows and Skv + pad_cols columns; every
// element the reference never reads is NaN. Call after set_lengths (which re-poisons it anyway).
inline void set_random_pse(FiaCanonical& c, bool broadcast, uint32_t seed, double lo = -2.0, double hi = 2.0,
                           int64_t pad_rows = 1, int64_t pad_cols = 3) {
  c.pse = random_tensor(c.dtype, {broadcast ? 1 : c.B, c.N, c.Sq + pad_rows, c.Skv + pad_cols}, seed, lo, hi);
  c.poison_pse();
}

// A random learnableSink [N] of the query dtype, values U[lo, hi).
inline void set_random_sink(FiaCanonical& c, uint32_t seed, double lo = -1.0, double hi = 3.0) {
  c.sink = random_tensor(c.dtype, {c.N}, seed, lo, hi);
}

// The standard ALiBi slopes of N heads: n2 = 2^floor(log2 N), m0 = 2^(-8/n2), slopes m0^k for
// k = 1..n2, then for N > n2 the slopes (2^(-4/n2))^k for k = 1, 3, 5, ... for the remaining heads.
inline std::vector<double> alibi_slopes(int64_t N) {
  int64_t n2 = 1;
  while (n2 * 2 <= N) n2 *= 2;
  std::vector<double> s;
  const double m0 = std::pow(2.0, -8.0 / static_cast<double>(n2));
  for (int64_t k = 1; k <= n2 && static_cast<int64_t>(s.size()) < N; ++k) s.push_back(std::pow(m0, static_cast<double>(k)));
  const double m1 = std::pow(2.0, -4.0 / static_cast<double>(n2));
  for (int64_t k = 1; static_cast<int64_t>(s.size()) < N; k += 2) s.push_back(std::pow(m1, static_cast<double>(k)));
  return s;
}

// The ALiBi full bias as the vendor test generator builds it, [B, N, Sq, Skv] of the query
// dtype: pse[b][n][i][j] = -slope[n] * |j - i - (S2 - S1)| with S1 = len_q(b), S2 = len_kv(b)
// (0 on the bottom-right diagonal), NaN beyond each batch's lengths.
inline HostTensor alibi_pse(const FiaCanonical& c) {
  const std::vector<double> slope = alibi_slopes(c.N);
  HostTensor t(c.dtype, {c.B, c.N, c.Sq, c.Skv}, kNaN);
  for (int64_t b = 0; b < c.B; ++b) {
    const int64_t s1 = c.len_q(b), s2 = c.len_kv(b);
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t i = 0; i < s1; ++i)
        for (int64_t j = 0; j < s2; ++j)
          t.set({b, n, i, j}, -slope[static_cast<size_t>(n)] * static_cast<double>(std::llabs(j - i - (s2 - s1))));
  }
  return t;
}
inline void set_alibi_pse(FiaCanonical& c) { c.pse = alibi_pse(c); }

// Each query head gets its own copy of its KV head (GQA -> MHA with KV_N = N).
inline FiaCanonical expand_kv_heads(const FiaCanonical& c) {
  FiaCanonical r = c;
  const int64_t G = c.N / c.KVN;
  auto expand = [&](const HostTensor& t) {
    HostTensor e(t.dtype, {t.dims[0], c.N, t.dims[2], t.dims[3]});
    for (int64_t b = 0; b < t.dims[0]; ++b)
      for (int64_t n = 0; n < c.N; ++n)
        for (int64_t s = 0; s < t.dims[2]; ++s)
          for (int64_t d = 0; d < t.dims[3]; ++d) e.set({b, n, s, d}, t.get({b, n / G, s, d}));
    return e;
  };
  r.KVN = c.N;
  r.k = expand(c.k);
  r.v = expand(c.v);
  r.kr = expand(c.kr);
  return r;
}

struct FiaRunConfig {
  std::string layout = "BSH";      // inputLayout attribute ("IN" or "IN_OUT")
  bool paged = false;
  int cache_rank = 3;              // 3 BnBsH, 4 BnNBsD, 5 NZ
  int64_t block_size = 16;
  int64_t table_width = 0;         // 0 = exactly ceil(max actKV / blockSize) + 1
  uint32_t table_seed = 7;
  DType out_dtype = DType::kUndefined;  // undefined = query dtype
  bool lse = true;
  bool pass_act_q = true;          // pass actualSeqLengths (non-packed) when act_q is set
  bool pass_act_kv = true;         // pass actualSeqLengthsKv (non-packed, non-paged) when act_kv is set
  bool value_is_key = false;       // MLA: pass the key tensor as value (requires Dv == D)
  double scale = 1.0;
  int64_t sparse_mode = 0;
  int64_t pre_tokens = 2147483647;
  int64_t next_tokens = 2147483647;
  const HostTensor* mask = nullptr;  // copied into the run
  bool pass_pse = true;              // pass the canonical pse (when it has one) as pseShift
  bool pass_sink = true;             // pass the canonical sink (when it has one) as learnableSink
};

// Owned buffers + FiaParams pointing at them (not copyable: params hold pointers).
struct FiaRun {
  FiaLayout in_l = FiaLayout::kBSH, out_l = FiaLayout::kBSH;
  bool packed = false;
  int64_t B = 0, N = 0, Sq = 0, Dv = 0;
  std::vector<int64_t> lens_q;  // per batch (for reading packed outputs)
  HostTensor query, key, value, query_rope, key_rope, block_table, mask, out, lse, pse, sink;
  TensorView query_rope_view, key_rope_view, block_table_view, mask_view, lse_view, pse_view, sink_view;
  std::vector<int64_t> asl_q, asl_kv;
  FiaParams params;

  FiaRun() = default;
  FiaRun(const FiaRun&) = delete;
  FiaRun& operator=(const FiaRun&) = delete;

  // attention_out as canonical [B, N, Sq, Dv] FP64; rows a packed output does not hold are 0.
  HostTensor out_bnsd() const {
    if (packed) return packed_to_bnsd(out, out_l, lens_q, N, Sq, Dv, 0.0);
    return layout_to_bnsd(out, out_l, B, N, Sq, Dv);
  }
  // softmax_lse as canonical [B, N, Sq, 1] FP64; rows a packed lse does not hold are +inf.
  HostTensor lse_bns() const {
    if (packed) return packed_to_bnsd(lse, FiaLayout::kTND, lens_q, N, Sq, 1, kInf);
    return lse.reshaped({B, N, Sq, 1}).as(DType::kFloat64);
  }
};

inline std::unique_ptr<FiaRun> build_fia_run(const FiaCanonical& c, const FiaRunConfig& cfg) {
  auto r = std::make_unique<FiaRun>();
  if (!layout_of_string(cfg.layout, &r->in_l, &r->out_l)) return nullptr;
  r->packed = layout_is_packed(r->in_l);
  r->B = c.B, r->N = c.N, r->Sq = c.Sq, r->Dv = c.Dv;
  r->lens_q = c.lens_q();
  const std::vector<int64_t> lkv = c.lens_kv();
  const bool rope = c.Dr > 0;
  FiaParams& p = r->params;

  auto seq = [&](const HostTensor& t, const std::vector<int64_t>& lens) {
    return r->packed ? bnsd_to_packed(t, lens, r->in_l) : bnsd_to_layout(t, r->in_l);
  };
  r->query = seq(c.q, r->lens_q);
  if (rope) r->query_rope = seq(c.qr, r->lens_q);
  if (cfg.paged) {
    const int64_t max_kv = *std::max_element(lkv.begin(), lkv.end());
    const int64_t width = cfg.table_width > 0 ? cfg.table_width : (max_kv + cfg.block_size - 1) / cfg.block_size + 1;
    int64_t nb = 0;
    r->block_table = make_block_table(lkv, cfg.block_size, width, cfg.table_seed, &nb);
    r->key = paged_pool(c.k, lkv, r->block_table, cfg.block_size, nb, cfg.cache_rank);
    r->value = paged_pool(c.v, lkv, r->block_table, cfg.block_size, nb, cfg.cache_rank);
    if (rope) r->key_rope = paged_pool(c.kr, lkv, r->block_table, cfg.block_size, nb, cfg.cache_rank);
    r->block_table_view = r->block_table.view();
    p.block_table = &r->block_table_view;
    p.block_size = cfg.block_size;
    r->asl_kv = lkv;
    p.actual_seq_lengths_kv = &r->asl_kv;
  } else {
    r->key = seq(c.k, lkv);
    r->value = seq(c.v, lkv);
    if (rope) r->key_rope = seq(c.kr, lkv);
    if (r->packed) {
      r->asl_kv = cumulative(lkv);
      p.actual_seq_lengths_kv = &r->asl_kv;
    } else if (!c.act_kv.empty() && cfg.pass_act_kv) {
      r->asl_kv = c.act_kv;
      p.actual_seq_lengths_kv = &r->asl_kv;
    }
  }
  if (r->packed) {
    r->asl_q = cumulative(r->lens_q);
    p.actual_seq_lengths = &r->asl_q;
  } else if (!c.act_q.empty() && cfg.pass_act_q) {
    r->asl_q = c.act_q;
    p.actual_seq_lengths = &r->asl_q;
  }

  p.query = r->query.view();
  p.key = {r->key.view()};
  p.value = {cfg.value_is_key ? r->key.view() : r->value.view()};
  if (rope) {
    r->query_rope_view = r->query_rope.view();
    r->key_rope_view = r->key_rope.view();
    p.query_rope = &r->query_rope_view;
    p.key_rope = &r->key_rope_view;
  }
  if (cfg.mask != nullptr) {
    r->mask = *cfg.mask;
    r->mask_view = r->mask.view();
    p.atten_mask = &r->mask_view;
  }
  if (c.has_pse() && cfg.pass_pse) {  // (B or 1, N, S1p, S2p) whatever the layout
    r->pse = c.pse;
    r->pse_view = r->pse.view();
    p.pse_shift = &r->pse_view;
  }
  if (c.has_sink() && cfg.pass_sink) {
    r->sink = c.sink;
    r->sink_view = r->sink.view();
    p.learnable_sink = &r->sink_view;
  }
  const DType odt = cfg.out_dtype == DType::kUndefined ? c.dtype : cfg.out_dtype;
  const int64_t T = std::accumulate(r->lens_q.begin(), r->lens_q.end(), int64_t{0});
  r->out = HostTensor(odt, layout_dims(r->out_l, c.B, c.N, r->packed ? T : c.Sq, c.Dv), kNaN);
  p.attention_out = r->out.view();
  if (cfg.lse) {
    r->lse = r->packed ? HostTensor(DType::kFloat32, {T, c.N, 1}, kNaN)
                       : HostTensor(DType::kFloat32, {c.B, c.N, c.Sq, 1}, kNaN);
    r->lse_view = r->lse.view();
    p.softmax_lse = &r->lse_view;
    p.softmax_lse_flag = true;
  }
  p.num_heads = c.N;
  p.num_key_value_heads = c.KVN;
  p.scale_value = cfg.scale;
  p.input_layout = cfg.layout;
  p.sparse_mode = cfg.sparse_mode;
  p.pre_tokens = cfg.pre_tokens;
  p.next_tokens = cfg.next_tokens;
  return r;
}

}  // namespace mlaops::fia_test

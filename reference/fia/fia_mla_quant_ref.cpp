// Float64 reference of FusedInferAttentionScoreV4 MLA full quant (fia_mla_quant_ref.h).
#include "reference/fia/fia_mla_quant_ref.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "reference/common/ref_util.h"

namespace mlaops {
namespace {

constexpr const char* kOp = "fia_mla_quant_ref";

bool is(const TensorView* t, DType d) { return t != nullptr && t->dtype == d && (t->empty() || t->data != nullptr); }

}  // namespace

Status fia_mla_quant_ref(const FiaParams& p) {
  FiaLayout in = FiaLayout::kBSH, outl = FiaLayout::kBSH;
  MLAOPS_CHECK(ref::layout_from_string(p.input_layout, &in, &outl), kParamInvalid, "%s: inputLayout \"%.32s\"", kOp,
               p.input_layout.c_str());
  MLAOPS_CHECK(in == FiaLayout::kBSH || in == FiaLayout::kBSND || in == FiaLayout::kTND, kParamInvalid,
               "%s: input layout %s is not one of BSH, BSND, TND", kOp, ref::layout_text(in));
  MLAOPS_CHECK(p.key.size() == 1 && p.value.size() == 1, kParamInvalid, "%s: one key and one value tensor", kOp);
  const TensorView& q = p.query;
  const TensorView& key = p.key[0];
  const TensorView& val = p.value[0];
  const TensorView& out = p.attention_out;
  const TensorView* lse = p.softmax_lse_flag ? p.softmax_lse : nullptr;
  MLAOPS_CHECK(is(&q, DType::kInt8) && is(&key, DType::kInt8) && is(&val, DType::kInt8), kParamInvalid,
               "%s: query, key and value must be INT8 with data", kOp);
  MLAOPS_CHECK(is(p.query_rope, DType::kBFloat16) && is(p.key_rope, DType::kBFloat16), kParamInvalid,
               "%s: queryRope and keyRope must be BF16 with data", kOp);
  MLAOPS_CHECK(is(p.dequant_scale_query, DType::kFloat32) && is(p.key_antiquant_scale, DType::kFloat32) &&
                   is(p.value_antiquant_scale, DType::kFloat32) && is(p.block_table, DType::kInt32),
               kParamInvalid, "%s: dequantScaleQuery, key / value scales (FP32) and blockTable (INT32) are required", kOp);
  MLAOPS_CHECK(out.data != nullptr && (out.dtype == DType::kBFloat16 || out.dtype == DType::kFloat32 ||
                                       out.dtype == DType::kFloat64),
               kParamInvalid, "%s: attentionOut BF16 / FP32 / FP64 with data", kOp);
  MLAOPS_CHECK(lse == nullptr || is(lse, DType::kFloat32), kParamInvalid, "%s: softmaxLse FP32", kOp);
  MLAOPS_CHECK(p.key_antiquant_scale->numel() == 1 && p.value_antiquant_scale->numel() == 1, kParamInvalid,
               "%s: per-tensor scales have one element", kOp);
  MLAOPS_CHECK(p.sparse_mode == 0 || p.sparse_mode == 3 || p.sparse_mode == 9, kParamInvalid, "%s: sparseMode 0, 3 or 9",
               kOp);
  const bool packed = in == FiaLayout::kTND;
  const int64_t N = p.num_heads;
  MLAOPS_CHECK(N > 0, kParamInvalid, "%s: numHeads", kOp);

  // query / queryRope: (B, S) or T, D
  int64_t B = 0, S = 0, D = 0, DR = 0;
  const TensorView& qr = *p.query_rope;
  if (in == FiaLayout::kBSH) {
    MLAOPS_CHECK(q.rank == 3 && qr.rank == 3 && q.dims[2] % N == 0 && qr.dims[2] % N == 0, kParamInvalid, "%s: BSH query",
                 kOp);
    B = q.dims[0];
    S = q.dims[1];
    D = q.dims[2] / N;
    DR = qr.dims[2] / N;
  } else if (in == FiaLayout::kBSND) {
    MLAOPS_CHECK(q.rank == 4 && qr.rank == 4 && q.dims[2] == N && qr.dims[2] == N, kParamInvalid, "%s: BSND query", kOp);
    B = q.dims[0];
    S = q.dims[1];
    D = q.dims[3];
    DR = qr.dims[3];
  } else {
    MLAOPS_CHECK(q.rank == 3 && qr.rank == 3 && q.dims[1] == N && qr.dims[1] == N, kParamInvalid, "%s: TND query", kOp);
    S = q.dims[0];
    D = q.dims[2];
    DR = qr.dims[2];
    MLAOPS_CHECK(p.actual_seq_lengths != nullptr, kParamInvalid, "%s: TND needs actualSeqLengths", kOp);
    B = static_cast<int64_t>(p.actual_seq_lengths->size());
  }
  MLAOPS_CHECK(qr.dims[0] == q.dims[0] && (packed || qr.dims[1] == q.dims[1]), kParamInvalid,
               "%s: queryRope batch / tokens", kOp);
  MLAOPS_CHECK(D > 0 && D % 32 == 0 && DR > 0 && DR % 16 == 0, kParamInvalid, "%s: D %% 32, DR %% 16", kOp);
  // per-batch query rows
  std::vector<int64_t> aq(static_cast<size_t>(B)), q0(static_cast<size_t>(B), 0);
  if (packed) {
    int64_t prev = 0;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t v = (*p.actual_seq_lengths)[static_cast<size_t>(b)];
      MLAOPS_CHECK(v >= prev && v <= S, kParamInvalid, "%s: cumulative actualSeqLengths", kOp);
      q0[static_cast<size_t>(b)] = prev;
      aq[static_cast<size_t>(b)] = v - prev;
      prev = v;
    }
    MLAOPS_CHECK(prev == S, kParamInvalid, "%s: last actualSeqLengths == T", kOp);
  } else {
    for (int64_t b = 0; b < B; ++b) {
      int64_t v = S;
      if (S > 1 && p.actual_seq_lengths != nullptr && !p.actual_seq_lengths->empty()) {
        const auto& a = *p.actual_seq_lengths;
        v = a.size() == 1 ? a[0] : a[static_cast<size_t>(b)];
        MLAOPS_CHECK(a.size() == 1 || static_cast<int64_t>(a.size()) >= B, kParamInvalid, "%s: actualSeqLengths", kOp);
      }
      MLAOPS_CHECK(v >= 0 && v <= S, kParamInvalid, "%s: actualSeqLengths value", kOp);
      aq[static_cast<size_t>(b)] = v;
    }
  }
  // dequantScaleQuery: query shape without D
  const TensorView& dq = *p.dequant_scale_query;
  MLAOPS_CHECK(packed ? (dq.rank == 2 && dq.dims[0] == S && dq.dims[1] == N)
                      : (dq.rank == 3 && dq.dims[0] == B && dq.dims[1] == S && dq.dims[2] == N),
               kParamInvalid, "%s: dequantScaleQuery shape", kOp);
  // caches
  const TensorView& kr = *p.key_rope;
  MLAOPS_CHECK(key.rank == 5 && val.rank == 5 && kr.rank == 5, kParamInvalid, "%s: 5-D NZ caches", kOp);
  const int64_t nblk = key.dims[0], bs = key.dims[3];
  for (const TensorView* t : {&key, &val, &kr})
    MLAOPS_CHECK(t->dims[0] == nblk && t->dims[1] == 1 && t->dims[3] == bs, kParamInvalid, "%s: cache geometry", kOp);
  MLAOPS_CHECK(key.dims[4] == 32 && val.dims[4] == 32 && key.dims[2] * 32 == D && val.dims[2] * 32 == D, kParamInvalid,
               "%s: key / value [blockNum, 1, D/32, blockSize, 32]", kOp);
  MLAOPS_CHECK(kr.dims[4] == 16 && kr.dims[2] * 16 == DR, kParamInvalid, "%s: keyRope [.., DR/16, blockSize, 16]", kOp);
  const TensorView& bt = *p.block_table;
  MLAOPS_CHECK(bt.rank == 2 && bt.dims[0] == B && bs > 0, kParamInvalid, "%s: blockTable [B, W]", kOp);
  std::vector<int64_t> akv(static_cast<size_t>(B));
  MLAOPS_CHECK(p.actual_seq_lengths_kv != nullptr && !p.actual_seq_lengths_kv->empty(), kParamInvalid,
               "%s: actualSeqLengthsKv required", kOp);
  {
    const auto& a = *p.actual_seq_lengths_kv;
    MLAOPS_CHECK(a.size() == 1 || static_cast<int64_t>(a.size()) >= B, kParamInvalid, "%s: actualSeqLengthsKv", kOp);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t v = a.size() == 1 ? a[0] : a[static_cast<size_t>(b)];
      MLAOPS_CHECK(v >= 0 && v <= bt.dims[1] * bs, kParamInvalid, "%s: actualSeqLengthsKv value", kOp);
      akv[static_cast<size_t>(b)] = v;
      for (int64_t k = 0; k < ref::ceil_div(v, bs); ++k) {
        const int64_t idx[2] = {b, k};
        const int64_t id = ref::load_int(bt, ref::offset(bt, idx));
        MLAOPS_CHECK(id >= 0 && id < nblk, kParamInvalid, "%s: block id out of range", kOp);
      }
    }
  }
  // outputs
  const int64_t rowsS = packed ? S : S;
  auto out_idx = [&](int64_t b, int64_t n, int64_t s, int64_t d, int64_t* idx) -> int {
    switch (outl) {
      case FiaLayout::kBSH: idx[0] = b; idx[1] = s; idx[2] = n * D + d; return 3;
      case FiaLayout::kBSND: idx[0] = b; idx[1] = s; idx[2] = n; idx[3] = d; return 4;
      case FiaLayout::kNBSD: idx[0] = n; idx[1] = b; idx[2] = s; idx[3] = d; return 4;
      case FiaLayout::kTND: idx[0] = s; idx[1] = n; idx[2] = d; return 3;
      case FiaLayout::kNTD: idx[0] = n; idx[1] = s; idx[2] = d; return 3;
      default: return 0;
    }
  };
  {
    int64_t idx[4];
    const int r = out_idx(packed ? 0 : B - 1, N - 1, rowsS - 1, D - 1, idx);
    MLAOPS_CHECK(r == out.rank, kParamInvalid, "%s: attentionOut rank for layout %s", kOp, ref::layout_text(outl));
    for (int i = 0; i < r; ++i) MLAOPS_CHECK(idx[i] < out.dims[i], kParamInvalid, "%s: attentionOut shape", kOp);
    if (lse != nullptr)
      MLAOPS_CHECK(packed ? (lse->rank == 3 && lse->dims[0] == S && lse->dims[1] == N)
                          : (lse->rank == 4 && lse->dims[0] == B && lse->dims[1] == N && lse->dims[2] == S),
                   kParamInvalid, "%s: softmaxLse shape", kOp);
  }
  auto q_off = [&](const TensorView& t, int64_t dd, int64_t b, int64_t n, int64_t s, int64_t d) {
    int64_t idx[4];
    if (in == FiaLayout::kBSH) {
      idx[0] = b; idx[1] = s; idx[2] = n * dd + d;
    } else if (in == FiaLayout::kBSND) {
      idx[0] = b; idx[1] = s; idx[2] = n; idx[3] = d;
    } else {
      idx[0] = s; idx[1] = n; idx[2] = d;
    }
    return ref::offset(t, idx);
  };
  auto cache = [&](const TensorView& t, int64_t c0, int64_t blk, int64_t slot, int64_t d) {
    const int64_t idx[5] = {blk, 0, d / c0, slot, d % c0};
    return ref::load(t, ref::offset(t, idx));
  };
  const double ks = ref::load(*p.key_antiquant_scale, ref::linear_offset(*p.key_antiquant_scale, 0));
  const double vs = ref::load(*p.value_antiquant_scale, ref::linear_offset(*p.value_antiquant_scale, 0));
  const double inf = std::numeric_limits<double>::infinity();

  // sparse 9: batch b's tree block, element (i, t) at tree[b][i][t] ((B, S, S)) or at
  // tree_start[b] + i * s1 + t (1-D, TND); position s2 - s1 + t of row i is masked iff it is nonzero
  std::vector<int64_t> tree_start;
  const TensorView* tree = p.sparse_mode == 9 ? p.atten_mask : nullptr;
  if (p.sparse_mode == 9) {
    MLAOPS_CHECK(tree != nullptr && tree->data != nullptr, kParamInvalid, "%s: sparseMode 9 needs the tree mask", kOp);
    int64_t total = 0;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t s1 = aq[static_cast<size_t>(b)];
      MLAOPS_CHECK(s1 <= akv[static_cast<size_t>(b)], kParamInvalid, "%s: tree mask needs actQ <= actKV", kOp);
      tree_start.push_back(total);
      total += s1 * s1;
    }
    MLAOPS_CHECK(packed ? tree->rank == 1 && tree->dims[0] == total
                        : tree->rank == 3 && tree->dims[0] == B && tree->dims[1] == S && tree->dims[2] == S,
                 kParamInvalid, "%s: tree mask shape %s", kOp, ref::shape_str(*tree).c_str());
  }
  auto tree_masked = [&](int64_t b, int64_t i, int64_t j, int64_t s1, int64_t s2) {
    const int64_t t = j - (s2 - s1);
    if (tree == nullptr || t < 0) return false;
    if (packed) {
      const int64_t idx[1] = {tree_start[static_cast<size_t>(b)] + i * s1 + t};
      return ref::load(*tree, ref::offset(*tree, idx)) != 0.0;
    }
    const int64_t idx[3] = {b, i, t};
    return ref::load(*tree, ref::offset(*tree, idx)) != 0.0;
  };

  std::vector<double> kc, vc, qv(static_cast<size_t>(D + DR)), sc, acc(static_cast<size_t>(D));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t s1 = aq[static_cast<size_t>(b)], s2 = akv[static_cast<size_t>(b)];
    kc.assign(static_cast<size_t>(s2 * (D + DR)), 0.0);
    vc.assign(static_cast<size_t>(s2 * D), 0.0);
    for (int64_t j = 0; j < s2; ++j) {
      const int64_t idx[2] = {b, j / bs};
      const int64_t blk = ref::load_int(bt, ref::offset(bt, idx)), slot = j % bs;
      for (int64_t d = 0; d < D; ++d) {
        kc[static_cast<size_t>(j * (D + DR) + d)] = cache(key, 32, blk, slot, d) * ks;
        vc[static_cast<size_t>(j * D + d)] = cache(val, 32, blk, slot, d) * vs;
      }
      for (int64_t r = 0; r < DR; ++r) kc[static_cast<size_t>(j * (D + DR) + D + r)] = cache(kr, 16, blk, slot, r);
    }
    const int64_t rows = packed ? s1 : S;
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t st = q0[static_cast<size_t>(b)] + i;
        std::fill(acc.begin(), acc.end(), 0.0);
        double lse_v = inf;
        if (i < s1) {
          int64_t didx[3];
          if (packed) {
            didx[0] = st; didx[1] = n;
          } else {
            didx[0] = b; didx[1] = st; didx[2] = n;
          }
          const double dqv = ref::load(dq, ref::offset(dq, didx));
          for (int64_t d = 0; d < D; ++d) qv[static_cast<size_t>(d)] = ref::load(q, q_off(q, D, b, n, st, d)) * dqv;
          for (int64_t r = 0; r < DR; ++r)
            qv[static_cast<size_t>(D + r)] = ref::load(qr, q_off(qr, DR, b, n, st, r)) * dqv * ks;
          const int64_t last = p.sparse_mode == 3 ? std::min(s2 - 1, i + s2 - s1) : s2 - 1;
          sc.assign(static_cast<size_t>(std::max<int64_t>(last + 1, 0)), 0.0);
          double m = -inf;
          bool any = false;  // a valid position (its score may be -inf)
          for (int64_t j = 0; j <= last; ++j) {
            if (tree_masked(b, i, j, s1, s2)) {
              sc[static_cast<size_t>(j)] = -inf;
              continue;
            }
            any = true;
            const double* kj = &kc[static_cast<size_t>(j * (D + DR))];
            double dot = 0.0;
            for (int64_t d = 0; d < D + DR; ++d) dot += qv[static_cast<size_t>(d)] * kj[d];
            sc[static_cast<size_t>(j)] = p.scale_value * dot;
            const double sj = sc[static_cast<size_t>(j)];
            if (std::isnan(sj) || sj > m) m = std::isnan(m) ? m : sj;  // a NaN score makes the row NaN
          }
          // computed whenever the row has a valid position: a NaN score, or scores all -inf
          // (exp(-inf - -inf)), give a NaN row, never the empty row (as the general reference)
          if (any) {
            double den = 0.0;
            for (int64_t j = 0; j <= last; ++j) {
              const double e = std::exp(sc[static_cast<size_t>(j)] - m);
              den += e;
              for (int64_t d = 0; d < D; ++d) acc[static_cast<size_t>(d)] += e * vc[static_cast<size_t>(j * D + d)];
            }
            for (double& a : acc) a /= den;
            lse_v = m + std::log(den);
          }
        }
        for (int64_t d = 0; d < D; ++d) {
          int64_t idx[4];
          out_idx(b, n, st, d, idx);
          ref::store(out, ref::offset(out, idx), acc[static_cast<size_t>(d)]);
        }
        if (lse != nullptr) {
          int64_t idx[4] = {b, n, st, 0};
          if (packed) {
            idx[0] = st; idx[1] = n; idx[2] = 0;
          }
          ref::store(*lse, ref::offset(*lse, idx), lse_v);
        }
      }
    }
  }
  return kSuccess;
}

}  // namespace mlaops

// Test data of FusedInferAttentionScoreV4 MLA full quant (ops/fia/fia_mla_quant.h): an INT8 query
// quantised per (token, head) from normal values (dequantScaleQuery = amax / 127), queryRope
// pre-divided by dequantScaleQuery * keyScale (as MlaPrologV2 full quant produces it), an INT8
// NZ latent cache [blockNum, 1, 16, blockSize, 32] (value: the same tensor, or another one),
// BF16 NZ key rope, a shuffled block table with spare blocks, per-tensor FP32 scales. Shared by
// the operator tests and the W8A8 chain test.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "testkit/fia_test_data.h"

namespace mlaops::testing {

using fia_test::HostTensor;

struct MqCase {
  std::string name;
  std::string layout = "BSND";  // BSH, BSND, TND, with _NBSD / _NTD outputs
  int64_t B = 1, N = 8, QS = 1;
  std::vector<int64_t> act_q;   // TND: tokens per batch; BSH / BSND with QS > 1: actualSeqLengths (optional)
  std::vector<int64_t> act_kv;  // per batch
  int64_t bs = 128;
  int64_t sparse = 0;
  bool lse = true;
  bool separate_v = false;
  uint32_t seed = 1;
};

struct MqData {
  MqCase c;
  bool packed = false;
  int64_t T = 0;  // query tokens (packed) or B * QS
  HostTensor q, qr, dq, k, v, kr, bt, ks, vs, mask;
  std::vector<int64_t> asl, asl_kv;
  std::vector<int64_t> out_dims, lse_dims;
  TensorView v_qr, v_kr, v_dq, v_ks, v_vs, v_bt, v_mask;  // stable views for FiaParams' pointers
  void bind() {
    v_qr = qr.view();
    v_kr = kr.view();
    v_kr.format = Format::kFractalNZ;
    v_dq = dq.view();
    v_ks = ks.view();
    v_vs = vs.view();
    v_bt = bt.view();
    if (c.sparse == 3) v_mask = mask.view();
  }
};

inline std::unique_ptr<MqData> mq_make(const MqCase& c) {
  auto d = std::make_unique<MqData>();
  d->c = c;
  const int64_t D = 512, DR = 64, N = c.N;
  d->packed = c.layout.rfind("TND", 0) == 0;
  d->T = d->packed ? std::accumulate(c.act_q.begin(), c.act_q.end(), int64_t{0}) : c.B * c.QS;
  const bool bsh = c.layout.rfind("BSH", 0) == 0;
  std::vector<int64_t> tok = d->packed ? std::vector<int64_t>{d->T} : std::vector<int64_t>{c.B, c.QS};
  auto dims = [&](int64_t dd) {
    std::vector<int64_t> v = tok;
    if (bsh) {
      v.push_back(N * dd);
    } else {
      v.push_back(N);
      v.push_back(dd);
    }
    return v;
  };
  d->q = HostTensor(DType::kInt8, dims(D));
  d->qr = HostTensor(DType::kBFloat16, dims(DR));
  std::vector<int64_t> dqd = tok;
  dqd.push_back(N);
  d->dq = HostTensor(DType::kFloat32, dqd);
  std::mt19937 gen(c.seed * 7919 + 13);
  std::normal_distribution<double> nd(0.0, 1.0);
  const double kscale = 4.0 / 127.0, vscale = c.separate_v ? 3.0 / 127.0 : kscale;
  d->ks = HostTensor(DType::kFloat32, {1}, kscale);
  d->vs = HostTensor(DType::kFloat32, {1}, vscale);
  // rows (token, head) in row-major order: the same for BSH, BSND and TND
  std::vector<double> row(static_cast<size_t>(D));
  for (int64_t r = 0; r < d->T * N; ++r) {
    double amax = 0;
    for (double& x : row) {
      x = nd(gen);
      amax = std::max(amax, std::fabs(x));
    }
    const double dqv = static_cast<double>(static_cast<float>(amax / 127.0));
    d->dq.set_flat(r, dqv);
    for (int64_t i = 0; i < D; ++i) d->q.set_flat(r * D + i, std::nearbyint(row[static_cast<size_t>(i)] / dqv));
    for (int64_t i = 0; i < DR; ++i) d->qr.set_flat(r * DR + i, nd(gen) / (dqv * kscale));
  }
  // caches
  int64_t need = 0, width = 1;
  for (int64_t kv : c.act_kv) {
    need += (kv + c.bs - 1) / c.bs;
    width = std::max(width, (kv + c.bs - 1) / c.bs + 1);
  }
  const int64_t nblk = need + 2;
  d->k = HostTensor(DType::kInt8, {nblk, 1, D / 32, c.bs, 32});
  d->kr = HostTensor(DType::kBFloat16, {nblk, 1, DR / 16, c.bs, 16});
  auto q8 = [&](double x, double s) { return std::max(-128.0, std::min(127.0, std::nearbyint(x / s))); };
  for (int64_t i = 0; i < d->k.numel(); ++i) d->k.set_flat(i, q8(nd(gen), kscale));
  for (int64_t i = 0; i < d->kr.numel(); ++i) d->kr.set_flat(i, nd(gen));
  if (c.separate_v) {
    d->v = HostTensor(DType::kInt8, {nblk, 1, D / 32, c.bs, 32});
    for (int64_t i = 0; i < d->v.numel(); ++i) d->v.set_flat(i, q8(nd(gen), vscale));
  }
  std::vector<int64_t> ids(static_cast<size_t>(nblk));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), gen);
  d->bt = HostTensor(DType::kInt32, {c.B, width});
  size_t next = 0;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t w = 0; w < width; ++w) {
      const bool used = w < (c.act_kv[static_cast<size_t>(b)] + c.bs - 1) / c.bs;
      d->bt.set({b, w}, static_cast<double>(used ? ids[next++] : ids[static_cast<size_t>(gen() % nblk)]));
    }
  d->asl_kv = c.act_kv;
  if (d->packed) {
    int64_t s = 0;
    for (int64_t a : c.act_q) d->asl.push_back(s += a);
  } else {
    d->asl = c.act_q;
  }
  if (c.sparse == 3) d->mask = fia_test::template_mask_2048(DType::kBool, 2);
  // outputs
  const size_t cut = c.layout.find('_');
  const std::string out_l = cut == std::string::npos ? c.layout.substr(0, 4 - (bsh ? 1 : 0)) : c.layout.substr(cut + 1);
  if (out_l == "NBSD")
    d->out_dims = {N, c.B, c.QS, D};
  else if (out_l == "NTD")
    d->out_dims = {N, d->T, D};
  else if (out_l == "TND")
    d->out_dims = {d->T, N, D};
  else if (out_l == "BSH")
    d->out_dims = {c.B, c.QS, N * D};
  else
    d->out_dims = {c.B, c.QS, N, D};
  d->lse_dims = d->packed ? std::vector<int64_t>{d->T, N, 1} : std::vector<int64_t>{c.B, N, c.QS, 1};
  d->bind();
  return d;
}

// The call on `out` / `lse` (lse: a view the caller keeps alive, or null without softmaxLse).
inline FiaParams mq_params(const MqData& d, const TensorView& out, const TensorView* lse) {
  FiaParams p;
  p.query = d.q.view();
  TensorView k = d.k.view(), v = (d.c.separate_v ? d.v : d.k).view();
  k.format = v.format = Format::kFractalNZ;
  p.key = {k};
  p.value = {v};
  p.query_rope = &d.v_qr;
  p.key_rope = &d.v_kr;
  p.dequant_scale_query = &d.v_dq;
  p.key_antiquant_scale = &d.v_ks;
  p.value_antiquant_scale = &d.v_vs;
  p.block_table = &d.v_bt;
  if (!d.asl.empty()) p.actual_seq_lengths = &d.asl;
  p.actual_seq_lengths_kv = &d.asl_kv;
  if (d.c.sparse == 3) p.atten_mask = &d.v_mask;
  p.num_heads = d.c.N;
  p.num_key_value_heads = 1;
  p.scale_value = 1.0 / std::sqrt(576.0);
  p.input_layout = d.c.layout;
  p.sparse_mode = d.c.sparse;
  p.block_size = d.c.bs;
  p.query_quant_mode = 3;
  p.attention_out = out;
  p.softmax_lse_flag = lse != nullptr;
  p.softmax_lse = lse;
  return p;
}

}  // namespace mlaops::testing

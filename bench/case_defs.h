// The definitions of the benchmark suite's cases (cases_fia.cpp, cases_mla_prolog.cpp,
// cases_mla_preprocess.cpp) that the thread-scaling model (scaling_cases.cpp) uses as well: the
// dimensions, the shape lists of each size, and the FLOPs (bf16) / OPs (int8) and bytes of the
// FusedInferAttentionScoreV4 cases. One definition: the scaling model runs the full tables' shapes.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/suite.h"

namespace bench {

// ---- MlaPrologV2 / MlaPreprocess: DeepSeek-V3 weights (tiny: the CLI tests' small shapes) ----

struct MlaDims {
  int64_t He = 7168, Hcq = 1536, Hckv = 512, D = 128, Dr = 64;
  int64_t QKV() const { return Hckv + Dr + Hcq; }  // MlaPreprocess wdqkv rows
};
inline MlaDims mla_dims(Size s) { return s == Size::kTiny ? MlaDims{256, 64, 64, 16, 16} : MlaDims{}; }
inline std::vector<int64_t> mla_heads(Size s) {
  return s == Size::kTiny ? std::vector<int64_t>{4} : std::vector<int64_t>{32, 128};
}
inline std::vector<int64_t> prolog_tokens(Size s) {
  if (s == Size::kTiny) return {1, 16};
  if (s == Size::kQuick) return {1, 1024};
  return {1, 8, 32, 128, 1024};
}
inline std::vector<int64_t> preprocess_tokens(Size s) {
  if (s == Size::kTiny) return {1, 16};
  if (s == Size::kQuick) return {1, 1024};
  return {1, 8, 32, 1024};
}

// ---- FusedInferAttentionScoreV4 ----

// The shapes of the FIA tables at one size.
struct FiaShapes {
  int64_t D, Dr;                     // MLA latent and rope head dims (decode, MTP)
  std::vector<int64_t> Ns, Ls, Bs;   // MLA decode heads, KV lengths, batches
  int64_t gB, gN, gKVN, gD, gL;      // the GQA rows: batch, query / KV heads, head dim, KV length
  int64_t prefix_Lp, prefix_L;       // GQA decode with a shared prefix: prefix and own lengths
  std::vector<int64_t> mtp_Bs;       // MLA MTP decode batches (N, L below, Q_S 4)
  int64_t mtp_N, mtp_L, mtp_QS;
  std::vector<int64_t> fq_Ns;        // MLA decode full quant heads (B 1)
  int64_t fq_L;
  int64_t pre_T, pre_L, pre_N, pre_D;  // MLA prefill (rope head dim Dr)
  int64_t gpre_S, gpre_L;              // GQA prefill (batch 1, the GQA heads and head dim)
  std::vector<int64_t> mtp2_Ns = {}, mtp2_Bs = {};  // MTP Q_S 2 against Q_S 1 (L mtp_L), set below
};
inline FiaShapes fia_shapes(Size s) {
  FiaShapes f = s == Size::kTiny ? FiaShapes{64, 16, {4}, {300}, {1, 2}, 2, 8, 2, 64, 300, 200, 50, {1}, 4, 300, 4, {4},
                                             300, 16, 300, 4, 32, 64, 300}
                                 : FiaShapes{512, 64, {32, 128}, {1024, 4096, 32768}, {1, 8}, 8, 32, 8, 128, 4096, 4096,
                                             512, {1, 4}, 128, 4096, 4, {32, 128}, 4096, 128, 4096, 128, 128, 512, 2048};
  f.mtp2_Ns = s == Size::kTiny ? std::vector<int64_t>{4} : std::vector<int64_t>{16, 32};
  f.mtp2_Bs = s == Size::kTiny ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 8};
  if (s == Size::kQuick) f.Ls = {4096}, f.Bs = {1};
  return f;
}

// The work a case counts: the two matmuls (2 N L (Dk + Dv) per query row; causal rows only what
// they see), the KV read once.
struct FiaWork {
  double flops_bf16 = 0, ops_int8 = 0, bytes = 0;
};

// MLA decode: paged BF16 latent + rope cache, value = the latent.
inline FiaWork mla_decode_work(int64_t N, int64_t L, int64_t B, int64_t D, int64_t Dr) {
  FiaWork w;
  w.flops_bf16 = 2.0 * B * N * L * (D + Dr + D);
  w.bytes = 2.0 * B * L * (D + Dr);
  return w;
}

// KV positions the QS draft rows of one batch see: causal (sparse 3: row i sees L - QS + i + 1) or
// the binary tree (sparse 9: L - QS and its ancestors t, (t - 1) / 2, ..., 0).
inline double mtp_seen_per_batch(int64_t L, int64_t QS, bool tree) {
  if (!tree) return static_cast<double>(QS) * static_cast<double>(L - QS) + QS * (QS + 1) / 2.0;
  double seen = 0;
  for (int64_t i = 0; i < QS; ++i) {
    for (int64_t t = i;; t = (t - 1) / 2) {
      seen += 1;
      if (t == 0) break;
    }
    seen += static_cast<double>(L - QS);
  }
  return seen;
}
inline FiaWork mla_mtp_work(int64_t N, int64_t L, int64_t B, int64_t QS, int64_t D, int64_t Dr, bool tree) {
  FiaWork w;
  w.flops_bf16 = 2.0 * N * (static_cast<double>(B) * mtp_seen_per_batch(L, QS, tree)) * (D + Dr + D);
  w.bytes = 2.0 * B * L * (D + Dr);
  return w;
}

// MLA decode full quant: q . k on the int8 units, the rope part and P . V in bf16; the INT8
// latent and the BF16 rope read once.
inline FiaWork mla_decode_fq_work(int64_t N, int64_t L, int64_t B, int64_t D, int64_t Dr) {
  FiaWork w;
  w.ops_int8 = 2.0 * B * N * L * D;
  w.flops_bf16 = 2.0 * B * N * L * (Dr + D);
  w.bytes = static_cast<double>(B * L) * (D + 2 * Dr);
  return w;
}

// GQA decode over a cache of `kv_bytes` bytes per element (BF16 2, INT8 1, INT4 0.5).
inline FiaWork gqa_decode_work(int64_t B, int64_t N, int64_t KVN, int64_t D, int64_t L, double kv_bytes) {
  FiaWork w;
  w.flops_bf16 = 2.0 * B * N * L * 2 * D;
  w.bytes = kv_bytes * B * L * KVN * D * 2;
  return w;
}

// GQA decode with a shared prefix of Lp: the prefix counted once, the own KV once per batch
// (copied: every batch's Lp + L).
inline FiaWork gqa_prefix_work(int64_t B, int64_t N, int64_t KVN, int64_t D, int64_t Lp, int64_t L, bool copied) {
  FiaWork w;
  w.flops_bf16 = 2.0 * B * N * (Lp + L) * 2 * D;
  w.bytes = 2.0 * (copied ? B * (Lp + L) : Lp + B * L) * KVN * D * 2;
  return w;
}

// MLA prefill, causal right-down: query row i sees L - T + i + 1 positions.
inline FiaWork mla_prefill_work(int64_t T, int64_t L, int64_t N, int64_t D, int64_t Dr) {
  FiaWork w;
  const double seen = static_cast<double>(T) * static_cast<double>(L - T) + static_cast<double>(T * (T + 1)) / 2.0;
  w.flops_bf16 = 2.0 * N * seen * (D + Dr + D);
  w.bytes = 2.0 * L * N * (2 * D + Dr);
  return w;
}

// GQA prefill: BF16, or INT8 full quantisation (its two matmuls are int8 OPs).
inline FiaWork gqa_prefill_work(int64_t B, int64_t N, int64_t KVN, int64_t D, int64_t S, int64_t L, bool int8) {
  FiaWork w;
  (int8 ? w.ops_int8 : w.flops_bf16) = 2.0 * B * N * S * L * (D + D);
  w.bytes = (int8 ? 1.0 : 2.0) * B * L * KVN * D * 2;
  return w;
}

}  // namespace bench

// Shared pieces of the FusedInferAttentionScoreV4 operator tests: one case description, its
// materialisation (testkit/fia_test_data.h), the C++ API call, and the comparison with
// the float64 reference under the stated tolerances.
//
// Besides the per-element bounds: cosine similarity >= 0.9999 (FP16) / 0.9995 (BF16) and a mean
// relative error (denominator |ref| + 1e-3 rms) <= 2e-3 (FP16) / 1.5e-2 (BF16).
// Tolerances (per element, against the float64 reference evaluated with an FP64 output, i.e.
// without the final rounding):
//   * BF16 output: |op - ref| <= 7.8e-3 * |ref| + 1e-2 * rms(ref)   (P is rounded to BF16 before
//     P*V, as on the NPU, plus the final BF16 rounding: ~2 BF16 ulps)
//   * FP16 output: |op - ref| <= 5e-3 * |ref| + 5e-3 * rms(ref)
//   * softmaxLse (FP32): |op - ref| <= 1e-4 * |ref| + 1e-5; +inf positions exactly equal.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/runtime.h"
#include "testkit/compare.h"
#include "testkit/fia_test_data.h"
#include "tests/support/isa_list.h"
#include "ops/fia/fia_compare.h"
#include "reference/fia/fia_ref.h"

namespace mlaops::testing {

using fia_test::FiaCanonical;
using fia_test::FiaRun;
using fia_test::FiaRunConfig;
using fia_test::HostTensor;


// Explicit mask kinds for sparse 0/1; kTree: a random tree for sparse 9 (tree_mask()).
enum class MaskForm { kNone, kTemplate, kRank2, kRank3, kRank3Bcast, kRank4, kRank4Bcast, kRank2Batch, kTree };
// pseShift forms: random [B, N, ...], random broadcast [1, N, ...], the ALiBi full bias [B, N, Q_S, KV_S].
enum class PseForm { kNone, kRandom, kBroadcast, kAlibi };

struct FiaCase {
  std::string name;
  DType dtype = DType::kBFloat16;
  int64_t B = 1, N = 1, KVN = 1, Sq = 1, Skv = 1, D = 16, Dv = 16, Dr = 0;
  std::vector<int64_t> act_q, act_kv;  // empty: full extents
  FiaRunConfig cfg;
  MaskForm mask = MaskForm::kNone;
  DType mask_dtype = DType::kBool;
  double mask_density = 0.3;
  bool full_row_masked = false;  // one row of the explicit mask fully masked (row-invalid)
  PseForm pse = PseForm::kNone;
  bool sink = false;             // a random learnableSink [N]
  uint32_t seed = 1;
};

// gtest prints a case by its name (not its bytes).
inline void PrintTo(const FiaCase& c, std::ostream* os) { *os << c.name; }

// Case builders shared by the operator tests.
inline FiaCase fia_case(const char* name, DType dt, int64_t B, int64_t N, int64_t KVN, int64_t Sq, int64_t Skv,
                        int64_t D, const char* layout) {
  FiaCase c;
  c.name = name;
  c.dtype = dt;
  c.B = B, c.N = N, c.KVN = KVN, c.Sq = Sq, c.Skv = Skv, c.D = D, c.Dv = D;
  c.cfg.layout = layout;
  c.cfg.scale = 1.0 / std::sqrt(static_cast<double>(D));
  return c;
}
inline FiaCase& paged(FiaCase& c, int rank, int64_t bs) {
  c.cfg.paged = true;
  c.cfg.cache_rank = rank;
  c.cfg.block_size = bs;
  return c;
}
inline FiaCase& mla(FiaCase& c, int64_t dr) {
  c.Dr = dr;
  c.cfg.value_is_key = true;
  c.cfg.scale = 1.0 / std::sqrt(static_cast<double>(c.D + dr));
  return c;
}
inline FiaCase& sparse(FiaCase& c, int64_t mode, MaskForm m, int64_t pre = 2147483647, int64_t next = 2147483647) {
  c.cfg.sparse_mode = mode;
  c.mask = m;
  c.cfg.pre_tokens = pre;
  c.cfg.next_tokens = next;
  return c;
}

// The 2048x2048 template, built once per dtype and rank.
inline const HostTensor& template_mask(DType dt, int rank) {
  static std::vector<std::pair<std::pair<int, int>, std::unique_ptr<HostTensor>>> cache;
  for (auto& e : cache)
    if (e.first.first == static_cast<int>(dt) && e.first.second == rank) return *e.second;
  cache.emplace_back(std::make_pair(static_cast<int>(dt), rank),
                     std::make_unique<HostTensor>(fia_test::template_mask_2048(dt, rank)));
  return *cache.back().second;
}

// The tree mask of sparse mode 9 (docs/ops/fused_infer_attention_score.md "Tree mask") for the
// per-batch query lengths s1[b]: (B, Q_S, Q_S), or 1-D of length sum s1[b]^2 when `packed`.
// Element (b, i, t) is 0 (visible) iff node t is an ancestor of node i or i itself, where node
// t >= 1 has the parent parent(b, t) < t (node 0 the root); 1 elsewhere (and in unused cells).
template <class Parent>
HostTensor tree_mask(DType dt, const std::vector<int64_t>& s1, int64_t QS, bool packed, Parent parent) {
  const int64_t B = static_cast<int64_t>(s1.size());
  int64_t total = 0;
  for (int64_t s : s1) total += s * s;
  HostTensor m = packed ? HostTensor(dt, {total}, 1.0) : HostTensor(dt, {B, QS, QS}, 1.0);
  int64_t start = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = s1[static_cast<size_t>(b)];
    std::vector<int64_t> par(static_cast<size_t>(n), -1);
    for (int64_t t = 1; t < n; ++t) par[static_cast<size_t>(t)] = parent(b, t);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t t = i; t >= 0; t = par[static_cast<size_t>(t)]) {
        if (packed) m.set_flat(start + i * n + t, 0.0);
        else m.set({b, i, t}, 0.0);
      }
    start += n * n;
  }
  return m;
}

// Canonical data + mask for a case (the mask is stored in `mask`, referenced by cfg).
struct FiaCaseData {
  FiaCanonical canon;
  HostTensor mask;
  FiaRunConfig cfg;
};

inline std::unique_ptr<FiaCaseData> make_case_data(const FiaCase& c) {
  auto d = std::make_unique<FiaCaseData>();
  d->canon = fia_test::make_canonical(c.dtype, c.B, c.N, c.KVN, c.Sq, c.Skv, c.D, c.Dv, c.Dr, c.seed);
  if (!c.act_q.empty() || !c.act_kv.empty()) d->canon.set_lengths(c.act_q, c.act_kv);
  if (c.cfg.value_is_key) d->canon.v = d->canon.k;
  // With a paged cache the vendor wants mask / pse columns >= blockTable width * blockSize (FIA-19):
  // the table build_fia_run makes is ceil(max actKV / blockSize) + 1 wide unless cfg says otherwise.
  int64_t cols_min = 0;
  if (c.cfg.paged) {
    int64_t max_kv = c.act_kv.empty() ? c.Skv : 0;
    for (int64_t x : c.act_kv) max_kv = std::max(max_kv, x);
    const int64_t bs = c.cfg.block_size;
    cols_min = (c.cfg.table_width > 0 ? c.cfg.table_width : (max_kv + bs - 1) / bs + 1) * bs;
  }
  const int64_t pse_pad = std::max<int64_t>(3, cols_min - c.Skv);
  switch (c.pse) {
    case PseForm::kNone: break;
    case PseForm::kRandom: fia_test::set_random_pse(d->canon, false, c.seed * 13 + 5, -2.0, 2.0, 1, pse_pad); break;
    case PseForm::kBroadcast: fia_test::set_random_pse(d->canon, true, c.seed * 13 + 5, -2.0, 2.0, 1, pse_pad); break;
    case PseForm::kAlibi: fia_test::set_alibi_pse(d->canon); break;
  }
  if (c.sink) fia_test::set_random_sink(d->canon, c.seed * 17 + 3);
  d->cfg = c.cfg;
  const int64_t rows = c.Sq + 3, cols = std::max(c.Skv + 5, cols_min);  // larger than needed (absolute positions)
  std::mt19937 gen(c.seed * 31 + 7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto f = [&](int64_t, int64_t i, int64_t) {
    if (c.full_row_masked && i == 1) return true;
    return u(gen) < c.mask_density;
  };
  switch (c.mask) {
    case MaskForm::kNone: break;
    case MaskForm::kTemplate: d->mask = template_mask(c.mask_dtype, 2 + static_cast<int>(c.seed % 3)); break;
    case MaskForm::kRank2: d->mask = fia_test::make_mask3(c.mask_dtype, 1, rows, cols, f).reshaped({rows, cols}); break;
    case MaskForm::kRank2Batch: d->mask = fia_test::make_mask3(c.mask_dtype, 1, c.B, cols, f).reshaped({c.B, cols}); break;
    case MaskForm::kRank3: d->mask = fia_test::make_mask3(c.mask_dtype, c.B, rows, cols, f); break;
    case MaskForm::kRank3Bcast: d->mask = fia_test::make_mask3(c.mask_dtype, 1, rows, cols, f); break;
    case MaskForm::kRank4:
      d->mask = fia_test::make_mask3(c.mask_dtype, c.B, rows, cols, f).reshaped({c.B, 1, rows, cols});
      break;
    case MaskForm::kRank4Bcast:
      d->mask = fia_test::make_mask3(c.mask_dtype, 1, rows, cols, f).reshaped({1, 1, rows, cols});
      break;
    case MaskForm::kTree: {
      FiaLayout in = FiaLayout::kBSH, out = FiaLayout::kBSH;
      fia_test::layout_of_string(c.cfg.layout, &in, &out);
      d->mask = tree_mask(c.mask_dtype, d->canon.lens_q(), c.Sq, fia_test::layout_is_packed(in),
                          [&](int64_t, int64_t t) { return static_cast<int64_t>(gen() % static_cast<uint32_t>(t)); });
      break;
    }
  }
  if (c.mask != MaskForm::kNone) d->cfg.mask = &d->mask;
  return d;
}

// The float64 reference run of a case (FP64 output: no final rounding); a failure is recorded.
inline std::unique_ptr<FiaRun> reference_run(const FiaCaseData& d) {
  FiaRunConfig rcfg = d.cfg;
  rcfg.out_dtype = DType::kFloat64;
  auto ref = fia_test::build_fia_run(d.canon, rcfg);
  if (ref == nullptr) {
    ADD_FAILURE() << "the reference run could not be built";
  } else if (fused_infer_attention_score_v4_ref(ref->params) != kSuccess) {
    ADD_FAILURE() << last_error_message();
    ref.reset();
  }
  return ref;
}

// The operator through the C++ API (workspace from ..._workspace_size).
inline Status run_fia_cpp(const FiaParams& p) {
  uint64_t ws = 0;
  const Status s = fused_infer_attention_score_v4_workspace_size(p, &ws);
  if (s != kSuccess) return s;
  std::vector<uint64_t> buf(static_cast<size_t>(ws / 8 + 1));
  return fused_infer_attention_score_v4(p, buf.data(), ws);
}


// The operator against `ref` under every kernel configuration (each ISA level the machine has,
// and the portable attention row at the best level) and each thread count; each run's mismatch
// is an EXPECT failure naming the case, configuration and thread count. Returns the worst errors.
struct FiaWorst {
  double out_rel = 0, out_abs = 0, lse_rel = 0;
  int runs = 0;
  // Counts one compared run, keeping its errors where they are the worst so far.
  void add(const FiaCompare& r) {
    out_rel = std::max(out_rel, r.out.max_rel);
    out_abs = std::max(out_abs, r.out.max_abs);
    lse_rel = std::max(lse_rel, r.lse.max_rel);
    ++runs;
  }
};
// One kernel configuration of check_every_isa: an ISA level, and optionally a kernel override
// (the attention family's portable row at the best level: the panel path on that level's GEMM,
// softmax and convert rows for every case, whatever row the plan would take).
struct FiaKernelConfig {
  Isa isa;
  const char* override_rows;  // "" = none
};
// "<name> isa=<level>[ kernel=<rows>]": a case under a kernel configuration, for failure messages.
inline std::string fia_kernel_config_name(const std::string& name, const FiaKernelConfig& k) {
  return name + " isa=" + isa_name(k.isa) + (*k.override_rows ? " kernel=" : "") + k.override_rows;
}
inline std::vector<FiaKernelConfig> fia_kernel_configs() {
  std::vector<FiaKernelConfig> v;
  for (Isa isa : test_isas()) v.push_back({isa, ""});
  if (detected_isa() != Isa::kScalar) v.push_back({detected_isa(), "attn_scalar_panel"});
  return v;
}

inline FiaWorst check_every_isa(const FiaCaseData& data, const FiaRun& ref, DType dtype, bool lse,
                                const std::vector<int>& threads, const std::string& name) {
  FiaWorst w;
  for (const FiaKernelConfig& k : fia_kernel_configs()) {
    if (!set_isa(k.isa) || !set_kernel_override(k.override_rows)) continue;
    const std::string where = fia_kernel_config_name(name, k);
    for (int t : threads) {
      set_num_threads(t);
      auto op = fia_test::build_fia_run(data.canon, data.cfg);
      const Status s = op ? run_fia_cpp(op->params) : kParamInvalid;
      set_num_threads(0);
      if (s != kSuccess) {
        ADD_FAILURE() << where << " threads=" << t << ": " << last_error_message();
        continue;
      }
      const FiaCompare r = compare_fia(*op, ref, dtype, lse);
      EXPECT_TRUE(r.ok) << where << " threads=" << t << ": " << r.str();
      w.add(r);
    }
  }
  set_kernel_override("");
  reset_isa();
  return w;
}

}  // namespace mlaops::testing

// `mlaops demo --int8` (tools/cmd_demo.cpp has the options and the bf16 flow): the W8A8
// configuration, int8 LoRA weights and token rows, int8 latent cache:
//   prefill: MlaPrologV2 full quant + KV quant on all prompt tokens writes the PA_NZ caches (the
//            prefill attention of a W8A8 deployment is the unabsorbed bf16 path, not run here:
//            FIA MLA full quant takes at most 16 query tokens per request);
//   decode:  K steps of MlaPrologV2 full quant + KV quant (INT8 query, dequantScaleQNope) +
//            FusedInferAttentionScoreV4 MLA full quant (BSND_NBSD, INT8 NZ latent cache).
// Every call is checked against the float64 reference and timed as in the bf16 flow.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/fractal_nz.h"
#include "core/host_tensor.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/mla_prolog.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"
#include "reference/fia/fia_ref.h"
#include "reference/mla_prolog/mla_prolog_ref.h"
#include "testkit/compare.h"
#include "tools/demo_common.h"

namespace mlaops::tools::demo {
namespace {


// An int8 weight [rows, cols] in FRACTAL_NZ (4-D storage view) with its per-column dequant scale
// [1, cols]: w = w_int8 * scale, uniform in +-sqrt(3 / rows) as the bf16 layer's.
void int8_weight(int64_t rows, int64_t cols, std::mt19937_64& rng, HostTensor* w, HostTensor* scale) {
  HostTensor nd = make_tensor(DType::kInt8, {rows, cols});
  std::uniform_int_distribution<int> u(-127, 127);
  for (int64_t i = 0; i < nd.numel(); ++i) nd.view.ptr<int8_t>()[i] = static_cast<int8_t>(u(rng));
  int64_t s[4];
  nz_storage_shape(rows, cols, 1, s);
  *w = make_tensor(DType::kInt8, {s[0], s[1], s[2], s[3]}, Format::kFractalNZ);
  nd_to_nz(nd.bytes.data(), w->bytes.data(), rows, cols, 1);
  *scale = make_tensor(DType::kFloat32, {1, cols});
  for (int64_t j = 0; j < cols; ++j) scale->set(j, std::sqrt(3.0 / static_cast<double>(rows)) / 127.0);
}

struct LayerI8 {
  HostTensor wdq, wuq, wuk, wdkv, gamma_cq, gamma_ckv;
  HostTensor s_dq, s_uq, s_dkv, qs_ckv;  // dequantScaleW* [1, n]; quantScaleCkv [1, Hckv] (element 0 used)
};

}  // namespace

// The W8A8 configuration: prefill writes the int8 cache (MlaPrologV2 full quant + KV quant);
// decode runs MlaPrologV2 full quant + FIA MLA full quant. Checked and timed as the bf16 one.
int run_int8(const Options& o) {
  const Dims& d = o.d;
  const int64_t R = static_cast<int64_t>(o.prompts.size());
  if (d.Hckv != 512 || d.Dr != 64) {
    std::fprintf(stderr, "mlaops demo --int8: FIA MLA full quant needs Hckv 512 and Dr 64\n");
    return 2;
  }
  std::vector<int64_t> final_lens(o.prompts);
  for (auto& len : final_lens) len += o.steps;
  std::printf("mlaops demo --int8: DeepSeek MLA layer, W8A8: He %lld, Hcq %lld, Hckv %lld, D %lld + rope %lld, "
              "%lld heads, int8 weights (FRACTAL_NZ) and tokens, int8 latent cache (PA_NZ)\n",
              (long long)d.He, (long long)d.Hcq, (long long)d.Hckv, (long long)d.D, (long long)d.Dr, (long long)d.N);
  std::printf("  %lld requests, prompts", (long long)R);
  for (int64_t p : o.prompts) std::printf(" %lld", (long long)p);
  std::printf(", %lld decode steps; block %lld; isa %s, %d threads%s\n", (long long)o.steps, (long long)d.block,
              isa_name(active_isa()), num_threads(), o.check ? "" : "; checks off");
  std::printf("  prefill: MlaPrologV2 full quant writes the cache (its attention, the unabsorbed bf16 path of a W8A8 "
              "deployment, is not run); decode: MlaPrologV2 full quant + FIA MLA full quant\n");

  std::mt19937_64 wrng(o.seed);
  LayerI8 l;
  int8_weight(d.He, d.Hcq, wrng, &l.wdq, &l.s_dq);
  int8_weight(d.Hcq, d.N * (d.D + d.Dr), wrng, &l.wuq, &l.s_uq);
  l.wuk = random_bf16({d.N, d.D, d.Hckv}, wrng, std::sqrt(3.0 / static_cast<double>(d.D)));
  int8_weight(d.He, d.Hckv + d.Dr, wrng, &l.wdkv, &l.s_dkv);
  l.gamma_cq = random_bf16({d.Hcq}, wrng, 0.1);
  l.gamma_ckv = random_bf16({d.Hckv}, wrng, 0.1);
  for (HostTensor* g : {&l.gamma_cq, &l.gamma_ckv})
    for (int64_t i = 0; i < g->numel(); ++i) g->set(i, 1.0 + g->get(i));
  // per tensor: RmsNorm(c_KV) * gamma stays within ~+-5 here; 127 / 6 leaves headroom
  l.qs_ckv = make_tensor(DType::kFloat32, {1, d.Hckv});
  for (int64_t j = 0; j < d.Hckv; ++j) l.qs_ckv.set(j, 127.0 / 6.0);
  Cache cache = make_cache(d, final_lens, o.seed);
  cache.kv = make_tensor(DType::kInt8, {cache.blocks, d.block, 1, d.Hckv});  // PA_NZ: [Hckv / 32][block][32] per block
  const double weight_bytes = static_cast<double>(l.wdq.bytes.size() + l.wuq.bytes.size() + l.wuk.bytes.size() +
                                                  l.wdkv.bytes.size());
  const double int8_params = static_cast<double>(d.He * d.Hcq + d.Hcq * d.N * (d.D + d.Dr) + d.He * (d.Hckv + d.Dr));
  const double bf16_params = static_cast<double>(d.N * d.D * d.Hckv);
  std::mt19937_64 rng(o.seed * 1000003 + 17);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d.D + d.Dr));
  const float k_scale = 1.0f / static_cast<float>(l.qs_ckv.get(0));  // keyAntiquantScale = 1 / quantScaleCkv[0]
  HostTensor ks = make_tensor(DType::kFloat32, {1});
  ks.set(0, k_scale);

  Progress progress;
  progress.total = static_cast<int>(1 + o.steps);
  bool all_ok = true;
  std::vector<Row> rows;
  auto run_step = [&](bool prefill, int64_t step) -> bool {
    std::vector<std::pair<int64_t, int64_t>> tokens;
    std::vector<int64_t> kv_lens(static_cast<size_t>(R));
    for (int64_t r = 0; r < R; ++r) {
      const int64_t p = o.prompts[static_cast<size_t>(r)];
      const int64_t first = prefill ? 0 : p + step, last = prefill ? p : p + step + 1;
      for (int64_t pos = first; pos < last; ++pos) tokens.emplace_back(r, pos);
      kv_lens[static_cast<size_t>(r)] = last;
    }
    const int64_t T = static_cast<int64_t>(tokens.size());
    PrologIo io = make_prolog_io(d, cache, tokens, rng);
    io.x = make_tensor(DType::kInt8, {T, d.He});
    std::uniform_int_distribution<int> u(-127, 127);
    for (int64_t i = 0; i < io.x.numel(); ++i) io.x.view.ptr<int8_t>()[i] = static_cast<int8_t>(u(rng));
    HostTensor sx = make_tensor(DType::kFloat32, {T, 1});
    for (int64_t t = 0; t < T; ++t) sx.set(t, 1.0 / 127.0);
    io.q = make_tensor(DType::kInt8, {T, d.N, d.Hckv});
    HostTensor dqn = make_tensor(DType::kFloat32, {T, d.N, 1});
    Row row{prefill ? "prefill" : "decode " + std::to_string(step + 1), T, 0, 0, 0, 0, {}, {}};
    auto params = [&](HostTensor* q, HostTensor* qr, HostTensor* dq, HostTensor* kv, HostTensor* kr) {
      MlaPrologParams p = prolog_params(LayerView{l.wdq, l.wuq, l.wuk, l.wdkv, l.gamma_cq, l.gamma_ckv}, io, cache, q, qr,
                                        kv, kr);
      p.cache_mode = MlaPrologCacheMode::kPaNz;
      p.dequant_scale_x = &sx.view;
      p.dequant_scale_w_dq = &l.s_dq.view;
      p.dequant_scale_w_uq_qr = &l.s_uq.view;
      p.dequant_scale_w_dkv_kr = &l.s_dkv.view;
      p.quant_scale_ckv = &l.qs_ckv.view;
      p.dequant_scale_q_nope_out = &dq->view;
      return p;
    };
    // ---- MlaPrologV2 full quant + KV quant ----
    HostTensor ref_kv, ref_kr, ref_q, ref_qr, ref_dqn;
    if (o.check) {
      ref_kv = cache.kv.clone();
      ref_kr = cache.kr.clone();
      ref_q = io.q.clone();
      ref_qr = io.qr.clone();
      ref_dqn = dqn.clone();
    }
    MlaPrologParams pp = params(&io.q, &io.qr, &dqn, nullptr, nullptr);
    if (!run_prolog(pp, &row.prolog_us)) return false;
    const double pbytes = weight_bytes + static_cast<double>(io.x.bytes.size() + io.q.bytes.size() + io.qr.bytes.size());
    row.prolog_bound_us = std::max(pbytes / o.bounds.bw, 2.0 * static_cast<double>(T) * int8_params / o.bounds.int8 +
                                                     2.0 * static_cast<double>(T) * bf16_params / o.bounds.bf16) *
                          1e6;
    if (o.check) {
      MlaPrologParams rp = params(&ref_q, &ref_qr, &ref_dqn, &ref_kv, &ref_kr);
      if (mla_prolog_ref(rp) != kSuccess) {
        std::fprintf(stderr, "mlaops demo: the MlaPrologV2 reference failed: %s\n", last_error_message());
        return false;
      }
      // the operator tests' rules (tests/ops/mla_prolog/mla_prolog_harness.h): int8 outputs +-1
      // on at most 2 % of the elements, the query rope with the rounding-cascade allowance
      const testing::Tolerance i8 = testing::int8_tolerance(0.02);
      merge(&row.prolog_check, check_tensor(io.q.view, ref_q.view, i8, true));
      merge(&row.prolog_check, check_tensor(dqn.view, ref_dqn.view, testing::fp32_tolerance(0.02)));
      merge(&row.prolog_check, check_tensor(io.qr.view, ref_qr.view, testing::mla_prolog_query_tolerance(true)));
      merge(&row.prolog_check, check_tensor(cache.kv.view, ref_kv.view, i8, true));
      merge(&row.prolog_check, check_tensor(cache.kr.view, ref_kr.view, testing::bf16_tolerance(2)));
    }
    if (prefill) {
      row.attn_check.skipped = true;
      rows.push_back(row);
      all_ok = all_ok && row.prolog_check.ok;
      progress.step(row.phase.c_str());
      return true;
    }
    // ---- FusedInferAttentionScoreV4 MLA full quant (one token per request: BSND in, NBSD out) ----
    const TensorView kv5 = make_view(cache.kv.view.data, DType::kInt8, {cache.blocks, 1, d.Hckv / 32, d.block, 32},
                                     Format::kFractalNZ);
    const TensorView kr5 = make_view(cache.kr.view.data, DType::kBFloat16, {cache.blocks, 1, d.Dr / 16, d.block, 16},
                                     Format::kFractalNZ);
    const TensorView q4 = reshaped(io.q.view, {R, 1, d.N, d.Hckv});
    const TensorView qr4 = reshaped(io.qr.view, {R, 1, d.N, d.Dr});
    const TensorView dq3 = reshaped(dqn.view, {R, 1, d.N});
    HostTensor out = make_tensor(DType::kBFloat16, {d.N, R, 1, d.Hckv});
    HostTensor lse = make_tensor(DType::kFloat32, {R, d.N, 1, 1});
    FiaParams fp;
    fp.query = q4;
    fp.key = {kv5};
    fp.value = {kv5};
    fp.query_rope = &qr4;
    fp.key_rope = &kr5;
    fp.dequant_scale_query = &dq3;
    fp.query_quant_mode = 3;
    fp.key_antiquant_scale = &ks.view;
    fp.value_antiquant_scale = &ks.view;
    fp.block_table = &cache.table.view;
    fp.block_size = d.block;
    fp.actual_seq_lengths_kv = &kv_lens;
    fp.num_heads = d.N;
    fp.num_key_value_heads = 1;
    fp.scale_value = scale;
    fp.input_layout = "BSND_NBSD";
    fp.softmax_lse_flag = true;
    fp.attention_out = out.view;
    fp.softmax_lse = &lse.view;
    if (!run_fia(fp, &row.attn_us)) return false;
    double ops8 = 0, flops = 0, kv_bytes = 0;
    for (int64_t r = 0; r < R; ++r) {
      const double kl = static_cast<double>(kv_lens[static_cast<size_t>(r)]);
      ops8 += 2.0 * static_cast<double>(d.N) * kl * static_cast<double>(d.Hckv);             // q . k, int8
      flops += 2.0 * static_cast<double>(d.N) * kl * static_cast<double>(d.Dr + d.Hckv);     // rope, P . V
      kv_bytes += kl * static_cast<double>(d.Hckv + 2 * d.Dr);
    }
    row.attn_bound_us =
        std::max((kv_bytes + static_cast<double>(2 * out.bytes.size())) / o.bounds.bw, ops8 / o.bounds.int8 + flops / o.bounds.bf16) * 1e6;
    if (o.check && !check_fia_call(fp, out, lse, &row.attn_check)) return false;
    record_step(row, &rows, &all_ok, &progress);
    return true;
  };
  return run_steps(o, run_step, rows, all_ok);
}

}  // namespace mlaops::tools::demo

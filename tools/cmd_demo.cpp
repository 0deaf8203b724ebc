// `mlaops demo`: a DeepSeek-V3-shaped MLA attention layer (He 7168, Hcq 1536, Hckv 512, D 128,
// Dr 64; 32 heads by default, one shard of 128) serving a few requests on this CPU:
//   prefill: MlaPrologV2 on all prompt tokens (TND) writing the paged latent cache, then
//            FusedInferAttentionScoreV4 TND with sparse mode 3 (causal) and the softmax LSE;
//   decode:  K steps of MlaPrologV2 (one token per request) + FusedInferAttentionScoreV4
//            BNSD_NBSD over the paged cache.
// Every operator call is checked against the float64 reference on the same inputs, timed, and
// set against its roofline lower bound from this host's limits at the run's thread count (saved by
// the last `mlaops bench` on this CPU, or a quick probe: bench/limits_cache.h).
// `--int8`: the W8A8 configuration instead (tools/cmd_demo_int8.cpp; int8 LoRA weights and token
// rows, int8 latent cache):
//   prefill: MlaPrologV2 full quant + KV quant on all prompt tokens writes the PA_NZ caches (the
//            prefill attention of a W8A8 deployment is the unabsorbed bf16 path, not run here:
//            FIA MLA full quant takes at most 16 query tokens per request);
//   decode:  K steps of MlaPrologV2 full quant + KV quant (INT8 query, dequantScaleQNope) +
//            FusedInferAttentionScoreV4 MLA full quant (BSND_NBSD, INT8 NZ latent cache).
// The exit status is 1 if any check fails.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fractal_nz.h"
#include "core/host_tensor.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/mla_prolog.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"
#include "bench/limits_cache.h"
#include "reference/fia/fia_ref.h"
#include "reference/mla_prolog/mla_prolog_ref.h"
#include "testkit/compare.h"
#include "tools/commands.h"
#include "tools/demo_common.h"

namespace mlaops::tools {

using namespace demo;  // NOLINT: the demo's shared pieces (tools/demo_common.h)

namespace {

const char* kDemoUsage =
    "usage: mlaops demo [options]\n"
    "\n"
    "Runs a DeepSeek-V3-shaped MLA attention layer (He 7168, Hcq 1536, Hckv 512, D 128, Dr 64,\n"
    "bf16 weights in FRACTAL_NZ, paged KV cache with block size 128) serving several requests:\n"
    "a prefill of every prompt (MlaPrologV2 + FusedInferAttentionScoreV4 TND, causal, with LSE),\n"
    "then decode steps (MlaPrologV2 + FusedInferAttentionScoreV4 BNSD_NBSD). Each call is checked\n"
    "against the float64 reference and timed; the exit status is 1 if a check fails.\n"
    "\n"
    "options:\n"
    "  --heads N          query heads (default 32; 128 = the full layer)\n"
    "  --prompts a,b,...  prompt lengths of the requests (default 37,64,100)\n"
    "  --steps K          decode steps (default 4)\n"
    "  --seed S           random seed of weights and tokens (default 1)\n"
    "  --no-check         skip the float64 reference checks (timing only)\n"
    "  --tiny             small dimensions (He 256, Hcq 64, Hckv 64, D 32, Dr 16, 4 heads,\n"
    "                     block size 16): the whole flow in a fraction of a second (CI)\n"
    "  --int8             the W8A8 configuration: int8 weights and tokens, MlaPrologV2 full quant\n"
    "                     with KV quant (int8 PA_NZ latent cache) and, in decode, FIA MLA full\n"
    "                     quant on its int8 query (prefill writes the cache only; with --tiny\n"
    "                     Hckv 512 and Dr 64, which FIA MLA full quant requires)\n"
    "  --help             this text\n"
    "Environment: MLAOPS_NUM_THREADS / OMP_NUM_THREADS, MLAOPS_ISA.\n";

bool parse_int(const char* s, int64_t lo, int64_t hi, int64_t* out) {
  char* end = nullptr;
  const long long v = std::strtoll(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// Returns 0 to run, 1 to exit 0 (help), 2 on a bad argument (message printed).
int parse(int argc, char** argv, Options* o) {
  bool heads_given = false, prompts_given = false, tiny = false;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "mlaops demo: %s needs a value\n\n%s", name, kDemoUsage);
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kDemoUsage, stdout);
      return 1;
    } else if (a == "--heads") {
      const char* v = value("--heads");
      if (!v || !parse_int(v, 1, 128, &o->d.N)) {
        if (v) std::fprintf(stderr, "mlaops demo: --heads: allowed 1..128, got '%s'\n", v);
        return 2;
      }
      heads_given = true;
    } else if (a == "--prompts") {
      const char* v = value("--prompts");
      if (!v) return 2;
      o->prompts.clear();
      std::string s = v;
      size_t pos = 0;
      while (pos <= s.size()) {
        const size_t comma = s.find(',', pos);
        const std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        int64_t len;
        if (!parse_int(item.c_str(), 1, 4096, &len)) {
          std::fprintf(stderr, "mlaops demo: --prompts: each length allowed 1..4096, got '%s'\n", item.c_str());
          return 2;
        }
        o->prompts.push_back(len);
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
      if (o->prompts.size() > 64) {
        std::fprintf(stderr, "mlaops demo: --prompts: at most 64 requests, got %zu\n", o->prompts.size());
        return 2;
      }
      prompts_given = true;
    } else if (a == "--steps") {
      const char* v = value("--steps");
      if (!v || !parse_int(v, 0, 1024, &o->steps)) {
        if (v) std::fprintf(stderr, "mlaops demo: --steps: allowed 0..1024, got '%s'\n", v);
        return 2;
      }
    } else if (a == "--seed") {
      const char* v = value("--seed");
      int64_t s;
      if (!v || !parse_int(v, 0, INT64_MAX, &s)) {
        if (v) std::fprintf(stderr, "mlaops demo: --seed: allowed a non-negative integer, got '%s'\n", v);
        return 2;
      }
      o->seed = static_cast<uint64_t>(s);
    } else if (a == "--no-check") {
      o->check = false;
    } else if (a == "--tiny") {
      tiny = true;
    } else if (a == "--int8") {
      o->int8 = true;
    } else {
      std::fprintf(stderr, "mlaops demo: unknown option '%s'\n\n%s", a.c_str(), kDemoUsage);
      return 2;
    }
  }
  if (tiny) {
    const int64_t n = o->d.N;
    o->d = Dims{256, 64, o->int8 ? 512 : 64, 32, o->int8 ? 64 : 16, heads_given ? n : 4, 16};
    if (!prompts_given) o->prompts = {5, 9, 3};
    if (o->steps == 4) o->steps = 2;
  }
  return 0;
}


// ---- the bf16 layer ----

// A bf16 weight [rows, cols] in FRACTAL_NZ, the 4-D storage view as the aclnn examples pass it.
HostTensor nz_weight(int64_t rows, int64_t cols, std::mt19937_64& rng) {
  const HostTensor nd = random_bf16({rows, cols}, rng, std::sqrt(3.0 / static_cast<double>(rows)));
  int64_t s[4];
  nz_storage_shape(rows, cols, 2, s);
  HostTensor nz = make_tensor(DType::kBFloat16, {s[0], s[1], s[2], s[3]}, Format::kFractalNZ);
  nd_to_nz(nd.bytes.data(), nz.bytes.data(), rows, cols, 2);
  return nz;
}

struct Layer {
  HostTensor wdq, wuq, wuk, wdkv, gamma_cq, gamma_ckv;
};

Layer make_layer(const Dims& d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Layer l;
  l.wdq = nz_weight(d.He, d.Hcq, rng);
  l.wuq = nz_weight(d.Hcq, d.N * (d.D + d.Dr), rng);
  l.wuk = random_bf16({d.N, d.D, d.Hckv}, rng, std::sqrt(3.0 / static_cast<double>(d.D)));
  l.wdkv = nz_weight(d.He, d.Hckv + d.Dr, rng);
  l.gamma_cq = random_bf16({d.Hcq}, rng, 0.1);
  l.gamma_ckv = random_bf16({d.Hckv}, rng, 0.1);
  for (HostTensor* g : {&l.gamma_cq, &l.gamma_ckv})  // around 1
    for (int64_t i = 0; i < g->numel(); ++i) g->set(i, 1.0 + g->get(i));
  return l;
}

}  // namespace

int cmd_demo(int argc, char** argv) {
  Options o;
  const int pr = parse(argc, argv, &o);
  if (pr == 1) return 0;
  if (pr == 2) return 2;
  {
    std::string source, noisy;
    const bench::Limits l = bench::host_limits(num_threads(), &source, &noisy);
    o.bounds = {l.bw, l.bf16, l.int8, source, noisy};
  }
  if (o.int8) return run_int8(o);
  const Dims& d = o.d;
  const int64_t R = static_cast<int64_t>(o.prompts.size());
  std::vector<int64_t> final_lens(o.prompts);
  for (auto& len : final_lens) len += o.steps;

  std::printf("mlaops demo: DeepSeek MLA layer, He %lld, Hcq %lld, Hckv %lld, D %lld + rope %lld, %lld heads, "
              "bf16 weights (FRACTAL_NZ)\n",
              (long long)d.He, (long long)d.Hcq, (long long)d.Hckv, (long long)d.D, (long long)d.Dr, (long long)d.N);
  std::printf("  %lld requests, prompts", (long long)R);
  for (int64_t p : o.prompts) std::printf(" %lld", (long long)p);
  std::printf(", %lld decode steps; paged KV cache, block %lld; isa %s, %d threads%s\n", (long long)o.steps,
              (long long)d.block, isa_name(active_isa()), num_threads(), o.check ? "" : "; checks off");
  std::printf("  int8 configuration (MlaPrologV2 full quant + int8 KV cache + FIA MLA full quant): "
              "mlaops demo --int8\n");

  const Layer layer = make_layer(d, o.seed);
  Cache cache = make_cache(d, final_lens, o.seed);
  std::mt19937_64 rng(o.seed * 1000003 + 17);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d.D + d.Dr));
  const double weight_bytes = static_cast<double>(layer.wdq.bytes.size() + layer.wuq.bytes.size() +
                                                  layer.wuk.bytes.size() + layer.wdkv.bytes.size());
  const double params = static_cast<double>(d.He * d.Hcq + d.Hcq * d.N * (d.D + d.Dr) + d.He * (d.Hckv + d.Dr) +
                                            d.N * d.D * d.Hckv);
  // the 2048 x 2048 causal template of sparse mode 3 (shape-checked; the rule is analytic)
  HostTensor mask = make_tensor(DType::kBool, {2048, 2048});
  for (int64_t i = 0; i < 2048; ++i)
    for (int64_t j = i + 1; j < 2048; ++j) mask.view.ptr<uint8_t>()[i * 2048 + j] = 1;

  Progress progress;
  progress.total = static_cast<int>(1 + o.steps);
  bool all_ok = true;
  std::vector<Row> rows;

  // Runs one step (prefill: every prompt token; decode: one token per request).
  auto run_step = [&](bool prefill, int64_t step) -> bool {
    std::vector<std::pair<int64_t, int64_t>> tokens;  // (request, position)
    std::vector<int64_t> q_lens(static_cast<size_t>(R)), kv_lens(static_cast<size_t>(R));
    for (int64_t r = 0; r < R; ++r) {
      const int64_t p = o.prompts[static_cast<size_t>(r)];
      const int64_t first = prefill ? 0 : p + step, last = prefill ? p : p + step + 1;
      for (int64_t pos = first; pos < last; ++pos) tokens.emplace_back(r, pos);
      q_lens[static_cast<size_t>(r)] = last - first;
      kv_lens[static_cast<size_t>(r)] = last;
    }
    const int64_t T = static_cast<int64_t>(tokens.size());
    PrologIo io = make_prolog_io(d, cache, tokens, rng);
    Row row{prefill ? "prefill" : "decode " + std::to_string(step + 1), T, 0, 0, 0, 0, {}, {}};

    // ---- MlaPrologV2 ----
    HostTensor ref_kv, ref_kr, ref_q, ref_qr;
    if (o.check) {
      ref_kv = cache.kv.clone();
      ref_kr = cache.kr.clone();
      ref_q = io.q.clone();
      ref_qr = io.qr.clone();
    }
    const LayerView lv{layer.wdq, layer.wuq, layer.wuk, layer.wdkv, layer.gamma_cq, layer.gamma_ckv};
    MlaPrologParams pp = prolog_params(lv, io, cache, &io.q, &io.qr, nullptr, nullptr);
    if (!run_prolog(pp, &row.prolog_us)) return false;
    const double pbytes = weight_bytes + static_cast<double>(io.x.bytes.size() + io.q.bytes.size() + io.qr.bytes.size());
    row.prolog_bound_us = std::max(pbytes / o.bounds.bw, 2.0 * static_cast<double>(T) * params / o.bounds.bf16) * 1e6;
    if (o.check) {
      MlaPrologParams rp = prolog_params(lv, io, cache, &ref_q, &ref_qr, &ref_kv, &ref_kr);
      if (mla_prolog_ref(rp) != kSuccess) {
        std::fprintf(stderr, "mlaops demo: the MlaPrologV2 reference failed: %s\n", last_error_message());
        return false;
      }
      // the operator tests' rules (tests/ops/mla_prolog/mla_prolog_harness.h,
      // docs/ops/mla_prolog.md)
      testing::Tolerance tq = testing::bf16_tolerance(2);
      tq.max_bad_frac = 0.001;  // rare rounding-boundary flips along the query's rounding chain
      tq.cap_rms = 0.05;
      const testing::Tolerance tc = testing::bf16_tolerance(2);
      merge(&row.prolog_check, check_tensor(io.q.view, ref_q.view, tq));
      merge(&row.prolog_check, check_tensor(io.qr.view, ref_qr.view, tq));
      merge(&row.prolog_check, check_tensor(cache.kv.view, ref_kv.view, tc));
      merge(&row.prolog_check, check_tensor(cache.kr.view, ref_kr.view, tc));
    }

    // ---- FusedInferAttentionScoreV4 over the paged cache ----
    std::vector<int64_t> cum(static_cast<size_t>(R));
    std::partial_sum(q_lens.begin(), q_lens.end(), cum.begin());
    FiaParams fp;
    const TensorView kv4 = reshaped(cache.kv.view, {cache.blocks, 1, d.block, d.Hckv});  // BnNBsD, KV_N = 1
    const TensorView kr4 = reshaped(cache.kr.view, {cache.blocks, 1, d.block, d.Dr});
    fp.key = {kv4};
    fp.value = {kv4};  // MLA: the value is the key latent
    fp.key_rope = &kr4;
    fp.block_table = &cache.table.view;
    fp.block_size = d.block;
    fp.actual_seq_lengths_kv = &kv_lens;
    fp.num_heads = d.N;
    fp.num_key_value_heads = 1;
    fp.scale_value = scale;
    fp.softmax_lse_flag = true;
    HostTensor out, lse;
    TensorView q_view, qr_view;
    if (prefill) {  // TND, causal
      fp.input_layout = "TND";
      q_view = io.q.view;
      qr_view = io.qr.view;
      fp.actual_seq_lengths = &cum;
      fp.sparse_mode = 3;
      fp.atten_mask = &mask.view;
      out = make_tensor(DType::kBFloat16, {T, d.N, d.Hckv});
      lse = make_tensor(DType::kFloat32, {T, d.N, 1});
    } else {  // one token per request: BNSD in, NBSD out
      fp.input_layout = "BNSD_NBSD";
      q_view = reshaped(io.q.view, {R, d.N, 1, d.Hckv});
      qr_view = reshaped(io.qr.view, {R, d.N, 1, d.Dr});
      out = make_tensor(DType::kBFloat16, {d.N, R, 1, d.Hckv});
      lse = make_tensor(DType::kFloat32, {R, d.N, 1, 1});
    }
    fp.query = q_view;
    fp.query_rope = &qr_view;
    fp.attention_out = out.view;
    fp.softmax_lse = &lse.view;
    if (!run_fia(fp, &row.attn_us)) return false;
    double flops = 0, kv_bytes = 0;
    for (int64_t r = 0; r < R; ++r) {
      const int64_t ql = q_lens[static_cast<size_t>(r)], kl = kv_lens[static_cast<size_t>(r)];
      for (int64_t i = 0; i < ql; ++i)  // causal: row i of the new tokens sees kl - ql + i + 1 positions
        flops += 2.0 * static_cast<double>(d.N) * static_cast<double>(kl - ql + i + 1) *
                 static_cast<double>(d.Hckv + d.Dr + d.Hckv);
      kv_bytes += static_cast<double>(kl) * static_cast<double>(d.Hckv + d.Dr) * 2.0;
    }
    row.attn_bound_us = std::max((kv_bytes + static_cast<double>(2 * out.bytes.size())) / o.bounds.bw, flops / o.bounds.bf16) * 1e6;
    if (o.check && !check_fia_call(fp, out, lse, &row.attn_check)) return false;
    record_step(row, &rows, &all_ok, &progress);
    return true;
  };

  return run_steps(o, run_step, rows, all_ok);
}

}  // namespace mlaops::tools

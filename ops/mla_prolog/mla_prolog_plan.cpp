// MlaProlog V1 / V2WeightNz / V3WeightNz phase 1 after the rules: the plan (weights as panels, the kernel of
// each kind of work, chunking, threads, workspace layout) and its explanation.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/fractal_nz.h"
#include "core/workspace.h"
#include "ops/mla_prolog/mla_prolog.h"
#include "ops/common/mla_uk.h"

namespace mlaops {
namespace {

// A checked LoRA weight as panels: FRACTAL_NZ panels of c0 columns, or ND rows read as panels
// of 16 columns.
PanelMatrix panels(const TensorView& w, int64_t rows, int64_t cols) {
  PanelMatrix m;
  m.rows = rows;
  m.cols = cols;
  if (w.format == Format::kFractalNZ) {
    NzMatrix nz;
    resolve_nz(w, "", "", "", &nz);  // checked in phase 1
    m.panel_width = nz.c0;
    m.ldb = nz.c0;
    m.panel_stride = nz.r1 * 16 * nz.c0;
  } else {
    m.panel_width = 16;
    m.ldb = cols;
    m.panel_stride = 16;
  }
  return m;
}

}  // namespace

std::vector<StageSlot> mla_prolog_stage_slots(MlaPrologParams* p, std::vector<TensorView>* store) {
  std::vector<StageSlot> slots = {{"tokenX", &p->token_x},           {"weightDq", &p->weight_dq},
                                  {"weightUqQr", &p->weight_uq_qr},  {"weightUk", &p->weight_uk},
                                  {"weightDkvKr", &p->weight_dkv_kr}, {"rmsnormGammaCq", &p->rmsnorm_gamma_cq},
                                  {"rmsnormGammaCkv", &p->rmsnorm_gamma_ckv}, {"ropeSin", &p->rope_sin},
                                  {"ropeCos", &p->rope_cos},         {"cacheIndex", &p->cache_index, true}};
  const OptionalInput optional[] = {{&p->dequant_scale_x, "dequantScaleXOptional"},
                                    {&p->dequant_scale_w_dq, "dequantScaleWDqOptional"},
                                    {&p->dequant_scale_w_uq_qr, "dequantScaleWUqQrOptional"},
                                    {&p->dequant_scale_w_dkv_kr, "dequantScaleWDkvKrOptional"},
                                    {&p->quant_scale_ckv, "quantScaleCkvOptional"},
                                    {&p->quant_scale_ckr, "quantScaleCkrOptional"},
                                    {&p->smooth_scales_cq, "smoothScalesCqOptional"},
                                    {&p->actual_seq_len, "actualSeqLenOptional", true},
                                    {&p->k_nope_clip_alpha, "kNopeClipAlphaOptional"}};
  store->clear();
  store->reserve(std::size(optional));  // no reallocation: the slots point into it
  add_optional_slots(optional, store, &slots);
  return slots;
}

CallSignature mla_prolog_signature(const MlaPrologParams& p) {
  CallSignature s;
  for (const check::Named& n : mla_prolog_tensors(p)) s.add(n.name, n.t);
  s.add("rmsnormEpsilonCq", p.rmsnorm_epsilon_cq);
  s.add("rmsnormEpsilonCkv", p.rmsnorm_epsilon_ckv);
  s.add("cacheModeOptional", static_cast<int64_t>(p.cache_mode));
  s.add("qcQrScale", p.qc_qr_scale);
  s.add("kcScale", p.kc_scale);
  s.add("kvQuantPerTile", static_cast<int64_t>(p.kv_quant_per_tile));
  return s;
}

Status mla_prolog_make_plan(const MlaPrologParams& caller, const MlaPrologCheckOptions& o, OpPlan* out) {
  *out = OpPlan();
  auto plan = std::make_unique<MlaPrologPlan>();
  MlaPrologPlan& pl = *plan;
  const char* op = o.op;
  // Strided inputs (ops/common/auto_contiguous.h): planned first; the rules see their dense shapes, the
  // pointer rules (and the signature) the caller's views.
  MlaPrologParams p = caller;
  std::vector<TensorView> store;
  MLAOPS_TRY(stage_plan(op, "MP-05", mla_prolog_stage_slots(&p, &store), &pl.stage));
  MLAOPS_TRY(mla_prolog_check(p, o, &pl.dims, &pl.scenario));
  MLAOPS_TRY(mla_prolog_check_pointers(caller, pl.scenario, op));
  const MlaPrologDims& d = pl.dims;
  pl.op = kMlaPrologOp;
  pl.options = o;
  pl.cache_mode = p.cache_mode;
  pl.query_norm = p.query_norm_out != nullptr;
  pl.signature = mla_prolog_signature(caller);
  pl.wdq = panels(p.weight_dq, d.He, d.Hcq);
  pl.wuqqr = panels(p.weight_uq_qr, d.Hcq, d.N * (d.D + d.Dr));
  pl.wdkvkr = panels(p.weight_dkv_kr, d.He, d.Hckv + d.Dr);
  pl.alpha_q = static_cast<float>(p.qc_qr_scale);
  pl.alpha_kv = static_cast<float>(p.kc_scale);
  pl.scale_q = std::fabs(pl.alpha_q - 1.0f) >= FLT_EPSILON;
  pl.scale_kv = std::fabs(pl.alpha_kv - 1.0f) >= FLT_EPSILON;

  // ---- kernels: one ISA level for the whole call, the rows of the registry's families ----
  pl.isa = active_isa();
  const bool full = mla_prolog_is_full_quant(pl.scenario);
  const bool quant_a = pl.scenario != MlaPrologScenario::kNoQuant;
  using kernels::gemm_layout;
  const auto& x_fam = full ? kernels::gemm_s8_family() : kernels::gemm_bf16_family();
  const auto& uq_fam = quant_a ? kernels::gemm_s8_family() : kernels::gemm_bf16_family();
  pl.picks[0] = check::pick_gemm("x projection [W_DQ | W_DKV_KR]", x_fam, pl.isa,
                                 {gemm_layout(pl.wdq.panel_width, pl.wdq.ldb),
                                  gemm_layout(pl.wdkvkr.panel_width, pl.wdkvkr.ldb)},
                                 &pl.x_gemm);
  pl.picks[1] = check::pick_gemm("c_Q' @ W_UQ_QR per head", uq_fam, pl.isa,
                                 {gemm_layout(pl.wuqqr.panel_width, pl.wuqqr.ldb)}, &pl.uq_gemm);
  pl.picks[2] = check::pick_gemm("q_nope @ W_UK per head", kernels::gemm_bf16_family(), pl.isa,
                                 {gemm_layout(16, 16), gemm_layout(16, d.Hckv)}, &pl.uk_gemm);  // ops/common/mla_uk.h
  pl.picks[3] = check::pick_row("token and head rows (bf16 rounding and conversion, absmax, int8 quant, RoPE)",
                                kernels::convert_family(), "", pl.isa, &pl.cv);
  pl.rowsum = kernels::gemm_s8_rowsum(pl.isa, quant_a);

  // ---- chunking, threads, workspace ----
  pl.threads = num_threads();
  pl.chunk = std::min<int64_t>(std::max<int64_t>(d.T, 1), 256);
  const int64_t Wq = pl.wuqqr.panel_width;
  // one head's columns [n*(D+Dr), (n+1)*(D+Dr)) widened to panel boundaries
  pl.head_cols = round_up(d.D + d.Dr, Wq) + Wq;
  const int64_t c = pl.chunk;
  const int64_t proj_cols = d.Hcq + d.Hckv + d.Dr;  // fits: checked with the weights' shapes
  int64_t acc1, a2, kv, kr, per_thread, threads_total;
  MLAOPS_CHECK(product_ok({c, proj_cols, 4}, &acc1) && product_ok({c, d.Hcq, 2}, &a2) &&
                   product_ok({c, d.kv_row, 2}, &kv) && product_ok({c, d.Dr, 2}, &kr),
               kParamInvalid, "%s: MP-14 workspace rows overflow int64", op);
  // Per thread: a head's W_UQ_QR columns [c, head_cols] fp32, q_nope [c, D] bf16, the W_UK
  // product of uk_rows tokens [uk_rows, Hckv] fp32 and W_UK[n]'s NZ copy (ops/common/mla_uk.h).
  pl.uk_rows = mla_uk_rows(c);
  int64_t t1, t2, t3;
  MLAOPS_CHECK(product_ok({c, pl.head_cols, 4}, &t1) && product_ok({c, d.D, 2}, &t2) &&
                   product_ok({pl.uk_rows, d.Hckv, 4}, &t3) && add_ok(t1, t2, &per_thread) &&
                   add_ok(per_thread, t3, &per_thread) && add_ok(per_thread, mla_uk_nz_bytes(d.D, d.Hckv, c, true), &per_thread),
               kParamInvalid, "%s: MP-14 workspace per thread overflows int64", op);
  per_thread = round_up(per_thread + 4 * kWorkspaceAlign, kWorkspaceAlign);
  // Then one phase at a time: the x projection's GEMM scratch, a token row's two vectors, or a
  // head's W_UQ_QR GEMM scratch and its rope vector (the W_UK GEMM, bf16, needs none).
  const auto a_kind = [](bool s8) { return s8 ? kernels::GemmKind::kS8 : kernels::GemmKind::kBf16; };
  const auto vec = [](int64_t n) { return round_up(n * 4, kWorkspaceAlign); };
  const int64_t x_scratch = kernels::gemm_scratch_bytes(a_kind(full), c, d.He, proj_cols);
  const int64_t rows_scratch = vec(std::max(d.Hcq, d.Hckv + d.Dr)) + vec(d.Dr);
  const int64_t head_scratch = kernels::gemm_scratch_bytes(a_kind(quant_a), c, d.Hcq, pl.head_cols) + vec(d.Dr);
  pl.off_scratch = per_thread;
  MLAOPS_CHECK(add_ok(per_thread, std::max({x_scratch, rows_scratch, head_scratch}), &per_thread), kParamInvalid,
               "%s: MP-14 workspace per thread overflows int64", op);
  MLAOPS_CHECK(mul_ok(per_thread, pl.threads, &threads_total), kParamInvalid, "%s: MP-14 workspace of all threads overflows int64", op);
  WorkspaceLayout l(op, "MP-14 workspace overflows int64 (the sum of its parts)");
  MLAOPS_TRY(l.add(acc1, &pl.off_acc1));
  MLAOPS_TRY(l.add(a2, &pl.off_a2));
  MLAOPS_TRY(l.add(c * 4, &pl.off_scale));
  MLAOPS_TRY(l.add(quant_a ? 2 * c * 4 : 0, &pl.off_rowsum));  // int8 A operands only
  MLAOPS_TRY(l.add(kv, &pl.off_kv));
  MLAOPS_TRY(l.add(kr, &pl.off_kr));
  MLAOPS_TRY(l.add(threads_total, &pl.off_thread));
  int64_t slots;
  MLAOPS_CHECK(mul_ok(d.T, 8, &slots), kParamInvalid, "%s: MP-14 workspace slots overflow int64", op);
  MLAOPS_TRY(l.add(slots, &pl.off_slots));
  // ---- GEMM routes: per projection, the library's kernels or oneDNN (ops/common/gemm_route.h) ----
  if (d.T > 0) {
    GemmRouteQuery q;
    q.op = op;
    q.m_max = c;
    q.chunks = ceil_div(d.T, c);
    q.m_last = d.T - (q.chunks - 1) * c;
    q.threads = pl.threads;
    q.isa = pl.isa;
    q.elem = full ? kernels::GemmElem::kS8 : kernels::GemmElem::kBf16;
    q.K = d.He, q.lda = d.He, q.ldc = proj_cols;
    q.what = "x @ [W_DQ|W_DKV_KR]", q.N = proj_cols;
    pl.route_x = choose_gemm_route(q);
    q.what = "c_Q' @ W_UQ_QR", q.elem = quant_a ? kernels::GemmElem::kS8 : kernels::GemmElem::kBf16;
    q.K = d.Hcq, q.lda = d.Hcq, q.N = d.N * (d.D + d.Dr), q.ldc = q.N;
    pl.route_uq = choose_gemm_route(q);
  }
  int64_t q_all = 0;
  MLAOPS_CHECK(!pl.route_uq.onednn || product_ok({c, d.N * (d.D + d.Dr), 4}, &q_all), kParamInvalid,
               "%s: MP-14 workspace rows overflow int64", op);
  MLAOPS_TRY(l.add(pl.route_x.workspace_bytes(), &pl.off_route_x));
  MLAOPS_TRY(l.add(pl.route_uq.workspace_bytes(), &pl.off_route_uq));
  MLAOPS_TRY(l.add(q_all, &pl.off_q_all));
  pl.thread_bytes = per_thread;
  // the workspace's parts: the strided inputs' dense copies, then the operator's own
  WorkspaceLayout all(op, "MP-14 workspace overflows int64 (the sum of its parts)");
  int64_t at = 0;
  MLAOPS_TRY(all.add(pl.stage.bytes, &at));
  MLAOPS_TRY(all.add(l.total(), &at));
  const int64_t total = d.T == 0 ? 0 : all.total();
  pl.workspace_bytes = static_cast<uint64_t>(total);
  verbose_plan(pl);
  *out = OpPlan(std::move(plan));
  return kSuccess;
}

std::string MlaPrologPlan::explain() const {
  const MlaPrologDims& d = dims;
  char b[512];
  std::string s;
  std::snprintf(b, sizeof b,
                "%s: %s, tokenX %s T=%lld, He=%lld Hcq=%lld N=%lld D=%lld Dr=%lld Hckv=%lld, caches %lld x %lld %s\n",
                options.op, mla_prolog_scenario_name(scenario), d.bsh ? "[B, S, He]" : "[T, He]",
                (long long)d.T, (long long)d.He, (long long)d.Hcq, (long long)d.N, (long long)d.D, (long long)d.Dr,
                (long long)d.Hckv, (long long)d.block_num, (long long)d.block_size,
                mla_prolog_cache_mode_name(cache_mode));
  s += b;
  if (mla_prolog_cache_blocks(cache_mode) || !mla_prolog_cache_paged(cache_mode) || mla_prolog_is_per_tile(scenario)) {
    std::snprintf(b, sizeof b, "V3 cache: %s%s\n",
                  mla_prolog_cache_blocks(cache_mode)    ? "cacheIndex holds block ids (token s of a batch: block s / BlockSize)"
                  : !mla_prolog_cache_paged(cache_mode) ? "token t to cache row t (no cacheIndex)"
                                                        : "cacheIndex holds slots",
                  mla_prolog_is_per_tile(scenario)
                      ? "; per-tile int8 KV quant: rows of Hckv int8 | Dr bf16 rope | fp32 scale per 128 channels"
                      : "");
    s += b;
  }
  if (scale_q || scale_kv || query_norm) {
    std::snprintf(b, sizeof b, "V3: qcQrScale %s, kcScale %s, queryNormOut %s\n",
                  scale_q ? std::to_string(alpha_q).c_str() : "1 (no multiply)",
                  scale_kv ? std::to_string(alpha_kv).c_str() : "1 (no multiply)", query_norm ? "written" : "off");
    s += b;
  }
  std::snprintf(b, sizeof b, "weights as panels: W_DQ, W_UQ_QR, W_DKV_KR %lld, %lld, %lld columns wide; W_UK ND\n",
                (long long)wdq.panel_width, (long long)wuqqr.panel_width, (long long)wdkvkr.panel_width);
  s += b;
  s += "kernels (isa " + std::string(isa_name(isa)) + "):\n" + check::explain_kernels(picks);
  if (d.T > 0)
    s += "GEMM routes: x @ [W_DQ | W_DKV_KR]: " + route_x.why + "\n  c_Q' @ W_UQ_QR: " + route_uq.why + "\n";
  if (d.T == 0) return s + "work: none (T = 0: nothing computed, the caches untouched); workspace 0 bytes\n";
  const int64_t chunks = ceil_div(d.T, chunk);
  std::snprintf(b, sizeof b,
                "work: %lld chunk(s) of up to %lld tokens; per chunk: the x projection over %lld weight panels and the "
                "token rows (parallel_for), the %lld heads on %d thread(s) (parallel_items), then the cache scatter "
                "in token order%s\n",
                (long long)chunks, (long long)chunk,
                (long long)(ceil_div(d.Hcq, wdq.panel_width) + ceil_div(d.Hckv + d.Dr, wdkvkr.panel_width)),
                (long long)d.N, threads, d.block_num == 0 ? " (BlockNum = 0: no scatter)" : "");
  s += b;
  std::snprintf(b, sizeof b,
                "workspace %llu bytes: projections @%lld, W_UQ_QR A operand @%lld, c_Q scales @%lld, int8 row sums "
                "@%lld, kv rows @%lld, kr rows @%lld, %d x %lld per-thread head buffers @%lld, cache slots @%lld\n",
                (unsigned long long)workspace_bytes, (long long)off_acc1, (long long)off_a2, (long long)off_scale,
                (long long)off_rowsum, (long long)off_kv, (long long)off_kr, threads, (long long)thread_bytes,
                (long long)off_thread, (long long)off_slots);
  s += b;
  const std::string staged = stage.explain();
  return staged.empty() ? s : s + staged + " (the offsets above follow it)\n";
}

}  // namespace mlaops

// MlaPreprocess phase 1 after the rules: the plan (weights and caches as the kernels see them, the
// kernel of each kind of work, chunking, threads, workspace layout) and its explanation.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/workspace.h"
#include "ops/mla_preprocess/mla_preprocess.h"
#include "ops/common/mla_uk.h"

namespace mlaops {
namespace {

// A checked cache [BlockNum, a, b, c] of rows `width` wide (ND) or NZ with c0 = c.
MlaPreprocessCacheGeom cache_geom(const TensorView& t, bool nz, int64_t width) {
  MlaPreprocessCacheGeom g;
  g.width = width;
  g.nz = nz;
  g.c0 = nz ? t.dims[3] : 0;
  g.block_stride = t.dims[0] > 1 ? t.strides[0] : t.dims[1] * t.dims[2] * t.dims[3];
  g.elem_size = dtype_size(t.dtype);
  return g;
}

}  // namespace

CallSignature mla_preprocess_signature(const MlaPreprocessParams& p) {
  CallSignature s;
  for (const check::Named& n : mla_preprocess_tensors(p)) s.add(n.name, n.t);
  s.add("epsilon", p.epsilon);
  s.add("qRotaryCoeff", p.q_rotary_coeff);
  s.add("kRotaryCoeff", p.k_rotary_coeff);
  s.add("transposeWdq", static_cast<int64_t>(p.transpose_wdq));
  s.add("transposeWuq", static_cast<int64_t>(p.transpose_wuq));
  s.add("transposeWuk", static_cast<int64_t>(p.transpose_wuk));
  s.add("cacheMode", static_cast<int64_t>(p.cache_mode));
  s.add("quantMode", static_cast<int64_t>(p.quant_mode));
  s.add("doRmsNorm", static_cast<int64_t>(p.do_rms_norm));
  s.add("wdkvSplitCount", p.wdkv_split_count);
  return s;
}

std::vector<StageSlot> mla_preprocess_stage_slots(MlaPreprocessParams* p, std::vector<TensorView>* store) {
  std::vector<StageSlot> slots = {{"input", &p->input}, {"gamma0", &p->gamma0}, {"beta0", &p->beta0},
                                  {"wdqkv", &p->wdqkv}, {"gamma1", &p->gamma1}, {"beta1", &p->beta1},
                                  {"wuq", &p->wuq},     {"gamma2", &p->gamma2}, {"cos", &p->cos},
                                  {"sin", &p->sin},     {"wuk", &p->wuk},       {"slotMapping", &p->slot_mapping, true}};
  const OptionalInput optional[] = {{&p->quant_scale0, "quantScale0"},
                                    {&p->quant_offset0, "quantOffset0"},
                                    {&p->de_scale0, "deScale0"},
                                    {&p->bias0, "bias0"},
                                    {&p->quant_scale1, "quantScale1"},
                                    {&p->quant_offset1, "quantOffset1"},
                                    {&p->de_scale1, "deScale1"},
                                    {&p->bias1, "bias1"},
                                    {&p->ctkv_scale, "ctkvScale"},
                                    {&p->q_nope_scale, "qNopeScale"}};
  store->clear();
  store->reserve(std::size(optional));  // no reallocation: the slots point into it
  add_optional_slots(optional, store, &slots);
  return slots;
}

Status mla_preprocess_make_plan(const MlaPreprocessParams& params, const MlaPreprocessCheckOptions& o, OpPlan* out) {
  *out = OpPlan();
  const MlaPreprocessParams caller = mla_preprocess_unread_dropped(params);
  auto plan = std::make_unique<MlaPreprocessPlan>();
  MlaPreprocessPlan& pl = *plan;
  const char* op = o.op;
  // Strided inputs (ops/common/auto_contiguous.h): planned first; the rules see their dense shapes, the
  // pointer rules (and the signature) the caller's views.
  MlaPreprocessParams p = caller;
  std::vector<TensorView> store;
  MLAOPS_TRY(stage_plan(op, "MPP-05", mla_preprocess_stage_slots(&p, &store), &pl.stage));
  MLAOPS_TRY(mla_preprocess_check(p, o, &pl.dims));
  MLAOPS_TRY(mla_preprocess_check_pointers(caller, op));
  const MlaPreprocessShape& d = pl.dims;
  const MlaPreprocessCacheMode cm = p.cache_mode;
  pl.op = o.mlapo ? kMlapoOp : kMlaPreprocessOp;
  pl.options = o;
  pl.signature = mla_preprocess_signature(caller);
  pl.quant = p.wdqkv.dtype == DType::kInt8;
  pl.per_token = p.quant_mode == MlaPreprocessQuantMode::kPerTokenSymm;
  pl.fp16 = p.input.dtype == DType::kFloat16;
  pl.wuk_nz = p.wuk.format == Format::kFractalNZ;
  pl.cache_mode = cm;
  pl.q_down = p.q_down_out != nullptr;
  pl.first_norm = !o.mlapo;
  pl.rope = p.cos.dtype != DType::kUndefined;  // always in MlaPreprocess (MPP-01); optional in the MLAPO op
  pl.wdqkv_r1 = ceil_div(d.m1_cols, 16);
  pl.wuq_r1 = ceil_div(d.m2_cols, 16);
  if (pl.wuk_nz) {  // head h: [D, Hckv] NZ with c0 16: (i, k) at (k/16)*D*16 + i*16 + k%16
    pl.wuk_ldb = 16;
    pl.wuk_panel_stride = d.D * 16;
  } else {  // head h: row-major [D, Hckv]
    pl.wuk_ldb = d.Hckv;
    pl.wuk_panel_stride = 16;
  }
  pl.wuk_head_stride = d.D * d.Hckv;
  pl.q_nope_scale_n = p.q_nope_scale == nullptr ? 0 : p.q_nope_scale->numel() == 1 ? 1 : d.N;  // 1: broadcast
  const bool nz = mla_preprocess_is_nz_cache(cm);
  pl.kv = cache_geom(p.kv_cache, nz, cm == MlaPreprocessCacheMode::kKvCache ? d.Hckv + d.Dr : d.Hckv);
  if (mla_preprocess_has_rope_outputs(cm)) pl.kr = cache_geom(*p.kv_cache_rope, nz, d.Dr);

  // ---- kernels: one ISA level for the whole call, the rows of the registry's families ----
  pl.isa = active_isa();
  const auto& t_fam = pl.quant  ? kernels::gemm_s8_t_family()
                      : pl.fp16 ? kernels::gemm_f16_t_family()
                                : kernels::gemm_bf16_t_family();
  pl.picks[0] = check::pick_gemm("input @ wdqkv^T", t_fam, pl.isa, {kernels::GemmTArgs{}}, &pl.wdqkv_gemm);
  pl.picks[1] = check::pick_gemm("a1 @ wuq^T per head", t_fam, pl.isa, {kernels::GemmTArgs{}}, &pl.wuq_gemm);
  pl.picks[2] = check::pick_gemm("qn @ wuk per head", pl.fp16 ? kernels::gemm_f16_family() : kernels::gemm_bf16_family(),
                                 pl.isa, {kernels::gemm_layout(16, pl.wuk_ldb), kernels::gemm_layout(16, 16)}, &pl.wuk_gemm);
  pl.picks[3] = check::pick_row("RmsNorm, quant, dequant, dtype rows", kernels::mla_preprocess_rows_family(), "", pl.isa,
                                &pl.rows);
  pl.picks[4] = check::pick_row("absmax of per-token quant rows, RoPE rows", kernels::convert_family(), "absmax", pl.isa, &pl.cv);
  pl.rowsum = kernels::gemm_s8_rowsum(pl.isa, pl.quant);

  // ---- chunking, threads, workspace ----
  pl.threads = num_threads();
  pl.chunk = std::min<int64_t>(std::max<int64_t>(d.T, 1), 256);
  pl.head_cols = round_up(d.D + d.Dr, 16) + 16;
  // Decode: the wuq weights of one head are 16-row tiles scattered over every k panel (W^T in
  // NZ: runs of (D + Dr) / 16 tiles, N * (D + Dr) * 32 bytes apart), so a head at a time reads
  // short pieces; the whole GEMM gives each thread long runs in address order.
  pl.wuq_whole = pl.chunk <= kernels::kGemmTStreamMaxM;
  // ---- GEMM routes: per projection, the library's kernels or oneDNN (ops/common/gemm_route.h) ----
  if (d.T > 0) {
    GemmRouteQuery q;
    q.op = op;
    q.m_max = pl.chunk;
    q.chunks = ceil_div(d.T, pl.chunk);
    q.m_last = d.T - (q.chunks - 1) * pl.chunk;
    q.threads = pl.threads;
    q.isa = pl.isa;
    q.elem = pl.quant ? kernels::GemmElem::kS8 : pl.fp16 ? kernels::GemmElem::kF16 : kernels::GemmElem::kBf16;
    q.transposed = true;
    q.what = "input @ wdqkv^T", q.K = d.He, q.N = d.m1_cols, q.lda = d.He, q.ldc = d.m1_cols;
    pl.route_x = choose_gemm_route(q);
    q.what = "a1 @ wuq^T", q.K = d.Hcq, q.N = d.m2_cols, q.lda = d.Hcq, q.ldc = d.m2_cols;
    pl.route_uq = choose_gemm_route(q);
    if (pl.route_uq.onednn) pl.wuq_whole = true;  // every head's product before the heads
  }
  pl.uk_rows = mla_uk_rows(pl.chunk);
  const int64_t c = pl.chunk;
  int64_t a0 = 0, acc1 = 0, m1 = 0, a1 = 0, acc2 = 0, kv = 0, kr = 0, t1 = 0, t2 = 0, t3 = 0, per_thread = 0,
          threads_total = 0;
  MLAOPS_CHECK(product_ok({c, pl.quant ? d.He : 0}, &a0) && product_ok({c, d.m1_cols, 4}, &acc1) &&
                   product_ok({c, d.m1_cols, 4}, &m1) && product_ok({c, d.Hcq, 2}, &a1) &&
                   product_ok({pl.wuq_whole ? c : 0, d.m2_cols, 4}, &acc2) &&
                   product_ok({c, pl.kv.width, pl.kv.elem_size}, &kv) && product_ok({c, d.Dr, 2}, &kr) &&
                   product_ok({pl.wuq_whole ? 0 : c, pl.head_cols, 4}, &t1) && product_ok({c, d.D, 2}, &t2) &&
                   product_ok({mla_uk_rows(c), d.Hckv, 4}, &t3) && add_ok(t1, t2, &per_thread) &&
                   add_ok(per_thread, t3, &per_thread) &&
                   add_ok(per_thread, mla_uk_nz_bytes(d.D, d.Hckv, c, !pl.wuk_nz), &per_thread) &&
                   add_ok(per_thread, 4 * kWorkspaceAlign, &per_thread),
               kParamInvalid, "%s: MPP-15 workspace size overflows int64", op);
  per_thread = round_up(per_thread, kWorkspaceAlign);
  // Then one phase at a time: RmsNormQuant's two rows, the wdqkv (and whole wuq) GEMM's scratch
  // (all columns: one chunk when it runs inline), a token row's two vectors, or a head's larger GEMM scratch
  // and its rope vector.
  const kernels::GemmKind t_kind = pl.quant ? kernels::GemmKind::kS8T : pl.fp16 ? kernels::GemmKind::kF16T
                                                                               : kernels::GemmKind::kBf16T;
  const auto vec = [](int64_t n) { return round_up(n * 4, kWorkspaceAlign); };
  const int64_t stage1_scratch = pl.quant ? 2 * vec(d.He) : 0;
  const int64_t proj_scratch = std::max(kernels::gemm_scratch_bytes(t_kind, c, d.He, d.m1_cols),
                                        pl.wuq_whole ? kernels::gemm_scratch_bytes(t_kind, c, d.Hcq, d.m2_cols) : 0);
  const int64_t rows_scratch = vec(std::max(d.Hcq, d.Hckv)) + vec(d.Dr) + vec(d.Hcq);  // y, rope, the quant's y / qs
  pl.head_gemm_scratch = std::max(
      kernels::gemm_scratch_bytes(t_kind, c, d.Hcq, pl.head_cols),
      kernels::gemm_scratch_bytes(pl.fp16 ? kernels::GemmKind::kF16 : kernels::GemmKind::kBf16, c, d.D, d.Hckv));
  pl.off_scratch = per_thread;
  MLAOPS_CHECK(add_ok(per_thread,
                      std::max({stage1_scratch, proj_scratch, rows_scratch, pl.head_gemm_scratch + vec(d.Dr)}),
                      &per_thread),
               kParamInvalid, "%s: MPP-15 workspace size overflows int64", op);
  MLAOPS_CHECK(mul_ok(per_thread, pl.threads, &threads_total), kParamInvalid, "%s: MPP-15 workspace overflow", op);
  WorkspaceLayout l(op, "MPP-15 workspace overflows int64 (the sum of its parts)");
  MLAOPS_TRY(l.add(a0, &pl.off_a0));
  MLAOPS_TRY(l.add(c * 16, &pl.off_scale));
  MLAOPS_TRY(l.add(pl.quant ? 2 * c * 4 : 0, &pl.off_rowsum));
  MLAOPS_TRY(l.add(acc1, &pl.off_acc1));
  MLAOPS_TRY(l.add(m1, &pl.off_m1));
  MLAOPS_TRY(l.add(a1, &pl.off_a1));
  MLAOPS_TRY(l.add(acc2, &pl.off_acc2));
  MLAOPS_TRY(l.add(kv, &pl.off_kv));
  MLAOPS_TRY(l.add(mla_preprocess_has_rope_outputs(cm) ? kr : 0, &pl.off_kr));
  MLAOPS_TRY(l.add(threads_total, &pl.off_thread));
  MLAOPS_TRY(l.add(pl.route_x.workspace_bytes(), &pl.off_route_x));
  MLAOPS_TRY(l.add(pl.route_uq.workspace_bytes(), &pl.off_route_uq));
  pl.thread_bytes = per_thread;
  // the workspace's parts: the strided inputs' dense copies, then the operator's own
  WorkspaceLayout all(op, "MPP-15 workspace overflows int64 (the sum of its parts)");
  int64_t at = 0;
  MLAOPS_TRY(all.add(pl.stage.bytes, &at));
  MLAOPS_TRY(all.add(l.total(), &at));
  const int64_t total = d.T == 0 ? 0 : all.total();
  pl.workspace_bytes = static_cast<uint64_t>(total);
  verbose_plan(pl);
  *out = OpPlan(std::move(plan));
  return kSuccess;
}

std::string MlaPreprocessPlan::explain() const {
  const MlaPreprocessShape& d = dims;
  char b[512];
  std::string s;
  std::snprintf(b, sizeof b,
                "%s: %s input, %s%s%s, cacheMode %s, T=%lld He=%lld Hcq=%lld N=%lld D=%lld Dr=%lld Hckv=%lld, wuk %s, "
                "caches %lld x %lld\n",
                options.op, fp16 ? "FLOAT16" : "BF16", first_norm ? "" : "first stage without RmsNorm, ",
                quant ? mla_preprocess_quant_mode_name(per_token ? MlaPreprocessQuantMode::kPerTokenSymm
                                                                 : MlaPreprocessQuantMode::kPerTensorAsymm)
                      : "weights in the input dtype (doRmsNorm false)",
                rope ? "" : ", no RoPE rotation", mla_preprocess_cache_mode_name(cache_mode), (long long)d.T, (long long)d.He, (long long)d.Hcq,
                (long long)d.N, (long long)d.D, (long long)d.Dr, (long long)d.Hckv, wuk_nz ? "FRACTAL_NZ" : "ND",
                (long long)d.block_num, (long long)d.block_size);
  s += b;
  s += "kernels (isa " + std::string(isa_name(isa)) + "):\n" + check::explain_kernels(picks);
  if (d.T > 0) s += "GEMM routes: input @ wdqkv^T: " + route_x.why + "\n  a1 @ wuq^T: " + route_uq.why + "\n";
  if (d.T == 0) return s + "work: none (T = 0: nothing computed, the caches untouched); workspace 0 bytes\n";
  std::snprintf(b, sizeof b,
                "work: %lld chunk(s) of up to %lld tokens; per chunk: %sthe wdqkv GEMM over %lld 16-channel groups and "
                "the token rows (parallel_for), %s, the %lld heads on %d thread(s) (parallel_items), then the cache "
                "scatter in token order\n",
                (long long)ceil_div(d.T, chunk), (long long)chunk,
                !quant ? "" : first_norm ? "RmsNormQuant of the input rows, " : "the quant of the input rows, ",
                (long long)ceil_div(d.m1_cols, 16),
                wuq_whole ? "the wuq GEMM of all heads over its 16-channel groups (parallel_for; decode)"
                          : "the wuq GEMM per head (in the heads)",
                (long long)d.N, threads);
  s += b;
  std::snprintf(b, sizeof b,
                "workspace %llu bytes: a0 @%lld, scales @%lld, int8 row sums @%lld, wdqkv product @%lld, m1 @%lld, a1 "
                "@%lld, wuq product @%lld, kv rows @%lld, kr rows @%lld, %d x %lld per-thread head buffers @%lld\n",
                (unsigned long long)workspace_bytes, (long long)off_a0, (long long)off_scale, (long long)off_rowsum,
                (long long)off_acc1, (long long)off_m1, (long long)off_a1, (long long)off_acc2, (long long)off_kv,
                (long long)off_kr, threads, (long long)thread_bytes, (long long)off_thread);
  s += b;
  const std::string staged = stage.explain();
  return staged.empty() ? s : s + staged + " (the offsets above follow it)\n";
}

}  // namespace mlaops

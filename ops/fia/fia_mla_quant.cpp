// FusedInferAttentionScoreV4 MLA full quant: rules, plan and run (fia_mla_quant.h).
#include "ops/fia/fia_mla_quant.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/workspace.h"
#include "kernels/cpu/attention/attn_combine.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"
#include "ops/common/check_util.h"
#include "ops/fia/fia.h"

namespace mlaops {
namespace {

constexpr DType I8 = DType::kInt8;
constexpr DType BF = DType::kBFloat16;
constexpr DType F32 = DType::kFloat32;
constexpr int64_t kMaxRows = 128;  // query rows per task (heads x tokens): the cache block's packing is shared by them

}  // namespace

bool fia_mla_quant_requested(const FiaParams& p) {
  return p.dequant_scale_query != nullptr || (p.query.dtype == I8 && p.query_rope != nullptr);
}

Status fia_mla_quant_check_dtypes(const FiaParams& p, const char* op) {
  const char* R = "FIA-27 MLA full quant";
  MLAOPS_CHECK(p.dequant_scale_query != nullptr, kParamInvalid,
               "%s: dequantScaleQueryOptional: %s needs dequantScaleQuery with an INT8 query; allowed a tensor, got null",
               op, R);
  MLAOPS_CHECK(p.query_rope != nullptr && p.key_rope != nullptr, kParamInvalid,
               "%s: queryRopeOptional: %s (dequantScaleQuery) needs queryRope and keyRope; allowed tensors, got null", op,
               R);
  MLAOPS_TRY(check::dtype_in(op, "query", R, p.query, {I8}));
  MLAOPS_TRY(check::dtype_in(op, "dequantScaleQueryOptional", R, *p.dequant_scale_query, {F32}));
  MLAOPS_TRY(check::dtype_in(op, "queryRopeOptional", R, *p.query_rope, {BF}));
  MLAOPS_TRY(check::dtype_in(op, "keyRopeOptional", R, *p.key_rope, {BF}));
  MLAOPS_TRY(check::dtype_in(op, "key", R, p.key[0], {I8}));
  MLAOPS_TRY(check::dtype_in(op, "value", R, p.value[0], {I8}));
  MLAOPS_TRY(check::dtype_in(op, "attentionOut", R, p.attention_out, {BF}));
  if (p.softmax_lse_flag) MLAOPS_TRY(check::dtype_in(op, "softmaxLse", R, *p.softmax_lse, {F32}));
  if (p.atten_mask != nullptr)
    MLAOPS_TRY(check::dtype_in(op, "attenMaskOptional", "FIA-14", *p.atten_mask, {DType::kBool, I8, DType::kUInt8}));
  if (p.block_table != nullptr)
    MLAOPS_TRY(check::dtype_in(op, "blockTableOptional", "FIA-12", *p.block_table, {DType::kInt32}));
  MLAOPS_TRY(check::value_in(op, "queryQuantMode", R, p.query_quant_mode, {3}));
  return kSuccess;
}

Status fia_mla_quant_check(const FiaParams& p, const FiaCheckOptions& o, FiaCall* c) {
  const char* op = o.op;
  const char* R = "FIA-28 MLA full quant";
  // layouts: BSH, BSND, TND in; the same or NBSD (NTD for TND) out
  const bool in_ok = c->in_l == FiaLayout::kBSH || c->in_l == FiaLayout::kBSND || c->in_l == FiaLayout::kTND;
  const bool out_ok = c->out_l == c->in_l || (c->in_l == FiaLayout::kTND ? c->out_l == FiaLayout::kNTD
                                                                        : c->out_l == FiaLayout::kNBSD);
  MLAOPS_CHECK(in_ok && out_ok, kParamInvalid,
               "%s: inputLayout: %s layout; allowed {BSH, BSH_NBSD, BSND, BSND_NBSD, TND, TND_NTD}, got \"%.64s\"", op, R,
               p.input_layout.c_str());
  // paged FRACTAL_NZ caches: key / value [blockNum, 1, D/32, blockSize, 32], keyRope [.., D_R/16, blockSize, 16]
  MLAOPS_CHECK(c->paged, kParamInvalid,
               "%s: blockTableOptional: %s needs paged attention; allowed a block table, got null", op, R);
  const struct {
    const char* name;
    const TensorView* t;
  } caches[] = {{"key", &p.key[0]}, {"value", &p.value[0]}, {"keyRopeOptional", p.key_rope}};
  for (const auto& x : caches)
    MLAOPS_CHECK(x.t->rank == 5, kParamInvalid,
                 "%s: %s: %s cache must be the 5-D FRACTAL_NZ form [blockNum, 1, D/c0, blockSize, c0]; allowed rank 5, "
                 "got %s",
                 op, x.name, R, check::shape_str(*x.t).c_str());
  MLAOPS_CHECK(c->KVN == 1, kParamInvalid, "%s: numKeyValueHeads: %s one latent cache head; allowed 1, got %lld", op, R,
               (long long)c->KVN);
  MLAOPS_CHECK(c->QD == 512 && c->VD == 512, kParamInvalid,
               "%s: query: %s head dim (key / value: the latent cache); allowed 512, got %lld / %lld", op, R,
               (long long)c->QD, (long long)c->VD);
  MLAOPS_CHECK(c->DR == 64, kParamInvalid, "%s: queryRopeOptional: %s rope head dim; allowed 64, got %lld", op, R,
               (long long)c->DR);
  const int64_t max_q = c->act_q.empty() ? 0 : *std::max_element(c->act_q.begin(), c->act_q.end());
  MLAOPS_CHECK((c->packed ? max_q : c->QS) <= 16, kParamInvalid,
               "%s: query: %s query tokens per batch (decode / MTP); allowed <= 16, got %lld", op, R,
               (long long)(c->packed ? max_q : c->QS));
  // masks: sparse 0 without a mask (every position), 3 (right-down causal, the 2048 template) or
  // 9 (the tree mask, ops/fia/fia_tree_mask.h)
  MLAOPS_CHECK(p.sparse_mode == 0 || p.sparse_mode == 3 || p.sparse_mode == 9, kParamInvalid,
               "%s: sparseMode: %s sparse mode; allowed {0, 3, 9}, got %lld", op, R, (long long)p.sparse_mode);
  MLAOPS_CHECK(p.sparse_mode != 0 || p.atten_mask == nullptr, kParamInvalid,
               "%s: attenMaskOptional: %s sparseMode 0 takes no mask; allowed null, got a tensor", op, R);
  // dequantScaleQuery: the query's shape without D, FP32
  const TensorView& dq = *p.dequant_scale_query;
  std::vector<int64_t> want;
  if (c->packed)
    want = {c->QS, c->N};
  else
    want = {c->B, c->QS, c->N};
  bool ok = dq.rank == static_cast<int>(want.size());
  for (int i = 0; ok && i < dq.rank; ++i) ok = dq.dims[i] == want[static_cast<size_t>(i)];
  MLAOPS_CHECK(ok, kParamInvalid, "%s: dequantScaleQueryOptional: %s shape (the query's without D); allowed %s, got %s",
               op, R,
               c->packed ? check::dims_str({c->QS, c->N}).c_str() : check::dims_str({c->B, c->QS, c->N}).c_str(),
               check::shape_str(dq).c_str());
  MLAOPS_TRY(check::format_in(op, "dequantScaleQueryOptional", R, dq, {Format::kND, Format::kNCHW}));
  MLAOPS_TRY(check::dense(op, "dequantScaleQueryOptional", "FIA-17", dq));
  if (c->packed) {
    c->mq.dq_s = dq.strides[0];
    c->mq.dq_n = dq.strides[1];
  } else {
    c->mq.dq_b = dq.strides[0];
    c->mq.dq_s = dq.strides[1];
    c->mq.dq_n = dq.strides[2];
  }
  // FIA-29: per-tensor key / value scales, no offsets, no other quant parameters; exclusions
  const char* R9 = "FIA-29 MLA full quant";
  const struct {
    const TensorView* t;
    const char* name;
  } scales[] = {{p.key_antiquant_scale, "keyAntiquantScaleOptional"},
                {p.value_antiquant_scale, "valueAntiquantScaleOptional"}};
  for (const auto& s : scales) {
    MLAOPS_CHECK(s.t != nullptr, kParamInvalid, "%s: %s: %s needs a per-tensor scale; allowed FLOAT [1], got null", op,
                 s.name, R9);
    MLAOPS_CHECK(s.t->dtype == F32 && s.t->rank == 1 && s.t->dims[0] == 1, kParamInvalid,
                 "%s: %s: %s per-tensor scale; allowed FLOAT [1], got %s %s", op, s.name, R9, dtype_name(s.t->dtype),
                 check::shape_str(*s.t).c_str());
    MLAOPS_TRY(check::format_in(op, s.name, R9, *s.t, {Format::kND, Format::kNCHW}));
  }
  MLAOPS_TRY(check::value_in(op, "keyAntiquantMode", R9, p.key_antiquant_mode, {0}));
  MLAOPS_TRY(check::value_in(op, "valueAntiquantMode", R9, p.value_antiquant_mode, {0}));
  const struct {
    const void* t;
    const char* name;
    const char* what;
  } absent[] = {
      {p.key_antiquant_offset, "keyAntiquantOffsetOptional", "antiquant offsets"},
      {p.value_antiquant_offset, "valueAntiquantOffsetOptional", "antiquant offsets"},
      {p.antiquant_scale, "antiquantScaleOptional", "the combined antiquant parameters"},
      {p.antiquant_offset, "antiquantOffsetOptional", "the combined antiquant parameters"},
      {p.pse_shift, "pseShiftOptional", "pseShift"},
      {p.learnable_sink, "learnableSinkOptional", "learnableSink"},
      {p.quant_scale2, "quantScale2Optional", "post-quant output"},
      {p.quant_offset2, "quantOffset2Optional", "post-quant output"},
  };
  for (const auto& x : absent)
    MLAOPS_CHECK(x.t == nullptr, kParamInvalid, "%s: %s: %s excludes %s; allowed null, got a tensor", op, x.name, R9,
                 x.what);
  if (o.vendor_ranges) {
    MLAOPS_TRY(check::value_in(op, "blockSize", "FIA-19 MLA full quant", p.block_size, {128}));
    MLAOPS_TRY(check::value_in(op, "numHeads", "FIA-19 MLA full quant", c->N, {1, 2, 4, 8, 16, 32, 64, 128}));
  }
  c->mq.on = true;
  return kSuccess;
}

Status fia_mla_quant_check_pointers(const FiaParams& p, const char* op) {
  const struct {
    const TensorView* t;
    const char* name;
  } ts[] = {{p.dequant_scale_query, "dequantScaleQueryOptional"},
            {p.key_antiquant_scale, "keyAntiquantScaleOptional"},
            {p.value_antiquant_scale, "valueAntiquantScaleOptional"}};
  for (const auto& x : ts)
    if (x.t != nullptr && !x.t->empty())
      MLAOPS_CHECK(x.t->data != nullptr, kParamInvalid, "%s: %s: FIA-17 null data of an MLA quant tensor; allowed non-null, got null", op,
                   x.name);
  return kSuccess;
}

// ---- plan ----

namespace {

struct Sizes {
  int64_t q8, qr, fac, lim, o, ml, kern, total;
};

Sizes thread_sizes(int64_t M, int64_t D, int64_t DR) {
  Sizes s;
  s.q8 = round_up(M * D, 64);
  s.qr = round_up(M * DR * 2, 64);
  s.fac = round_up(M * 4, 64);
  s.lim = round_up(M * 8 * 2, 64);
  s.o = round_up(M * D * 4, 64);
  s.ml = round_up(M * 4 * 2, 64);
  s.kern = kernels::flash_mlaq_scratch_bytes(M, D, DR);
  s.total = s.q8 + s.qr + s.fac + s.lim + s.o + s.ml + s.kern;
  return s;
}

}  // namespace

Status fia_mla_quant_plan(FiaPlan* plan, const char* op) {
  FiaPlan& P = *plan;
  const int64_t max_q = std::max<int64_t>(1, *std::max_element(P.act_q.begin(), P.act_q.end()));
  const int64_t max_kv = *std::max_element(P.act_kv.begin(), P.act_kv.end());
  int64_t heads = std::max<int64_t>(1, std::min<int64_t>(P.N, kMaxRows / max_q));
  auto count = [&](int64_t h) {
    int64_t n = 0;
    for (int64_t b = 0; b < P.B; ++b)
      if (P.act_q[static_cast<size_t>(b)] > 0) n += ceil_div(P.N, h);
    return n;
  };
  // Fewer tasks than threads: split the KV range (flash-decoding; each split packs only its
  // positions, for every row) when it is long enough, else fewer heads per task.
  P.splits = 1;
  const int64_t first = count(heads);
  if (first > 0 && first < P.threads)
    P.splits = std::max<int64_t>(1, std::min<int64_t>(ceil_div(P.threads, first), max_kv / (4 * kernels::kFlashMlaqBlock)));
  if (P.splits == 1)
    while (heads > 1 && count(heads) < P.threads) heads = ceil_div(heads, 2);
  P.mq.heads = heads;
  P.mq.rows = heads * max_q;
  for (int64_t b = 0; b < P.B; ++b) {
    if (P.act_q[static_cast<size_t>(b)] == 0) continue;
    for (int64_t n0 = 0; n0 < P.N; n0 += heads) P.items.push_back({b, n0, 0, std::min(heads, P.N - n0)});
  }
  const auto& fam = kernels::flash_mlaq_family();
  P.mq.row = fam.select(P.isa);
  P.mq.fn = fam.pick(P.isa);
  P.R = max_q;
  const Sizes s = thread_sizes(P.mq.rows, P.QD, P.DR);
  P.thread_bytes = s.total;
  int64_t all;
  MLAOPS_CHECK(mul_ok(P.thread_bytes, P.threads, &all), kParamInvalid,
               "%s: workspace: FIA-17 workspace overflows int64 (MLA full quant per-thread scratch x threads); allowed "
               "<= 2^63 - 1 bytes, got %lld bytes x %d threads",
               op, (long long)P.thread_bytes, P.threads);
  P.off_thread = 0;
  int64_t total = all;
  if (P.splits > 1) {  // partial states per (item, split): o [rows][D], m [rows], l [rows]
    P.partial_o_floats = P.mq.rows * P.VD;
    P.partial_ml_floats = P.mq.rows;
    int64_t bytes;
    MLAOPS_CHECK(product_ok({static_cast<int64_t>(P.items.size()), P.splits,
                             P.partial_o_floats + 2 * P.partial_ml_floats, 4},
                            &bytes) &&
                     add_ok(total, bytes, &total),
                 kParamInvalid,
                 "%s: workspace: FIA-17 workspace overflows int64 (MLA full quant KV-split partials); allowed <= 2^63 - 1 "
                 "bytes, got %zu items x %lld splits",
                 op, P.items.size(), (long long)P.splits);
    P.off_partial = all;
  }
  P.workspace_bytes = P.items.empty() ? 0 : total;
  return kSuccess;
}

std::string fia_mla_quant_explain(const FiaPlan& P) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "shape: B %lld, N %lld, Q_S %lld (max per batch %lld), D %lld + rope %lld, MLA full quant (INT8 query, "
                "INT8 NZ latent cache, blockSize %lld), sparseMode %lld%s\n"
                "level %s, %d threads; %zu items of up to %lld heads x %lld tokens, %lld KV split(s); kernel %s\n"
                "workspace: %lld bytes (per-thread %lld)\n",
                (long long)P.B, (long long)P.N, (long long)P.QS, (long long)P.R, (long long)P.QD, (long long)P.DR,
                (long long)P.block_size, (long long)P.mode, P.lse ? ", softmaxLse" : "", isa_name(P.isa), P.threads,
                P.items.size(), (long long)P.mq.heads, (long long)P.R, (long long)P.splits,
                kernels::flash_mlaq_family().info(P.mq.row).name, (long long)P.workspace_bytes,
                (long long)P.thread_bytes);
  return buf;
}

// ---- run ----

namespace {

struct Ctx {
  const FiaParams* p;
  const FiaPlan* P;
  char* ws;
  float k_scale, v_scale;
};

// The output rows of item w (heads w.h .. w.h + w.rows - 1, every token of batch w.b).
kernels::FlashItem out_rows(const FiaParams& p, const FiaPlan& P, const FiaPlan::Item& w) {
  const size_t b = static_cast<size_t>(w.b);
  const int64_t q0 = P.q_start[b];
  kernels::FlashItem it;
  it.G = w.rows;
  it.R = P.act_q[b];
  it.QD = P.QD;
  it.DR = P.DR;
  it.VD = P.VD;
  it.fp16 = false;
  fia_item_out(p, P, w.b, w.h, q0, &it);  // post-quant output is refused for MLA full quant (above)
  return it;
}

float* partial_of(const Ctx& c, int64_t item) {
  const FiaPlan& P = *c.P;
  const int64_t per = P.partial_o_floats + 2 * P.partial_ml_floats;
  return reinterpret_cast<float*>(c.ws + P.off_partial) + item * P.splits * per;
}

// Task = (item, KV split): split s reads positions [s * chunk, (s + 1) * chunk), chunk a multiple
// of the kernel's block.
void run_task(void* vctx, int64_t task, int thread) {
  const Ctx& c = *static_cast<const Ctx*>(vctx);
  const FiaParams& p = *c.p;
  const FiaPlan& P = *c.P;
  const int64_t item = task / P.splits, split = task % P.splits;
  const FiaPlan::Item& w = P.items[static_cast<size_t>(item)];
  const size_t b = static_cast<size_t>(w.b);
  const int64_t s1 = P.act_q[b], s2 = P.act_kv[b], n0 = w.h, nh = w.rows, M = nh * s1;
  const int64_t D = P.QD, DR = P.DR, q0 = P.q_start[b];
  const Sizes sz = thread_sizes(P.mq.rows, D, DR);
  char* t = c.ws + P.off_thread + static_cast<int64_t>(thread) * P.thread_bytes;
  int8_t* q8 = reinterpret_cast<int8_t*>(t);
  uint16_t* qr = reinterpret_cast<uint16_t*>(t + sz.q8);
  float* fac = reinterpret_cast<float*>(t + sz.q8 + sz.qr);
  int64_t* jlo = reinterpret_cast<int64_t*>(t + sz.q8 + sz.qr + sz.fac);
  int64_t* jhi = jlo + M;
  float* o = reinterpret_cast<float*>(t + sz.q8 + sz.qr + sz.fac + sz.lim);
  float* mx = reinterpret_cast<float*>(t + sz.q8 + sz.qr + sz.fac + sz.lim + sz.o);
  float* l = mx + M;
  void* kern = t + sz.q8 + sz.qr + sz.fac + sz.lim + sz.o + sz.ml;
  int64_t lo, hi;
  fia_row_deltas(P, w.b, &lo, &hi);
  const int8_t* qb = p.query.ptr<const int8_t>();
  const uint16_t* qrb = p.query_rope->ptr<const uint16_t>();
  const float* dq = p.dequant_scale_query->ptr<const float>();
  // rows m = g * s1 + i (head n0 + g, token i): the combine step's (g, r) order
  for (int64_t g = 0; g < nh; ++g) {
    for (int64_t i = 0; i < s1; ++i) {
      const int64_t m = g * s1 + i, n = n0 + g, s = q0 + i;
      std::memcpy(q8 + m * D, qb + w.b * P.q.b + n * P.q.n + s * P.q.s, static_cast<size_t>(D));
      std::memcpy(qr + m * DR, qrb + w.b * P.qr.b + n * P.qr.n + s * P.qr.s, static_cast<size_t>(DR * 2));
      const double f = p.scale_value * dq[w.b * P.mq.dq_b + n * P.mq.dq_n + s * P.mq.dq_s] * c.k_scale;
      fac[m] = static_cast<float>(f);
      const kernels::AttnSpan band = kernels::attn_band(i, lo, hi, 0, s2);
      jlo[m] = band.begin;
      jhi[m] = band.end;
    }
  }
  kernels::MlaqArgs a;
  a.M = M;
  a.D = D;
  a.DR = DR;
  a.q = q8;
  a.qr = qr;
  a.fac = fac;
  a.jlo = jlo;
  a.jhi = jhi;
  if (P.tree) {  // rows m = g * s1 + i read tree row i
    int64_t off;
    fia_tree_rows(P, w.b, &off, &a.mask.i_stride, &a.mask.j0);
    a.mask.base = p.atten_mask->ptr<const uint8_t>() + off;
    a.mask.j_stride = P.mask_j;
    a.mask_rows = std::max<int64_t>(s1, 1);
  }
  const int64_t chunk = round_up(ceil_div(std::max<int64_t>(s2, 1), P.splits), kernels::kFlashMlaqBlock);
  a.p0 = std::min(s2, split * chunk);
  a.p1 = std::min(s2, a.p0 + chunk);
  kernels::MlaqCache& kv = a.kv;
  kv.k = p.key[0].ptr<const int8_t>();
  kv.v = p.value[0].ptr<const int8_t>();
  kv.kr = p.key_rope->ptr<const uint16_t>();
  kv.block_ids = p.block_table->ptr<const int32_t>() + w.b * P.bt_row_stride;
  kv.block_size = P.block_size;
  kv.k_blk = P.k.blk;
  kv.k_slot = P.k.slot;
  kv.k_c1 = P.k.c0_stride;
  kv.v_blk = P.v.blk;
  kv.v_slot = P.v.slot;
  kv.v_c1 = P.v.c0_stride;
  kv.kr_blk = P.kr.blk;
  kv.kr_slot = P.kr.slot;
  kv.kr_c1 = P.kr.c0_stride;
  const int64_t per = P.partial_o_floats + 2 * P.partial_ml_floats;
  if (P.splits > 1) {  // this split's partial state
    float* base = partial_of(c, item) + split * per;
    o = base;
    mx = base + P.partial_o_floats;
    l = mx + P.partial_ml_floats;
  }
  a.o = o;
  a.m = mx;
  a.l = l;
  P.mq.fn(a, kern);
  for (int64_t e = 0; e < M * D; ++e) o[e] *= c.v_scale;
  if (P.splits == 1) kernels::attn_finish(out_rows(p, P, w), o, D, mx, l);
}

void merge_item(void* vctx, int64_t item, int) {
  const Ctx& c = *static_cast<const Ctx*>(vctx);
  const FiaPlan& P = *c.P;
  const int64_t per = P.partial_o_floats + 2 * P.partial_ml_floats;
  float* base = partial_of(c, item);
  kernels::attn_merge_splits(out_rows(*c.p, P, P.items[static_cast<size_t>(item)]), P.splits, base,
                             base + P.partial_o_floats, base + P.partial_o_floats + P.partial_ml_floats, per, per);
}

}  // namespace

Status fia_mla_quant_run(const FiaParams& p, const FiaPlan& P, void* workspace) {
  Ctx c;
  c.p = &p;
  c.P = &P;
  c.ws = static_cast<char*>(workspace);
  c.k_scale = p.key_antiquant_scale->ptr<const float>()[0];
  c.v_scale = p.value_antiquant_scale->ptr<const float>()[0];
  parallel_items(static_cast<int64_t>(P.items.size()) * P.splits, P.threads, run_task, &c);
  if (P.splits > 1) parallel_items(static_cast<int64_t>(P.items.size()), P.threads, merge_item, &c);
  return kSuccess;
}

}  // namespace mlaops

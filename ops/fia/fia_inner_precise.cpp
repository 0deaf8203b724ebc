// innerPrecise of FusedInferAttentionScoreV4: its rules, what each bit does in a call, and the
// legacy (uncorrected) invalid rows (ops/fia/fia_inner_precise.h).
#include "ops/fia/fia_inner_precise.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "core/workspace.h"
#include "ops/common/check_util.h"
#include "ops/fia/fia.h"

namespace mlaops {

namespace {

bool is_half_kv(const FiaParams& p) {
  const DType t = p.key[0].dtype;
  return t == DType::kFloat16 || t == DType::kBFloat16;
}

// FIA-19 (aclnn): TND / NTD without rope over FP16 / BF16 key / value (the vendor's TND table):
// GQA / MQA innerPrecise 0 only; MHA FP16 0 / 1, MHA BF16 0.
Status check_tnd(const FiaParams& p, const char* op, const FiaCall& c) {
  if (!c.packed || c.rope || c.full_quant || !is_half_kv(p)) return kSuccess;
  if (c.G > 1) return check::value_in(op, "innerPrecise", "FIA-19 TND / NTD GQA / MQA", p.inner_precise, {0});
  if (p.query.dtype == DType::kBFloat16)
    return check::value_in(op, "innerPrecise", "FIA-19 TND / NTD MHA BF16", p.inner_precise, {0});
  return check::value_in(op, "innerPrecise", "FIA-19 TND / NTD MHA FP16", p.inner_precise, {0, 1});
}

// Why bit 0 = 1 keeps high precision in this call (null: the FP16 emulation applies).
const char* kept_reason(const FiaParams& p, const FiaCall& c) {
  if (p.query.dtype != DType::kFloat16 || c.full_quant) return "not a FLOAT16 query (BF16 / INT8 always high precision)";
  if (c.mq.on) return "MLA full quantisation";
  if (c.aq.on) return "INT8 / INT4 key / value (bit 0 rounds the dequantised values)";
  if (c.rope) return "MLA rope (the vendor's MLA kernels compute in FP32)";
  if (c.decode_rule) return "the decode rule (the vendor's decode kernels compute in FP32)";
  if (c.pse) return "pseShift (the vendor forces high precision with a FLOAT16 pse)";
  if (c.sink) return "learnableSink (the vendor accepts only innerPrecise 0)";
  if (c.prefix.on) return "a shared prefix (not emulated: its KV splits merge in FP32)";
  return nullptr;
}

}  // namespace

Status fia_inner_precise_check(const FiaParams& p, const FiaCheckOptions& o, FiaCall* c) {
  if (o.vendor_ranges) MLAOPS_TRY(check_tnd(p, o.op, *c));
  c->ip = FiaInnerPrecise();
  if ((p.inner_precise & 1) != 0) {
    c->ip.kept = kept_reason(p, *c);
    c->ip.fp16_softmax = c->ip.kept == nullptr;
  }
  // Legacy rows: the explicit mask of sparse 0 / 1 (or the decode mask), no correction asked for
  // (bit 1), not a case the vendor corrects by itself (sparse 0 with a mask and left padding),
  // not with a sink (a vendor exclusion with a mask); FP16 / BF16 key / value without a shared
  // prefix (INT8 / INT4 key / value, full quantisation and a prefix keep 0 / +inf: not emulated).
  c->ip.legacy_rows = p.legacy_uniform_invalid_rows && (p.inner_precise & 2) == 0 && c->explicit_mask && !c->tree &&
                      !(c->mode == 0 && c->lp.on) && !c->full_quant && !c->mq.on && !c->sink && !c->aq.on &&
                      !c->prefix.on;
  return kSuccess;
}

std::string fia_inner_precise_explain(const FiaCall& c, int64_t inner_precise) {
  std::string s;
  if (c.ip.fp16_softmax)
    s = "innerPrecise bit 0: FP16 high-performance softmax emulation (128-position blocks, no KV splits)";
  else if (c.ip.kept != nullptr)
    s = std::string("innerPrecise bit 0: high precision kept: ") + c.ip.kept;
  if (c.ip.legacy_rows)
    s += std::string(s.empty() ? "" : "; ") + "legacy invalid rows: mean of V where the mask empties a row";
  (void)inner_precise;
  return s.empty() ? s : s + "\n";
}

namespace {

struct LegacyRow {
  int64_t b, r, h;
};

struct LegacyCtx {
  const FiaParams* p;
  const FiaPlan* P;
  char* ws;
  const float* pq;
  const std::vector<LegacyRow>* rows;
  float fill;
};

// Row r of batch b is a legacy row: its rule range [r + lo, r + hi] meets [0, S2) and the explicit
// mask masks every position of it.
bool legacy_row(const FiaParams& p, const FiaPlan& P, int64_t b, int64_t r) {
  int64_t lo, hi;
  fia_row_deltas(P, b, &lo, &hi);
  const int64_t s2 = P.act_kv[static_cast<size_t>(b)] + P.prefix.len;
  const int64_t a = std::max<int64_t>(0, r + lo), e = std::min<int64_t>(s2 - 1, r + hi);
  if (a > e) return false;  // the rule empties the row: corrected
  const uint8_t* m = p.atten_mask->ptr<const uint8_t>() + b * P.mask_b;
  if (P.lp.on) m += P.q_start[static_cast<size_t>(b)] * P.mask_i + P.kv_start[static_cast<size_t>(b)] * P.mask_j;
  m += r * P.mask_i;
  for (int64_t j = a; j <= e; ++j)
    if (m[j * P.mask_j] == 0) return false;
  return true;
}

void run_legacy(void* ctx, int64_t index, int thread) {
  const LegacyCtx& c = *static_cast<const LegacyCtx*>(ctx);
  const FiaParams& p = *c.p;
  const FiaPlan& P = *c.P;
  const LegacyRow& w = (*c.rows)[static_cast<size_t>(index)];
  // Uniform attention over the rule range: scores all 0 (scale 0, no mask, bias or sink).
  kernels::FlashItem it = fia_item(p, P, FiaPlan::Item{w.b, w.h, w.r, 1}, nullptr, c.pq);
  it.mask = nullptr;
  it.bias = nullptr;
  it.sink = nullptr;
  it.scale = 0.0f;
  it.fp16_softmax = false;
  kernels::flash_attn_panel(it, P.shape, P.panel, c.ws + P.off_thread + thread * P.thread_bytes);
  if (it.lse != nullptr)
    for (int64_t g = 0; g < it.G; ++g) it.lse[g * it.lse_n_stride] += c.fill;  // fill + log(count)
}

}  // namespace

void fia_legacy_rows_run(const FiaParams& p, const FiaPlan& P, void* workspace, const float* pq) {
  if (!P.ip.legacy_rows) return;
  std::vector<LegacyRow> rows;
  for (int64_t b = 0; b < P.B; ++b)
    for (int64_t r = 0; r < P.act_q[static_cast<size_t>(b)]; ++r)
      if (legacy_row(p, P, b, r))
        for (int64_t h = 0; h < P.KVN; ++h) rows.push_back({b, r, h});
  if (rows.empty()) return;
  LegacyCtx c{&p, &P, static_cast<char*>(workspace), pq, &rows,
              P.ip.fp16_softmax ? kFiaFp16MaskFill : kFiaFp32MaskFill};
  parallel_items(static_cast<int64_t>(rows.size()), P.threads, run_legacy, &c);
}

}  // namespace mlaops

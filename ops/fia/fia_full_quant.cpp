// FusedInferAttentionScoreV4 INT8 full quantisation (fia_full_quant.h): rules FIA-30..32, the
// plan, and one work item's operands handed to the kernel's online softmax
// (kernels/cpu/attention/flash_quant_loop.h over the flash_quant rows).
#include "ops/fia/fia_full_quant.h"

#include <algorithm>
#include <cstring>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/workspace.h"
#include "kernels/cpu/attention/flash_quant_loop.h"
#include "kernels/cpu/attention/flash_quant.h"
#include "mlaops/numeric.h"
#include "ops/common/check_util.h"
#include "ops/fia/fia.h"

namespace mlaops {

namespace {

constexpr DType I8 = DType::kInt8;
constexpr int64_t kRowsPerItem = 256;  // query rows x heads of one work item (at least G)

struct Scale {
  const TensorView* t;
  const char* name;
};

}  // namespace

Status fia_full_quant_check_params(const FiaParams& p, const char* op, bool* on) {
  const Scale scales[] = {{p.deq_scale1, "deqScale1Optional"},
                          {p.quant_scale1, "quantScale1Optional"},
                          {p.deq_scale2, "deqScale2Optional"}};
  // An INT8 query with queryRope or dequantScaleQuery is MLA full quant (ops/fia/fia_mla_quant.h).
  const bool i8q = p.query.dtype == I8, mla = p.query_rope != nullptr || p.dequant_scale_query != nullptr;
  *on = i8q && !mla;
  for (const Scale& s : scales) {
    if (!*on) {
      MLAOPS_CHECK(s.t == nullptr, kParamInvalid,
                   "%s: %s: FIA-30 only with an INT8 query without queryRope / dequantScaleQuery (GQA / MHA full "
                   "quantisation); allowed null with %s, got a tensor",
                   op, s.name, i8q ? "MLA full quant" : (p.query.dtype == DType::kFloat16 ? "a FLOAT16 query" : "a BF16 query"));
      continue;
    }
    MLAOPS_CHECK(s.t != nullptr, kParamInvalid,
                 "%s: %s: FIA-30 required with an INT8 query (full quantisation needs deqScale1, quantScale1 and "
                 "deqScale2); allowed a tensor, got null",
                 op, s.name);
    const bool deq = s.t != p.quant_scale1;
    if (deq)
      MLAOPS_TRY(check::dtype_in(op, s.name, "FIA-31", *s.t, {DType::kUInt64, DType::kFloat32}));
    else
      MLAOPS_TRY(check::dtype_in(op, s.name, "FIA-31", *s.t, {DType::kFloat32}));
    MLAOPS_TRY(check::format_in(op, s.name, "FIA-31", *s.t, {Format::kND, Format::kNCHW}));
    int64_t n = 0;
    MLAOPS_CHECK(checked_numel(*s.t, &n) && n == 1, kParamInvalid,
                 "%s: %s: FIA-31 per-tensor scale; allowed one element (shape [1]), got shape %s", op, s.name,
                 check::shape_str(*s.t).c_str());
  }
  return kSuccess;
}

Status fia_full_quant_check_call(const FiaParams& p, const char* op, const FiaCall& c) {
  MLAOPS_CHECK(c.QS > 1, kParamInvalid,
               "%s: query: FIA-32 INT8 full quantisation is the prefill path; allowed Q_S > 1, got Q_S %lld", op,
               (long long)c.QS);
  MLAOPS_CHECK(!c.paged, kParamInvalid,
               "%s: blockTableOptional: FIA-32 paged attention is not allowed with an INT8 query; allowed null, got a "
               "tensor",
               op);
  MLAOPS_CHECK(!c.packed, kParamInvalid,
               "%s: inputLayout: FIA-32 INT8 full quantisation is not allowed with layout %s; allowed BSH, BSND, BNSD "
               "(and their output variants), got %s",
               op, fia_layout_name(c.in_l), fia_layout_name(c.in_l));
  MLAOPS_CHECK(p.learnable_sink == nullptr, kParamInvalid,
               "%s: learnableSinkOptional: FIA-32 not allowed with INT8 full quantisation; allowed null, got a tensor",
               op);
  MLAOPS_CHECK(p.sparse_mode != 9, kParamInvalid,
               "%s: sparseMode: FIA-32 the tree mask (9) is not allowed with INT8 full quantisation; allowed 0..4, "
               "got 9",
               op);
  const Scale aq[] = {{p.antiquant_scale, "antiquantScaleOptional"},
                      {p.antiquant_offset, "antiquantOffsetOptional"},
                      {p.key_antiquant_scale, "keyAntiquantScaleOptional"},
                      {p.key_antiquant_offset, "keyAntiquantOffsetOptional"},
                      {p.value_antiquant_scale, "valueAntiquantScaleOptional"},
                      {p.value_antiquant_offset, "valueAntiquantOffsetOptional"}};
  for (const Scale& s : aq)
    MLAOPS_CHECK(s.t == nullptr, kParamInvalid,
                 "%s: %s: FIA-32 KV antiquant parameters are not allowed with INT8 full quantisation (key and value "
                 "are dequantised by deqScale1 / deqScale2); allowed null, got a tensor",
                 op, s.name);
  MLAOPS_CHECK(c.QD % 32 == 0 && c.VD % 32 == 0, kParamInvalid,
               "%s: query: FIA-32 INT8 head dims must be multiples of 32 (32-byte aligned) when Q_S > 1; allowed Q_D "
               "and V_D multiples of 32, got Q_D %lld, V_D %lld",
               op, (long long)c.QD, (long long)c.VD);
  return kSuccess;
}

float fia_full_quant_trunc19(const TensorView& t) {
  uint32_t bits = 0;
  if (t.dtype == DType::kUInt64) {
    const uint64_t v = *t.ptr<const uint64_t>();
    bits = static_cast<uint32_t>(v & 0xffffffffu);  // the float32 pattern in the low 32 bits
  } else {
    std::memcpy(&bits, t.data, 4);
  }
  return bits_float(bits & 0xffffe000u);
}

FiaFullQuantScales fia_full_quant_scales(const FiaParams& p) {
  FiaFullQuantScales s;
  s.deq1 = fia_full_quant_trunc19(*p.deq_scale1);
  s.deq2 = fia_full_quant_trunc19(*p.deq_scale2);
  s.qs1_h = round_fp16(*p.quant_scale1->ptr<const float>());
  s.scale_h = round_fp16(static_cast<float>(p.scale_value));
  return s;
}

Status fia_full_quant_plan(FiaPlan* plan, const char* op) {
  FiaPlan& P = *plan;
  const int64_t max_q = std::max<int64_t>(1, *std::max_element(P.act_q.begin(), P.act_q.end()));
  P.R = std::max<int64_t>(1, std::min<int64_t>(max_q, kRowsPerItem / std::min<int64_t>(P.G, kRowsPerItem)));
  P.splits = 1;
  for (int64_t b = 0; b < P.B; ++b) {
    const int64_t aq = P.act_q[static_cast<size_t>(b)];
    for (int64_t h = 0; h < P.KVN; ++h)
      for (int64_t r0 = 0; r0 < aq; r0 += P.R) P.items.push_back({b, h, r0, std::min(P.R, aq - r0)});
  }
  const int64_t n_items = static_cast<int64_t>(P.items.size());
  for (int64_t i = 0; i < n_items; ++i) P.tasks.push_back({i, 1, 0, false});
  P.fq_row = kernels::flash_quant_family().select(P.isa);
  kernels::flash_quant_family().note_use(P.fq_row);
  int64_t M = 0;
  MLAOPS_CHECK(mul_ok(P.G, P.R, &M) && M <= (int64_t{1} << 40) && P.QD <= (int64_t{1} << 20) &&
                   P.VD <= (int64_t{1} << 20),
               kParamInvalid,
               "%s: query: FIA-17 workspace overflows int64 (INT8 full quantisation scratch bound); allowed G x rows "
               "<= 2^40, D and V_D <= 2^20, got G %lld x rows %lld, D %lld, V_D %lld",
               op, (long long)P.G, (long long)P.R, (long long)P.QD, (long long)P.VD);
  P.thread_bytes = kernels::flash_full_quant_scratch(M, P.QD, P.VD);
  WorkspaceLayout l(op, "FIA-17 workspace overflows int64 (the sum of its parts)");
  int64_t threads_total = 0;
  MLAOPS_CHECK(mul_ok(P.thread_bytes, P.threads, &threads_total), kParamInvalid,
               "%s: workspace: FIA-17 workspace overflows int64 (INT8 full quantisation per-thread scratch x threads); "
               "allowed <= 2^63 - 1 bytes, got %lld bytes x %d threads",
               op, (long long)P.thread_bytes, P.threads);
  MLAOPS_TRY(l.add(threads_total, &P.off_thread));
  if (P.post_quant) MLAOPS_TRY(l.add(2 * P.N * P.VD * 4, &P.off_pq));
  P.workspace_bytes = n_items == 0 ? 0 : l.total();
  return kSuccess;
}

void fia_full_quant_run_item(const FiaParams& p, const FiaPlan& P, int64_t index, const kernels::FlashItem& it,
                     const FiaFullQuantScales& sc, void* scratch) {
  const FiaPlan::Item& w = P.items[static_cast<size_t>(index)];
  const size_t b = static_cast<size_t>(w.b);
  kernels::FullQuantArgs a;
  const int64_t s0 = P.q_start[b] + w.r0, n0 = w.h * P.G;
  a.q = p.query.ptr<const int8_t>() + w.b * P.q.b + n0 * P.q.n + s0 * P.q.s;
  a.q_n_stride = P.q.n;
  a.q_s_stride = P.q.s;
  int64_t koff = 0, voff = 0;
  a.k_stride = fia_kv_rows(p, P, P.k, w.b, w.h, &koff).slot_stride;
  a.v_stride = fia_kv_rows(p, P, P.v, w.b, w.h, &voff).slot_stride;
  a.k = p.key[0].ptr<const int8_t>() + koff;
  a.v = p.value[0].ptr<const int8_t>() + voff;
  a.deq1 = sc.deq1;
  a.deq2 = sc.deq2;
  a.qs1_h = sc.qs1_h;
  a.scale_h = sc.scale_h;
  kernels::flash_full_quant_item(*kernels::flash_quant_family().value(P.fq_row), a, it, P.G * P.R, scratch);
}

}  // namespace mlaops

// FusedInferAttentionScoreV4 INT8 full quantisation (fia_full_quant.h): rules FIA-30..32, the
// plan and the run of one work item over the flash_quant kernels (kernels/cpu/flash_quant.h).
#include "ops/fia_full_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/workspace.h"
#include "kernels/cpu/attn_combine.h"
#include "kernels/cpu/flash_quant.h"
#include "mlaops/numeric.h"
#include "ops/check_util.h"
#include "ops/fused_infer_attention_score_v4.h"

namespace mlaops {

namespace {

constexpr DType I8 = DType::kInt8;
constexpr int64_t kRowsPerItem = 256;  // query rows x heads of one work item (at least G)
constexpr int64_t kSubRows = 32;       // rows whose chunk scores are held at once

struct Scale {
  const TensorView* t;
  const char* name;
};

// Per-thread scratch of an item of M rows (64-byte aligned parts).
struct Scratch {
  int64_t q8 = 0, kp = 0, vp = 0, s = 0, p = 0, acc = 0, psum = 0, alpha = 0, o = 0, mx = 0, l = 0, total = 0;
};
Scratch scratch_layout(int64_t M, int64_t D, int64_t VD) {
  Scratch s;
  int64_t at = 0;
  auto take = [&](int64_t bytes) {
    const int64_t off = at;
    at += round_up(bytes, kWorkspaceAlign);
    return off;
  };
  const int64_t mb = std::min(M, kSubRows);
  s.q8 = take(M * D);
  s.kp = take(kernels::kFqChunk * D);
  s.vp = take(kernels::kFqChunk * VD);
  s.s = take(mb * kernels::kFqChunk * 4);
  s.p = take(mb * kernels::kFqChunk);
  s.acc = take(mb * VD * 4);
  s.psum = take(mb * 4);
  s.alpha = take(mb * 4);
  s.o = take(M * VD * 4);
  s.mx = take(M * 4);
  s.l = take(M * 4);
  s.total = at;
  return s;
}

}  // namespace

Status fia_fq_check_params(const FiaParams& p, const char* op, bool* on) {
  const Scale scales[] = {{p.deq_scale1, "deqScale1Optional"},
                          {p.quant_scale1, "quantScale1Optional"},
                          {p.deq_scale2, "deqScale2Optional"}};
  // An INT8 query with queryRope or dequantScaleQuery is MLA full quant (ops/fia_mla_quant.h).
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

Status fia_fq_check_call(const FiaParams& p, const char* op, const FiaCall& c) {
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

float fia_fq_trunc19(const TensorView& t) {
  uint32_t bits = 0;
  if (t.dtype == DType::kUInt64) {
    const uint64_t v = *t.ptr<const uint64_t>();
    bits = static_cast<uint32_t>(v & 0xffffffffu);  // the float32 pattern in the low 32 bits
  } else {
    std::memcpy(&bits, t.data, 4);
  }
  return bits_float(bits & 0xffffe000u);
}

FiaFqScales fia_fq_scales(const FiaParams& p) {
  FiaFqScales s;
  s.deq1 = fia_fq_trunc19(*p.deq_scale1);
  s.deq2 = fia_fq_trunc19(*p.deq_scale2);
  s.qs1_h = round_fp16(*p.quant_scale1->ptr<const float>());
  s.scale_h = round_fp16(static_cast<float>(p.scale_value));
  return s;
}

Status fia_fq_plan(FiaPlan* plan, const char* op) {
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
  P.thread_bytes = round_up(scratch_layout(M, P.QD, P.VD).total, kWorkspaceAlign);
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

void fia_fq_run_item(const FiaParams& p, const FiaPlan& P, int64_t index, const kernels::FlashItem& it,
                     const FiaFqScales& sc, void* scratch) {
  const kernels::FlashQuantKernels& fk = *kernels::flash_quant_family().value(P.fq_row);
  const FiaPlan::Item& w = P.items[static_cast<size_t>(index)];
  const size_t b = static_cast<size_t>(w.b);
  const int64_t G = P.G, R = w.rows, M = G * R, D = P.QD, VD = P.VD;
  const Scratch L = scratch_layout(G * P.R, D, VD);
  char* base = static_cast<char*>(scratch);
  int8_t* q8 = reinterpret_cast<int8_t*>(base + L.q8);
  uint8_t* kp = reinterpret_cast<uint8_t*>(base + L.kp);
  uint8_t* vp = reinterpret_cast<uint8_t*>(base + L.vp);
  float* s = reinterpret_cast<float*>(base + L.s);
  int8_t* pq = reinterpret_cast<int8_t*>(base + L.p);
  int32_t* acc = reinterpret_cast<int32_t*>(base + L.acc);
  int32_t* psum = reinterpret_cast<int32_t*>(base + L.psum);
  float* alpha = reinterpret_cast<float*>(base + L.alpha);
  float* o = reinterpret_cast<float*>(base + L.o);
  float* mx = reinterpret_cast<float*>(base + L.mx);
  float* l = reinterpret_cast<float*>(base + L.l);
  constexpr int64_t C = kernels::kFqChunk;

  // Query rows (g, r) -> row m = g * R + r, dense.
  const int64_t s0 = P.q_start[b] + w.r0, n0 = w.h * G;
  const int8_t* qb = p.query.ptr<const int8_t>() + w.b * P.q.b + n0 * P.q.n + s0 * P.q.s;
  for (int64_t g = 0; g < G; ++g)
    for (int64_t r = 0; r < R; ++r) std::memcpy(q8 + (g * R + r) * D, qb + g * P.q.n + r * P.q.s, static_cast<size_t>(D));
  int64_t koff = 0, voff = 0;
  const kernels::FlashKv kr = fia_kv_rows(p, P, P.k, w.b, w.h, &koff);
  const kernels::FlashKv vr = fia_kv_rows(p, P, P.v, w.b, w.h, &voff);
  const int8_t* kb = p.key[0].ptr<const int8_t>() + koff;
  const int8_t* vb = p.value[0].ptr<const int8_t>() + voff;
  std::fill(o, o + M * VD, 0.0f);
  std::fill(mx, mx + M, -std::numeric_limits<float>::infinity());
  std::fill(l, l + M, 0.0f);

  const int64_t kv = P.act_kv[b];
  const int64_t i_first = w.r0, i_last = w.r0 + R - 1;  // batch-relative query rows of the item
  for (int64_t c0 = 0; c0 < kv; c0 += C) {
    const int64_t n = std::min(C, kv - c0);
    // The rule's band [i + lo, i + hi] of every row misses this chunk: nothing to do.
    if (i_last + it.hi_delta < c0 || i_first + it.lo_delta > c0 + n - 1) continue;
    fk.pack_k(kb + c0 * kr.slot_stride, kr.slot_stride, n, D, kp);
    fk.pack_v(vb + c0 * vr.slot_stride, vr.slot_stride, n, VD, vp);
    for (int64_t mb0 = 0; mb0 < M; mb0 += kSubRows) {
      const int64_t mb = std::min(kSubRows, M - mb0);
      // Positions past the band's upper edge of every row of the block are skipped.
      int64_t r_max = 0;
      for (int64_t mm = 0; mm < mb; ++mm) r_max = std::max(r_max, (mb0 + mm) % R);
      const int64_t upto = std::min<int64_t>(n, std::max<int64_t>(0, w.r0 + r_max + it.hi_delta - c0 + 1));
      if (upto == 0) continue;
      const int64_t n16 = kernels::fq_pad(upto, 16), n4 = kernels::fq_pad(upto, 4);
      fk.scores(q8 + mb0 * D, D, mb, kp, n16, D, sc.deq1, sc.scale_h, s, C);
      for (int64_t mm = 0; mm < mb; ++mm) {
        const int64_t m = mb0 + mm, g = m / R, i = w.r0 + m % R;
        float* sr = s + mm * C;
        if (it.bias != nullptr) {
          const uint16_t* bp = it.bias + g * it.bias_n_stride + i * it.bias_i_stride + c0;
          for (int64_t j = 0; j < upto; ++j) sr[j] += fp16_to_float(bp[j]);
        }
        // Band [i + lo, i + hi] relative to the chunk, then the explicit mask.
        const int64_t jlo = std::max<int64_t>(0, std::min<int64_t>(upto, i + it.lo_delta - c0));
        const int64_t jhi = std::max<int64_t>(0, std::min<int64_t>(upto, i + it.hi_delta - c0 + 1));
        const float ninf = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < jlo; ++j) sr[j] = ninf;
        for (int64_t j = std::max(jhi, jlo); j < upto; ++j) sr[j] = ninf;
        if (it.mask != nullptr) {
          const uint8_t* mr = it.mask + i * it.mask_i_stride;
          for (int64_t j = jlo; j < jhi; ++j)
            if (mr[(c0 + j) * it.mask_j_stride] != 0) sr[j] = ninf;
        }
        const float m_old = mx[m];
        float esum = 0.0f;
        int8_t* pr = pq + mm * C;
        fk.row_quant(sr, upto, sc.qs1_h, &mx[m], pr, &esum, &psum[mm]);
        std::memset(pr + upto, 0, static_cast<size_t>(n4 - upto));
        if (mx[m] == ninf && l[m] == 0.0f) {  // a valid position whose score is -inf (pseShift): the
          for (int64_t j = jlo; j < jhi; ++j)  // all -inf state of kernels/cpu/attn_combine.h
            if (it.mask == nullptr || it.mask[i * it.mask_i_stride + (c0 + j) * it.mask_j_stride] == 0) {
              l[m] = kernels::kAllNegInfL;
              break;
            }
        }
        const float a = mx[m] == m_old ? 1.0f : (m_old == ninf ? 0.0f : std::exp(m_old - mx[m]));
        alpha[mm] = a;
        l[m] = l[m] * a + esum;
      }
      fk.pv(pq, C, psum, mb, vp, n4, VD, acc, VD);
      for (int64_t mm = 0; mm < mb; ++mm) {
        float* orow = o + (mb0 + mm) * VD;
        const int32_t* arow = acc + mm * VD;
        const float a = alpha[mm];
        for (int64_t d = 0; d < VD; ++d) orow[d] = orow[d] * a + static_cast<float>(arow[d]) * sc.deq2;
      }
    }
  }
  kernels::attn_finish(it, o, VD, mx, l);
}

}  // namespace mlaops

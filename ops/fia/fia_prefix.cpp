// The shared prefix of FusedInferAttentionScoreV4 (ops/fia/fia_prefix.h): its rules and the KV
// source of each split. docs/ops/fused_infer_attention_score.md "Shared prefix".
#include "ops/fia/fia_prefix.h"

#include <algorithm>
#include <string>

#include "core/checked_math.h"
#include "core/error.h"
#include "kernels/cpu/attention/attn_combine.h"
#include "ops/common/check_util.h"
#include "ops/fia/fia.h"

namespace mlaops {
namespace {

// A prefix tensor is given (actualSharedPrefixLen alone is ignored, as the vendor does).
bool any_prefix(const FiaParams& p) { return p.key_shared_prefix != nullptr || p.value_shared_prefix != nullptr; }

// FIA-46: [1, Sp, KV_N * D] (BSH), [1, Sp, KV_N, D] (BSND), [1, KV_N, Sp, D] (BNSD): the rank,
// dtype and every dim but the sequence one equal to the batch tensor's, dim 0 equal to 1.
Status check_shape(const char* op, const char* name, const TensorView& pre, const TensorView& own, int ax) {
  MLAOPS_CHECK(pre.dtype == own.dtype, kParamInvalid, "%s: %s: FIA-46 dtype must equal the key/value's; allowed %s, got %s",
               op, name, dtype_name(own.dtype), dtype_name(pre.dtype));
  bool ok = pre.rank == own.rank && pre.dims[0] == 1;
  for (int i = 1; ok && i < own.rank; ++i) ok = i == ax || pre.dims[i] == own.dims[i];
  std::string want = "[1";
  for (int i = 1; i < own.rank; ++i) want += i == ax ? ", Sp" : ", " + std::to_string(own.dims[i]);
  MLAOPS_CHECK(ok, kParamInvalid, "%s: %s: FIA-46 shape; allowed %s], got %s", op, name, want.c_str(),
               check::shape_str(pre).c_str());
  return kSuccess;
}

}  // namespace

Status fia_prefix_check_empty(const FiaParams& p, const char* op) {
  MLAOPS_CHECK(!any_prefix(p), kParamInvalid,
               "%s: keySharedPrefixOptional: FIA-49 a shared prefix needs a non-empty key/value; allowed no prefix with "
               "an empty key/value, got a prefix",
               op);
  return kSuccess;
}

Status fia_prefix_check(const FiaParams& p, const char* op, FiaCall* c) {
  if (!any_prefix(p)) return kSuccess;
  const TensorView* kp = p.key_shared_prefix;
  const TensorView* vp = p.value_shared_prefix;
  // FIA-45 presence
  MLAOPS_CHECK(kp != nullptr && vp != nullptr, kParamInvalid,
               "%s: %s: FIA-45 keySharedPrefix and valueSharedPrefix come together; allowed both or neither, got "
               "only one tensor",
               op, kp == nullptr ? "keySharedPrefixOptional" : "valueSharedPrefixOptional");
  // FIA-48 combinations (left padding: the C++ API computes it; the vendor's exclusion, FIA-24,
  // in the aclnn layer)
  const struct {
    bool bad;
    const char* what;
  } excl[] = {
      {c->paged, "paged attention (blockTable)"},
      {c->packed, "TND / NTD layouts"},
      {c->rope, "MLA (queryRope / keyRope)"},
      {p.learnable_sink != nullptr, "learnableSink"},
      {p.key.size() != 1 || p.value.size() != 1, "key/value tensor lists"},
      {p.sparse_mode == 9, "tree mask (sparseMode 9)"},
      {p.query.dtype == DType::kInt8, "INT8 query (full quantisation)"},
  };
  for (const auto& e : excl)
    MLAOPS_CHECK(!e.bad, kParamInvalid,
                 "%s: keySharedPrefixOptional: FIA-48 a shared prefix is not accepted with %s; allowed no prefix, got "
                 "a prefix",
                 op, e.what);
  const int ax = c->in_l == FiaLayout::kBNSD ? 2 : 1;
  MLAOPS_TRY(check_shape(op, "keySharedPrefixOptional", *kp, p.key[0], ax));
  MLAOPS_TRY(check_shape(op, "valueSharedPrefixOptional", *vp, p.value[0], ax));
  const int64_t sp = kp->dims[ax];
  MLAOPS_CHECK(vp->dims[ax] == sp, kParamInvalid,
               "%s: valueSharedPrefixOptional: FIA-46 sequence extent must equal keySharedPrefix's; allowed %lld, got "
               "%lld",
               op, (long long)sp, (long long)vp->dims[ax]);
  int64_t lp = sp;
  if (const std::vector<int64_t>* a = p.actual_shared_prefix_len) {
    MLAOPS_CHECK(a->size() == 1, kParamInvalid,
                 "%s: actualSharedPrefixLenOptional: FIA-47 length; allowed 1, got %zu", op, a->size());
    lp = (*a)[0];
    MLAOPS_CHECK(lp >= 0 && lp <= sp, kParamInvalid,
                 "%s: actualSharedPrefixLenOptional: FIA-47 value; allowed [0, %lld] (the prefix's S), got %lld", op,
                 (long long)sp, (long long)lp);
  }
  FiaPrefix& f = c->prefix;
  f.on = true;
  f.len = lp;
  f.s = sp;
  // Element strides: BSH (1, Sp, KV_N * D): head = D * last stride; BSND (1, Sp, N, D); BNSD (1, N, Sp, D).
  // INT4 in INT32 words (c->QD / c->VD already in nibbles, FIA-33): strides in nibbles too.
  const int64_t u = kp->dtype == DType::kInt32 ? 8 : 1;
  auto strides = [&](const TensorView& t, int64_t d, int64_t* h, int64_t* slot) {
    *slot = t.strides[ax] * u;
    *h = (c->in_l == FiaLayout::kBSH ? d / u * t.strides[2] : t.strides[ax == 1 ? 2 : 1]) * u;
  };
  strides(*kp, c->QD, &f.k_h, &f.k_slot);
  strides(*vp, c->VD, &f.v_h, &f.v_slot);
  return kSuccess;
}

bool fia_prefix_range(const FiaParams& p, const FiaCall& c, int64_t b, int64_t h, int64_t split, int64_t splits,
                      int64_t tile, kernels::FlashItem* it) {
  const int64_t half = splits / 2;
  const bool prefix = split < half;
  const int64_t len = prefix ? c.prefix.len : it->kv_end;
  const int64_t chunk = round_up(ceil_div(std::max<int64_t>(len, 1), half), tile);
  it->kv_begin = std::min(len, (split % half) * chunk);
  it->kv_end = std::min(len, it->kv_begin + chunk);
  if (prefix) {  // rows of the prefix (batch 0); rule unchanged
    if (!c.aq.on) {  // INT8 / INT4: fia_antiquant_run_task reads the prefix rows
      it->k = kernels::FlashKv();
      it->k.base = p.key_shared_prefix->ptr<const uint16_t>() + h * c.prefix.k_h;
      it->k.slot_stride = c.prefix.k_slot;
      it->k.c0 = c.QD;
      it->v = kernels::FlashKv();
      it->v.base = p.value_shared_prefix->ptr<const uint16_t>() + h * c.prefix.v_h;
      it->v.slot_stride = c.prefix.v_slot;
      it->v.c0 = c.VD;
    }
    // left padding: make_item moved the mask / pse to the batch's window; the prefix columns are
    // [0, Lp) whatever the padding
    const int64_t ks = c.kv_start[static_cast<size_t>(b)];
    if (c.lp.on && ks != 0) {
      if (it->mask != nullptr) it->mask -= ks * it->mask_j_stride;
      if (it->bias != nullptr) it->bias -= ks;
    }
    return true;
  }
  fia_prefix_own_shift(c, it);
  return false;
}

void fia_prefix_own_shift(const FiaCall& c, kernels::FlashItem* it) {
  // the batch's own rows: column j of the item is effective position Lp + j
  const int64_t lp = c.prefix.len;
  if (it->mask != nullptr) it->mask += lp * it->mask_j_stride;
  if (it->bias != nullptr) it->bias += lp;
  it->lo_delta -= lp;
  it->hi_delta -= lp;
}

const char* fia_prefix_group_why_not(const FiaCall& c) {
  if (!c.prefix.on) return "no shared prefix";
  // one batch reads the prefix once per KV head anyway (its items' prefix splits)
  if (c.prefix.len == 0) return "an empty prefix (actualSharedPrefixLen 0)";
  if (c.packed) return "a packed layout (TND / NTD)";
  if (c.B < 2) return "one batch (it reads the prefix once per KV head anyway)";
  using Kind = FiaAntiquantParam::Kind;
  if (c.aq.on && (c.aq.k.kind != Kind::kChannel || c.aq.v.kind != Kind::kChannel))
    return "per-batch antiquant parameters";
  if (c.QS > 1) {  // f = b * Q_S + s: one stride for the batch and the row
    if (c.q.b != c.QS * c.q.s) return "the query's batch stride is not Q_S rows";
    if (c.explicit_mask && c.mask_b != c.QS * c.mask_i) return "the mask's batch stride is not Q_S rows";
    if (c.pse && c.pse_b != c.QS * c.pse_i) return "pseShift's batch stride is not Q_S rows";
  }
  // every valid row sees every prefix column under the rule (the units run without one)
  for (int64_t b = 0; b < c.B; ++b) {
    const int64_t aq = c.act_q[static_cast<size_t>(b)];
    if (aq == 0) continue;
    int64_t lo, hi;
    fia_row_deltas(c, b, &lo, &hi);
    if (aq - 1 + lo > 0 || hi < c.prefix.len - 1) return "the sparse rule hides prefix columns from some rows";
  }
  return nullptr;
}

void fia_prefix_plan_units(FiaPlan* P, int64_t rows_max) {
  FiaPlan& c = *P;
  c.punits.clear();
  const int64_t QS = c.QS;
  // flattened row f: Q_S 1: f = b (the batch strides); Q_S > 1: f = b * Q_S + s (the row strides)
  const int64_t rq = QS > 1 ? c.q.s : c.q.b, rm = QS > 1 ? c.mask_i : c.mask_b, rb = QS > 1 ? c.pse_i : c.pse_b;
  const int64_t total = QS == 1 ? c.B : c.B * QS;
  const int64_t rows = std::max<int64_t>(1, std::min(rows_max, total));
  for (int64_t h = 0; h < c.KVN; ++h)
    for (int64_t f0 = 0; f0 < total; f0 += rows) {
      FiaPlan::PUnit u;
      u.h = h;
      u.f0 = f0;
      u.rows = std::min(rows, total - f0);
      c.punits.push_back(u);
    }
  c.prow_rows = rows;
  c.prow_q = rq;
  c.prow_mask = c.explicit_mask ? rm : 0;
  c.prow_bias = c.pse ? rb : 0;
  c.pgroup = true;
}

kernels::FlashItem fia_prefix_unit_item(const FiaParams& p, const FiaPlan& P, int64_t index, float* partial) {
  const FiaPlan::PUnit& u = P.punits[static_cast<size_t>(index / P.psplits)];
  const int64_t split = index % P.psplits;
  const int64_t n0 = u.h * P.G;
  kernels::FlashItem it;
  it.q = p.query.ptr<const uint16_t>() + n0 * P.q.n + u.f0 * P.prow_q;
  it.q_n_stride = P.q.n;
  it.q_s_stride = P.prow_q;
  it.G = P.G;
  it.R = u.rows;
  it.QD = P.QD;
  it.VD = P.VD;
  it.fp16 = P.fp16;
  if (!P.aq.on) {  // INT8 / INT4: fia_antiquant_run_task reads the prefix rows
    it.k.base = p.key_shared_prefix->ptr<const uint16_t>() + u.h * P.prefix.k_h;
    it.k.slot_stride = P.prefix.k_slot;
    it.k.c0 = P.QD;
    it.v.base = p.value_shared_prefix->ptr<const uint16_t>() + u.h * P.prefix.v_h;
    it.v.slot_stride = P.prefix.v_slot;
    it.v.c0 = P.VD;
  }
  const int64_t lp = P.prefix.len;
  const int64_t chunk = round_up(ceil_div(std::max<int64_t>(lp, 1), P.psplits), P.tile);
  it.kv_begin = std::min(lp, split * chunk);
  it.kv_end = std::min(lp, it.kv_begin + chunk);
  it.scale = static_cast<float>(p.scale_value);
  const int64_t big = int64_t{1} << 62;  // every row sees every prefix column (fia_prefix_plan_units)
  it.lo_delta = -big;
  it.hi_delta = big;
  if (P.explicit_mask) {  // prefix columns [0, Lp): no padding shift
    it.mask = p.atten_mask->ptr<const uint8_t>() + u.f0 * P.prow_mask;
    it.mask_i_stride = P.prow_mask;
    it.mask_j_stride = P.mask_j;
  }
  if (P.pse) {
    it.bias = p.pse_shift->ptr<const uint16_t>() + n0 * P.pse_n + u.f0 * P.prow_bias;
    it.bias_n_stride = P.pse_n;
    it.bias_i_stride = P.prow_bias;
  }
  it.partial_o = partial;
  it.partial_m = partial + P.pp_o_floats;
  it.partial_l = it.partial_m + P.G * P.prow_rows;
  return it;
}

void fia_prefix_merge(const FiaPlan& P, const kernels::FlashItem& it, int64_t b, int64_t h, int64_t r0, int64_t rows,
                      const float* own, int64_t own_per, const float* units, float* tmp) {
  const int64_t G = P.G, VD = P.VD, M = G * rows;
  float* o = tmp;
  float* m = o + M * VD;
  float* l = m + M;
  float* o2 = l + M;
  float* m2 = o2 + M * VD;
  float* l2 = m2 + M;
  // the own splits (rows g * rows + r)
  const float* om = own + P.partial_o_floats;
  const float* ol = om + P.partial_ml_floats;
  std::copy(own, own + M * VD, o);
  std::copy(om, om + M, m);
  std::copy(ol, ol + M, l);
  for (int64_t s = 1; s < P.splits; ++s) {
    const float* so = own + s * own_per;
    kernels::attn_merge_state(o, m, l, so, so + P.partial_o_floats, so + P.partial_o_floats + P.partial_ml_floats, M, VD);
  }
  // the prefix units' rows of this item, per prefix chunk
  const int64_t total = P.QS == 1 ? P.B : P.B * P.QS;
  const int64_t per_head = ceil_div(total, P.prow_rows);
  const int64_t f_base = P.QS == 1 ? b : b * P.QS + P.q_start[static_cast<size_t>(b)] + r0;
  for (int64_t ps = 0; ps < P.psplits; ++ps) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t f = f_base + (P.QS == 1 ? 0 : r);
      const int64_t ui = h * per_head + f / P.prow_rows, ur = f % P.prow_rows;
      const int64_t ru = P.punits[static_cast<size_t>(ui)].rows;
      const float* src = units + (ui * P.psplits + ps) * P.pp_per;
      for (int64_t g = 0; g < G; ++g) {
        const int64_t from = g * ru + ur, to = g * rows + r;
        std::copy(src + from * VD, src + (from + 1) * VD, o2 + to * VD);
        m2[to] = src[P.pp_o_floats + from];
        l2[to] = src[P.pp_o_floats + G * P.prow_rows + from];
      }
    }
    kernels::attn_merge_state(o, m, l, o2, m2, l2, M, VD);
  }
  kernels::attn_finish(it, o, VD, m, l);
}

}  // namespace mlaops

// The shared prefix of FusedInferAttentionScoreV4 (ops/fia_prefix.h): its rules and the KV
// source of each split. docs/ops/fused_infer_attention_score.md "Shared prefix".
#include "ops/fia_prefix.h"

#include <algorithm>
#include <string>

#include "core/checked_math.h"
#include "core/error.h"
#include "ops/check_util.h"
#include "ops/fused_infer_attention_score_v4.h"

namespace mlaops {
namespace {

bool any_prefix(const FiaParams& p) {
  return p.key_shared_prefix != nullptr || p.value_shared_prefix != nullptr || p.actual_shared_prefix_len != nullptr;
}

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

Status fia_prefix_check_scope(const FiaParams& p, const char* op) {
  if (!any_prefix(p) || p.key.empty() || p.query.dtype == DType::kInt8) return kSuccess;  // INT8 query: FIA-48
  const DType kt = p.key[0].dtype;
  MLAOPS_CHECK(kt != DType::kInt8 && kt != DType::kInt32 && kt != DType::kInt4, kParamInvalid,
               "%s: keySharedPrefixOptional: FIA-02 a shared prefix with INT8 / INT4 key/value (KV antiquant) is not "
               "supported yet; allowed %s key/value, got %s",
               op, dtype_name(p.query.dtype), dtype_name(kt));
  return kSuccess;
}

Status fia_prefix_check(const FiaParams& p, const char* op, FiaCall* c) {
  if (!any_prefix(p)) return kSuccess;
  const TensorView* kp = p.key_shared_prefix;
  const TensorView* vp = p.value_shared_prefix;
  // FIA-45 presence
  MLAOPS_CHECK(kp != nullptr && vp != nullptr, kParamInvalid,
               "%s: %s: FIA-45 keySharedPrefix and valueSharedPrefix come together (actualSharedPrefixLen needs "
               "them); allowed both or neither, got %s",
               op, kp == nullptr ? "keySharedPrefixOptional" : "valueSharedPrefixOptional",
               kp == nullptr && vp == nullptr ? "only actualSharedPrefixLen" : "only one tensor");
  // FIA-48 combinations (FIA-02: INT8 / INT4 prefix not supported yet)
  const struct {
    bool bad;
    const char* what;
  } excl[] = {
      {c->paged, "paged attention (blockTable)"},
      {c->packed, "TND / NTD layouts"},
      {c->rope, "MLA (queryRope / keyRope)"},
      {p.learnable_sink != nullptr, "learnableSink"},
      {p.query_padding_size != nullptr || p.kv_padding_size != nullptr, "left padding"},
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
  auto strides = [&](const TensorView& t, int64_t d, int64_t* h, int64_t* slot) {
    *slot = t.strides[ax];
    *h = c->in_l == FiaLayout::kBSH ? d * t.strides[2] : t.strides[ax == 1 ? 2 : 1];
  };
  strides(*kp, c->QD, &f.k_h, &f.k_slot);
  strides(*vp, c->VD, &f.v_h, &f.v_slot);
  return kSuccess;
}

void fia_prefix_range(const FiaParams& p, const FiaCall& c, int64_t h, int64_t split, int64_t splits, int64_t tile,
                      kernels::FlashItem* it) {
  const int64_t half = splits / 2;
  const bool prefix = split < half;
  const int64_t len = prefix ? c.prefix.len : it->kv_end;
  const int64_t chunk = round_up(ceil_div(std::max<int64_t>(len, 1), half), tile);
  it->kv_begin = std::min(len, (split % half) * chunk);
  it->kv_end = std::min(len, it->kv_begin + chunk);
  if (prefix) {  // rows of the prefix (batch 0); mask, pse and rule unchanged
    it->k.base = p.key_shared_prefix->ptr<const uint16_t>() + h * c.prefix.k_h;
    it->k.slot_stride = c.prefix.k_slot;
    it->v.base = p.value_shared_prefix->ptr<const uint16_t>() + h * c.prefix.v_h;
    it->v.slot_stride = c.prefix.v_slot;
    return;
  }
  // the batch's own rows: column j of the item is effective position Lp + j
  const int64_t lp = c.prefix.len;
  if (it->mask != nullptr) it->mask += lp * it->mask_j_stride;
  if (it->bias != nullptr) it->bias += lp;
  it->lo_delta -= lp;
  it->hi_delta -= lp;
}

}  // namespace mlaops

// Shape / length parsing and scope checks of the float64 FusedInferAttentionScoreV4 reference
// (reference/fia/fia_ref_access.h).
#include "reference/fia/fia_ref_access.h"

#include <cstdint>
#include <vector>

#include "core/error.h"

namespace mlaops::fia_ref {

// Parses a non-paged input tensor (query, key, value, ropes) of layout `l` with `heads` heads.
Status parse_seq(const TensorView& t, FiaLayout l, int64_t heads, const char* name, SeqShape* out) {
  const int want_rank = (l == FiaLayout::kBSND || l == FiaLayout::kBNSD) ? 4 : 3;
  MLAOPS_CHECK(t.rank == want_rank, kParamInvalid, "%s: %s: rank must match layout %s; allowed %d, got %d", kOp,
               name, ref::layout_text(l), want_rank, t.rank);
  for (int i = 0; i < t.rank; ++i)
    MLAOPS_CHECK(t.dims[i] >= 0, kParamInvalid, "%s: %s: dim %d is negative (%lld)", kOp, name, i,
                 static_cast<long long>(t.dims[i]));
  int64_t n = heads;
  switch (l) {
    case FiaLayout::kBSH:
      out->b = t.dims[0];
      out->s = t.dims[1];
      MLAOPS_CHECK(t.dims[2] % heads == 0, kParamInvalid,
                   "%s: %s: hidden dim must be a multiple of the head count; allowed multiple of %lld, got %lld",
                   kOp, name, static_cast<long long>(heads), static_cast<long long>(t.dims[2]));
      out->d = t.dims[2] / heads;
      break;
    case FiaLayout::kBSND: out->b = t.dims[0]; out->s = t.dims[1]; n = t.dims[2]; out->d = t.dims[3]; break;
    case FiaLayout::kBNSD: out->b = t.dims[0]; n = t.dims[1]; out->s = t.dims[2]; out->d = t.dims[3]; break;
    case FiaLayout::kTND: out->b = -1; out->s = t.dims[0]; n = t.dims[1]; out->d = t.dims[2]; break;
    case FiaLayout::kNTD: out->b = -1; n = t.dims[0]; out->s = t.dims[1]; out->d = t.dims[2]; break;
    case FiaLayout::kNBSD: return fail(kParamInvalid, "%s: %s: NBSD is an output layout only", kOp, name);
  }
  MLAOPS_CHECK(n == heads, kParamInvalid, "%s: %s: head dim of the shape must equal the head count; allowed %lld, got %lld",
               kOp, name, static_cast<long long>(heads), static_cast<long long>(n));
  return kSuccess;
}

Status parse_paged(const TensorView& t, int64_t kv_heads, const char* name, PagedAccess* out) {
  MLAOPS_CHECK(t.rank >= 3 && t.rank <= 5, kParamInvalid,
               "%s: %s: paged cache rank; allowed 3 (BnBsH), 4 (BnNBsD) or 5 (NZ), got %d", kOp, name, t.rank);
  for (int i = 0; i < t.rank; ++i)
    MLAOPS_CHECK(t.dims[i] >= 0, kParamInvalid, "%s: %s: dim %d is negative (%lld)", kOp, name, i,
                 static_cast<long long>(t.dims[i]));
  out->t = &t;
  out->block_num = t.dims[0];
  int64_t n = kv_heads;
  if (t.rank == 3) {
    out->block_size = t.dims[1];
    MLAOPS_CHECK(t.dims[2] % kv_heads == 0, kParamInvalid,
                 "%s: %s: BnBsH hidden dim must be a multiple of numKeyValueHeads; allowed multiple of %lld, got %lld",
                 kOp, name, static_cast<long long>(kv_heads), static_cast<long long>(t.dims[2]));
    out->d = t.dims[2] / kv_heads;
  } else if (t.rank == 4) {
    n = t.dims[1];
    out->block_size = t.dims[2];
    out->d = t.dims[3];
  } else {
    n = t.dims[1];
    out->block_size = t.dims[3];
    out->c0 = t.dims[4];
    const int64_t want_c0 = t.dtype == DType::kInt8 ? 32 : 16;  // 32 bytes per chunk
    MLAOPS_CHECK(out->c0 == want_c0, kParamInvalid,
                 "%s: %s: NZ cache last dim (c0: 16 for FP16/BF16, 32 for INT8); allowed %lld, got %lld", kOp, name,
                 static_cast<long long>(want_c0), static_cast<long long>(out->c0));
    MLAOPS_CHECK(ref::mul_ok(t.dims[2], out->c0, &out->d), kParamInvalid, "%s: %s: head dim overflows", kOp, name);
  }
  MLAOPS_CHECK(n == kv_heads, kParamInvalid, "%s: %s: KV_N of the cache shape; allowed %lld, got %lld", kOp, name,
               static_cast<long long>(kv_heads), static_cast<long long>(n));
  return kSuccess;
}

// Per-batch lengths from a (1) / (B) / (>B) array; nullptr => the extent.
Status decode_lengths(const std::vector<int64_t>* a, int64_t batch, int64_t extent, const char* name,
                      std::vector<int64_t>* out) {
  out->assign(static_cast<size_t>(batch), extent);
  if (a == nullptr) return kSuccess;
  const int64_t len = static_cast<int64_t>(a->size());
  MLAOPS_CHECK(len == 1 || len >= batch, kParamInvalid, "%s: %s: length; allowed 1 or >= B (%lld), got %lld", kOp,
               name, static_cast<long long>(batch), static_cast<long long>(len));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t v = (*a)[static_cast<size_t>(len == 1 ? 0 : b)];
    MLAOPS_CHECK(v >= 0 && v <= extent, kParamInvalid, "%s: %s[%lld]: allowed [0, %lld], got %lld", kOp, name,
                 static_cast<long long>(len == 1 ? 0 : b), static_cast<long long>(extent), static_cast<long long>(v));
    (*out)[static_cast<size_t>(b)] = v;
  }
  return kSuccess;
}

// Cumulative lengths of a packed (TND/NTD) tensor: a[b] - a[b-1], starts a[b-1], last == total.
Status decode_cumulative(const std::vector<int64_t>* a, int64_t batch, int64_t total, const char* name,
                         std::vector<int64_t>* len, std::vector<int64_t>* start) {
  MLAOPS_CHECK(a != nullptr, kParamInvalid, "%s: %s: required for TND/NTD layouts", kOp, name);
  MLAOPS_CHECK(static_cast<int64_t>(a->size()) == batch, kParamInvalid,
               "%s: %s: length of a cumulative array; allowed %lld (B), got %lld", kOp, name,
               static_cast<long long>(batch), static_cast<long long>(a->size()));
  len->assign(static_cast<size_t>(batch), 0);
  start->assign(static_cast<size_t>(batch), 0);
  int64_t prev = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t v = (*a)[static_cast<size_t>(b)];
    MLAOPS_CHECK(v >= prev, kParamInvalid, "%s: %s[%lld]: cumulative values must be non-decreasing and >= 0; got %lld after %lld",
                 kOp, name, static_cast<long long>(b), static_cast<long long>(v), static_cast<long long>(prev));
    (*start)[static_cast<size_t>(b)] = prev;
    (*len)[static_cast<size_t>(b)] = v - prev;
    prev = v;
  }
  MLAOPS_CHECK(prev == total, kParamInvalid, "%s: %s: last cumulative value must equal T; allowed %lld, got %lld", kOp,
               name, static_cast<long long>(total), static_cast<long long>(prev));
  return kSuccess;
}

// Inputs outside the scope of this build.
Status check_scope(const FiaParams& p) {
  struct Opt {
    const void* ptr;
    const char* name;
  };
  const Opt opts[] = {
      {p.deq_scale1, "deqScale1"},
      {p.quant_scale1, "quantScale1"},
      {p.deq_scale2, "deqScale2"},
      {p.key_rope_antiquant_scale, "keyRopeAntiquantScale"},
      {p.dequant_scale_query, "dequantScaleQuery (query quant)"},
  };
  for (const Opt& o : opts)
    MLAOPS_CHECK(o.ptr == nullptr, kParamInvalid, "%s: %s is not supported yet", kOp, o.name);
  if (p.query.dtype == DType::kInt8)
    return fail(kParamInvalid, "%s: INT8 query (full quant) is not supported yet", kOp);
  for (const auto* list : {&p.key, &p.value}) {
    for (const TensorView& t : *list) {
      if (t.dtype == DType::kInt4)  // INT4 key / value come as INT32 words (int4_at)
        return fail(kParamInvalid, "%s: %s KV: INT4 is passed as INT32", kOp, ref::type_name(t.dtype));
    }
  }
  MLAOPS_CHECK(p.quant_offset2 == nullptr || p.quant_scale2 != nullptr, kParamInvalid,
               "%s: quantOffset2 needs quantScale2", kOp);
  MLAOPS_CHECK((p.attention_out.dtype == DType::kInt8) == (p.quant_scale2 != nullptr), kParamInvalid,
               "%s: INT8 attentionOut exactly when quantScale2 is given", kOp);
  return kSuccess;
}

// Writes `v` to every element of t (rank-generic, through its strides).
void fill_all(const TensorView& t, double v) {
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) ref::store(t, ref::linear_offset(t, i), v);
}

}  // namespace mlaops::fia_ref

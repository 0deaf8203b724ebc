// KV antiquant validation and resolution (fia_antiquant.h; rules FIA-21, FIA-33 (INT4),
// docs/ops/fused_infer_attention_score.md).
#include "ops/fia/fia_antiquant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/attention/attn_combine.h"
#include "kernels/cpu/attention/attn.h"
#include "kernels/cpu/attention/attn_variant.h"
#include "kernels/cpu/quant/dequant_row.h"
#include "mlaops/numeric.h"
#include "ops/common/check_util.h"
#include "ops/fia/fia.h"

namespace mlaops {
namespace {

using check::shape_str;
using Kind = FiaAntiquantParam::Kind;

// The dims of `t` without one leading 1 (separate per-channel shapes may carry it or not).
std::vector<int64_t> dims_of(const TensorView& t, bool drop_leading_one) {
  std::vector<int64_t> d(t.dims, t.dims + t.rank);
  if (drop_leading_one && d.size() >= 2 && d[0] == 1) d.erase(d.begin());
  return d;
}

bool same_shape(const TensorView& a, const TensorView& b) {
  if (a.rank != b.rank) return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.dims[i] != b.dims[i]) return false;
  return true;
}

struct Resolve {
  const FiaAntiquantShape& s;
  const char* name;  // parameter name for messages
  bool combined;     // (2, ...) shapes: index 0 = key, 1 = value
  int which;         // 0 key, 1 value
};

Status fail21(const Resolve& r, const TensorView& t, const char* rule, const std::string& allowed) {
  return fail(kParamInvalid, "%s: %s: FIA-21 %s; allowed %s, got %s %s", r.s.op, r.name, rule, allowed.c_str(),
              dtype_name(t.dtype), shape_str(t).c_str());
}

// Fills `out` for one of key / value from its scale tensor and mode; D = its head dim.
Status resolve(const Resolve& r, const TensorView& sc, int64_t mode, int64_t D, FiaAntiquantParam* out) {
  const FiaAntiquantShape& s = r.s;
  MLAOPS_TRY(check::format_in(s.op, r.name, "FIA-21", sc, {Format::kND, Format::kNCHW}));
  MLAOPS_TRY(check::dense(s.op, r.name, "FIA-21", sc));
  out->mode = mode;
  const int64_t H = s.KVN * D, lead = r.combined ? 2 : 1;
  std::vector<int64_t> d(sc.dims, sc.dims + sc.rank);
  if (r.combined) {
    if (d.empty() || d[0] != 2) return fail21(r, sc, "combined antiquant parameters have a leading dim 2 (key, value)", "(2, ...)");
    d.erase(d.begin());
  }
  const int64_t half = r.combined ? sc.numel() / 2 : 0;
  out->base = r.which * half;
  const bool row_mode = mode == 1 || mode == 3 || mode == 4 || mode == 5;
  if (row_mode) {
    if (sc.dtype != DType::kFloat32) return fail21(r, sc, "per-token scales (modes 1, 3, 4, 5) are FLOAT32", "FLOAT32");
  } else if (sc.dtype != s.q_dtype) {
    return fail21(r, sc, "per-channel / per-tensor / per-head scales have the query dtype", dtype_name(s.q_dtype));
  }
  auto dims_eq = [&](std::initializer_list<int64_t> want) {
    return std::vector<int64_t>(want) == (r.combined ? d : dims_of(sc, false));
  };
  switch (mode) {
    case 0: {
      const std::vector<int64_t> dd = r.combined ? d : dims_of(sc, true);
      if (sc.numel() == lead && (dd.empty() || (dd.size() == 1 && dd[0] == 1))) {  // per-tensor
        out->kind = Kind::kChannel;
        return kSuccess;
      }
      const bool ok = dd == std::vector<int64_t>{s.KVN, 1, D} || dd == std::vector<int64_t>{s.KVN, D} ||
                      dd == std::vector<int64_t>{H};
      if (!ok)
        return fail21(r, sc, "mode 0 (per-channel / per-tensor) shape",
                      r.combined ? "(2, KV_N, 1, D), (2, KV_N, D), (2, H) or (2) with KV_N " + std::to_string(s.KVN) +
                                       ", D " + std::to_string(D)
                                 : "[1,] (KV_N, 1, D), [1,] (KV_N, D), [1,] (H) or (1) with KV_N " +
                                       std::to_string(s.KVN) + ", D " + std::to_string(D));
      out->kind = Kind::kChannel;
      out->sh = D;
      out->sd = 1;
      return kSuccess;
    }
    case 2:
      if (!dims_eq({s.KVN})) return fail21(r, sc, "mode 2 (per-head) shape", "(KV_N) = (" + std::to_string(s.KVN) + ")");
      out->kind = Kind::kChannel;
      out->sh = 1;
      return kSuccess;
    case 1:
    case 3: {
      std::vector<int64_t> dd = r.combined ? d : dims_of(sc, false);
      if (!r.combined && mode == 1 && dd.size() == 3 && dd[0] == 1) dd.erase(dd.begin());  // (1, B, S) or (B, S)
      const size_t want_rank = mode == 1 ? 2 : 3;
      const std::string shape = mode == 1 ? (r.combined ? "(2, B, S)" : "[1,] (B, S)") : "(B, KV_N, S)";
      // with a shared prefix: the prefix's Lp positions first (ops/fia/fia_prefix.h)
      const std::string srule = s.paged             ? "S >= blockTable width * blockSize = "
                                : s.prefix_len > 0 ? "S = the key's sequence extent + actualSharedPrefixLen = "
                                                   : "S = the key's sequence extent ";
      const int64_t want_s = s.kv_s + (s.paged ? 0 : s.prefix_len);
      if (dd.size() != want_rank || dd[0] != s.B || (mode == 3 && dd[1] != s.KVN))
        return fail21(r, sc, mode == 1 ? "mode 1 (per-token) shape" : "mode 3 (per-token x per-head) shape",
                      shape + " with B " + std::to_string(s.B) + (mode == 3 ? ", KV_N " + std::to_string(s.KVN) : "") +
                          ", " + srule + std::to_string(want_s));
      const int64_t S = dd.back();
      if (s.paged ? S < s.kv_s : S != want_s)
        return fail21(r, sc, "per-token scale length", srule + std::to_string(want_s));
      out->kind = Kind::kRow;
      out->st = 1;
      out->sb = mode == 1 ? S : s.KVN * S;
      out->sh = mode == 1 ? 0 : S;
      return kSuccess;
    }
    case 4:
    case 5: {
      if (!s.paged)
        return fail21(r, sc, "modes 4 / 5 (paged per-token scales) need paged attention (blockTable)", "a blockTable");
      const bool ok = mode == 4 ? dims_eq({s.block_num, s.block_size}) : dims_eq({s.block_num, s.KVN, s.block_size});
      if (!ok)
        return fail21(r, sc, mode == 4 ? "mode 4 shape" : "mode 5 shape",
                      (mode == 4 ? "(blockNum, blockSize) = (" : "(blockNum, KV_N, blockSize) = (") +
                          std::to_string(s.block_num) + (mode == 5 ? ", " + std::to_string(s.KVN) : "") + ", " +
                          std::to_string(s.block_size) + ")");
      out->kind = Kind::kPagedRow;
      out->sslot = 1;
      out->sblk = mode == 4 ? s.block_size : s.KVN * s.block_size;
      out->sh = mode == 4 ? 0 : s.block_size;
      return kSuccess;
    }
    default:
      return fail21(r, sc, "mode", "0..5");
  }
}

Status offset_matches(const FiaAntiquantShape& s, const char* name, const TensorView* off, const TensorView& sc) {
  if (off == nullptr) return kSuccess;
  MLAOPS_TRY(check::format_in(s.op, name, "FIA-21", *off, {Format::kND, Format::kNCHW}));
  MLAOPS_TRY(check::dense(s.op, name, "FIA-21", *off));
  MLAOPS_CHECK(off->dtype == sc.dtype && same_shape(*off, sc), kParamInvalid,
               "%s: %s: FIA-21 offset dtype and shape equal its scale's; allowed %s %s, got %s %s", s.op, name,
               dtype_name(sc.dtype), shape_str(sc).c_str(), dtype_name(off->dtype), shape_str(*off).c_str());
  return kSuccess;
}

// FIA-33: the features and modes INT4 key / value (INT32 words) combine with; the vendor's
// list (docs/ops/fused_infer_attention_score.md): decode (Q_S = 1) only, contiguous caches, no
// post-quant, no left padding, modes 0 (per-channel), 1, 3 and key 0 + value 1 (separate) or
// combined 0 (per-channel) / 1; D % 64 == 0 in the aclnn layer.
Status check_int4(const FiaParams& p, const FiaAntiquantShape& s, bool sep) {
  const char* op = s.op;
  MLAOPS_CHECK(s.QS == 1, kParamInvalid,
               "%s: query: FIA-33 INT4 key/value allow decode only (Q_S = 1); allowed 1, got Q_S %lld", op,
               (long long)s.QS);
  MLAOPS_CHECK(!s.paged, kParamInvalid,
               "%s: blockTableOptional: FIA-33 INT4 key/value exclude paged attention; allowed null, got a block table",
               op);
  MLAOPS_CHECK(p.quant_scale2 == nullptr, kParamInvalid,
               "%s: quantScale2Optional: FIA-33 INT4 key/value exclude post-quant (INT8 output); allowed null, got a "
               "tensor",
               op);
  for (const auto& [t, name] : {std::pair{p.query_padding_size, "queryPaddingSizeOptional"},
                                std::pair{p.kv_padding_size, "kvPaddingSizeOptional"}})
    MLAOPS_CHECK(t == nullptr, kParamInvalid,
                 "%s: %s: FIA-33 INT4 key/value exclude left padding; allowed null, got a tensor", op, name);
  if (sep)
    for (auto [m, name] : {std::pair{p.key_antiquant_mode, "keyAntiquantMode"},
                           std::pair{p.value_antiquant_mode, "valueAntiquantMode"}})
      MLAOPS_CHECK(m == 0 || m == 1 || m == 3, kParamInvalid,
                   "%s: %s: FIA-33 INT4 key/value allow modes 0 (per-channel), 1 (per-token), 3 (per-token x "
                   "per-head); allowed {0, 1, 3}, got %lld",
                   op, name, (long long)m);
  if (s.vendor_ranges)
    MLAOPS_CHECK(s.KD % 64 == 0 && s.VD % 64 == 0, kParamInvalid,
                 "%s: key: FIA-33 INT4 key/value head dim must be a multiple of 64; allowed D %% 64 == 0, got %lld / "
                 "%lld",
                 op, (long long)s.KD, (long long)s.VD);
  return kSuccess;
}

// FIA-34: the GQA antiquant path over a paged INT8 cache in NZ chunks (blockNum, KV_N, D / 32,
// blockSize, 32) (docs/ops/fused_infer_attention_score.md): BF16 query, Q_S 1..16, layouts BSH /
// BSND / BNSD / TND, separate scales without offsets, modes 0 / 1 (key 0 + value 1), sparse 0
// without a mask (Q_S = 1) or sparse 3 / 9 (Q_S > 1; 9: the tree mask, ops/fia/fia_tree_mask.h). The aclnn layer adds the vendor's ranges:
// D 128, blockSize 128 / 512, innerPrecise 1, (N, KV_N) in {(10, 1), (64, 8), (80, 8), (128, 16)}.
Status check_nz(const FiaParams& p, const FiaAntiquantShape& s, bool sep, bool comb) {
  const char* op = s.op;
  MLAOPS_CHECK(s.q_dtype == DType::kBFloat16, kParamInvalid,
               "%s: query: FIA-34 INT8 key/value in NZ need a BF16 query; allowed BF16, got %s", op, dtype_name(s.q_dtype));
  MLAOPS_CHECK(s.max_q <= 16, kParamInvalid,
               "%s: query: FIA-34 INT8 key/value in NZ allow Q_S 1..16; allowed [1, 16], got %lld", op,
               (long long)s.max_q);
  MLAOPS_CHECK(s.in_l != FiaLayout::kNTD, kParamInvalid,
               "%s: inputLayout: FIA-34 INT8 key/value in NZ allow BSH, BSND, BNSD, TND; got %s", op,
               fia_layout_name(s.in_l));
  MLAOPS_CHECK(!comb || sep, kParamInvalid,
               "%s: antiquantScaleOptional: FIA-34 INT8 key/value in NZ take separate key / value scales; allowed null, "
               "got a tensor",
               op);
  MLAOPS_CHECK(p.key_antiquant_offset == nullptr && p.value_antiquant_offset == nullptr, kParamInvalid,
               "%s: %s: FIA-34 INT8 key/value in NZ take no offsets; allowed null, got a tensor", op,
               p.key_antiquant_offset ? "keyAntiquantOffsetOptional" : "valueAntiquantOffsetOptional");
  for (auto [m, name] : {std::pair{p.key_antiquant_mode, "keyAntiquantMode"},
                         std::pair{p.value_antiquant_mode, "valueAntiquantMode"}})
    MLAOPS_CHECK(m == 0 || m == 1, kParamInvalid,
                 "%s: %s: FIA-34 INT8 key/value in NZ allow modes 0 (per-channel) and 1 (per-token); allowed {0, 1}, got "
                 "%lld",
                 op, name, (long long)m);
  if (s.max_q <= 1)
    MLAOPS_CHECK(p.sparse_mode == 0 && p.atten_mask == nullptr, kParamInvalid,
                 "%s: sparseMode: FIA-34 INT8 key/value in NZ with Q_S = 1 allow sparse 0 without a mask; allowed 0 and "
                 "no attenMask, got sparse %lld%s",
                 op, (long long)p.sparse_mode, p.atten_mask ? " with a mask" : "");
  else
    MLAOPS_CHECK(p.sparse_mode == 3 || p.sparse_mode == 9, kParamInvalid,
                 "%s: sparseMode: FIA-34 INT8 key/value in NZ with Q_S > 1 allow sparse 3 (causal, 2048 mask) or 9 (tree "
                 "mask); allowed {3, 9}, got %lld",
                 op, (long long)p.sparse_mode);
  if (s.vendor_ranges) {
    MLAOPS_CHECK(s.KD == 128 && s.VD == 128, kParamInvalid,
                 "%s: key: FIA-34 INT8 key/value in NZ need head dim 128; allowed 128, got %lld / %lld", op,
                 (long long)s.KD, (long long)s.VD);
    MLAOPS_CHECK(s.block_size == 128 || s.block_size == 512, kParamInvalid,
                 "%s: blockSize: FIA-34 INT8 key/value in NZ allow blockSize 128 or 512; allowed {128, 512}, got %lld", op,
                 (long long)s.block_size);
    MLAOPS_CHECK(p.inner_precise == 1, kParamInvalid,
                 "%s: innerPrecise: FIA-34 INT8 key/value in NZ allow innerPrecise 1; allowed 1, got %lld", op,
                 (long long)p.inner_precise);
    const bool heads_ok = (s.N == 10 && s.KVN == 1) || (s.N == 64 && s.KVN == 8) || (s.N == 80 && s.KVN == 8) ||
                          (s.N == 128 && s.KVN == 16);
    MLAOPS_CHECK(heads_ok, kParamInvalid,
                 "%s: numHeads: FIA-34 INT8 key/value in NZ allow (numHeads, numKeyValueHeads) in {(10, 1), (64, 8), "
                 "(80, 8), (128, 16)}; got (%lld, %lld)",
                 op, (long long)s.N, (long long)s.KVN);
  }
  return kSuccess;
}

// FIA-33: a per-tensor (mode 0, one element) scale is INT8 only.
Status int4_not_per_tensor(const FiaAntiquantShape& s, const char* name, const FiaAntiquantParam& a) {
  MLAOPS_CHECK(!(a.mode == 0 && a.kind == Kind::kChannel && a.sh == 0 && a.sd == 0), kParamInvalid,
               "%s: %s: FIA-33 INT4 key/value allow per-channel mode 0 scales only (per-tensor is INT8 only); allowed "
               "(KV_N, [1,] D) or (H) shapes, got one element",
               s.op, name);
  return kSuccess;
}

}  // namespace

void fia_antiquant_int4_dims(int64_t* kd, int64_t* vd, FiaKvStrides* k, FiaKvStrides* v) {
  *kd *= 8;
  *vd *= 8;
  for (FiaKvStrides* st : {k, v}) {
    st->b *= 8;
    st->h *= 8;
    st->blk *= 8;
    st->slot *= 8;
    st->c0 *= 8;
    st->c0_stride *= 8;
  }
}

float fia_antiquant_value(const TensorView& t, int64_t i) {
  switch (t.dtype) {
    case DType::kFloat32: return t.ptr<const float>()[i];
    case DType::kFloat16: return fp16_to_float(t.ptr<const uint16_t>()[i]);
    case DType::kBFloat16: return bf16_to_float(t.ptr<const uint16_t>()[i]);
    default: return 0.0f;
  }
}

Status fia_check_antiquant(const FiaParams& p, const FiaAntiquantShape& s, FiaAntiquant* out) {
  *out = FiaAntiquant();
  const char* op = s.op;
  const TensorView& key = p.key[0];
  const TensorView& value = p.value[0];
  const bool sep = p.key_antiquant_scale || p.value_antiquant_scale || p.key_antiquant_offset || p.value_antiquant_offset;
  const bool comb = p.antiquant_scale || p.antiquant_offset;
  const bool int4 = key.dtype == DType::kInt32;  // packed INT4 (FIA-33)
  if (key.dtype != DType::kInt8 && !int4) {
    const std::pair<const TensorView*, const char*> given[] = {
        {p.antiquant_scale, "antiquantScaleOptional"},         {p.antiquant_offset, "antiquantOffsetOptional"},
        {p.key_antiquant_scale, "keyAntiquantScaleOptional"},   {p.key_antiquant_offset, "keyAntiquantOffsetOptional"},
        {p.value_antiquant_scale, "valueAntiquantScaleOptional"}, {p.value_antiquant_offset, "valueAntiquantOffsetOptional"}};
    for (const auto& [t, name] : given)
      MLAOPS_CHECK(t == nullptr, kParamInvalid,
                   "%s: %s: FIA-21 KV antiquant parameters need INT8 / INT4 (INT32) key/value; allowed null with %s key, got "
                   "a tensor",
                   op, name, dtype_name(key.dtype));
    return kSuccess;
  }
  MLAOPS_CHECK(value.dtype == key.dtype, kParamInvalid, "%s: value: FIA-21 the value dtype equals the key's; allowed %s, got %s",
               op, dtype_name(key.dtype), dtype_name(value.dtype));
  MLAOPS_CHECK(!s.rope, kParamInvalid,
               "%s: key: FIA-02 INT8 key/value with queryRope/keyRope (MLA quantisation) is not supported yet; allowed "
               "FLOAT16/BF16 key with rope, got INT8",
               op);
  if (s.nz) MLAOPS_TRY(check_nz(p, s, sep, comb));
  MLAOPS_CHECK(!s.packed || s.nz, kParamInvalid,
               "%s: inputLayout: FIA-21 KV antiquant with TND/NTD needs the NZ KV path (not supported yet); allowed "
               "BSH/BSND/BNSD layouts, got a packed layout",
               op);
  MLAOPS_CHECK(sep || comb, kParamInvalid,
               "%s: keyAntiquantScaleOptional: FIA-21 INT8 key/value need antiquant scales; allowed "
               "keyAntiquantScale + valueAntiquantScale or antiquantScale, got none",
               op);
  if (int4) MLAOPS_TRY(check_int4(p, s, sep));
  const bool prefill = s.QS > 1;
  if (sep) {
    MLAOPS_CHECK((p.key_antiquant_scale != nullptr) == (p.value_antiquant_scale != nullptr), kParamInvalid,
                 "%s: %s: FIA-21 keyAntiquantScale and valueAntiquantScale are given together; allowed both, got one",
                 op, p.key_antiquant_scale ? "valueAntiquantScaleOptional" : "keyAntiquantScaleOptional");
    MLAOPS_CHECK((p.key_antiquant_offset != nullptr) == (p.value_antiquant_offset != nullptr), kParamInvalid,
                 "%s: %s: FIA-21 keyAntiquantOffset and valueAntiquantOffset are given together; allowed both, got one",
                 op, p.key_antiquant_offset ? "valueAntiquantOffsetOptional" : "keyAntiquantOffsetOptional");
    MLAOPS_CHECK(p.key_antiquant_scale != nullptr, kParamInvalid,
                 "%s: keyAntiquantOffsetOptional: FIA-21 an offset needs its scale; allowed a scale, got null", op);
    const int64_t mk = p.key_antiquant_mode, mv = p.value_antiquant_mode;
    for (auto [m, name] : {std::make_pair(mk, "keyAntiquantMode"), std::make_pair(mv, "valueAntiquantMode")}) {
      MLAOPS_CHECK(m != 6, kParamInvalid,
                   "%s: %s: FIA-02 mode 6 (per-token-group FP4, Ascend 950 only) is not supported; allowed 0..5, got 6",
                   op, name);
      MLAOPS_TRY(check::value_range(op, name, "FIA-21", m, 0, 5));
    }
    MLAOPS_CHECK(mk == mv || (mk == 0 && mv == 1), kParamInvalid,
                 "%s: valueAntiquantMode: FIA-21 equals keyAntiquantMode except key 0 + value 1; allowed %lld%s, got "
                 "%lld",
                 op, (long long)mk, mk == 0 ? " or 1" : "", (long long)mv);
    if (prefill) {
      MLAOPS_CHECK(mk <= 1 && mv <= 1, kParamInvalid,
                   "%s: keyAntiquantMode: FIA-21 Q_S > 1 allows modes 0 / 1; allowed {0, 1}, got %lld / %lld", op,
                   (long long)mk, (long long)mv);
      MLAOPS_CHECK(s.q_dtype == DType::kBFloat16, kParamInvalid,
                   "%s: query: FIA-21 KV antiquant with Q_S > 1 needs a BF16 query; allowed BF16, got %s", op,
                   dtype_name(s.q_dtype));
      MLAOPS_CHECK(s.QS <= 16, kParamInvalid,
                   "%s: query: FIA-21 KV antiquant with Q_S > 1 allows Q_S <= 16; allowed [2, 16], got %lld", op,
                   (long long)s.QS);
    }
    MLAOPS_TRY(resolve({s, "keyAntiquantScaleOptional", false, 0}, *p.key_antiquant_scale, mk, s.KD, &out->k));
    MLAOPS_TRY(resolve({s, "valueAntiquantScaleOptional", false, 1}, *p.value_antiquant_scale, mv, s.VD, &out->v));
    MLAOPS_TRY(offset_matches(s, "keyAntiquantOffsetOptional", p.key_antiquant_offset, *p.key_antiquant_scale));
    MLAOPS_TRY(offset_matches(s, "valueAntiquantOffsetOptional", p.value_antiquant_offset, *p.value_antiquant_scale));
    if (int4) {
      MLAOPS_TRY(int4_not_per_tensor(s, "keyAntiquantScaleOptional", out->k));
      MLAOPS_TRY(int4_not_per_tensor(s, "valueAntiquantScaleOptional", out->v));
    }
    out->k.scale = &FiaParams::key_antiquant_scale;
    out->k.offset = &FiaParams::key_antiquant_offset;
    out->v.scale = &FiaParams::value_antiquant_scale;
    out->v.offset = &FiaParams::value_antiquant_offset;
  } else {
    MLAOPS_CHECK(p.antiquant_scale != nullptr, kParamInvalid,
                 "%s: antiquantOffsetOptional: FIA-21 an offset needs its scale; allowed antiquantScale, got null", op);
    MLAOPS_TRY(check::value_in(op, "antiquantMode", "FIA-21", p.antiquant_mode, {0, 1}));
    if (prefill)
      MLAOPS_CHECK(p.antiquant_mode == 1 || s.q_dtype == DType::kFloat16, kParamInvalid,
                   "%s: query: FIA-21 combined per-channel antiquant with Q_S > 1 needs a FLOAT16 query; allowed "
                   "FLOAT16, got %s",
                   op, dtype_name(s.q_dtype));
    MLAOPS_CHECK(p.antiquant_mode == 1 || s.KD == s.VD, kParamInvalid,
                 "%s: antiquantScaleOptional: FIA-21 combined per-channel parameters need equal key / value head dims; "
                 "allowed %lld, got %lld",
                 op, (long long)s.KD, (long long)s.VD);
    MLAOPS_TRY(resolve({s, "antiquantScaleOptional", true, 0}, *p.antiquant_scale, p.antiquant_mode, s.KD, &out->k));
    MLAOPS_TRY(resolve({s, "antiquantScaleOptional", true, 1}, *p.antiquant_scale, p.antiquant_mode, s.VD, &out->v));
    MLAOPS_TRY(offset_matches(s, "antiquantOffsetOptional", p.antiquant_offset, *p.antiquant_scale));
    if (int4) MLAOPS_TRY(int4_not_per_tensor(s, "antiquantScaleOptional", out->k));
    out->k.scale = out->v.scale = &FiaParams::antiquant_scale;
    out->k.offset = out->v.offset = &FiaParams::antiquant_offset;
  }
  if (prefill && !s.nz)
    MLAOPS_CHECK(!s.paged, kParamInvalid,
                 "%s: blockTableOptional: FIA-21 KV antiquant with Q_S > 1 excludes paged attention; allowed null, got "
                 "a block table",
                 op);
  out->on = true;
  out->int4 = int4;
  out->split = kFiaAntiquantParts;  // every innerPrecise: the dequantised values unrounded
  return kSuccess;
}

FiaAntiquantChannels fia_antiquant_channels(const FiaParams& p, const FiaAntiquant& aq, int64_t KVN, int64_t KD, int64_t VD,
                              float* floats) {
  FiaAntiquantChannels c;
  float* at = floats;
  for (int w = 0; w < 2; ++w) {
    const FiaAntiquantParam& a = w == 0 ? aq.k : aq.v;
    const int64_t D = w == 0 ? KD : VD;
    float* sc = at;
    float* off = at + KVN * D;
    at += 2 * KVN * D;
    if (a.kind == Kind::kChannel) {
      for (int64_t h = 0; h < KVN; ++h)
        for (int64_t d = 0; d < D; ++d) {
          const int64_t i = a.base + h * a.sh + d * a.sd;
          sc[h * D + d] = fia_antiquant_value(*(p.*a.scale), i);
          off[h * D + d] = p.*a.offset ? fia_antiquant_value(*(p.*a.offset), i) : 0.0f;
        }
    } else {  // per-token: identity channels (the in-place kernel applies the token parameters)
      std::fill(sc, sc + KVN * D, 1.0f);
      std::fill(off, off + KVN * D, 0.0f);
    }
    (w == 0 ? c.k_scale : c.v_scale) = sc;
    (w == 0 ? c.k_offset : c.v_offset) = off;
  }
  return c;
}

namespace {

// The INT8 / INT4 rows of one KV head of one batch: position t at byte base + addr.row(t) >> shift
// (INT8: elements = bytes, shift 0; INT4: elements = nibbles, shift 1, every row offset even).
struct Rows {
  const int8_t* base = nullptr;
  kernels::FlashKv addr;  // addressing only (its base unused)
  int shift = 0;
  const int8_t* at(int64_t t) const { return base + (addr.row(t) >> shift); }
};

// The key (which 0) or value (1) rows a task reads: the batch's own (key / value with the call's
// strides, the batch's window) or the shared prefix's (batch 0 of the prefix tensor, its strides;
// ops/fia/fia_prefix.h). Per-token parameters of position t are at column col0 + t: the prefix's
// rows first, then the batch's own (col0 = Lp).
struct Src {
  const TensorView* t = nullptr;
  FiaKvStrides st;
  bool prefix = false;
  int64_t col0 = 0;
};

Src src_of(const FiaParams& p, const FiaPlan& P, int which, bool prefix, int64_t b) {
  Src s;
  s.prefix = prefix;
  if (prefix) {
    s.t = which == 0 ? p.key_shared_prefix : p.value_shared_prefix;
    s.st.h = which == 0 ? P.prefix.k_h : P.prefix.v_h;
    s.st.slot = which == 0 ? P.prefix.k_slot : P.prefix.v_slot;
    s.st.c0 = which == 0 ? P.QD : P.VD;
  } else {
    s.t = &fia_kv_of(which == 0 ? p.key : p.value, P.tl, b);  // tensor lists: batch b's element
    s.st = which == 0 ? P.k : P.v;
    s.col0 = P.prefix.len;
  }
  return s;
}

Rows rows_of(const FiaParams& p, const FiaPlan& P, const Src& s, int64_t b, int64_t h) {
  Rows r;
  int64_t off;
  if (s.prefix) {
    r.addr.slot_stride = s.st.slot;
    r.addr.c0 = s.st.c0;
    off = h * s.st.h;
  } else {
    r.addr = fia_kv_rows(p, P, s.st, b, h, &off);
  }
  r.shift = P.aq.int4 ? 1 : 0;
  r.base = s.t->ptr<const int8_t>() + (off >> r.shift);
  return r;
}

// One row of n channels dequantised as two parts in the query dtype, the rounded value and its
// rounded residual: the INT8 row kernel, or the INT4 one on the packed bytes (`x` at the row's
// first byte).
struct DequantRow {
  kernels::DequantRowFn fn8 = nullptr;
  kernels::DequantRow4Fn fn4 = nullptr;
  void operator()(const int8_t* x, int64_t n, const float* sc, const float* off, float rs, float ro, bool fp16,
                  uint16_t* dst, uint16_t* lo) const {
    if (fn4 != nullptr)
      fn4(reinterpret_cast<const uint8_t*>(x), n, sc, off, rs, ro, fp16, dst, lo);
    else
      fn8(x, n, sc, off, rs, ro, fp16, dst, lo);
  }
};

// Positions [t0, t1) of heads h0 .. h0 + n - 1 (D channels each, parameters `a`, per-channel
// floats `csc` / `coff` of head h0 onwards) into dst rows [t - t0][n * split * D]: head i at
// i * split * D, its residual D further. When the heads lie side by side in a cache row
// (BnBsH / BSH / BSND: head stride D) the rows are read in address order, head by head within a
// row; otherwise head by head (BNSD / BnNBsD: each head's rows are contiguous), prefetching
// kAhead rows ahead.
void dequant_heads(const FiaParams& p, const FiaPlan& P, const Src& src, const FiaAntiquantParam& a, const float* csc,
                   const float* coff, int64_t b, int64_t h0, int64_t n, int64_t t0, int64_t t1, int64_t t_end,
                   int64_t D, uint16_t* dst, const DequantRow& fn) {
  const FiaKvStrides& st = src.st;
  const bool chan = a.kind == Kind::kChannel;
  const int64_t split = P.aq.split, sD = split * D;
  auto row_params = [&](const Rows& r, int64_t h, int64_t pos, float* rs, float* ro) {
    *rs = 1.0f;
    *ro = 0.0f;
    if (chan) return;
    const kernels::FlashKv& ad = r.addr;
    const int64_t blk = ad.block_ids ? ad.block_ids[pos / ad.block_size] : 0, slot = ad.block_ids ? pos % ad.block_size : pos;
    const int64_t i = a.kind == Kind::kRow ? a.base + b * a.sb + h * a.sh + (src.col0 + pos) * a.st
                                           : a.base + blk * a.sblk + h * a.sh + slot * a.sslot;
    *rs = fia_antiquant_value(*(p.*a.scale), i);
    *ro = p.*a.offset ? fia_antiquant_value(*(p.*a.offset), i) : 0.0f;
  };
  // channels [c, c + len) of head i onwards (x at channel c) into out (head i's row, channel 0),
  // its residual D further
  static_assert(kFiaAntiquantParts == 2, "the dequant rows write two parts: the rounded value, the residual");
  auto put = [&](const int8_t* x, int64_t len, int64_t i, int64_t c, float rs, float ro, uint16_t* out) {
    fn(x, len, chan ? csc + i * D + c : nullptr, chan ? coff + i * D + c : nullptr, rs, ro, P.fp16, out + c,
       out + D + c);
  };
  const Rows r0 = rows_of(p, P, src, b, h0);
  const int sh = r0.shift;  // channel c of a row at byte c >> sh
  float rs, ro;
  constexpr int64_t kAhead = 16;  // rows prefetched ahead (into L2), up to the item's end t_end
  if (st.h == D) {  // heads side by side in a row
    for (int64_t pos = t0; pos < std::min(t1, t0 + kAhead); ++pos)
      for (int64_t c = 0; c < (n * D) >> sh; c += 64) __builtin_prefetch(r0.at(pos) + c, 0, 2);
    for (int64_t pos = t0; pos < t1; ++pos) {
      if (pos + kAhead < t_end)
        for (int64_t c = 0; c < (n * D) >> sh; c += 64) __builtin_prefetch(r0.at(pos + kAhead) + c, 0, 2);
      const int8_t* row = r0.at(pos);
      uint16_t* out = dst + (pos - t0) * n * sD;
      for (int64_t i = 0; i < n; ++i) {
        if (i == 0 || a.sh != 0) row_params(r0, h0 + i, pos, &rs, &ro);
        put(row + ((i * D) >> sh), D, i, 0, rs, ro, out + i * sD);
      }
    }
    return;
  }
  // head by head; a row's channels in chunks of c0 (D, or 32 for an INT8 NZ cache: chunk k at
  // k * c0_stride from the row)
  const int64_t c0 = std::min(st.c0, D);
  constexpr int64_t kNzRowMax = 512;  // INT8 NZ rows up to this many channels are gathered first
  auto prefetch_row = [&](const Rows& r, int64_t pos) {
    for (int64_t c = 0; c < D; c += c0)
      for (int64_t e = 0; e < c0 >> sh; e += 64) __builtin_prefetch(r.at(pos) + (c / c0) * st.c0_stride + e);
  };
  for (int64_t i = 0; i < n; ++i) {
    const Rows r = rows_of(p, P, src, b, h0 + i);
    for (int64_t pos = t0; pos < std::min(t1, t0 + kAhead); ++pos) prefetch_row(r, pos);
    for (int64_t pos = t0; pos < t1; ++pos) {
      if (pos + kAhead < t1) prefetch_row(r, pos + kAhead);
      row_params(r, h0 + i, pos, &rs, &ro);
      uint16_t* out = dst + (pos - t0) * n * sD + i * sD;
      if (c0 == D) {
        put(r.at(pos), D, i, 0, rs, ro, out);
      } else if (D <= kNzRowMax) {  // NZ: the row's 32-byte chunks gathered, one call per row
        int8_t row[kNzRowMax];
        for (int64_t c = 0; c < D; c += c0) std::memcpy(row + c, r.at(pos) + (c / c0) * st.c0_stride, static_cast<size_t>(c0));
        put(row, D, i, 0, rs, ro, out);
      } else {
        for (int64_t c = 0; c < D; c += c0) put(r.at(pos) + (c / c0) * st.c0_stride, c0, i, c, rs, ro, out);
      }
    }
  }
}

}  // namespace

int64_t fia_antiquant_thread_bytes(int64_t heads, int64_t M, int64_t KD, int64_t VD, int64_t split) {
  const int64_t buf = kFiaAntiquantChunk * heads * (KD + VD) * split * 2;
  const int64_t q = heads * M * split * KD * 2;
  const int64_t states = heads * M * ((VD + 2) + (split * VD + 2)) * 4;
  return (buf + q + 63) / 64 * 64 + (states + 63) / 64 * 64;
}

void fia_antiquant_run_task(const FiaParams& p, const FiaPlan& P, const FiaAntiquantChannels& ch, int64_t b, int64_t h0,
                     kernels::FlashItem* items, int64_t n, const FiaAntiquantRun& k) {
  const int64_t KD = P.QD, VD = P.VD, M = items[0].G * items[0].R;
  const Src srcs[2] = {src_of(p, P, 0, k.prefix, b), src_of(p, P, 1, k.prefix, b)};
  if (!k.dequant) {  // the INT8 decode kernel, in place
    kernels::FlashDecodeI8 kv;
    for (int w = 0; w < 2; ++w) {
      kernels::FlashKv& a = w == 0 ? kv.k : kv.v;
      a = rows_of(p, P, srcs[w], b, h0).addr;
      if (P.aq.int4) {  // nibble strides (even) -> bytes
        a.slot_stride /= 2;
        a.blk_stride /= 2;
      }
    }
    kv.int4 = P.aq.int4;
    // per-token parameters: (b, h)'s row of a (B, [KV_N,] S) array, or the paged (blockNum, [KV_N,]
    // blockSize) arrays through the cache's block ids
    for (int w = 0; w < 2; ++w) {
      const FiaAntiquantParam& a = w == 0 ? P.aq.k : P.aq.v;
      if (a.kind == Kind::kChannel) continue;
      kernels::FlashKv& t = w == 0 ? kv.tk : kv.tv;
      t = kernels::FlashKv();
      if (a.kind == Kind::kPagedRow) {
        const kernels::FlashKv cache = rows_of(p, P, srcs[0], b, h0).addr;
        t.block_ids = cache.block_ids;
        t.block_size = cache.block_size;
        t.blk_stride = a.sblk;
        t.slot_stride = a.sslot;
      } else {
        t.slot_stride = a.st;
      }
      for (int64_t i = 0; i < n; ++i) {
        const int64_t at = a.base + (a.kind == Kind::kRow ? b * a.sb + srcs[w].col0 * a.st : 0) + (h0 + i) * a.sh;
        const TensorView* off = p.*a.offset;
        (w == 0 ? kv.k_tok_scale : kv.v_tok_scale)[i] = (p.*a.scale)->ptr<const float>() + at;
        (w == 0 ? kv.k_tok_offset : kv.v_tok_offset)[i] = off ? off->ptr<const float>() + at : nullptr;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      kv.kb[i] = rows_of(p, P, srcs[0], b, h0 + i).base;
      kv.vb[i] = rows_of(p, P, srcs[1], b, h0 + i).base;
      kv.k_scale[i] = ch.k_scale + (h0 + i) * KD;
      kv.k_offset[i] = ch.k_offset + (h0 + i) * KD;
      kv.v_scale[i] = ch.v_scale + (h0 + i) * VD;
      kv.v_offset[i] = ch.v_offset + (h0 + i) * VD;
    }
    k.row->decode_i8(items, n, kv, k.buf);
    return;
  }
  // Chunk rows [rounded | residual] (split = 2 x the channels), the query rows duplicated [q | q],
  // so that a score is q . rounded + q . residual and an output channel d the sum of the chunk
  // output's channels d and V_D + d.
  const int64_t split = P.aq.split, KDs = split * KD, VDs = split * VD;
  const int64_t t_begin = items[0].kv_begin, t_end = items[0].kv_end;
  uint16_t* kbuf = static_cast<uint16_t*>(k.buf);             // [chunk, n * KDs]
  uint16_t* vbuf = kbuf + kFiaAntiquantChunk * n * KDs;              // [chunk, n * VDs]
  uint16_t* qbuf = vbuf + kFiaAntiquantChunk * n * VDs;              // per head [M, split * KD]
  const int64_t q_elems = n * M * KDs;
  float* run = reinterpret_cast<float*>(k.buf) + (kFiaAntiquantChunk * n * (KDs + VDs) + q_elems + 31) / 32 * 16;
  const int64_t per = M * (VD + 2), per_part = M * (VDs + 2);
  float* part = run + n * per;  // per head: O [M, VDs], m [M], l [M]
  for (int64_t i = 0; i < n; ++i) {
    std::fill(run + i * per, run + (i + 1) * per, 0.0f);  // l = 0: empty
  }
  for (int64_t i = 0; i < n; ++i) {
    const kernels::FlashItem& it = items[i];
    for (int64_t g = 0; g < it.G; ++g)
      for (int64_t r = 0; r < it.R; ++r) {
        const uint16_t* q = it.q + g * it.q_n_stride + r * it.q_s_stride;
        uint16_t* d = qbuf + (i * M + g * it.R + r) * KDs;
        for (int64_t s = 0; s < split; ++s) std::copy(q, q + KD, d + s * KD);
      }
  }
  DequantRow fn;
  fn.fn8 = P.dequant;
  fn.fn4 = P.aq.int4 ? P.dequant4 : nullptr;
  kernels::FlashItem chunk[16];
  for (int64_t t0 = t_begin; t0 < t_end; t0 += kFiaAntiquantChunk) {
    const int64_t t1 = std::min(t_end, t0 + kFiaAntiquantChunk), len = t1 - t0;
    dequant_heads(p, P, srcs[0], P.aq.k, ch.k_scale + h0 * KD, ch.k_offset + h0 * KD, b, h0, n, t0, t1, t_end, KD, kbuf,
                  fn);
    dequant_heads(p, P, srcs[1], P.aq.v, ch.v_scale + h0 * VD, ch.v_offset + h0 * VD, b, h0, n, t0, t1, t_end, VD, vbuf,
                  fn);
    for (int64_t i = 0; i < n; ++i) {
      kernels::FlashItem& it = chunk[i];
      it = items[i];
      it.q = qbuf + i * M * KDs;
      it.q_n_stride = it.R * KDs;
      it.q_s_stride = KDs;
      it.QD = KDs;
      it.VD = VDs;
      it.k = kernels::FlashKv();
      it.k.base = kbuf + i * KDs;
      it.k.slot_stride = n * KDs;
      it.k.c0 = KDs;
      it.v = kernels::FlashKv();
      it.v.base = vbuf + i * VDs;
      it.v.slot_stride = n * VDs;
      it.v.c0 = VDs;
      it.kv_begin = 0;  // positions relative to the chunk: the rule, the mask and the bias move with them
      it.kv_end = len;
      kernels::attn_shift_columns(&it, t0);
      it.partial_o = part + i * per_part;
      it.partial_m = it.partial_o + M * VDs;
      it.partial_l = it.partial_m + M;
    }
    kernels::attn_run(*k.row, P.panel, P.shape, chunk, n, k.scratch);
    for (int64_t i = 0; i < n; ++i) {
      float* o = run + i * per;
      float* o2 = part + i * per_part;
      // output channel d = rounded part d + residual part d (in place, forward)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t d = 0; d < VD; ++d) o2[m * VD + d] = o2[m * VDs + d] + o2[m * VDs + VD + d];
      std::copy(o2 + M * VDs, o2 + M * VDs + 2 * M, o2 + M * VD);
      kernels::attn_merge_state(o, o + M * VD, o + M * VD + M, o2, o2 + M * VD, o2 + M * VD + M, M, VD);
    }
  }
  for (int64_t i = 0; i < n; ++i) {  // the item's output, or its KV-split partial
    const float* o = run + i * per;
    kernels::attn_finish(items[i], o, VD, o + M * VD, o + M * VD + M);
  }
}

}  // namespace mlaops

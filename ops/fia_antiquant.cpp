// KV antiquant validation and resolution (fia_antiquant.h; spec §2.11, rule FIA-21).
#include "ops/fia_antiquant.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/dequant_kv.h"
#include "kernels/cpu/flash_attn.h"
#include "mlaops/runtime.h"
#include "mlaops/numeric.h"
#include "ops/check_util.h"
#include "ops/fused_infer_attention_score_v4.h"

namespace mlaops {
namespace {

using check::shape_str;
using Kind = FiaAqParam::Kind;

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
  const FiaAqShape& s;
  const char* name;  // parameter name for messages
  bool combined;     // (2, ...) shapes: index 0 = key, 1 = value
  int which;         // 0 key, 1 value
};

Status fail21(const Resolve& r, const TensorView& t, const char* rule, const std::string& allowed) {
  return fail(kParamInvalid, "%s: %s: FIA-21 %s; allowed %s, got %s %s", r.s.op, r.name, rule, allowed.c_str(),
              dtype_name(t.dtype), shape_str(t).c_str());
}

// Fills `out` for one of key / value from its scale tensor and mode; D = its head dim.
Status resolve(const Resolve& r, const TensorView& sc, int64_t mode, int64_t D, FiaAqParam* out) {
  const FiaAqShape& s = r.s;
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
      const std::string srule = s.paged ? "S >= blockTable width * blockSize = " : "S = the key's sequence extent ";
      if (dd.size() != want_rank || dd[0] != s.B || (mode == 3 && dd[1] != s.KVN))
        return fail21(r, sc, mode == 1 ? "mode 1 (per-token) shape" : "mode 3 (per-token x per-head) shape",
                      shape + " with B " + std::to_string(s.B) + (mode == 3 ? ", KV_N " + std::to_string(s.KVN) : "") +
                          ", " + srule + std::to_string(s.kv_s));
      const int64_t S = dd.back();
      if (s.paged ? S < s.kv_s : S != s.kv_s)
        return fail21(r, sc, "per-token scale length", srule + std::to_string(s.kv_s));
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

Status offset_matches(const FiaAqShape& s, const char* name, const TensorView* off, const TensorView& sc) {
  if (off == nullptr) return kSuccess;
  MLAOPS_TRY(check::format_in(s.op, name, "FIA-21", *off, {Format::kND, Format::kNCHW}));
  MLAOPS_TRY(check::dense(s.op, name, "FIA-21", *off));
  MLAOPS_CHECK(off->dtype == sc.dtype && same_shape(*off, sc), kParamInvalid,
               "%s: %s: FIA-21 offset dtype and shape equal its scale's; allowed %s %s, got %s %s", s.op, name,
               dtype_name(sc.dtype), shape_str(sc).c_str(), dtype_name(off->dtype), shape_str(*off).c_str());
  return kSuccess;
}

}  // namespace

float fia_aq_value(const TensorView& t, int64_t i) {
  switch (t.dtype) {
    case DType::kFloat32: return t.ptr<const float>()[i];
    case DType::kFloat16: return fp16_to_float(t.ptr<const uint16_t>()[i]);
    case DType::kBFloat16: return bf16_to_float(t.ptr<const uint16_t>()[i]);
    default: return 0.0f;
  }
}

Status fia_check_antiquant(const FiaParams& p, const FiaAqShape& s, FiaAntiquant* out) {
  *out = FiaAntiquant();
  const char* op = s.op;
  const TensorView& key = p.key[0];
  const TensorView& value = p.value[0];
  const bool sep = p.key_antiquant_scale || p.value_antiquant_scale || p.key_antiquant_offset || p.value_antiquant_offset;
  const bool comb = p.antiquant_scale || p.antiquant_offset;
  if (key.dtype != DType::kInt8) {
    const std::pair<const TensorView*, const char*> given[] = {
        {p.antiquant_scale, "antiquantScaleOptional"},         {p.antiquant_offset, "antiquantOffsetOptional"},
        {p.key_antiquant_scale, "keyAntiquantScaleOptional"},   {p.key_antiquant_offset, "keyAntiquantOffsetOptional"},
        {p.value_antiquant_scale, "valueAntiquantScaleOptional"}, {p.value_antiquant_offset, "valueAntiquantOffsetOptional"}};
    for (const auto& [t, name] : given)
      MLAOPS_CHECK(t == nullptr, kParamInvalid,
                   "%s: %s: FIA-21 KV antiquant parameters need INT8 key/value; allowed null with %s key, got a tensor",
                   op, name, dtype_name(key.dtype));
    return kSuccess;
  }
  MLAOPS_CHECK(value.dtype == DType::kInt8, kParamInvalid,
               "%s: value: FIA-21 INT8 key needs INT8 value; allowed INT8, got %s", op, dtype_name(value.dtype));
  MLAOPS_CHECK(!s.rope, kParamInvalid,
               "%s: key: FIA-02 INT8 key/value with queryRope/keyRope (MLA quantisation) is not supported yet; allowed "
               "FLOAT16/BF16 key with rope, got INT8",
               op);
  MLAOPS_CHECK(!s.nz, kParamInvalid,
               "%s: key: FIA-02 INT8 key/value in FRACTAL_NZ (the GQA antiquant NZ path) is not supported yet; allowed "
               "ND, got FRACTAL_NZ",
               op);
  MLAOPS_CHECK(!s.packed, kParamInvalid,
               "%s: inputLayout: FIA-21 KV antiquant with TND/NTD needs the NZ KV path (not supported yet); allowed "
               "BSH/BSND/BNSD layouts, got a packed layout",
               op);
  MLAOPS_CHECK(sep || comb, kParamInvalid,
               "%s: keyAntiquantScaleOptional: FIA-21 INT8 key/value need antiquant scales; allowed "
               "keyAntiquantScale + valueAntiquantScale or antiquantScale, got none",
               op);
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
    out->k.scale = p.key_antiquant_scale;
    out->k.offset = p.key_antiquant_offset;
    out->v.scale = p.value_antiquant_scale;
    out->v.offset = p.value_antiquant_offset;
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
    out->k.scale = out->v.scale = p.antiquant_scale;
    out->k.offset = out->v.offset = p.antiquant_offset;
  }
  if (prefill)
    MLAOPS_CHECK(!s.paged, kParamInvalid,
                 "%s: blockTableOptional: FIA-21 KV antiquant with Q_S > 1 excludes paged attention; allowed null, got "
                 "a block table",
                 op);
  out->on = true;
  return kSuccess;
}

FiaAqChannels fia_aq_channels(const FiaAntiquant& aq, int64_t KVN, int64_t KD, int64_t VD, float* floats) {
  FiaAqChannels c;
  float* at = floats;
  for (int w = 0; w < 2; ++w) {
    const FiaAqParam& a = w == 0 ? aq.k : aq.v;
    const int64_t D = w == 0 ? KD : VD;
    float* sc = at;
    float* off = at + KVN * D;
    at += 2 * KVN * D;
    if (a.kind == Kind::kChannel) {
      for (int64_t h = 0; h < KVN; ++h)
        for (int64_t d = 0; d < D; ++d) {
          const int64_t i = a.base + h * a.sh + d * a.sd;
          sc[h * D + d] = fia_aq_value(*a.scale, i);
          off[h * D + d] = a.offset ? fia_aq_value(*a.offset, i) : 0.0f;
        }
    }
    (w == 0 ? c.k_scale : c.v_scale) = sc;
    (w == 0 ? c.k_offset : c.v_offset) = off;
  }
  return c;
}

uint16_t* fia_dequant_rows(const FiaAntiquant& aq, const FiaAqChannels& ch, const FiaAqRows& k, const FiaAqRows& v,
                           int64_t b, int64_t h, int64_t t0, int64_t t1, int64_t KD, int64_t VD, bool fp16,
                           uint16_t* dst) {
  const kernels::DequantRowFn fn = kernels::dequant_row_kernel(active_isa());
  uint16_t* vdst = dst + (t1 - t0) * KD;
  for (int w = 0; w < 2; ++w) {
    const FiaAqParam& a = w == 0 ? aq.k : aq.v;
    const FiaAqRows& r = w == 0 ? k : v;
    const int64_t D = w == 0 ? KD : VD;
    const float* csc = (w == 0 ? ch.k_scale : ch.v_scale) + h * D;
    const float* coff = (w == 0 ? ch.k_offset : ch.v_offset) + h * D;
    uint16_t* out = w == 0 ? dst : vdst;
    auto row_at = [&r](int64_t t) {
      return r.base + (r.block_ids ? r.block_ids[t / r.block_size] * r.blk + (t % r.block_size) * r.slot : t * r.slot);
    };
    // The rows of one head are strided (BnBsH / BSH / BSND: D bytes of each KV_N * D row), which the
    // hardware prefetchers do not follow: prefetch kAhead rows ahead (measured: 2x on the dequant).
    constexpr int64_t kAhead = 16;
    for (int64_t t = t0; t < std::min(t1, t0 + kAhead); ++t)
      for (int64_t c = 0; c < D; c += 64) __builtin_prefetch(row_at(t) + c);
    for (int64_t t = t0; t < t1; ++t) {
      if (t + kAhead < t1)
        for (int64_t c = 0; c < D; c += 64) __builtin_prefetch(row_at(t + kAhead) + c);
      const int64_t blk = r.block_ids ? r.block_ids[t / r.block_size] : 0, slot = r.block_ids ? t % r.block_size : t;
      const int8_t* row = r.base + (r.block_ids ? blk * r.blk + slot * r.slot : t * r.slot);
      float rs = 1.0f, ro = 0.0f;
      if (a.kind == Kind::kRow || a.kind == Kind::kPagedRow) {
        const int64_t i = a.kind == Kind::kRow ? a.base + b * a.sb + h * a.sh + t * a.st
                                               : a.base + blk * a.sblk + h * a.sh + slot * a.sslot;
        rs = fia_aq_value(*a.scale, i);
        ro = a.offset ? fia_aq_value(*a.offset, i) : 0.0f;
      }
      fn(row, D, a.kind == Kind::kChannel ? csc : nullptr, a.kind == Kind::kChannel ? coff : nullptr, rs, ro, fp16,
         out + (t - t0) * D);
    }
  }
  return vdst;
}

void fia_aq_bind_item(const FiaParams& p, const FiaPlan& P, const FiaAqChannels& ch, int64_t b, int64_t h,
                      kernels::FlashItem* it, void* buf) {
  auto rows = [&](const TensorView& t, const FiaKvStrides& st) {
    FiaAqRows r;
    r.slot = st.slot;
    if (P.paged) {
      r.base = t.ptr<const int8_t>() + h * st.h;
      r.block_ids = p.block_table->ptr<const int32_t>() + b * P.bt_row_stride;
      r.block_size = P.block_size;
      r.blk = st.blk;
    } else {
      r.base = t.ptr<const int8_t>() + b * st.b + h * st.h + P.kv_start[static_cast<size_t>(b)] * st.slot;
    }
    return r;
  };
  const int64_t t0 = it->kv_begin, t1 = it->kv_end, n = t1 - t0;
  uint16_t* kdst = static_cast<uint16_t*>(buf);
  const uint16_t* vdst = fia_dequant_rows(P.aq, ch, rows(p.key[0], P.k), rows(p.value[0], P.v), b, h, t0, t1, P.QD,
                                          P.VD, P.fp16, kdst);
  auto contiguous = [](const uint16_t* base, int64_t D) {
    kernels::FlashKv kv;
    kv.base = base;
    kv.slot_stride = D;
    kv.c0 = D;
    return kv;
  };
  it->k = contiguous(kdst, P.QD);
  it->v = contiguous(vdst, P.VD);
  it->kv_begin = 0;
  it->kv_end = n;
  it->lo_delta -= t0;  // |deltas| <= 2^62, t0 < 2^62: no overflow
  it->hi_delta -= t0;
  if (it->mask != nullptr) it->mask += t0 * it->mask_j_stride;
}

}  // namespace mlaops

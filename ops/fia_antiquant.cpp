// KV antiquant validation and resolution (fia_antiquant.h; rule FIA-21,
// docs/ops/fused_infer_attention_score.md).
#include "ops/fia_antiquant.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/attn_combine.h"
#include "kernels/cpu/attn_family.h"
#include "kernels/cpu/dequant_kv.h"
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

namespace {

// The INT8 rows of one KV head of one batch: position t at base + addr.row(t) (elements = bytes).
struct Rows {
  const int8_t* base = nullptr;
  kernels::FlashKv addr;  // addressing only (its base unused)
  const int8_t* at(int64_t t) const { return base + addr.row(t); }
};

Rows rows_of(const FiaParams& p, const FiaPlan& P, const TensorView& t, const FiaKvStrides& st, int64_t b, int64_t h) {
  Rows r;
  int64_t off;
  r.addr = fia_kv_rows(p, P, st, b, h, &off);
  r.base = t.ptr<const int8_t>() + off;
  return r;
}

// Positions [t0, t1) of heads h0 .. h0 + n - 1 (D channels each, parameters `a`, per-channel
// floats `csc` / `coff` of head h0 onwards) into dst rows [t - t0][n * D]. When the heads lie side
// by side in a cache row (BnBsH / BSH / BSND: head stride D) the rows are read in address order,
// the n heads of a row in one call where the parameters allow; otherwise head by head (BNSD /
// BnNBsD: each head's rows are contiguous), prefetching kAhead rows ahead.
void dequant_heads(const FiaParams& p, const FiaPlan& P, const TensorView& t, const FiaKvStrides& st,
                   const FiaAqParam& a, const float* csc, const float* coff, int64_t b, int64_t h0, int64_t n,
                   int64_t t0, int64_t t1, int64_t t_end, int64_t D, uint16_t* dst, kernels::DequantRowFn fn) {
  const bool chan = a.kind == Kind::kChannel;
  auto row_params = [&](const Rows& r, int64_t h, int64_t pos, float* rs, float* ro) {
    *rs = 1.0f;
    *ro = 0.0f;
    if (chan) return;
    const kernels::FlashKv& ad = r.addr;
    const int64_t blk = ad.block_ids ? ad.block_ids[pos / ad.block_size] : 0, slot = ad.block_ids ? pos % ad.block_size : pos;
    const int64_t i = a.kind == Kind::kRow ? a.base + b * a.sb + h * a.sh + pos * a.st
                                           : a.base + blk * a.sblk + h * a.sh + slot * a.sslot;
    *rs = fia_aq_value(*a.scale, i);
    *ro = a.offset ? fia_aq_value(*a.offset, i) : 0.0f;
  };
  const Rows r0 = rows_of(p, P, t, st, b, h0);
  float rs, ro;
  constexpr int64_t kAhead = 16;  // rows prefetched ahead (into L2), up to the item's end t_end
  if (st.h == D) {  // heads side by side in a row
    const bool whole_row = chan || a.sh == 0;  // one parameter set for the n heads of a row
    for (int64_t pos = t0; pos < std::min(t1, t0 + kAhead); ++pos)
      for (int64_t c = 0; c < n * D; c += 64) __builtin_prefetch(r0.at(pos) + c, 0, 2);
    for (int64_t pos = t0; pos < t1; ++pos) {
      if (pos + kAhead < t_end)
        for (int64_t c = 0; c < n * D; c += 64) __builtin_prefetch(r0.at(pos + kAhead) + c, 0, 2);
      const int8_t* row = r0.at(pos);
      uint16_t* out = dst + (pos - t0) * n * D;
      if (whole_row) {
        row_params(r0, h0, pos, &rs, &ro);
        fn(row, n * D, chan ? csc : nullptr, chan ? coff : nullptr, rs, ro, P.fp16, out);
      } else {
        for (int64_t i = 0; i < n; ++i) {
          row_params(r0, h0 + i, pos, &rs, &ro);
          fn(row + i * D, D, nullptr, nullptr, rs, ro, P.fp16, out + i * D);
        }
      }
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const Rows r = rows_of(p, P, t, st, b, h0 + i);
    for (int64_t pos = t0; pos < std::min(t1, t0 + kAhead); ++pos)
      for (int64_t c = 0; c < D; c += 64) __builtin_prefetch(r.at(pos) + c);
    for (int64_t pos = t0; pos < t1; ++pos) {
      if (pos + kAhead < t1)
        for (int64_t c = 0; c < D; c += 64) __builtin_prefetch(r.at(pos + kAhead) + c);
      row_params(r, h0 + i, pos, &rs, &ro);
      fn(r.at(pos), D, chan ? csc + i * D : nullptr, chan ? coff + i * D : nullptr, rs, ro, P.fp16,
         dst + (pos - t0) * n * D + i * D);
    }
  }
}

}  // namespace

int64_t fia_aq_thread_bytes(int64_t heads, int64_t M, int64_t KD, int64_t VD) {
  const int64_t buf = kFiaAqChunk * heads * (KD + VD) * 2;
  const int64_t states = 2 * heads * M * (VD + 2) * 4;
  return (buf + states + 63) / 64 * 64;
}

void fia_aq_run_task(const FiaParams& p, const FiaPlan& P, const FiaAqChannels& ch, int64_t b, int64_t h0,
                     kernels::FlashItem* items, int64_t n, const FiaAqRun& k) {
  const int64_t KD = P.QD, VD = P.VD, M = items[0].G * items[0].R;
  if (!k.dequant) {  // the INT8 decode kernel, in place
    kernels::FlashDecodeI8 kv;
    for (int w = 0; w < 2; ++w) {
      (w == 0 ? kv.k : kv.v) = rows_of(p, P, w == 0 ? p.key[0] : p.value[0], w == 0 ? P.k : P.v, b, h0).addr;
    }
    for (int64_t i = 0; i < n; ++i) {
      kv.kb[i] = rows_of(p, P, p.key[0], P.k, b, h0 + i).base;
      kv.vb[i] = rows_of(p, P, p.value[0], P.v, b, h0 + i).base;
      kv.k_scale[i] = ch.k_scale + (h0 + i) * KD;
      kv.k_offset[i] = ch.k_offset + (h0 + i) * KD;
      kv.v_scale[i] = ch.v_scale + (h0 + i) * VD;
      kv.v_offset[i] = ch.v_offset + (h0 + i) * VD;
    }
    k.row->decode_i8(items, n, kv, k.buf);
    return;
  }
  const int64_t t_begin = items[0].kv_begin, t_end = items[0].kv_end;
  uint16_t* kbuf = static_cast<uint16_t*>(k.buf);             // [chunk, n * KD]
  uint16_t* vbuf = kbuf + kFiaAqChunk * n * KD;               // [chunk, n * VD]
  float* run = reinterpret_cast<float*>(vbuf + kFiaAqChunk * n * VD);  // per head: O [M, VD], m [M], l [M]
  float* part = run + n * M * (VD + 2);
  const int64_t per = M * (VD + 2);
  for (int64_t i = 0; i < n; ++i) {
    std::fill(run + i * per, run + (i + 1) * per, 0.0f);  // l = 0: empty
  }
  const kernels::DequantRowFn fn = P.dequant;
  kernels::FlashItem chunk[16];
  for (int64_t t0 = t_begin; t0 < t_end; t0 += kFiaAqChunk) {
    const int64_t t1 = std::min(t_end, t0 + kFiaAqChunk), len = t1 - t0;
    dequant_heads(p, P, p.key[0], P.k, P.aq.k, ch.k_scale + h0 * KD, ch.k_offset + h0 * KD, b, h0, n, t0, t1, t_end, KD, kbuf,
                  fn);
    dequant_heads(p, P, p.value[0], P.v, P.aq.v, ch.v_scale + h0 * VD, ch.v_offset + h0 * VD, b, h0, n, t0, t1, t_end, VD,
                  vbuf, fn);
    for (int64_t i = 0; i < n; ++i) {
      kernels::FlashItem& it = chunk[i];
      it = items[i];
      it.k = kernels::FlashKv();
      it.k.base = kbuf + i * KD;
      it.k.slot_stride = n * KD;
      it.k.c0 = KD;
      it.v = kernels::FlashKv();
      it.v.base = vbuf + i * VD;
      it.v.slot_stride = n * VD;
      it.v.c0 = VD;
      it.kv_begin = 0;  // positions relative to the chunk: the rule and the mask move with them
      it.kv_end = len;
      it.lo_delta = items[i].lo_delta - t0;  // |deltas| <= 2^62: no overflow
      it.hi_delta = items[i].hi_delta - t0;
      it.mask_j0 = items[i].mask_j0 - t0;
      if (it.bias != nullptr) it.bias += t0;
      it.partial_o = part + i * per;
      it.partial_m = it.partial_o + M * VD;
      it.partial_l = it.partial_m + M;
    }
    kernels::attn_run(*k.row, P.panel, P.shape, chunk, n, k.scratch);
    for (int64_t i = 0; i < n; ++i) {
      float* o = run + i * per;
      const float* o2 = part + i * per;
      kernels::attn_merge_state(o, o + M * VD, o + M * VD + M, o2, o2 + M * VD, o2 + M * VD + M, M, VD);
    }
  }
  for (int64_t i = 0; i < n; ++i) {  // the item's output, or its KV-split partial
    const float* o = run + i * per;
    kernels::attn_finish(items[i], o, VD, o + M * VD, o + M * VD + M);
  }}

}  // namespace mlaops

// bench_identity: the before / after proof of a refactor (docs/performance.md, "Proving a change
// changes nothing"). It uses only the installed public API (include/mlaops/*.h), so the same
// source compiles against an old and a new build of the library (scripts/compare_builds.sh).
//
//   bench_identity digest [--isa scalar|avx2|avx512|all] [--threads N|all] [--filter SUBSTR]
//       Runs a broad, deterministic set of cases (fixed seeds) of FusedInferAttentionScoreV4,
//       MlaProlog (V1 / V2 / V3) and MlaPreprocess and prints one line per case and setting:
//       "<isa> t<threads> <case> <hash>", the hash a 64-bit FNV-1a of every output and cache
//       byte, or "ERR <status> <message>" when the call is refused. Default: every ISA level the
//       host can run (mlaops::runnable_isas()) under 1 and 2 threads.
//   bench_identity callgrind CASE [--isa LEVEL] [--threads N]
//       Builds CASE (see `bench_identity list`), runs it once to warm, then once between
//       CALLGRIND_START_INSTRUMENTATION / CALLGRIND_STOP_INSTRUMENTATION; meant for
//       `valgrind --tool=callgrind --instr-atstart=no`. One thread unless --threads says else.
//   bench_identity list
//       The callgrind cases.
#include <valgrind/callgrind.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mlaops/dtype.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/mla_prolog.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"
#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

namespace {

using mlaops::DType;
using mlaops::Format;

// ---- host buffers ----

struct Buf {
  std::vector<uint8_t> b;
  mlaops::TensorView v;
};

int64_t count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// `dims` of uniform random content in [lo, hi) from `seed` (integers rounded; INT64 / UINT64
// hold fp32 bits, the fp16 deScale encoding); lo == hi == 0 gives zeros.
Buf make(DType dt, const std::vector<int64_t>& dims, uint32_t seed, float lo, float hi, Format f = Format::kND) {
  Buf x;
  const int64_t n = count(dims);
  x.b.assign(static_cast<size_t>(n * mlaops::dtype_size(dt)), 0);
  if (lo != 0.f || hi != 0.f) {
    uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;  // splitmix64: cheap, also under valgrind
    for (int64_t i = 0; i < n; ++i) {
      state += 0x9E3779B97F4A7C15ull;
      uint64_t z = state;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      const float r = lo + (hi - lo) * static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
      uint8_t* p = x.b.data();
      switch (dt) {
        case DType::kBFloat16: reinterpret_cast<uint16_t*>(p)[i] = mlaops::float_to_bf16(r); break;
        case DType::kFloat16: reinterpret_cast<uint16_t*>(p)[i] = mlaops::float_to_fp16(r); break;
        case DType::kInt8: reinterpret_cast<int8_t*>(p)[i] = static_cast<int8_t>(std::lrint(r)); break;
        case DType::kInt32: reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(std::lrint(r)); break;
        case DType::kFloat32: reinterpret_cast<float*>(p)[i] = r; break;
        case DType::kInt64:
        case DType::kUInt64: {
          uint32_t bits;
          std::memcpy(&bits, &r, 4);
          reinterpret_cast<uint64_t*>(p)[i] = bits;
          break;
        }
        case DType::kBool:
        case DType::kUInt8: p[i] = r < 0.5f ? 0 : 1; break;
        default: break;
      }
    }
  }
  x.b.reserve(1);  // an empty tensor still has a data pointer
  x.v = mlaops::make_view(x.b.data(), dt, dims.data(), static_cast<int>(dims.size()), f);
  if (n == 0) {  // the dense strides of an empty tensor (those before the 0 dim are 0)
    int64_t expect = 1;
    for (int i = x.v.rank - 1; i >= 0; --i) {
      x.v.strides[i] = expect;
      expect *= x.v.dims[i];
    }
  }
  return x;
}

// FRACTAL_NZ storage [C1, R1, 16, c0] of a logical [rows, cols] matrix (rows multiple of 16 and
// cols of c0 = 32 bytes / element size, so that there is no padding), random content.
Buf make_nz(DType dt, int64_t rows, int64_t cols, uint32_t seed, float lo, float hi) {
  const int64_t c0 = 32 / mlaops::dtype_size(dt);
  return make(dt, {cols / c0, rows / 16, 16, c0}, seed, lo, hi, Format::kFractalNZ);
}

// ---- the digest ----

struct Fnv {
  uint64_t h = 1469598103934665603ull;
  void add(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
};

// One prepared call: its buffers, host arrays and params, and the buffers it writes.
struct Prepared {
  enum class Op { kFia, kProlog, kPreprocess } op = Op::kFia;
  std::deque<Buf> bufs;
  std::deque<std::vector<int64_t>> arrays;
  std::vector<const Buf*> outs;
  mlaops::FiaParams fia;
  mlaops::MlaPrologParams prolog;
  mlaops::MlaPreprocessParams pre;
  std::vector<uint64_t> ws;

  Buf& in(DType dt, const std::vector<int64_t>& dims, uint32_t seed, float lo, float hi, Format f = Format::kND) {
    bufs.push_back(make(dt, dims, seed, lo, hi, f));
    return bufs.back();
  }
  // An output or in/out buffer (zeros unless lo / hi say else): hashed after the call.
  Buf& out(DType dt, const std::vector<int64_t>& dims, uint32_t seed = 0, float lo = 0, float hi = 0,
           Format f = Format::kND) {
    Buf& b = in(dt, dims, seed, lo, hi, f);
    outs.push_back(&b);
    return b;
  }
  const std::vector<int64_t>* array(std::vector<int64_t> a) {
    arrays.push_back(std::move(a));
    return &arrays.back();
  }

  mlaops::Status workspace(uint64_t* bytes) const {
    switch (op) {
      case Op::kFia: return mlaops::fused_infer_attention_score_v4_workspace_size(fia, bytes);
      case Op::kProlog: return mlaops::mla_prolog_workspace_size(prolog, bytes);
      case Op::kPreprocess: return mlaops::mla_preprocess_workspace_size(pre, bytes);
    }
    return mlaops::kInner;
  }
  // Sizes the workspace (outside any measured region); then call() runs the operator.
  mlaops::Status prepare() {
    uint64_t bytes = 0;
    const mlaops::Status s = workspace(&bytes);
    if (s != mlaops::kSuccess) return s;
    ws.assign(static_cast<size_t>(bytes / 8 + 1), 0);
    return mlaops::kSuccess;
  }
  mlaops::Status call() {
    const uint64_t bytes = ws.size() * 8;
    switch (op) {
      case Op::kFia: return mlaops::fused_infer_attention_score_v4(fia, ws.data(), bytes);
      case Op::kProlog: return mlaops::mla_prolog(prolog, ws.data(), bytes);
      case Op::kPreprocess: return mlaops::mla_preprocess(pre, ws.data(), bytes);
    }
    return mlaops::kInner;
  }
  uint64_t digest() const {
    Fnv f;
    for (const Buf* b : outs) f.add(b->b.data(), b->b.size());
    return f.h;
  }
};

using Builder = std::function<std::unique_ptr<Prepared>()>;

struct Case {
  std::string name;
  Builder build;
};

// ---- FusedInferAttentionScoreV4 ----

// The KV cache form: contiguous (the query's layout), or paged BnBsH / BnNBsD / NZ.
enum class Kv { kContig, kBnBsH, kBnNBsD, kNz };

struct FiaCfg {
  DType dt = DType::kBFloat16;
  std::string layout = "BSND";  // inputLayout, with its "_OUT" part when there is one
  int64_t B = 2, N = 4, KVN = 2, QS = 1, KVS = 37, D = 64, Dv = 64, Dr = 0;
  Kv kv = Kv::kContig;
  int64_t bs = 16;
  bool varlen = false;  // per-batch lengths below the extents (packed layouts: always per batch)
  bool uniform = false;  // packed layouts too: every batch the full extents
  int64_t sparse = 0;
  int mask = 0;  // 0 none, 1 [B, 1, QS, KVS], 2 2-D ([QS, KVS] or [B, KVS] for QS 1), 3 [2048, 2048]
  int64_t pre = 2147483647, next = 2147483647;
  bool pse = false, sink = false, lse = false, legacy = false, plan_run = false;
  int64_t ip = 0;
  uint32_t seed = 1;
};

std::vector<int64_t> split_dims(const std::string& l, int64_t B, int64_t S, int64_t N, int64_t D, int64_t T) {
  if (l == "BSH") return {B, S, N * D};
  if (l == "BSND") return {B, S, N, D};
  if (l == "BNSD") return {B, N, S, D};
  if (l == "NBSD") return {N, B, S, D};
  if (l == "TND") return {T, N, D};
  return {N, T, D};  // NTD
}

// Per-batch lengths: the extent, or (varlen) extent, extent - 3, extent - 5, ... (at least 1).
std::vector<int64_t> lengths(int64_t B, int64_t S, bool varlen) {
  std::vector<int64_t> v(static_cast<size_t>(B), S);
  if (varlen)
    for (int64_t b = 0; b < B; ++b) v[static_cast<size_t>(b)] = std::max<int64_t>(1, S - (b * 7) % (S + 1) / 2);
  return v;
}

std::vector<int64_t> cumulative(std::vector<int64_t> v) {
  for (size_t i = 1; i < v.size(); ++i) v[i] += v[i - 1];
  return v;
}

// The vendor's causal template of sparse 2 / 3 / 4: the strict upper triangle of 2048 x 2048.
void fill_template(Buf& m) {
  for (int64_t i = 0; i < 2048; ++i)
    for (int64_t j = 0; j < 2048; ++j) m.b[static_cast<size_t>(i * 2048 + j)] = j > i ? 1 : 0;
}

std::unique_ptr<Prepared> build_fia(const FiaCfg& c) {
  auto P = std::make_unique<Prepared>();
  P->op = Prepared::Op::kFia;
  mlaops::FiaParams& p = P->fia;
  const std::string in_l = c.layout.substr(0, c.layout.find('_'));
  const std::string out_l = c.layout.find('_') == std::string::npos ? in_l : c.layout.substr(c.layout.find('_') + 1);
  const bool packed = in_l == "TND" || in_l == "NTD";
  const uint32_t s = c.seed * 100;
  // query lengths (packed: per batch, cumulative in the params) and KV lengths
  const bool vary = c.varlen || (packed && !c.uniform);
  const std::vector<int64_t> ql = lengths(c.B, c.QS, vary), kl = lengths(c.B, c.KVS, vary);
  int64_t Tq = 0, Tkv = 0;
  for (int64_t x : ql) Tq += x;
  for (int64_t x : kl) Tkv += x;
  if (packed) {
    p.actual_seq_lengths = P->array(cumulative(ql));
    if (c.kv == Kv::kContig) p.actual_seq_lengths_kv = P->array(cumulative(kl));
  } else if (c.varlen) {
    if (c.QS > 1) p.actual_seq_lengths = P->array(ql);
    p.actual_seq_lengths_kv = P->array(kl);
  }
  const float lo = -1.f, hi = 1.f;
  p.query = P->in(c.dt, split_dims(in_l, c.B, c.QS, c.N, c.D, Tq), s + 1, lo, hi).v;
  if (c.Dr > 0) p.query_rope = &P->in(c.dt, split_dims(in_l, c.B, c.QS, c.N, c.Dr, Tq), s + 2, lo, hi).v;
  const bool mla = c.Dr > 0 && c.KVN == 1 && c.Dv == c.D;  // value = the key latent
  if (c.kv == Kv::kContig) {
    const Buf& k = P->in(c.dt, split_dims(in_l, c.B, c.KVS, c.KVN, c.D, Tkv), s + 3, lo, hi);
    p.key = {k.v};
    p.value = {mla ? k.v : P->in(c.dt, split_dims(in_l, c.B, c.KVS, c.KVN, c.Dv, Tkv), s + 4, lo, hi).v};
    if (c.Dr > 0) p.key_rope = &P->in(c.dt, split_dims(in_l, c.B, c.KVS, c.KVN, c.Dr, Tkv), s + 5, lo, hi).v;
  } else {
    const int64_t per = (c.KVS + c.bs - 1) / c.bs, nb = c.B * per;
    Buf& bt = P->in(DType::kInt32, {c.B, per}, 0, 0, 0);
    for (int64_t i = 0; i < nb; ++i) reinterpret_cast<int32_t*>(bt.b.data())[i] = static_cast<int32_t>((i * 7919) % nb);
    p.block_table = &bt.v;
    p.block_size = c.bs;
    if (!p.actual_seq_lengths_kv) p.actual_seq_lengths_kv = P->array(kl);
    auto cache = [&](int64_t d, uint32_t seed) -> Buf& {
      if (c.kv == Kv::kBnBsH) return P->in(c.dt, {nb, c.bs, c.KVN * d}, seed, lo, hi);
      if (c.kv == Kv::kBnNBsD) return P->in(c.dt, {nb, c.KVN, c.bs, d}, seed, lo, hi);
      return P->in(c.dt, {nb, c.KVN, d / 16, c.bs, 16}, seed, lo, hi, Format::kFractalNZ);
    };
    const Buf& k = cache(c.D, s + 3);
    p.key = {k.v};
    p.value = {mla ? k.v : cache(c.Dv, s + 4).v};
    if (c.Dr > 0) p.key_rope = &cache(c.Dr, s + 5).v;
  }
  p.num_heads = c.N;
  p.num_key_value_heads = c.KVN;
  p.scale_value = 1.0 / std::sqrt(static_cast<double>(c.D + c.Dr));
  p.input_layout = c.layout;
  p.sparse_mode = c.sparse;
  p.pre_tokens = c.pre;
  p.next_tokens = c.next;
  p.inner_precise = c.ip;
  p.legacy_uniform_invalid_rows = c.legacy;
  if (c.mask == 1 || c.mask == 2) {
    const std::vector<int64_t> dims = c.mask == 1 ? std::vector<int64_t>{c.B, 1, c.QS, c.KVS}
                                      : c.QS > 1  ? std::vector<int64_t>{c.QS, c.KVS}
                                                  : std::vector<int64_t>{c.B, c.KVS};
    Buf& m = P->in(DType::kBool, dims, s + 6, 0.f, 0.7f);  // 1 = masked: about 30 %
    const int64_t row = dims.back();
    for (int64_t j = 0; j < row; ++j) m.b[static_cast<size_t>(j)] = 1;  // one row masked everywhere
    p.atten_mask = &m.v;
  } else if (c.mask == 3) {
    Buf& m = P->in(DType::kBool, {2048, 2048}, 0, 0, 0);
    fill_template(m);
    p.atten_mask = &m.v;
  }
  if (c.pse) p.pse_shift = &P->in(c.dt, {c.B, c.N, c.QS, c.KVS}, s + 7, -2.f, 2.f).v;
  if (c.sink) p.learnable_sink = &P->in(c.dt, {c.N}, s + 8, -1.f, 3.f).v;
  const DType odt = c.dt;
  p.attention_out = P->out(odt, split_dims(out_l, c.B, c.QS, c.N, c.Dv, Tq)).v;
  if (c.lse) {
    p.softmax_lse_flag = true;
    p.softmax_lse = &P->out(DType::kFloat32, packed ? std::vector<int64_t>{Tq, c.N, 1}
                                                    : std::vector<int64_t>{c.B, c.N, c.QS, 1})
                         .v;
  }
  return P;
}

void add_fia(std::vector<Case>& cases, const std::string& name, const FiaCfg& c) {
  cases.push_back({"fia." + name, [c] { return build_fia(c); }});
}

// A builder that adjusts the generic one (quant settings the generic config does not cover).
void add_fia_with(std::vector<Case>& cases, const std::string& name, const FiaCfg& c,
                  std::function<void(Prepared&)> edit) {
  cases.push_back({"fia." + name, [c, edit] {
                     auto P = build_fia(c);
                     edit(*P);
                     return P;
                   }});
}

const char* dt_name(DType dt) { return dt == DType::kFloat16 ? "fp16" : dt == DType::kBFloat16 ? "bf16" : "int8"; }
std::string num(int64_t x) { return std::to_string(x); }

void fia_cases(std::vector<Case>& out) {
  // layouts x dtypes x decode / prefill x GQA / MHA, contiguous KV
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (const char* l : {"BSH", "BSND", "BNSD", "TND", "NTD", "BSH_BNSD", "BNSD_BSND", "BSND_NBSD", "TND_NTD"})
      for (int64_t QS : {1, 5})
        for (int64_t KVN : {1, 2, 4}) {
          FiaCfg c;
          c.dt = dt, c.layout = l, c.QS = QS, c.KVN = KVN, c.lse = KVN == 2;
          c.varlen = QS == 5 && KVN == 4;
          add_fia(out, std::string("layout.") + dt_name(dt) + "." + l + ".qs" + num(QS) + ".kvn" + num(KVN), c);
        }
  // odd head dims, D != Dv, long KV (several KV splits), many batches
  for (int64_t D : {16, 40, 128, 256}) {
    FiaCfg c;
    c.D = c.Dv = D, c.KVS = 300, c.B = 3, c.lse = true;
    add_fia(out, "dims.d" + num(D), c);
  }
  {
    FiaCfg c;
    c.D = 64, c.Dv = 32, c.QS = 3, c.lse = true;
    add_fia(out, "dims.dv32", c);
    c = FiaCfg();
    c.KVS = 2500, c.B = 1, c.N = 8, c.KVN = 1;
    add_fia(out, "dims.long_kv", c);
    c.QS = 64, c.KVS = 700, c.N = 4, c.KVN = 2, c.sparse = 3, c.mask = 3;
    add_fia(out, "dims.prefill_causal", c);
  }
  // masks, bias, sink, inner precise, invalid rows
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (int64_t QS : {1, 6}) {
      const std::string base = std::string("mask.") + dt_name(dt) + ".qs" + num(QS);
      FiaCfg c;
      c.dt = dt, c.QS = QS, c.KVS = 45, c.lse = true;
      for (int m : {1, 2}) {
        c.mask = m, c.sparse = 0;
        add_fia(out, base + ".sparse0.m" + num(m), c);
        c.legacy = true;
        add_fia(out, base + ".sparse0.m" + num(m) + ".legacy", c);
        c.legacy = false;
        c.sparse = 1;
        add_fia(out, base + ".sparse1.m" + num(m), c);
      }
      c.mask = 0, c.sparse = 0, c.pre = 10, c.next = 0;
      add_fia(out, base + ".sparse0.band_tokens", c);
      c.mask = 1, c.sparse = 0, c.pre = 20, c.next = 3;
      add_fia(out, base + ".sparse0.mask_tokens", c);
      c.pre = 2147483647, c.next = 2147483647;
      for (int64_t sp : {2, 3}) {
        c.mask = 3, c.sparse = sp;
        add_fia(out, base + ".sparse" + num(sp), c);
      }
      c.sparse = 4, c.pre = 12, c.next = 2;
      add_fia(out, base + ".sparse4", c);
      c.sparse = 0, c.mask = 0, c.pre = 2147483647, c.next = 2147483647;
      c.pse = true;
      add_fia(out, base + ".pse", c);
      c.mask = 1;
      add_fia(out, base + ".pse_mask", c);
      c.pse = false, c.mask = 0, c.sink = true;
      add_fia(out, base + ".sink", c);
      c.sink = false;
      for (int64_t ip : {1, 2, 3}) {
        c.ip = ip, c.mask = 1;
        add_fia(out, base + ".ip" + num(ip), c);
      }
    }
  // paged caches
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (Kv kv : {Kv::kBnBsH, Kv::kBnNBsD, Kv::kNz})
      for (const char* l : {"BSH", "BNSD", "TND"})
        for (int64_t QS : {1, 3}) {
          FiaCfg c;
          c.dt = dt, c.kv = kv, c.layout = l, c.QS = QS, c.KVS = 70, c.bs = 16, c.B = 3, c.lse = true;
          c.varlen = true;
          const char* kn = kv == Kv::kBnBsH ? "BnBsH" : kv == Kv::kBnNBsD ? "BnNBsD" : "NZ";
          add_fia(out, std::string("paged.") + dt_name(dt) + "." + kn + "." + l + ".qs" + num(QS), c);
          if (QS == 3 && std::string(l) == "BSH") {
            c.mask = 3, c.sparse = 3;
            add_fia(out, std::string("paged.") + dt_name(dt) + "." + kn + ".causal", c);
          }
        }
  // MLA: latent 512 + rope 64, KV_N 1, value = key (decode, MTP, prefill-like rows); small MLA
  for (Kv kv : {Kv::kContig, Kv::kBnNBsD, Kv::kBnBsH, Kv::kNz})
    for (const char* l : {"BNSD_NBSD", "BSND", "TND"})
      for (int64_t QS : {1, 4}) {
        FiaCfg c;
        c.D = c.Dv = 512, c.Dr = 64, c.KVN = 1, c.N = 16, c.B = 2, c.QS = QS, c.KVS = 300, c.lse = true;
        c.kv = kv, c.layout = l, c.bs = 128;
        if (QS > 1) c.sparse = 3, c.mask = 3;
        const char* kn = kv == Kv::kContig ? "contig" : kv == Kv::kBnBsH ? "BnBsH" : kv == Kv::kBnNBsD ? "BnNBsD" : "NZ";
        if (kv == Kv::kContig && std::string(l) == "BNSD_NBSD") continue;
        add_fia(out, std::string("mla.") + kn + "." + l + ".qs" + num(QS), c);
      }
  {
    FiaCfg c;
    c.D = c.Dv = 64, c.Dr = 16, c.KVN = 1, c.N = 8, c.QS = 2, c.KVS = 90, c.kv = Kv::kBnBsH, c.layout = "BSND";
    c.lse = true;
    add_fia(out, "mla.small", c);
    // MLA prefill: MHA with rope, D 128 + 64, V_D 128, TND, causal
    c = FiaCfg();
    c.D = c.Dv = 128, c.Dr = 64, c.N = 4, c.KVN = 4, c.QS = 40, c.KVS = 100, c.layout = "TND", c.sparse = 3, c.mask = 3;
    c.kv = Kv::kBnBsH, c.bs = 128;
    add_fia(out, "mla.prefill", c);
    // MTP with the tree mask (sparse 9): 4 draft tokens per batch
    c = FiaCfg();
    c.D = c.Dv = 512, c.Dr = 64, c.KVN = 1, c.N = 16, c.B = 2, c.QS = 4, c.KVS = 260, c.kv = Kv::kBnNBsD, c.bs = 128;
    c.layout = "TND", c.sparse = 9, c.lse = true, c.uniform = true;
    add_fia_with(out, "mla.tree", c, [](Prepared& P) {
      const int64_t B = 2, QS = 4;
      Buf& m = P.in(DType::kBool, {B * QS * QS}, 0, 0, 0);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < QS; ++i) {
          for (int64_t t = 0; t < QS; ++t) m.b[static_cast<size_t>((b * QS + i) * QS + t)] = 1;
          for (int64_t t = i;; t = (t - 1) / 2) {
            m.b[static_cast<size_t>((b * QS + i) * QS + t)] = 0;
            if (t == 0) break;
          }
        }
      P.fia.atten_mask = &m.v;
    });
  }
  // MLA full quant: INT8 query + dequantScaleQuery, INT8 NZ latent, BF16 NZ rope
  for (const char* l : {"BSND_NBSD", "BSH", "TND"})
    for (int64_t QS : {1, 3}) {
      const int64_t B = 2, N = 16, D = 512, Dr = 64, L = 300, bs = 128, per = (L + bs - 1) / bs, nb = B * per;
      out.push_back({std::string("fia.mla_fq.") + l + ".qs" + num(QS), [=] {
                       auto P = std::make_unique<Prepared>();
                       mlaops::FiaParams& p = P->fia;
                       const std::string ls = l, in_l = ls.substr(0, ls.find('_'));
                       const std::string out_l = ls.find('_') == std::string::npos ? in_l : ls.substr(ls.find('_') + 1);
                       const int64_t T = B * QS;
                       p.query = P->in(DType::kInt8, split_dims(in_l, B, QS, N, D, T), 1, -127, 127).v;
                       p.query_rope = &P->in(DType::kBFloat16, split_dims(in_l, B, QS, N, Dr, T), 2, -100, 100).v;
                       const std::vector<int64_t> sdims = in_l == "TND" ? std::vector<int64_t>{T, N}
                                                                        : std::vector<int64_t>{B, QS, N};
                       p.dequant_scale_query = &P->in(DType::kFloat32, sdims, 5, 0.005f, 0.02f).v;
                       p.query_quant_mode = 3;
                       const Buf& k = P->in(DType::kInt8, {nb, 1, D / 32, bs, 32}, 3, -127, 127, Format::kFractalNZ);
                       p.key = {k.v};
                       p.value = {k.v};
                       p.key_rope = &P->in(DType::kBFloat16, {nb, 1, Dr / 16, bs, 16}, 4, -1, 1, Format::kFractalNZ).v;
                       const Buf& ks = P->in(DType::kFloat32, {1}, 6, 0.04f, 0.041f);
                       p.key_antiquant_scale = &ks.v;
                       p.value_antiquant_scale = &ks.v;
                       Buf& bt = P->in(DType::kInt32, {B, per}, 0, 0, 0);
                       for (int64_t i = 0; i < nb; ++i)
                         reinterpret_cast<int32_t*>(bt.b.data())[i] = static_cast<int32_t>((i * 7919) % nb);
                       p.block_table = &bt.v;
                       p.block_size = bs;
                       p.actual_seq_lengths_kv = P->array({L, L - 77});
                       if (in_l == "TND") p.actual_seq_lengths = P->array({QS, 2 * QS});
                       if (QS > 1) {
                         Buf& m = P->in(DType::kBool, {2048, 2048}, 0, 0, 0);
                         fill_template(m);
                         p.atten_mask = &m.v;
                         p.sparse_mode = 3;
                       }
                       p.num_heads = N;
                       p.num_key_value_heads = 1;
                       p.scale_value = 1.0 / std::sqrt(static_cast<double>(D + Dr));
                       p.input_layout = l;
                       p.attention_out = P->out(DType::kBFloat16, split_dims(out_l, B, QS, N, D, T)).v;
                       p.softmax_lse_flag = true;
                       p.softmax_lse = &P->out(DType::kFloat32, in_l == "TND" ? std::vector<int64_t>{T, N, 1}
                                                                                 : std::vector<int64_t>{B, N, QS, 1})
                                            .v;
                       return P;
                     }});
    }
  // KV antiquant: INT8 / INT4 contiguous BSH, per-channel (mode 0, with offsets) and per-token
  // (mode 1) scales, innerPrecise 0 / 1
  for (bool int4 : {false, true})
    for (int64_t mode : {0, 1})
      for (int64_t ip : {0, 1})
        for (int64_t QS : {1, 2}) {
          if (int4 && QS > 1) continue;
          const int64_t B = 2, N = 8, KVN = 2, D = 64, L = 150, W = int4 ? KVN * D / 8 : KVN * D;
          out.push_back({std::string("fia.antiquant.") + (int4 ? "int4" : "int8") + ".mode" + num(mode) + ".ip" +
                             num(ip) + ".qs" + num(QS),
                         [=] {
                           auto P = std::make_unique<Prepared>();
                           mlaops::FiaParams& p = P->fia;
                           const DType kt = int4 ? DType::kInt32 : DType::kInt8;
                           const float klo = int4 ? -2e9f : -127, khi = int4 ? 2e9f : 127;
                           p.query = P->in(DType::kBFloat16, {B, QS, N * D}, 1, -1, 1).v;
                           p.key = {P->in(kt, {B, L, W}, 3, klo, khi).v};
                           p.value = {P->in(kt, {B, L, W}, 4, klo, khi).v};
                           const float lo = int4 ? 0.06f : 0.004f, hi = int4 ? 0.2f : 0.012f;
                           if (mode == 0) {
                             p.key_antiquant_scale = &P->in(DType::kBFloat16, {1, KVN, D}, 5, lo, hi).v;
                             p.value_antiquant_scale = &P->in(DType::kBFloat16, {1, KVN, D}, 6, lo, hi).v;
                             p.key_antiquant_offset = &P->in(DType::kBFloat16, {1, KVN, D}, 7, -2, 2).v;
                             p.value_antiquant_offset = &P->in(DType::kBFloat16, {1, KVN, D}, 8, -2, 2).v;
                           } else {
                             p.key_antiquant_scale = &P->in(DType::kFloat32, {1, B, L}, 5, lo, hi).v;
                             p.value_antiquant_scale = &P->in(DType::kFloat32, {1, B, L}, 6, lo, hi).v;
                           }
                           p.key_antiquant_mode = p.value_antiquant_mode = mode;
                           p.actual_seq_lengths_kv = P->array({L, L - 40});
                           p.num_heads = N;
                           p.num_key_value_heads = KVN;
                           p.scale_value = 0.125;
                           p.input_layout = "BSH";
                           p.inner_precise = ip;
                           p.attention_out = P->out(DType::kBFloat16, {B, QS, N * D}).v;
                           return P;
                         }});
        }
  // GQA antiquant over a paged INT8 NZ cache, and over a paged BnBsH INT8 cache with the
  // post-quant INT8 output
  for (bool post : {false, true}) {
    const int64_t B = 2, N = 8, KVN = 2, D = 64, L = 200, bs = 128, per = (L + bs - 1) / bs, nb = B * per;
    out.push_back({std::string("fia.antiquant.paged") + (post ? ".bnbsh_postquant" : ".nz"), [=] {
                     auto P = std::make_unique<Prepared>();
                     mlaops::FiaParams& p = P->fia;
                     p.query = P->in(DType::kBFloat16, {B, N, 1, D}, 1, -1, 1).v;
                     if (post) {
                       p.key = {P->in(DType::kInt8, {nb, bs, KVN * D}, 3, -127, 127).v};
                       p.value = {P->in(DType::kInt8, {nb, bs, KVN * D}, 4, -127, 127).v};
                       p.key_antiquant_scale = &P->in(DType::kBFloat16, {1, KVN, D}, 5, 0.004f, 0.012f).v;
                       p.value_antiquant_scale = &P->in(DType::kBFloat16, {1, KVN, D}, 6, 0.004f, 0.012f).v;
                       p.key_antiquant_offset = &P->in(DType::kBFloat16, {1, KVN, D}, 7, -2, 2).v;
                       p.value_antiquant_offset = &P->in(DType::kBFloat16, {1, KVN, D}, 8, -2, 2).v;
                       p.quant_scale2 = &P->in(DType::kFloat32, {N, D}, 9, 50, 200).v;
                       p.quant_offset2 = &P->in(DType::kFloat32, {N, D}, 10, -10, 10).v;
                     } else {
                       p.key = {P->in(DType::kInt8, {nb, KVN, D / 32, bs, 32}, 3, -127, 127, Format::kFractalNZ).v};
                       p.value = {P->in(DType::kInt8, {nb, KVN, D / 32, bs, 32}, 4, -127, 127, Format::kFractalNZ).v};
                       p.key_antiquant_scale = &P->in(DType::kBFloat16, {KVN, D}, 5, 0.004f, 0.012f).v;
                       p.value_antiquant_scale = &P->in(DType::kBFloat16, {KVN, D}, 6, 0.004f, 0.012f).v;
                       p.inner_precise = 1;
                     }
                     Buf& bt = P->in(DType::kInt32, {B, per}, 0, 0, 0);
                     for (int64_t i = 0; i < nb; ++i) reinterpret_cast<int32_t*>(bt.b.data())[i] = static_cast<int32_t>(nb - 1 - i);
                     p.block_table = &bt.v;
                     p.block_size = bs;
                     p.actual_seq_lengths_kv = P->array({L, L - 90});
                     p.num_heads = N;
                     p.num_key_value_heads = KVN;
                     p.scale_value = 0.125;
                     p.input_layout = "BNSD";
                     p.attention_out = P->out(post ? DType::kInt8 : DType::kBFloat16, {B, N, 1, D}).v;
                     return P;
                   }});
  }
  // post-quant INT8 output of a BF16 call: per-tensor and per-channel
  for (bool per_channel : {false, true}) {
    FiaCfg c;
    c.QS = 3, c.lse = !per_channel;  // per-channel post-quant excludes softmaxLse
    add_fia_with(out, std::string("postquant.") + (per_channel ? "per_channel" : "per_tensor"), c,
                 [per_channel, c](Prepared& P) {
                   const std::vector<int64_t> sd = per_channel ? std::vector<int64_t>{c.N, c.Dv} : std::vector<int64_t>{1};
                   P.fia.quant_scale2 = &P.in(DType::kFloat32, sd, 9, 50, 200).v;
                   P.fia.quant_offset2 = &P.in(DType::kFloat32, sd, 10, -10, 10).v;
                   Buf& o = P.in(DType::kInt8, {c.B, c.QS, c.N, c.Dv}, 0, 0, 0);
                   P.outs[0] = &o;
                   P.fia.attention_out = o.v;
                 });
  }
  // INT8 full quantisation (prefill): FP16 output, and INT8 output; causal and no mask
  for (bool int8_out : {false, true})
    for (bool causal : {false, true}) {
      const int64_t B = 2, N = 4, KVN = 2, D = 64, S = 24, L = 80;
      out.push_back({std::string("fia.full_quant.") + (int8_out ? "int8_out" : "fp16_out") + (causal ? ".causal" : ""),
                     [=] {
                       auto P = std::make_unique<Prepared>();
                       mlaops::FiaParams& p = P->fia;
                       p.query = P->in(DType::kInt8, {B, S, N, D}, 1, -100, 100).v;
                       p.key = {P->in(DType::kInt8, {B, L, KVN, D}, 2, -100, 100).v};
                       p.value = {P->in(DType::kInt8, {B, L, KVN, D}, 3, -100, 100).v};
                       p.deq_scale1 = &P->in(DType::kFloat32, {1}, 4, 1e-4f, 1.01e-4f).v;
                       p.quant_scale1 = &P->in(DType::kFloat32, {1}, 5, 127.f, 127.5f).v;
                       p.deq_scale2 = &P->in(DType::kFloat32, {1}, 6, 1e-4f, 1.01e-4f).v;
                       if (int8_out) {
                         p.quant_scale2 = &P->in(DType::kFloat32, {1}, 7, 50, 60).v;
                         p.quant_offset2 = &P->in(DType::kFloat32, {1}, 8, -3, 3).v;
                       }
                       if (causal) {
                         Buf& m = P->in(DType::kBool, {2048, 2048}, 0, 0, 0);
                         fill_template(m);
                         p.atten_mask = &m.v;
                         p.sparse_mode = 3;
                       }
                       p.actual_seq_lengths = P->array({S, S - 5});
                       p.actual_seq_lengths_kv = P->array({L, L - 11});
                       p.num_heads = N;
                       p.num_key_value_heads = KVN;
                       p.scale_value = 0.125;
                       p.input_layout = "BSND";
                       p.attention_out = P->out(int8_out ? DType::kInt8 : DType::kFloat16, {B, S, N, D}).v;
                       p.softmax_lse_flag = true;
                       p.softmax_lse = &P->out(DType::kFloat32, {B, N, S, 1}).v;
                       return P;
                     }});
    }
  // shared prefix (decode and prefill) and left padding
  for (int64_t QS : {1, 4}) {
    FiaCfg c;
    c.layout = "BNSD", c.QS = QS, c.KVS = 50, c.lse = true;
    add_fia_with(out, "prefix.qs" + num(QS), c, [c](Prepared& P) {
      const int64_t Lp = 33;
      P.fia.key_shared_prefix = &P.in(c.dt, {1, c.KVN, Lp, c.D}, 21, -1, 1).v;
      P.fia.value_shared_prefix = &P.in(c.dt, {1, c.KVN, Lp, c.Dv}, 22, -1, 1).v;
      P.fia.actual_shared_prefix_len = P.array({Lp - 4});
    });
  }
  for (int64_t QS : {1, 6}) {
    FiaCfg c;
    c.layout = "BSND", c.QS = QS, c.KVS = 60, c.B = 2, c.lse = true, c.varlen = true;
    add_fia_with(out, "left_padding.qs" + num(QS), c, [QS](Prepared& P) {
      Buf& qp = P.in(DType::kInt64, {1}, 0, 0, 0);
      Buf& kp = P.in(DType::kInt64, {1}, 0, 0, 0);
      reinterpret_cast<int64_t*>(qp.b.data())[0] = 1;
      reinterpret_cast<int64_t*>(kp.b.data())[0] = 5;
      P.fia.query_padding_size = &qp.v;
      P.fia.kv_padding_size = &kp.v;
      if (QS > 1) P.fia.actual_seq_lengths = P.array({4, 3});
      P.fia.actual_seq_lengths_kv = P.array({50, 41});
    });
  }
  // tensor-list key / value: one tensor of batch 1 per batch, each with its own extent
  for (const char* l : {"BSH", "BNSD"}) {
    FiaCfg c;
    c.layout = l, c.B = 3, c.QS = 2, c.KVS = 40, c.lse = true;
    add_fia_with(out, std::string("tensor_list.") + l, c, [c, l](Prepared& P) {
      P.fia.key.clear();
      P.fia.value.clear();
      for (int64_t b = 0; b < c.B; ++b) {
        const int64_t S = c.KVS - 9 * b;
        const std::vector<int64_t> kd = std::string(l) == "BSH" ? std::vector<int64_t>{1, S, c.KVN * c.D}
                                                                : std::vector<int64_t>{1, c.KVN, S, c.D};
        P.fia.key.push_back(P.in(c.dt, kd, static_cast<uint32_t>(30 + b), -1, 1).v);
        P.fia.value.push_back(P.in(c.dt, kd, static_cast<uint32_t>(40 + b), -1, 1).v);
      }
      P.fia.actual_seq_lengths_kv = P.array({c.KVS, c.KVS - 9, c.KVS - 18});
    });
  }
}

// ---- MlaProlog ----

struct PrologCfg {
  int version = 2;          // 1, 2, 3
  bool full = false;        // token_x INT8 (full quant)
  bool partial = false;     // weight_uq_qr INT8 (partial quant)
  bool kvq = false;         // kv_cache INT8
  bool per_tile = false;    // V3 kvCacheQuantMode 3
  bool smooth = false;
  bool nd_weights = false;  // bf16 ND weights instead of NZ
  bool norm_out = false;    // V3 queryNormOut
  double qc = 1.0, kc = 1.0;
  mlaops::MlaPrologCacheMode cm = mlaops::MlaPrologCacheMode::kPaBsnd;
  bool bsnd_tokens = false;  // token_x [B, S, He]
  int64_t B = 2, S = 3, N = 4;
  int64_t He = 256, Hcq = 128, Hckv = 128, D = 32, Dr = 64, bs = 16;
};

std::unique_ptr<Prepared> build_prolog(const PrologCfg& c) {
  using CM = mlaops::MlaPrologCacheMode;
  auto P = std::make_unique<Prepared>();
  P->op = Prepared::Op::kProlog;
  mlaops::MlaPrologParams& p = P->prolog;
  const int64_t T = c.B * c.S, N = c.N, QD = c.D + c.Dr;
  const bool quant = c.full || c.partial;
  auto tok = [&](int64_t last) {
    return c.bsnd_tokens ? std::vector<int64_t>{c.B, c.S, last} : std::vector<int64_t>{T, last};
  };
  auto tok_h = [&](int64_t h, int64_t last) {
    return c.bsnd_tokens ? std::vector<int64_t>{c.B, c.S, h, last} : std::vector<int64_t>{T, h, last};
  };
  auto weight = [&](bool int8, int64_t rows, int64_t cols, uint32_t seed) -> Buf& {
    if (int8) return P->in(DType::kInt8, {cols / 32, rows / 16, 16, 32}, seed, -100, 100, Format::kFractalNZ);
    if (c.nd_weights) return P->in(DType::kBFloat16, {rows, cols}, seed, -0.05f, 0.05f);
    return P->in(DType::kBFloat16, {cols / 16, rows / 16, 16, 16}, seed, -0.05f, 0.05f, Format::kFractalNZ);
  };
  p.token_x = P->in(c.full ? DType::kInt8 : DType::kBFloat16, tok(c.He), 11, c.full ? -100.f : -1.f, c.full ? 100.f : 1.f).v;
  p.weight_dq = weight(c.full, c.He, c.Hcq, 1).v;
  p.weight_uq_qr = weight(quant, c.Hcq, N * QD, 2).v;
  p.weight_uk = P->in(DType::kBFloat16, {N, c.D, c.Hckv}, 4, -0.05f, 0.05f).v;
  p.weight_dkv_kr = weight(c.full, c.He, c.Hckv + c.Dr, 3).v;
  p.rmsnorm_gamma_cq = P->in(DType::kBFloat16, {c.Hcq}, 5, 0.9f, 1.1f).v;
  p.rmsnorm_gamma_ckv = P->in(DType::kBFloat16, {c.Hckv}, 6, 0.9f, 1.1f).v;
  p.rope_sin = P->in(DType::kBFloat16, tok(c.Dr), 12, -1, 1).v;
  p.rope_cos = P->in(DType::kBFloat16, tok(c.Dr), 13, -1, 1).v;
  p.cache_mode = c.cm;
  p.rmsnorm_epsilon_cq = 1e-5;
  p.rmsnorm_epsilon_ckv = 2e-5;
  // the caches: paged ones of BlockNum blocks with scattered slots / block ids (one token
  // skipped in the slot modes), or one row per token
  const int64_t per = (c.S + c.bs - 1) / c.bs, block_num = std::max<int64_t>(c.B * per, (T + c.bs - 1) / c.bs) + 1;
  const int64_t kv_row = c.per_tile ? c.Hckv + 2 * c.Dr + 4 * c.Hckv / 128 : c.Hckv;
  const DType kvt = c.kvq ? DType::kInt8 : DType::kBFloat16;
  const DType krt = c.kvq && c.partial && !c.per_tile ? DType::kInt8 : DType::kBFloat16;
  std::vector<int64_t> kvd, krd;
  if (mlaops::mla_prolog_cache_paged(c.cm)) {
    kvd = {block_num, c.bs, 1, kv_row};
    krd = {block_num, c.bs, 1, c.per_tile ? 0 : c.Dr};
    if (mlaops::mla_prolog_cache_blocks(c.cm)) {
      Buf& ids = P->in(DType::kInt64, c.bsnd_tokens ? std::vector<int64_t>{c.B, per} : std::vector<int64_t>{c.B * per}, 0, 0, 0);
      for (int64_t i = 0; i < c.B * per; ++i) reinterpret_cast<int64_t*>(ids.b.data())[i] = (i * 5 + 1) % block_num;
      p.cache_index = ids.v;
      if (!c.bsnd_tokens) {
        Buf& asl = P->in(DType::kInt32, {c.B}, 0, 0, 0);
        for (int64_t b = 0; b < c.B; ++b) reinterpret_cast<int32_t*>(asl.b.data())[b] = static_cast<int32_t>((b + 1) * c.S);
        p.actual_seq_len = &asl.v;
      }
    } else {
      Buf& slots = P->in(DType::kInt64, tok(1).size() == 3 ? std::vector<int64_t>{c.B, c.S} : std::vector<int64_t>{T}, 0, 0, 0);
      const int64_t slot_count = block_num * c.bs;
      for (int64_t t = 0; t < T; ++t)
        reinterpret_cast<int64_t*>(slots.b.data())[t] = t == 1 ? -1 : (t * 37 + 5) % slot_count;
      p.cache_index = slots.v;
    }
  } else if (c.cm == CM::kBsnd) {
    kvd = {c.B, c.S, 1, kv_row};
    krd = {c.B, c.S, 1, c.per_tile ? 0 : c.Dr};
  } else {
    kvd = {T, 1, kv_row};
    krd = {T, 1, c.per_tile ? 0 : c.Dr};
  }
  p.kv_cache = P->out(kvt, kvd, 20, -3, 3).v;  // in/out: the untouched rows keep their bytes
  p.kr_cache = P->out(krt, krd, 21, -3, 3).v;
  const bool q_int8 = c.full && c.kvq && !c.per_tile;
  p.query_out = P->out(q_int8 ? DType::kInt8 : DType::kBFloat16, tok_h(N, c.Hckv)).v;
  p.query_rope_out = P->out(DType::kBFloat16, tok_h(N, c.Dr)).v;
  if (c.full) {
    p.dequant_scale_x = &P->in(DType::kFloat32, {T, 1}, 14, 0.001f, 0.002f).v;
    p.dequant_scale_w_dq = &P->in(DType::kFloat32, {1, c.Hcq}, 7, 0.001f, 0.002f).v;
    p.dequant_scale_w_dkv_kr = &P->in(DType::kFloat32, {1, c.Hckv + c.Dr}, 9, 0.001f, 0.002f).v;
  }
  if (quant) p.dequant_scale_w_uq_qr = &P->in(DType::kFloat32, {1, N * QD}, 8, 0.001f, 0.002f).v;
  if (c.kvq && !c.per_tile) {
    p.quant_scale_ckv = &P->in(DType::kFloat32, {1, c.Hckv}, 10, 10.f, 20.f).v;
    if (c.partial) p.quant_scale_ckr = &P->in(DType::kFloat32, {1, c.Dr}, 15, 10.f, 20.f).v;
  }
  if (c.smooth) p.smooth_scales_cq = &P->in(DType::kFloat32, {1, c.Hcq}, 16, 0.5f, 1.5f).v;
  // V2 / V3: [T, N, 1] in FULL_QUANT_KV_QUANT, else the (1) placeholder the vendor passes
  if (c.version >= 2) p.dequant_scale_q_nope_out = &P->out(DType::kFloat32, q_int8 ? std::vector<int64_t>{T, N, 1} : std::vector<int64_t>{1}).v;
  if (c.version >= 3) {
    p.qc_qr_scale = c.qc;
    p.kc_scale = c.kc;
    if (c.norm_out) {
      p.query_norm_out = &P->out(quant ? DType::kInt8 : DType::kBFloat16, tok(c.Hcq)).v;
      if (quant) p.dequant_scale_q_norm_out = &P->out(DType::kFloat32, {T, 1}).v;
    }
    if (c.per_tile) {
      p.kv_quant_per_tile = true;
      p.k_nope_clip_alpha = &P->in(DType::kFloat32, {1}, 17, 0.8f, 0.9f).v;
    }
  }
  return P;
}

void prolog_cases(std::vector<Case>& out) {
  using CM = mlaops::MlaPrologCacheMode;
  struct Scen {
    const char* name;
    bool full, partial, kvq, per_tile;
  };
  const Scen scens[] = {{"no_quant", false, false, false, false},
                        {"partial_kv_no_quant", false, true, false, false},
                        {"partial_kv_quant", false, true, true, false},
                        {"full_kv_no_quant", true, false, false, false},
                        {"full_kv_quant", true, false, true, false},
                        {"partial_per_tile", false, true, true, true},
                        {"full_per_tile", true, false, true, true}};
  for (const Scen& sc : scens)
    for (CM cm : {CM::kPaBsnd, CM::kPaNz, CM::kPaBlkBsnd, CM::kPaBlkNz, CM::kBsnd, CM::kTnd})
      for (int version : {1, 2, 3}) {
        if (version < 3 && (sc.per_tile || (cm != CM::kPaBsnd && cm != CM::kPaNz))) continue;
        if (sc.per_tile && (mlaops::mla_prolog_cache_nz(cm) || mlaops::mla_prolog_cache_blocks(cm))) continue;
        if (version == 1 && sc.full && sc.kvq) continue;  // needs the V2 output dequantScaleQNope
        PrologCfg c;
        c.version = version, c.full = sc.full, c.partial = sc.partial, c.kvq = sc.kvq, c.per_tile = sc.per_tile, c.cm = cm;
        c.bsnd_tokens = cm == CM::kBsnd;
        const std::string base = std::string("prolog.v") + num(version) + "." + sc.name + "." +
                                 mlaops::mla_prolog_cache_mode_name(cm);
        out.push_back({base, [c] { return build_prolog(c); }});
        if (version == 3) {
          PrologCfg v = c;
          v.qc = 0.75, v.kc = 1.5, v.norm_out = true, v.smooth = sc.full || sc.partial;
          out.push_back({base + ".alpha_norm_out", [v] { return build_prolog(v); }});
        }
      }
  // token layouts, ND weights, longer runs of tokens (several chunks), odd head counts
  for (bool bsnd : {false, true})
    for (int64_t T : {1, 40}) {
      PrologCfg c;
      c.bsnd_tokens = bsnd, c.B = bsnd ? 2 : T, c.S = bsnd ? (T + 1) / 2 : 1, c.N = 3;
      out.push_back({"prolog.v2.tokens." + std::string(bsnd ? "bsh" : "th") + ".T" + num(c.B * c.S),
                     [c] { return build_prolog(c); }});
      c.nd_weights = true;
      out.push_back({"prolog.v2.nd_weights." + std::string(bsnd ? "bsh" : "th") + ".T" + num(c.B * c.S),
                     [c] { return build_prolog(c); }});
      c.nd_weights = false, c.partial = true, c.smooth = true;
      out.push_back({"prolog.v2.partial_smooth." + std::string(bsnd ? "bsh" : "th") + ".T" + num(c.B * c.S),
                     [c] { return build_prolog(c); }});
    }
  // DeepSeek-V3 dims (He 7168, Hcq 1536, Hckv 512, D 128, Dr 64), N 8: bf16 and W8A8 + KV quant
  for (bool int8 : {false, true}) {
    PrologCfg c;
    c.He = 7168, c.Hcq = 1536, c.Hckv = 512, c.D = 128, c.Dr = 64, c.N = 8, c.B = 3, c.S = 1, c.bs = 128;
    c.full = c.kvq = int8;
    c.cm = int8 ? CM::kPaNz : CM::kPaBsnd;
    out.push_back({std::string("prolog.v2.deepseek.") + (int8 ? "int8" : "bf16"), [c] { return build_prolog(c); }});
  }
}

// ---- MlaPreprocess ----

struct PreCfg {
  DType dt = DType::kBFloat16;
  mlaops::MlaPreprocessCacheMode cm = mlaops::MlaPreprocessCacheMode::kKvCache;
  mlaops::MlaPreprocessQuantMode qm = mlaops::MlaPreprocessQuantMode::kPerTensorAsymm;
  bool unquant = false;      // weights in the input dtype, do_rms_norm false
  bool wuk_nz = false;
  bool q_down = false;
  bool distinct_out = false;  // kv_cache_out / kr_cache_out distinct from the input caches
  int64_t T = 5, N = 2, He = 256, Hcq = 64, Hckv = 64, D = 32, Dr = 16, bs = 16, blocks = 3;
};

std::unique_ptr<Prepared> build_pre(const PreCfg& c) {
  using CM = mlaops::MlaPreprocessCacheMode;
  auto P = std::make_unique<Prepared>();
  P->op = Prepared::Op::kPreprocess;
  mlaops::MlaPreprocessParams& p = P->pre;
  const DType dt = c.dt;
  const int64_t QKV = c.Hckv + c.Dr + c.Hcq, UQ = c.N * (c.D + c.Dr), T = c.T;
  const DType wdt = c.unquant ? dt : DType::kInt8;
  p.input = P->in(dt, {T, c.He}, 17, -2.f, 2.f).v;
  p.gamma0 = P->in(dt, {c.He}, 4, 0.9f, 1.1f).v;
  p.beta0 = P->in(dt, {c.He}, 5, -0.1f, 0.1f).v;
  p.wdqkv = P->bufs.emplace_back(make_nz(wdt, QKV, c.He, 1, c.unquant ? -0.05f : -100.f, c.unquant ? 0.05f : 100.f)).v;
  p.gamma1 = P->in(dt, {c.Hcq}, 6, 0.9f, 1.1f).v;
  p.beta1 = P->in(dt, {c.Hcq}, 7, -0.1f, 0.1f).v;
  p.wuq = P->bufs.emplace_back(make_nz(wdt, UQ, c.Hcq, 2, c.unquant ? -0.05f : -100.f, c.unquant ? 0.05f : 100.f)).v;
  p.gamma2 = P->in(dt, {c.Hckv}, 8, 0.9f, 1.1f).v;
  p.cos = P->in(dt, {T, c.Dr}, 18, -1.f, 1.f).v;
  p.sin = P->in(dt, {T, c.Dr}, 19, -1.f, 1.f).v;
  p.wuk = c.wuk_nz ? P->in(dt, {c.N, c.Hckv / 16, c.D, 16}, 3, -0.05f, 0.05f, Format::kFractalNZ).v
                   : P->in(dt, {c.N, c.D, c.Hckv}, 3, -0.05f, 0.05f).v;
  if (c.unquant) {
    p.do_rms_norm = false;
  } else {
    const DType ds = dt == DType::kFloat16 ? DType::kInt64 : DType::kFloat32;
    p.de_scale0 = &P->in(ds, {QKV}, 13, 0.0005f, 0.001f).v;
    p.de_scale1 = &P->in(ds, {UQ}, 14, 0.0005f, 0.001f).v;
    if (c.qm == mlaops::MlaPreprocessQuantMode::kPerTensorAsymm) {
      p.quant_scale0 = &P->in(dt, {1}, 9, 0.02f, 0.03f).v;
      p.quant_scale1 = &P->in(dt, {1}, 10, 0.02f, 0.03f).v;
      p.quant_offset0 = &P->in(DType::kInt8, {1}, 11, -3.f, 3.f).v;
      p.quant_offset1 = &P->in(DType::kInt8, {1}, 12, -3.f, 3.f).v;
      p.bias0 = &P->in(DType::kInt32, {QKV}, 15, -10.f, 10.f).v;
      p.bias1 = &P->in(DType::kInt32, {UQ}, 16, -10.f, 10.f).v;
    }
  }
  p.cache_mode = c.cm;
  p.quant_mode = c.qm;
  const bool nz = mlaops::mla_preprocess_is_nz_cache(c.cm);
  const DType kvt = c.cm == CM::kInt8NzCache ? DType::kInt8 : dt;
  std::vector<int64_t> kvd, krd;
  if (c.cm == CM::kKvCache) {
    kvd = {c.blocks, c.bs, 1, c.Hckv + c.Dr};
  } else if (!nz) {
    kvd = {c.blocks, c.bs, 1, c.Hckv};
    krd = {c.blocks, c.bs, 1, c.Dr};
  } else {
    const int64_t c0 = kvt == DType::kInt8 ? 32 : 16;
    kvd = {c.blocks, c.Hckv / c0, c.bs, c0};
    krd = {c.blocks, c.Dr / 16, c.bs, 16};
  }
  const Format cf = nz ? Format::kFractalNZ : Format::kND;
  Buf& kv = c.distinct_out ? P->in(kvt, kvd, 20, -3, 3, cf) : P->out(kvt, kvd, 20, -3, 3, cf);
  p.kv_cache = kv.v;
  if (c.distinct_out) p.kv_cache_out = P->out(kvt, kvd, 22, -3, 3, cf).v;
  if (!krd.empty()) {
    Buf& kr = c.distinct_out ? P->in(dt, krd, 21, -3, 3, cf) : P->out(dt, krd, 21, -3, 3, cf);
    p.kv_cache_rope = &kr.v;
    if (c.distinct_out) p.kr_cache_out = &P->out(dt, krd, 23, -3, 3, cf).v;
    p.q_rope_out = &P->out(dt, {T, c.N, c.Dr}).v;
  }
  Buf& slots = P->in(DType::kInt32, {T}, 0, 0, 0);
  for (int64_t t = 0; t < T; ++t)
    reinterpret_cast<int32_t*>(slots.b.data())[t] = t == 2 ? -1 : static_cast<int32_t>((t * 11 + 3) % (c.blocks * c.bs));
  p.slot_mapping = slots.v;
  if (c.cm == CM::kInt8NzCache) {
    p.ctkv_scale = &P->in(dt, {1}, 24, 0.02f, 0.03f).v;
    p.q_nope_scale = &P->in(dt, {c.N}, 25, 5.f, 20.f).v;
  }
  p.q_out = P->out(c.cm == CM::kInt8NzCache ? DType::kInt8 : dt, {T, c.N, c.cm == CM::kKvCache ? c.Hckv + c.Dr : c.Hckv}).v;
  if (c.q_down) p.q_down_out = &P->out(dt, {T, c.Hcq}).v;
  return P;
}

void preprocess_cases(std::vector<Case>& out) {
  using CM = mlaops::MlaPreprocessCacheMode;
  using QM = mlaops::MlaPreprocessQuantMode;
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (CM cm : {CM::kKvCache, CM::kKropeCtkv, CM::kInt8NzCache, CM::kNzCache})
      for (QM qm : {QM::kPerTensorAsymm, QM::kPerTokenSymm}) {
        PreCfg c;
        c.dt = dt, c.cm = cm, c.qm = qm;
        const std::string base = std::string("preprocess.") + dt_name(dt) + "." + mlaops::mla_preprocess_cache_mode_name(cm) +
                                 "." + (qm == QM::kPerTensorAsymm ? "per_tensor" : "per_token");
        out.push_back({base, [c] { return build_pre(c); }});
        PreCfg v = c;
        v.wuk_nz = true, v.q_down = true, v.distinct_out = true, v.T = 37;
        out.push_back({base + ".nz_wuk.q_down.distinct_out.T37", [v] { return build_pre(v); }});
      }
  for (CM cm : {CM::kKvCache, CM::kKropeCtkv, CM::kNzCache}) {
    PreCfg c;
    c.unquant = true, c.cm = cm;
    out.push_back({std::string("preprocess.bf16.unquant.") + mlaops::mla_preprocess_cache_mode_name(cm),
                   [c] { return build_pre(c); }});
  }
  // DeepSeek-V3 dims, N 4, the W8A8 configuration of the bench (cacheMode 1, quantMode 0)
  PreCfg c;
  c.He = 7168, c.Hcq = 1536, c.Hckv = 512, c.D = 128, c.Dr = 64, c.N = 4, c.T = 3, c.bs = 128, c.blocks = 2;
  c.cm = CM::kKropeCtkv;
  out.push_back({"preprocess.deepseek.krope_ctkv", [c] { return build_pre(c); }});
}

std::vector<Case> digest_cases() {
  std::vector<Case> out;
  fia_cases(out);
  prolog_cases(out);
  preprocess_cases(out);
  return out;
}

// ---- the callgrind cases (the bench's main rows, bench/case_defs.h, shrunk where a row would
// take over ~2 min under callgrind on a 2-core host; docs/performance.md lists them) ----

std::unique_ptr<Prepared> callgrind_case(const std::string& name) {
  if (name == "mla_decode") {  // MLA decode: N 32, L 4096, B 1, paged BnNBsD, BNSD_NBSD, LSE
    FiaCfg c;
    c.D = c.Dv = 512, c.Dr = 64, c.N = 32, c.KVN = 1, c.B = 1, c.QS = 1, c.KVS = 4096, c.kv = Kv::kBnNBsD, c.bs = 128;
    c.layout = "BNSD_NBSD", c.lse = true;
    return build_fia(c);
  }
  if (name == "gqa_decode") {  // GQA decode: 32q / 8kv, D 128, L 4096, B 8, paged BnBsH, BNSD
    FiaCfg c;
    c.N = 32, c.KVN = 8, c.D = c.Dv = 128, c.B = 8, c.QS = 1, c.KVS = 4096, c.kv = Kv::kBnBsH, c.bs = 128;
    c.layout = "BNSD";
    return build_fia(c);
  }
  if (name == "mla_prefill") {  // MLA prefill: T 128, L 1024 (bench: 4096), N 16 (bench: 128), TND, causal
    FiaCfg c;
    c.D = c.Dv = 128, c.Dr = 64, c.N = 16, c.KVN = 16, c.B = 1, c.QS = 128, c.KVS = 1024, c.kv = Kv::kBnBsH, c.bs = 128;
    c.layout = "TND", c.sparse = 3, c.mask = 3;
    return build_fia(c);
  }
  // MlaPrologV2 bf16, DeepSeek-V3 dims, N 32, T 1 and T 64 (the bench's T 1024 row shrunk: under
  // callgrind T 256 already takes minutes on a 2-core host; T <= 256 is one chunk, the same path)
  if (name == "prolog_t1" || name == "prolog_t64") {
    PrologCfg c;
    c.He = 7168, c.Hcq = 1536, c.Hckv = 512, c.D = 128, c.Dr = 64, c.N = 32, c.bs = 128;
    c.B = name == "prolog_t1" ? 1 : 64, c.S = 1;
    return build_prolog(c);
  }
  if (name == "preprocess") {  // MlaPreprocess W8A8, cacheMode 1, DeepSeek-V3 dims, N 32, T 32
    PreCfg c;
    c.He = 7168, c.Hcq = 1536, c.Hckv = 512, c.D = 128, c.Dr = 64, c.N = 32, c.T = 32, c.bs = 128, c.blocks = 1;
    c.cm = mlaops::MlaPreprocessCacheMode::kKropeCtkv;
    return build_pre(c);
  }
  return nullptr;
}

const char* const kCallgrindCases[] = {"mla_decode", "gqa_decode", "mla_prefill", "prolog_t1", "prolog_t64", "preprocess"};

// ---- main ----

int usage() {
  std::fprintf(stderr,
               "usage: bench_identity digest [--isa scalar|avx2|avx512|all] [--threads N|all] [--filter SUBSTR]\n"
               "       bench_identity callgrind CASE [--isa LEVEL] [--threads N]\n"
               "       bench_identity list\n");
  return 2;
}

std::string result_of(Prepared& P) {
  mlaops::Status s = P.prepare();
  if (s == mlaops::kSuccess) s = P.call();
  if (s != mlaops::kSuccess) return "ERR " + std::to_string(static_cast<int>(s)) + " " + mlaops::last_error_message();
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(P.digest()));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string mode = argv[1];
  std::string isa_arg = "all", threads_arg = "all", filter, case_name;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--isa" && i + 1 < argc) isa_arg = argv[++i];
    else if (a == "--threads" && i + 1 < argc) threads_arg = argv[++i];
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (mode == "callgrind" && case_name.empty()) case_name = a;
    else return usage();
  }
  if (mode == "list") {
    for (const char* c : kCallgrindCases) std::printf("%s\n", c);
    return 0;
  }
  std::vector<mlaops::Isa> isas;
  if (isa_arg == "all") {
    isas = mlaops::runnable_isas();
  } else {
    mlaops::Isa isa;
    if (!mlaops::parse_isa(isa_arg.c_str(), &isa)) return usage();
    isas = {isa};
  }
  std::vector<int> threads;
  if (threads_arg == "all") threads = {1, 2};
  else threads = {std::atoi(threads_arg.c_str())};
  if (mode == "callgrind") {
    std::unique_ptr<Prepared> P = callgrind_case(case_name);
    if (!P) return usage();
    if (isa_arg != "all" && !mlaops::set_isa(isas[0])) {
      std::fprintf(stderr, "bench_identity: this host cannot run %s\n", isa_arg.c_str());
      return 1;
    }
    mlaops::set_num_threads(threads_arg == "all" ? 1 : threads[0]);
    mlaops::Status s = P->prepare();
    if (s == mlaops::kSuccess) s = P->call();  // warm: first-use detection, thread pool, pages
    if (s == mlaops::kSuccess) {
      CALLGRIND_START_INSTRUMENTATION;
      s = P->call();
      CALLGRIND_STOP_INSTRUMENTATION;
    }
    if (s != mlaops::kSuccess) {
      std::fprintf(stderr, "bench_identity: %s: %s\n", case_name.c_str(), mlaops::last_error_message());
      return 1;
    }
    std::printf("%s isa=%s threads=%d digest=%016llx\n", case_name.c_str(), mlaops::isa_name(mlaops::active_isa()),
                mlaops::num_threads(), static_cast<unsigned long long>(P->digest()));
    return 0;
  }
  if (mode != "digest") return usage();
  const std::vector<Case> cases = digest_cases();
  int errors = 0;
  for (mlaops::Isa isa : isas) {
    if (!mlaops::set_isa(isa)) {
      std::fprintf(stderr, "bench_identity: this host cannot run %s\n", mlaops::isa_name(isa));
      return 1;
    }
    for (int t : threads) {
      mlaops::set_num_threads(t);
      for (const Case& c : cases) {
        if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
        std::unique_ptr<Prepared> P = c.build();
        const std::string r = result_of(*P);
        if (r.compare(0, 4, "ERR ") == 0) ++errors;
        std::printf("%s t%d %s %s\n", mlaops::isa_name(isa), t, c.name.c_str(), r.c_str());
        std::fflush(stdout);
      }
    }
  }
  std::fprintf(stderr, "bench_identity: %zu cases x %zu ISA levels x %zu thread counts, %d refused\n", cases.size(),
               isas.size(), threads.size(), errors);
  return 0;
}

// bench_identity (bench/bench_identity.cpp, docs/performance.md): host buffers with seeded content,
// the FNV-1a digest of the outputs, and one prepared operator call. Public headers only.
#pragma once

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

namespace bench_identity {

using mlaops::DType;
using mlaops::Format;

// ---- host buffers ----

struct Buf {
  std::vector<uint8_t> b;
  mlaops::TensorView v;
};

inline int64_t count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// `dims` of uniform random content in [lo, hi) from `seed` (integers rounded; INT64 / UINT64
// hold fp32 bits, the fp16 deScale encoding); lo == hi == 0 gives zeros.
inline Buf make(DType dt, const std::vector<int64_t>& dims, uint32_t seed, float lo, float hi, Format f = Format::kND) {
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
inline Buf make_nz(DType dt, int64_t rows, int64_t cols, uint32_t seed, float lo, float hi) {
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


// Short names of the case lists.
inline const char* dt_name(DType dt) { return dt == DType::kFloat16 ? "fp16" : dt == DType::kBFloat16 ? "bf16" : "int8"; }
inline std::string num(int64_t x) { return std::to_string(x); }

}  // namespace bench_identity

// The float64 references' own small helpers: checked int64 arithmetic, dtype names and sizes,
// element load / store through a view's strides, the BF16 / FP16 encodings and the int8
// rounding rules, the FRACTAL_NZ element index and the FusedInferAttentionScore layout strings.
//
// Independence: a reference shares nothing with the code it checks except the public headers'
// enums and plain structs (DType, Format, FiaLayout, TensorView, the params structs) and the
// error channel (fail() / MLAOPS_CHECK, so that callers read last_error_message()). Every rule
// below is written from its definition (docs/numerics.md, docs/ops/*.md), not taken from the
// library, so a test that compares the library with a reference compares two independent
// implementations; tests/reference/common/test_ref_util.cpp cross-checks the two sets of helpers and
// scans reference/ for anything else it includes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.h"
#include "mlaops/dtype.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/tensor_view.h"

namespace mlaops::ref {

// ---------------------------------------------------------------------------------------------
// Checked int64 arithmetic
// ---------------------------------------------------------------------------------------------

inline bool mul_ok(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool add_ok(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }
// ceil(a / b) for a >= 0, b > 0.
inline int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// ---------------------------------------------------------------------------------------------
// dtypes and shapes
// ---------------------------------------------------------------------------------------------

// Bytes per element of the dtypes the references read or write; 0 for the others.
inline int64_t elem_bytes(DType t) {
  switch (t) {
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool: return 1;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
    case DType::kUInt16: return 2;
    case DType::kFloat32:
    case DType::kInt32:
    case DType::kUInt32: return 4;
    case DType::kFloat64:
    case DType::kInt64:
    case DType::kUInt64: return 8;
    default: return 0;
  }
}

inline bool is_half(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }
inline bool is_float(DType t) { return is_half(t) || t == DType::kFloat32 || t == DType::kFloat64; }

// The vendor's dtype names, for messages.
inline const char* type_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "FLOAT";
    case DType::kFloat16: return "FLOAT16";
    case DType::kBFloat16: return "BF16";
    case DType::kFloat64: return "DOUBLE";
    case DType::kInt8: return "INT8";
    case DType::kUInt8: return "UINT8";
    case DType::kInt16: return "INT16";
    case DType::kUInt16: return "UINT16";
    case DType::kInt32: return "INT32";
    case DType::kUInt32: return "UINT32";
    case DType::kInt64: return "INT64";
    case DType::kUInt64: return "UINT64";
    case DType::kBool: return "BOOL";
    case DType::kInt4: return "INT4";
    default: return "UNSUPPORTED";
  }
}

// Format names, for messages.
inline const char* format_str(Format f) {
  switch (f) {
    case Format::kND: return "ND";
    case Format::kNCHW: return "NCHW";
    case Format::kFractalNZ: return "FRACTAL_NZ";
    default: return "another format";
  }
}

// "[d0, d1, ...]".
inline std::string shape_str(const TensorView& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i) s += (i ? ", " : "") + std::to_string(t.dims[i]);
  return s + "]";
}

// Product of the dims; false when a dim is negative or the product (in elements or bytes)
// overflows int64.
inline bool numel_of(const TensorView& t, int64_t* out) {
  int64_t n = 1;
  for (int i = 0; i < t.rank; ++i)
    if (t.dims[i] < 0 || !mul_ok(n, t.dims[i], &n)) return false;
  int64_t bytes = 0;
  if (!mul_ok(n, elem_bytes(t.dtype) > 0 ? elem_bytes(t.dtype) : 1, &bytes)) return false;
  *out = n;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Rounding rules (docs/numerics.md)
// ---------------------------------------------------------------------------------------------

// The integer nearest to v, ties to the even one (v finite). v - floor(v) is exact in double.
inline double round_half_even(double v) {
  const double f = std::floor(v);
  const double frac = v - f;
  if (frac > 0.5) return f + 1.0;
  if (frac < 0.5) return f;
  return std::fmod(f, 2.0) == 0.0 ? f : f + 1.0;
}

// The integer nearest to v, ties away from zero (v finite).
inline double round_half_away(double v) {
  const double a = std::fabs(v);
  const double f = std::floor(a);
  const double r = a - f >= 0.5 ? f + 1.0 : f;
  return v < 0 ? -r : r;
}

// A binary floating-point format of 16 bits: 1 sign bit, `exp_bits` exponent bits (bias
// 2^(exp_bits-1) - 1), `man_bits` stored significand bits. BF16: 8 / 7, FP16: 5 / 10.
struct Binary16Format {
  int exp_bits;
  int man_bits;
};
inline constexpr Binary16Format kBf16Format{8, 7};
inline constexpr Binary16Format kFp16Format{5, 10};

// Value of a bit pattern: (-1)^s * 2^(e - bias) * 1.m for normal numbers, 2^(1 - bias) * 0.m for
// e == 0, +-inf / NaN for e all ones.
inline double decode16(uint16_t h, Binary16Format f) {
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const int e = (h >> f.man_bits) & ((1 << f.exp_bits) - 1);
  const int m = h & ((1 << f.man_bits) - 1);
  const double sign = (h & 0x8000u) ? -1.0 : 1.0;
  if (e == (1 << f.exp_bits) - 1)
    return std::copysign(m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN(),
                         sign);
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), 1 - bias - f.man_bits);
  return sign * std::ldexp(static_cast<double>((1 << f.man_bits) + m), e - bias - f.man_bits);
}

// v rounded once to the nearest representable value, ties to even significand; magnitudes that
// round beyond the largest finite value give +-inf; NaN gives a quiet NaN of the same sign.
inline uint16_t encode16(double v, Binary16Format f) {
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const int emin = 1 - bias, emax = bias;
  const uint16_t sign = std::signbit(v) ? 0x8000u : 0u;
  const uint16_t exp_ones = static_cast<uint16_t>(((1 << f.exp_bits) - 1) << f.man_bits);
  if (std::isnan(v)) return static_cast<uint16_t>(sign | exp_ones | (1u << (f.man_bits - 1)));
  const double a = std::fabs(v);
  if (std::isinf(a)) return static_cast<uint16_t>(sign | exp_ones);
  if (a == 0.0) return sign;
  int ex = 0;
  std::frexp(a, &ex);  // a = m * 2^ex, m in [0.5, 1): the binade exponent is ex - 1
  // The spacing of representable values around a: 2^q, the same below 2^emin (subnormals).
  int q = (ex - 1 > emin ? ex - 1 : emin) - f.man_bits;
  double n = round_half_even(std::ldexp(a, -q));  // a / 2^q, exact (a power-of-two scaling)
  if (n == 0.0) return sign;
  const double top = std::ldexp(1.0, f.man_bits + 1);
  if (n >= top) {  // rounded up into the next binade
    n /= 2.0;
    ++q;
  }
  const double lead = std::ldexp(1.0, f.man_bits);
  if (n < lead) return static_cast<uint16_t>(sign | static_cast<uint16_t>(n));  // subnormal
  const int e = q + f.man_bits;
  if (e > emax) return static_cast<uint16_t>(sign | exp_ones);
  return static_cast<uint16_t>(sign | ((e + bias) << f.man_bits) | static_cast<uint16_t>(n - lead));
}

inline double bf16_value(uint16_t h) { return decode16(h, kBf16Format); }
inline double fp16_value(uint16_t h) { return decode16(h, kFp16Format); }
inline uint16_t bf16_bits(double v) { return encode16(v, kBf16Format); }
inline uint16_t fp16_bits(double v) { return encode16(v, kFp16Format); }
// The value a BF16 / FP16 store of v reads back.
inline double to_bf16(double v) { return bf16_value(bf16_bits(v)); }
inline double to_fp16(double v) { return fp16_value(fp16_bits(v)); }
// v rounded to a float dtype (FP64 and other dtypes: unchanged).
inline double to_dtype(double v, DType t) {
  switch (t) {
    case DType::kBFloat16: return to_bf16(v);
    case DType::kFloat16: return to_fp16(v);
    case DType::kFloat32: return static_cast<double>(static_cast<float>(v));
    default: return v;
  }
}

// int8 from a value: clamp(rint(v), -128, 127) with ties to even ("rint"), or with ties away
// from zero ("round"); NaN gives 0. Clamping first gives the same result for every v.
inline int8_t int8_rint(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 127.0) return 127;
  if (v <= -128.0) return -128;
  return static_cast<int8_t>(round_half_even(v));
}
inline int8_t int8_round(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 127.0) return 127;
  if (v <= -128.0) return -128;
  return static_cast<int8_t>(round_half_away(v));
}
// Post-quant INT8 output (quantScale2 / quantOffset2), evaluated in FP16 as the vendor golden
// (docs/ops/fused_infer_attention_score.md "Post-quant INT8 output"): x, scale and offset are
// rounded to FP16; the product is rounded to FP16, then the sum with the offset; the sum is
// clamped to [-256, 255], rounded to an integer (ties to even) and clamped to [-128, 127].
// Overflow to +-inf clamps like any large value; NaN gives 0.
inline int8_t post_quant_int8(double x, double scale, double offset) {
  const double prod = to_fp16(to_fp16(x) * to_fp16(scale));  // exact product of two FP16 values
  double y = to_fp16(prod + to_fp16(offset));                  // exact sum of two FP16 values
  if (std::isnan(y)) return 0;
  y = std::min(std::max(y, -256.0), 255.0);
  return int8_rint(round_half_even(y));
}

// ---------------------------------------------------------------------------------------------
// Element access through a view's strides
// ---------------------------------------------------------------------------------------------

// Element offset of the multi-index idx (t.rank entries): the dot product with the strides.
inline int64_t offset(const TensorView& t, const int64_t* idx) {
  int64_t off = 0;
  for (int i = 0; i < t.rank; ++i) off += t.strides[i] * idx[i];
  return off;
}

// Element offset of the element number `linear` in row-major logical order: the multi-index
// unravelled from the last dim (a 0-sized dim counts as 1), then offset().
inline int64_t linear_offset(const TensorView& t, int64_t linear) {
  int64_t idx[kMaxRank] = {};
  int64_t rest = linear;
  for (int i = t.rank; i-- > 0;) {
    const int64_t extent = t.dims[i] < 1 ? 1 : t.dims[i];
    idx[i] = rest % extent;
    rest /= extent;
  }
  return offset(t, idx);
}

template <class T>
T raw(const TensorView& t, int64_t off) {
  T v;
  std::memcpy(&v, static_cast<const char*>(t.data) + off * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}
template <class T>
void put(const TensorView& t, int64_t off, T v) {
  std::memcpy(static_cast<char*>(t.data) + off * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

// The element at `off` as a double (exact for every dtype but 64-bit integers beyond 2^53).
inline double load(const TensorView& t, int64_t off) {
  switch (t.dtype) {
    case DType::kFloat64: return raw<double>(t, off);
    case DType::kFloat32: return raw<float>(t, off);
    case DType::kBFloat16: return bf16_value(raw<uint16_t>(t, off));
    case DType::kFloat16: return fp16_value(raw<uint16_t>(t, off));
    case DType::kInt8: return raw<int8_t>(t, off);
    case DType::kUInt8: return raw<uint8_t>(t, off);
    case DType::kBool: return raw<uint8_t>(t, off) != 0 ? 1.0 : 0.0;
    case DType::kInt16: return raw<int16_t>(t, off);
    case DType::kUInt16: return raw<uint16_t>(t, off);
    case DType::kInt32: return raw<int32_t>(t, off);
    case DType::kUInt32: return raw<uint32_t>(t, off);
    case DType::kInt64: return static_cast<double>(raw<int64_t>(t, off));
    case DType::kUInt64: return static_cast<double>(raw<uint64_t>(t, off));
    default: return 0.0;
  }
}

// An integer element (exact for the 64-bit types; UINT64 as its bit pattern).
inline int64_t load_int(const TensorView& t, int64_t off) {
  switch (t.dtype) {
    case DType::kInt64: return raw<int64_t>(t, off);
    case DType::kUInt64: return static_cast<int64_t>(raw<uint64_t>(t, off));
    case DType::kInt32: return raw<int32_t>(t, off);
    case DType::kUInt32: return raw<uint32_t>(t, off);
    case DType::kInt16: return raw<int16_t>(t, off);
    case DType::kUInt16: return raw<uint16_t>(t, off);
    case DType::kInt8: return raw<int8_t>(t, off);
    case DType::kUInt8: return raw<uint8_t>(t, off);
    default: {
      const double v = load(t, off);
      if (!(v == v)) return 0;
      if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
      if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(v);
    }
  }
}

// An integer type's value of v (v is already an integer value): saturated, NaN -> 0.
inline double saturate(double v, double lo, double hi) {
  if (!(v == v)) return 0.0;
  return v < lo ? lo : v > hi ? hi : v;
}

// Writes v: float dtypes round to nearest even once from the double; integer dtypes take v as
// an already rounded value and saturate (NaN -> 0); BOOL stores v != 0.
inline void store(const TensorView& t, int64_t off, double v) {
  switch (t.dtype) {
    case DType::kFloat64: put<double>(t, off, v); return;
    case DType::kFloat32: put<float>(t, off, static_cast<float>(v)); return;
    case DType::kBFloat16: put<uint16_t>(t, off, bf16_bits(v)); return;
    case DType::kFloat16: put<uint16_t>(t, off, fp16_bits(v)); return;
    case DType::kInt8: put<int8_t>(t, off, static_cast<int8_t>(saturate(v, -128.0, 127.0))); return;
    case DType::kUInt8: put<uint8_t>(t, off, static_cast<uint8_t>(saturate(v, 0.0, 255.0))); return;
    case DType::kBool: put<uint8_t>(t, off, v != 0.0 ? 1 : 0); return;
    case DType::kInt16: put<int16_t>(t, off, static_cast<int16_t>(saturate(v, -32768.0, 32767.0))); return;
    case DType::kInt32: put<int32_t>(t, off, static_cast<int32_t>(saturate(v, -2147483648.0, 2147483647.0))); return;
    case DType::kInt64:
      put<int64_t>(t, off, static_cast<int64_t>(saturate(v, -9.2233720368547758e18, 9.2233720368547748e18)));
      return;
    default: return;
  }
}

// ---------------------------------------------------------------------------------------------
// FRACTAL_NZ (docs/numerics.md): W [rows, cols] with element size b as [C1, R1, 16, c0],
// c0 = 32 / b, R1 = ceil(rows / 16), C1 = ceil(cols / c0): column stripes c0 wide, each a run
// of row-major 16 x c0 tiles down the rows.
// ---------------------------------------------------------------------------------------------

// c0 of a dtype: 32 bytes / element size; 0 when the size does not divide 32.
inline int64_t nz_c0_of(DType t) {
  const int64_t b = elem_bytes(t);
  return b > 0 && 32 % b == 0 ? 32 / b : 0;
}

struct NzGeometry {
  int64_t rows = 0, cols = 0;  // logical
  int64_t r1 = 0, c1 = 0, c0 = 0;
  // Storage index of W[r][c]: tile (c / c0, r / 16), then row r % 16 and column c % c0 inside it.
  int64_t index(int64_t r, int64_t c) const {
    const int64_t tile = (c / c0) * r1 + r / 16;
    return tile * 16 * c0 + (r % 16) * c0 + c % c0;
  }
};

// The NZ geometry of `t` for the logical matrix [rows, cols]: either a 4-D storage view
// [C1, R1, 16, c0] or a 2-D logical view [rows, cols] with 4-D storage_dims. Messages name
// `op` and `name`.
inline Status nz_geometry(const TensorView& t, const char* op, const char* name, int64_t rows, int64_t cols,
                          NzGeometry* out) {
  NzGeometry g;
  g.rows = rows;
  g.cols = cols;
  g.c0 = nz_c0_of(t.dtype);
  MLAOPS_CHECK(g.c0 > 0, kParamInvalid, "%s: %s: FRACTAL_NZ needs an element size dividing 32 bytes; got %s", op,
               name, type_name(t.dtype));
  g.r1 = ceil_div(rows, 16);
  g.c1 = ceil_div(cols, g.c0);
  const int64_t* s = nullptr;
  if (t.rank == 4) {
    s = t.dims;
  } else if (t.rank == 2) {
    MLAOPS_CHECK(t.dims[0] == rows && t.dims[1] == cols, kParamInvalid,
                 "%s: %s: logical shape must be [%lld, %lld]; got [%lld, %lld]", op, name, (long long)rows,
                 (long long)cols, (long long)t.dims[0], (long long)t.dims[1]);
    MLAOPS_CHECK(t.storage_rank == 4, kParamInvalid,
                 "%s: %s: a 2-D FRACTAL_NZ view needs 4-D storage dims [C1, R1, 16, c0]; got %d storage dims", op,
                 name, t.storage_rank);
    s = t.storage_dims;
  } else {
    return fail(kParamInvalid, "%s: %s: a FRACTAL_NZ tensor must have 2 (logical) or 4 (storage) dims; got %d", op,
                name, t.rank);
  }
  MLAOPS_CHECK(s[0] == g.c1 && s[1] == g.r1 && s[2] == 16 && s[3] == g.c0, kParamInvalid,
               "%s: %s: FRACTAL_NZ storage must be [%lld, %lld, 16, %lld] for logical [%lld, %lld]; got "
               "[%lld, %lld, %lld, %lld]",
               op, name, (long long)g.c1, (long long)g.r1, (long long)g.c0, (long long)rows, (long long)cols,
               (long long)s[0], (long long)s[1], (long long)s[2], (long long)s[3]);
  int64_t elems = 0;
  MLAOPS_CHECK(mul_ok(g.c1, g.r1, &elems) && mul_ok(elems, 16 * g.c0, &elems) && mul_ok(elems, 8, &elems),
               kParamInvalid, "%s: %s: FRACTAL_NZ storage size overflows int64", op, name);
  *out = g;
  return kSuccess;
}

// ---------------------------------------------------------------------------------------------
// FusedInferAttentionScore inputLayout strings (docs/ops/fused_infer_attention_score.md)
// ---------------------------------------------------------------------------------------------

// The side names in the order of the FiaLayout values 0..5.
inline constexpr const char* kLayoutSides[] = {"BSH", "BSND", "BNSD", "TND", "NTD", "NBSD"};

// One side of an inputLayout string; false for anything else.
inline bool layout_side(const std::string& s, FiaLayout* l) {
  for (int32_t v = 0; v < 6; ++v) {
    if (s == kLayoutSides[v]) {
      *l = static_cast<FiaLayout>(v);
      return true;
    }
  }
  return false;
}

// One of the 13 accepted strings ("IN" or "IN_OUT") -> its input and output layouts (the output
// is the input without "_OUT"); false, writing nothing, for anything else.
inline bool layout_from_string(const std::string& s, FiaLayout* in, FiaLayout* out) {
  static const char* const kAccepted[] = {"BSH",       "BSND",      "BNSD",     "TND",      "NTD",
                                          "BSH_BNSD",  "BSND_BNSD", "BNSD_BSND", "NTD_TND", "TND_NTD",
                                          "BSH_NBSD",  "BSND_NBSD", "BNSD_NBSD"};
  bool listed = false;
  for (const char* a : kAccepted) listed = listed || s == a;
  if (!listed) return false;
  const size_t cut = s.find('_');
  FiaLayout i = FiaLayout::kBSH, o = FiaLayout::kBSH;
  if (!layout_side(s.substr(0, cut), &i)) return false;
  o = i;
  if (cut != std::string::npos && !layout_side(s.substr(cut + 1), &o)) return false;
  *in = i;
  *out = o;
  return true;
}

inline const char* layout_text(FiaLayout l) {
  const auto v = static_cast<int32_t>(l);
  return v >= 0 && v < 6 ? kLayoutSides[v] : "?";
}

// TND and NTD: tokens of all batches packed along one axis.
inline bool layout_packed(FiaLayout l) { return l == FiaLayout::kTND || l == FiaLayout::kNTD; }

}  // namespace mlaops::ref

// The oneDNN route of the projection GEMMs: the converter from the operators' weight layouts into
// the packed layout of oneDNN's matmul, and the matmul calls (gemm_onednn.h).
#include "kernels/cpu/gemm/gemm_onednn.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/checked_math.h"
#include "core/parallel.h"
#include "core/workspace.h"
#include "mlaops/numeric.h"

#ifdef MLAOPS_HAVE_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace mlaops::kernels {

const char* onednn_type_name(OnednnType t) {
  switch (t) {
    case OnednnType::kBf16: return "bf16";
    case OnednnType::kF32: return "f32";
    case OnednnType::kU8S8: return "u8s8";
  }
  return "?";
}

#ifndef MLAOPS_HAVE_DNNL

struct OnednnGemmPlan::Impl {};
std::string OnednnGemmPlan::impl_name() const { return ""; }
bool onednn_built() { return false; }
std::string onednn_version() { return ""; }
std::string onednn_cpu_isa() { return ""; }
OnednnGemmPlan onednn_gemm_plan(OnednnType type, GemmElem, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int) {
  OnednnGemmPlan p;
  p.type_ = type;
  p.why_not_ = "this build has no oneDNN (configure with libdnnl-dev installed)";
  return p;
}
void onednn_gemm_pack(const OnednnGemmPlan&, const WeightSource&, void*, int64_t, int64_t) {}
void onednn_gemm_run(const OnednnGemmPlan&, int64_t, const void*, int64_t, void*, int64_t, void*) {}

#else

namespace {

using dnnl::memory;
using Dt = memory::data_type;

const dnnl::engine& cpu_engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// The offset (in elements) dimension `d` at index x contributes in a blocked layout: the outer
// block times its stride plus its place in the inner blocks (innermost block last).
int64_t blocked_offset(const dnnl_memory_desc_t& md, int d, int64_t x) {
  const auto& b = md.format_desc.blocking;
  int64_t total = 1;
  for (int i = 0; i < b.inner_nblks; ++i)
    if (b.inner_idxs[i] == d) total *= b.inner_blks[i];
  int64_t off = (x / total) * b.strides[d];
  int64_t rem = x % total, inner_stride = 1;
  for (int i = b.inner_nblks - 1; i >= 0; --i) {
    if (b.inner_idxs[i] == d) {
      off += (rem % b.inner_blks[i]) * inner_stride;
      rem /= b.inner_blks[i];
    }
    inner_stride *= b.inner_blks[i];
  }
  return off;
}

}  // namespace

struct OnednnGemmPlan::Impl {
  OnednnType type = OnednnType::kBf16;
  GemmElem elem = GemmElem::kBf16;
  int64_t m_max = 0, m_last = 0, K = 0, N = 0, lda = 0, ldc = 0;
  int threads = 1;
  dnnl::matmul mm_max, mm_last;
  memory::desc src_max, src_last, w_md, dst_max, dst_last, scratch_max, scratch_last;
  // The packed layout: W[k][n] at koff[k] + noff_block(n) with noff_block(n) = (n / nb) * nb_stride
  // + (n % nb) * z (checked at plan time); padded dims kp x np (oneDNN's, zero-filled).
  std::vector<int64_t> koff;
  int64_t nb = 0, nb_stride = 0, z = 1, kp = 0, np = 0;
  // rows k0..k0+z-1 (k0 a multiple of z) at koff[k0] + 0..z-1: a column's z rows side by side
  bool rows_side_by_side = false;
  // Workspace parts (bytes from the route's start).
  int64_t off_colsum = 0, off_a = 0, off_scratch = 0;
  std::string impl;
};

std::string OnednnGemmPlan::impl_name() const { return impl_ != nullptr ? impl_->impl : std::string(); }

bool onednn_built() { return true; }

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

std::string onednn_cpu_isa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

OnednnGemmPlan onednn_gemm_plan(OnednnType type, GemmElem elem, int64_t m_max, int64_t m_last, int64_t K, int64_t N,
                                int64_t lda, int64_t ldc, int threads) {
  OnednnGemmPlan p;
  p.type_ = type;
  const bool fits = type == OnednnType::kU8S8 ? elem == GemmElem::kS8
                    : type == OnednnType::kBf16 ? elem == GemmElem::kBf16
                                                : elem != GemmElem::kS8;
  if (!fits) {
    p.why_not_ = std::string("oneDNN type ") + onednn_type_name(type) + " does not run this element type";
    return p;
  }
  if (m_max <= 0 || m_last <= 0 || K <= 0 || N <= 0) {
    p.why_not_ = "an empty product";
    return p;
  }
  auto impl = std::make_shared<OnednnGemmPlan::Impl>();
  OnednnGemmPlan::Impl& I = *impl;
  I.type = type, I.elem = elem, I.m_max = m_max, I.m_last = m_last, I.K = K, I.N = N, I.threads = std::max(threads, 1);
  const Dt a_dt = type == OnednnType::kBf16 ? Dt::bf16 : type == OnednnType::kF32 ? Dt::f32 : Dt::u8;
  const Dt w_dt = type == OnednnType::kBf16 ? Dt::bf16 : type == OnednnType::kF32 ? Dt::f32 : Dt::s8;
  const Dt c_dt = type == OnednnType::kU8S8 ? Dt::s32 : Dt::f32;
  I.lda = type == OnednnType::kBf16 ? lda : K;  // the others read the converted block
  I.ldc = ldc;
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const memory::desc w_any({K, N}, w_dt, memory::format_tag::any);
    auto make = [&](int64_t m, const memory::desc& w, memory::desc* src, memory::desc* dst, memory::desc* sp,
                    dnnl::matmul* mm, int64_t* scratch) {
      *src = memory::desc({m, K}, a_dt, memory::dims{I.lda, 1});
      *dst = memory::desc({m, N}, c_dt, memory::dims{ldc, 1});
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(*src, w, *dst), attr, cpu_engine());
      *mm = dnnl::matmul(pd);
      *sp = pd.scratchpad_desc();
      *scratch = std::max<int64_t>(*scratch, static_cast<int64_t>(sp->get_size()));
      return pd;
    };
    int64_t scratch = 0;
    const auto pd = make(m_max, w_any, &I.src_max, &I.dst_max, &I.scratch_max, &I.mm_max, &scratch);
    I.impl = pd.impl_info_str();
    I.w_md = pd.weights_desc();
    // the last chunk reads the same packed weights: its primitive is asked for the full chunk's layout
    const auto pd_last = make(m_last, I.w_md, &I.src_last, &I.dst_last, &I.scratch_last, &I.mm_last, &scratch);
    const std::string last_impl = pd_last.impl_info_str();
    if (I.impl.rfind("ref", 0) == 0 || last_impl.rfind("ref", 0) == 0) {
      p.why_not_ = "oneDNN has only its reference loop for it (" + I.impl + ", last chunk " + last_impl + ")";
      return p;
    }
    const dnnl_memory_desc_t& md = I.w_md.data;
    if (md.format_kind != dnnl_blocked || md.ndims != 2 || md.extra.flags != 0 || md.offset0 != 0) {
      p.why_not_ = "oneDNN chose a weight layout the converter does not write (not plain blocked)";
      return p;
    }
    I.kp = md.padded_dims[0];
    I.np = md.padded_dims[1];
    I.koff.resize(static_cast<size_t>(I.kp));
    for (int64_t k = 0; k < I.kp; ++k) I.koff[static_cast<size_t>(k)] = blocked_offset(md, 0, k);
    // the column part must be (n / nb) * nb_stride + (n % nb) * z
    I.nb = 1;
    for (int i = 0; i < md.format_desc.blocking.inner_nblks; ++i)
      if (md.format_desc.blocking.inner_idxs[i] == 1) I.nb *= md.format_desc.blocking.inner_blks[i];
    I.nb_stride = md.format_desc.blocking.strides[1];
    I.z = I.nb > 1 ? blocked_offset(md, 1, 1) : 1;
    if (I.nb == 1) {  // columns not blocked (a plain layout): packed as groups of 64 columns z apart
      I.z = I.nb_stride;
      I.nb = 64;
      I.nb_stride *= 64;
    }
    if (I.nb > 256) {
      p.why_not_ = "oneDNN chose a weight layout the converter does not write (column block " + std::to_string(I.nb) +
                   ", interleave " + std::to_string(I.z) + ")";
      return p;
    }
    for (int64_t n = 0; n < std::min<int64_t>(I.np, 2 * I.nb); ++n)
      if (blocked_offset(md, 1, n) != (n / I.nb) * I.nb_stride + (n % I.nb) * I.z) {
        p.why_not_ = "oneDNN chose a weight layout the converter does not write (columns not in one block run)";
        return p;
      }
    I.rows_side_by_side = I.kp % I.z == 0;
    for (int64_t k = 0; k < I.kp && I.rows_side_by_side; ++k)
      I.rows_side_by_side = I.koff[static_cast<size_t>(k)] == I.koff[static_cast<size_t>(k - k % I.z)] + k % I.z;
    const int64_t es = w_dt == Dt::f32 ? 4 : w_dt == Dt::bf16 ? 2 : 1;
    const int64_t packed = static_cast<int64_t>(I.w_md.get_size());
    if (packed < I.kp * I.np * es) {
      p.why_not_ = "oneDNN's weight layout is smaller than its padded dims";
      return p;
    }
    // the route's workspace part: packed weights, column sums (u8s8), converted A (f32, u8s8), scratchpad
    int64_t off_w = 0, a_bytes = 0;
    WorkspaceLayout l("gemm_onednn", "the oneDNN route's workspace overflows int64");
    if (!product_ok({m_max, K, type == OnednnType::kF32 ? 4 : 1}, &a_bytes) || l.add(packed, &off_w) != kSuccess ||
        l.add(type == OnednnType::kU8S8 ? I.np * 4 : 0, &I.off_colsum) != kSuccess ||
        l.add(type == OnednnType::kBf16 ? 0 : a_bytes, &I.off_a) != kSuccess || l.add(scratch, &I.off_scratch) != kSuccess) {
      p.why_not_ = "the oneDNN route's workspace overflows int64";
      return p;
    }
    p.bytes_ = l.total();
    p.packed_bytes_ = packed;
  } catch (const dnnl::error& e) {
    p.why_not_ = std::string("oneDNN has no matmul for it: ") + e.what();
    return p;
  }
  p.impl_ = std::move(impl);
  return p;
}

namespace {

// Element (k, n) of W^T stored FRACTAL_NZ with c0 elements per tile row (gemm.h GemmTArgs).
inline int64_t wt_nz_offset(int64_t k, int64_t n, int64_t c0, int64_t r1) {
  return ((k / c0) * r1 + n / 16) * 16 * c0 + (n % 16) * c0 + k % c0;
}

// One source element as the packed type (bf16 bits, fp32, int8).
inline float f32_of(uint16_t v, GemmElem e) {
  if (e == GemmElem::kF16) return fp16_to_float(v);
  const uint32_t u = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// out[i * Z + r] = rows[r][i] for i < n (Z rows of one panel side by side, as the packed layout
// interleaves them), as D. The forms the layouts use (Z 1 copy or bf16 -> fp32, Z 2 bf16, Z 4 int8)
// move 16 bytes at a time; any other runs element by element.
template <class S, class D, int Z>
void interleave_rows(const S* const* rows, int64_t n, D* out, GemmElem elem) {
  int64_t i = 0;
  if constexpr (Z == 1 && sizeof(S) == sizeof(D)) {
    std::memcpy(out, rows[0], static_cast<size_t>(n) * sizeof(S));
    return;
  } else if constexpr (Z == 1 && sizeof(D) == 4) {
    if (elem == GemmElem::kBf16) {
      auto* o = reinterpret_cast<uint32_t*>(out);
      for (; i < n; ++i) o[i] = static_cast<uint32_t>(rows[0][i]) << 16;  // exact widening
      return;
    }
  }
#if defined(__SSE2__)
  if constexpr (Z == 2 && sizeof(S) == 2 && sizeof(D) == 2) {
    for (; i + 8 <= n; i += 8) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[0] + i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[1] + i));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), _mm_unpacklo_epi16(a, b));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i + 8), _mm_unpackhi_epi16(a, b));
    }
  } else if constexpr (Z == 4 && sizeof(S) == 1 && sizeof(D) == 1) {
    for (; i + 16 <= n; i += 16) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[0] + i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[1] + i));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[2] + i));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[3] + i));
      const __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
      const __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
      auto* o = reinterpret_cast<__m128i*>(out + 4 * i);
      _mm_storeu_si128(o, _mm_unpacklo_epi16(ab_lo, cd_lo));
      _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab_lo, cd_lo));
      _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab_hi, cd_hi));
      _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab_hi, cd_hi));
    }
  }
#endif
  for (; i < n; ++i)
    for (int r = 0; r < Z; ++r) {
      if constexpr (sizeof(D) == 4) {
        out[i * Z + r] = f32_of(static_cast<uint16_t>(rows[r][i]), elem);
      } else {
        out[i * Z + r] = static_cast<D>(rows[r][i]);
      }
    }
}

// Packs the weights of w into the blocks [n0, n1) (whole blocks of nb columns) of dst (elements
// of D): w's column c is the packed column col0 + c, for c < cols. The rows from K to the padded
// kp are zero, and the columns from N to np when w is the last source (col0 + cols == N). The
// int8 column sums go to colsum[col0 + c] when given. Source S: uint16_t or int8_t. Z: the step
// between columns of a block (0: I.z, at run time).
template <class S, class D, int Z>
void pack_columns(const OnednnGemmPlan::Impl& I, const WeightSource& w, int64_t col0, int64_t cols, D* dst,
                  int32_t* colsum, int64_t n0, int64_t n1) {
  const int64_t zs = Z != 0 ? Z : I.z;
  const S* src = static_cast<const S*>(w.data);
  const bool last = col0 + cols == I.N;
  constexpr int64_t kMaxNb = 256;
  int32_t sums[kMaxNb];
  for (int64_t b0 = n0; b0 < n1; b0 += I.nb) {
    const int64_t b1 = std::min(b0 + I.nb, I.np);
    // this source's columns of the block [lo, hi) and the padding columns [hi, pad_end) it zeroes
    const int64_t lo = std::max(b0, col0) - b0, hi = std::max(lo, std::min(b1, col0 + cols) - b0);
    const int64_t pad_end = last ? b1 - b0 : hi;
    D* blk = dst + (b0 / I.nb) * I.nb_stride;
    if (colsum != nullptr) std::fill(sums, sums + I.nb, 0);
    auto put = [&](int64_t k, int64_t j, S v) {
      D* out = blk + I.koff[static_cast<size_t>(k)] + j * zs;
      if constexpr (sizeof(D) == 4) {
        *out = f32_of(static_cast<uint16_t>(v), I.elem);
      } else {
        *out = static_cast<D>(v);
      }
      if constexpr (sizeof(S) == 1) {
        if (colsum != nullptr) sums[j] += v;
      }
    };
    if (!w.transposed && Z != 0 && I.rows_side_by_side) {
      // Z rows at a time: each panel's run of columns interleaved as a whole (the rows past K,
      // and the padding columns, element by element below)
      for (int64_t k0 = 0; k0 < I.kp; k0 += Z) {
        int64_t j = lo;
        if (k0 + Z <= I.K) {
          while (j < hi) {
            const int64_t n = b0 + j - col0, p = n / w.panel_width, c = n % w.panel_width;
            const int64_t run = std::min(hi - j, w.panel_width - c);
            const S* rows[Z > 0 ? Z : 1];
            for (int r = 0; r < Z; ++r) rows[r] = src + p * w.panel_stride + (k0 + r) * w.ldb + c;
            interleave_rows<S, D, (Z > 0 ? Z : 1)>(rows, run, blk + I.koff[static_cast<size_t>(k0)] + j * Z, I.elem);
            if constexpr (sizeof(S) == 1) {
              if (colsum != nullptr)
                for (int r = 0; r < Z; ++r)
                  for (int64_t q = 0; q < run; ++q) sums[j + q] += rows[r][q];
            }
            j += run;
          }
          for (; j < pad_end; ++j)
            for (int r = 0; r < Z; ++r) put(k0 + r, j, S{0});
        } else {
          for (int64_t k = k0; k < k0 + Z; ++k) {
            int64_t jj = lo;
            if (k < I.K)
              for (; jj < hi; ++jj) {
                const int64_t n = b0 + jj - col0;
                put(k, jj, src[(n / w.panel_width) * w.panel_stride + k * w.ldb + n % w.panel_width]);
              }
            for (; jj < pad_end; ++jj) put(k, jj, S{0});
          }
        }
      }
    } else if (!w.transposed) {
      for (int64_t k = 0; k < I.kp; ++k) {
        int64_t j = lo;
        if (k < I.K) {
          while (j < hi) {  // runs of one panel's row
            const int64_t n = b0 + j - col0, p = n / w.panel_width, c = n % w.panel_width;
            const int64_t run = std::min(hi - j, w.panel_width - c);
            const S* sp = src + p * w.panel_stride + k * w.ldb + c;
            for (int64_t r = 0; r < run; ++r) put(k, j + r, sp[r]);
            j += run;
          }
        }
        for (; j < pad_end; ++j) put(k, j, S{0});
      }
    } else if (Z != 0 && I.rows_side_by_side && (32 / static_cast<int64_t>(sizeof(S))) % (Z > 0 ? Z : 1) == 0 &&
               I.kp % (32 / static_cast<int64_t>(sizeof(S))) == 0) {
      // W^T's tiles in address order: a tile row holds a column's c0 consecutive k, which go to
      // c0 / Z packed rows (Z side by side each); the packed rows of one tile column are written
      // as c0 / Z streams.
      constexpr int kZ = Z > 0 ? Z : 1;
      const int64_t c0 = 32 / static_cast<int64_t>(sizeof(S)), groups = c0 / kZ;
      for (int64_t kc = 0; kc < I.kp; kc += c0) {
        const bool full_rows = kc + c0 <= I.K;
        for (int64_t j = lo; j < pad_end; ++j) {
          const int64_t n = b0 + j - col0;
          if (j >= hi || !full_rows) {
            for (int64_t k = kc; k < kc + c0; ++k)
              put(k, j, j < hi && k < I.K ? src[wt_nz_offset(k, n, c0, w.r1)] : S{0});
            continue;
          }
          const S* sp = src + wt_nz_offset(kc, n, c0, w.r1);
          for (int64_t g = 0; g < groups; ++g) {
            D* out = blk + I.koff[static_cast<size_t>(kc + g * kZ)] + j * kZ;
            if constexpr (sizeof(S) == sizeof(D)) {
              std::memcpy(out, sp + g * kZ, sizeof(S) * kZ);
            } else {
              for (int r = 0; r < kZ; ++r) out[r] = f32_of(static_cast<uint16_t>(sp[g * kZ + r]), I.elem);
            }
          }
          if constexpr (sizeof(S) == 1) {
            if (colsum != nullptr)
              for (int64_t k = 0; k < c0; ++k) sums[j] += sp[k];
          }
        }
      }
    } else {
      const int64_t c0 = 32 / static_cast<int64_t>(sizeof(S));
      for (int64_t j = lo; j < pad_end; ++j) {
        if (j >= hi) {
          for (int64_t k = 0; k < I.kp; ++k) put(k, j, S{0});
          continue;
        }
        const int64_t n = b0 + j - col0;
        for (int64_t k0 = 0; k0 < I.kp; k0 += c0) {
          const S* sp = src + wt_nz_offset(k0, n, c0, w.r1);
          const int64_t kend = std::min(k0 + c0, I.kp);
          for (int64_t k = k0; k < kend; ++k) put(k, j, k < I.K ? sp[k - k0] : S{0});
        }
      }
    }
    if (colsum != nullptr)
      for (int64_t j = lo; j < hi; ++j) colsum[b0 + j] = sums[j];
  }
}

template <class S, class D>
void pack_dispatch(const OnednnGemmPlan::Impl& I, const WeightSource& w, int64_t col0, int64_t cols, D* dst,
                   int32_t* colsum, int64_t n0, int64_t n1) {
  switch (I.z) {
    case 1: return pack_columns<S, D, 1>(I, w, col0, cols, dst, colsum, n0, n1);
    case 2: return pack_columns<S, D, 2>(I, w, col0, cols, dst, colsum, n0, n1);
    case 4: return pack_columns<S, D, 4>(I, w, col0, cols, dst, colsum, n0, n1);
    default: return pack_columns<S, D, 0>(I, w, col0, cols, dst, colsum, n0, n1);
  }
}

}  // namespace

void onednn_gemm_pack(const OnednnGemmPlan& plan, const WeightSource& w, void* ws, int64_t col0, int64_t cols) {
  const OnednnGemmPlan::Impl& I = *plan.impl_;
  if (cols < 0) cols = I.N - col0;
  char* base = static_cast<char*>(ws);
  int32_t* colsum = I.type == OnednnType::kU8S8 ? reinterpret_cast<int32_t*>(base + I.off_colsum) : nullptr;
  // the blocks this source's columns (and, for the last source, the padding) fall in
  const int64_t first = col0 / I.nb, end = col0 + cols == I.N ? (I.np + I.nb - 1) / I.nb : (col0 + cols + I.nb - 1) / I.nb;
  parallel_for(end - first, 1, I.threads, [&](int64_t b, int64_t e) {
    const int64_t n0 = (first + b) * I.nb, n1 = std::min((first + e) * I.nb, I.np);
    switch (I.type) {
      case OnednnType::kBf16:
        pack_dispatch<uint16_t>(I, w, col0, cols, reinterpret_cast<uint16_t*>(base), nullptr, n0, n1);
        break;
      case OnednnType::kF32:
        pack_dispatch<uint16_t>(I, w, col0, cols, reinterpret_cast<float*>(base), nullptr, n0, n1);
        break;
      case OnednnType::kU8S8:
        pack_dispatch<int8_t>(I, w, col0, cols, reinterpret_cast<int8_t*>(base), colsum, n0, n1);
        break;
    }
  });
}

void onednn_gemm_run(const OnednnGemmPlan& plan, int64_t m, const void* A, int64_t lda, void* C, int64_t /*ldc*/,
                     void* ws) {
  const OnednnGemmPlan::Impl& I = *plan.impl_;
  const bool last = m != I.m_max;
  char* base = static_cast<char*>(ws);
  const void* src = A;
  if (I.type != OnednnType::kBf16) {  // the converted A block, rows K apart
    char* a = base + I.off_a;
    parallel_for(m, 16, I.threads, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        if (I.type == OnednnType::kU8S8) {
          const auto* in = static_cast<const uint8_t*>(A) + r * lda;
          auto* out = reinterpret_cast<uint8_t*>(a) + r * I.K;
          for (int64_t k = 0; k < I.K; ++k) out[k] = static_cast<uint8_t>(in[k] ^ 0x80u);
        } else {
          const auto* in = static_cast<const uint16_t*>(A) + r * lda;
          auto* out = reinterpret_cast<float*>(a) + r * I.K;
          if (I.elem == GemmElem::kF16) {
            for (int64_t k = 0; k < I.K; ++k) out[k] = fp16_to_float(in[k]);
          } else {
            auto* o = reinterpret_cast<uint32_t*>(out);
            for (int64_t k = 0; k < I.K; ++k) o[k] = static_cast<uint32_t>(in[k]) << 16;
          }
        }
      }
    });
    src = a;
  }
  const dnnl::engine& eng = cpu_engine();
  dnnl::stream st(eng);
  memory src_m(last ? I.src_last : I.src_max, eng, const_cast<void*>(src));
  memory w_m(I.w_md, eng, base);
  memory dst_m(last ? I.dst_last : I.dst_max, eng, C);
  memory scratch_m(last ? I.scratch_last : I.scratch_max, eng, base + I.off_scratch);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(I.threads);  // this thread's next parallel regions only
  (last ? I.mm_last : I.mm_max)
      .execute(st, {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, w_m}, {DNNL_ARG_DST, dst_m}, {DNNL_ARG_SCRATCHPAD, scratch_m}});
  st.wait();
  omp_set_num_threads(saved);
  if (I.type == OnednnType::kU8S8) {  // C = sum (a + 128) w - 128 sum w, in wrapping int32
    const auto* colsum = reinterpret_cast<const int32_t*>(base + I.off_colsum);
    parallel_for(m, 16, I.threads, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        auto* c = static_cast<uint32_t*>(C) + r * I.ldc;
        for (int64_t n = 0; n < I.N; ++n) c[n] -= static_cast<uint32_t>(colsum[n]) * 128u;
      }
    });
  }
}

#endif  // MLAOPS_HAVE_DNNL

}  // namespace mlaops::kernels

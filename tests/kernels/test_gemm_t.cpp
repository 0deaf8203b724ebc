// The fp16 panel GEMM (GemmKernels::f16) and the transposed-NZ GEMMs (bf16_t, s8_t, f16_t;
// kernels/cpu/gemm.h) on every ISA the machine supports, against a float64 / exact int64 loop:
// M / K / N tails (N padded to whole 16-row tiles, K to whole k panels), the MlaPreprocess
// shapes (N = 2112, K = 7168 / 1536), n_begin / n_end sub-ranges, K blocks, padded lda,
// canaries around C, and exact-size A / W allocations (run under ASan to check the extents).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/fractal_nz.h"
#include "kernels/cpu/gemm.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"

namespace mlaops::kernels {
namespace {

struct KernelSet {
  const GemmKernels* k;
  std::string name;
};

std::vector<KernelSet> kernel_sets() {
  std::vector<KernelSet> v{{&gemm_kernels_scalar(), "scalar"}};
  const Isa isa = detected_isa();
  if (static_cast<int>(isa) >= static_cast<int>(Isa::kAvx2)) v.push_back({&gemm_kernels_avx2(), "avx2"});
  if (static_cast<int>(isa) >= static_cast<int>(Isa::kAvx512)) v.push_back({&gemm_kernels_avx512(), "avx512"});
  return v;
}

// [n_begin, n_end) ranges at W boundaries; `small`: only the full range and one inner range.
std::vector<std::pair<int64_t, int64_t>> ranges(int64_t N, int64_t W, bool small) {
  std::vector<std::pair<int64_t, int64_t>> r{{0, N}};
  if (N > W && !small) {
    r.push_back({W, N});
    r.push_back({0, W});
  }
  if (N > 3 * W) r.push_back({W, 3 * W});
  return r;
}

constexpr uint32_t kCanary = 0x7fc0dead;  // a NaN bit pattern, compared bitwise

// C with ldc = N + 3 and one extra row, filled with the canary.
struct CBuffer {
  int64_t M, N, ldc;
  std::vector<uint32_t> bits;
  CBuffer(int64_t m, int64_t n) : M(m), N(n), ldc(n + 3), bits(static_cast<size_t>((m + 1) * (n + 3)), kCanary) {}
  void* data() { return bits.data(); }
  bool canaries_intact(int64_t n_begin, int64_t n_end, std::string* where) const {
    for (int64_t m = 0; m < M + 1; ++m)
      for (int64_t n = 0; n < ldc; ++n) {
        if (m < M && n >= n_begin && n < n_end) continue;
        if (bits[static_cast<size_t>(m * ldc + n)] != kCanary) {
          *where = "C[" + std::to_string(m) + "][" + std::to_string(n) + "] overwritten";
          return false;
        }
      }
    return true;
  }
  float f(int64_t m, int64_t n) const {
    float c;
    std::memcpy(&c, &bits[static_cast<size_t>(m * ldc + n)], 4);
    return c;
  }
  int32_t i(int64_t m, int64_t n) const { return static_cast<int32_t>(bits[static_cast<size_t>(m * ldc + n)]); }
};

enum class Kind { kBf16, kF16, kS8 };
const char* kind_name(Kind k) { return k == Kind::kBf16 ? "bf16" : k == Kind::kF16 ? "f16" : "s8"; }

// A random bf16 / fp16 (bits) or int8 (low byte) value.
uint16_t random_value(Kind kind, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-6, 3);
  std::uniform_int_distribution<int> b(-128, 127);
  if (kind == Kind::kS8) return static_cast<uint16_t>(static_cast<uint8_t>(static_cast<int8_t>(b(rng))));
  if (rng() % 29 == 0) return 0;
  const float v = std::ldexp(u(rng), e(rng));
  return kind == Kind::kBf16 ? float_to_bf16(v) : float_to_fp16(v);
}

double value_of(Kind kind, uint16_t bits) {
  switch (kind) {
    case Kind::kBf16: return bf16_to_float(bits);
    case Kind::kF16: return fp16_to_float(bits);
    case Kind::kS8: return static_cast<int8_t>(static_cast<uint8_t>(bits));
  }
  return 0;
}

std::string describe(const std::string& isa, const std::string& kind, int64_t M, int64_t K, int64_t N, int64_t nb,
                     int64_t ne, int64_t lda) {
  return isa + " " + kind + " M=" + std::to_string(M) + " K=" + std::to_string(K) + " N=" + std::to_string(N) +
         " range=[" + std::to_string(nb) + "," + std::to_string(ne) + ") lda=" + std::to_string(lda);
}

// Element storage of a logical matrix of `kind` (uint16_t, or int8 in the low byte).
struct Mat {
  Kind kind;
  std::vector<uint16_t> h;
  std::vector<int8_t> b;
  Mat(Kind k, size_t n) : kind(k) {
    if (k == Kind::kS8) b.resize(n);
    else h.resize(n);
  }
  void set(size_t i, uint16_t v) {
    if (kind == Kind::kS8) b[i] = static_cast<int8_t>(static_cast<uint8_t>(v));
    else h[i] = v;
  }
  uint16_t get(size_t i) const { return kind == Kind::kS8 ? static_cast<uint16_t>(static_cast<uint8_t>(b[i])) : h[i]; }
  const void* data() const { return kind == Kind::kS8 ? static_cast<const void*>(b.data()) : h.data(); }
  void* data() { return kind == Kind::kS8 ? static_cast<void*>(b.data()) : h.data(); }
  int64_t elem_size() const { return kind == Kind::kS8 ? 1 : 2; }
};

// Checks C[m][n] for n in [nb, ne) against ref (exact for int8, 1e-5 * sum |a_k w_k| otherwise).
::testing::AssertionResult check_c(const CBuffer& C, Kind kind, const std::vector<double>& ref,
                                   const std::vector<double>& mag, int64_t M, int64_t N, int64_t nb, int64_t ne) {
  std::string where;
  if (!C.canaries_intact(nb, ne, &where)) return ::testing::AssertionFailure() << where;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = nb; n < ne; ++n) {
      const double want = ref[static_cast<size_t>(m * N + n)];
      if (kind == Kind::kS8) {
        if (double(C.i(m, n)) != want)
          return ::testing::AssertionFailure() << "at m=" << m << " n=" << n << ": got " << C.i(m, n) << " want " << want;
      } else {
        const double tol = 1e-5 * mag[static_cast<size_t>(m * N + n)] + 1e-30;
        const double got = C.f(m, n);
        if (!(std::fabs(got - want) <= tol))
          return ::testing::AssertionFailure() << "at m=" << m << " n=" << n << ": got " << got << " want " << want;
      }
    }
  return ::testing::AssertionSuccess();
}

// ---------------------------------------------------------------- transposed NZ

// C = A x W^T, W [N, K] stored NZ (c0 = 32 bytes / element).
void check_t(Kind kind, int64_t M, int64_t K, int64_t N, int64_t lda_pad, const std::vector<KernelSet>& sets,
             bool small_ranges) {
  std::mt19937 rng(static_cast<uint32_t>(M * 1000003 + K * 1009 + N * 7 + static_cast<int>(kind) * 13 + lda_pad));
  const int64_t lda = K + lda_pad;
  Mat A(kind, static_cast<size_t>(M * lda));  // exactly M * lda elements
  Mat Wnd(kind, static_cast<size_t>(N * K));
  for (size_t i = 0; i < A.h.size() + A.b.size(); ++i) A.set(i, random_value(kind, rng));
  for (size_t i = 0; i < Wnd.h.size() + Wnd.b.size(); ++i) Wnd.set(i, random_value(kind, rng));
  if (kind == Kind::kS8) {  // extremes: row 0 of A and of W all -128, the last row of A 127
    for (int64_t k = 0; k < K; ++k) {
      A.b[static_cast<size_t>(k)] = -128;
      Wnd.b[static_cast<size_t>(k)] = -128;
      if (M > 1) A.b[static_cast<size_t>((M - 1) * lda + k)] = 127;
    }
  }

  std::vector<double> ref(static_cast<size_t>(M * N)), mag(static_cast<size_t>(M * N));
  std::vector<double> av(static_cast<size_t>(K)), wv(static_cast<size_t>(N * K));
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = value_of(kind, Wnd.get(i));
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) av[static_cast<size_t>(k)] = value_of(kind, A.get(static_cast<size_t>(m * lda + k)));
    for (int64_t n = 0; n < N; ++n) {
      double s = 0, a = 0;
      const double* w = wv.data() + n * K;
      for (int64_t k = 0; k < K; ++k) {
        const double p = av[static_cast<size_t>(k)] * w[k];
        s += p;  // exact for int8 (|s| < 2^53)
        a += std::fabs(p);
      }
      ref[static_cast<size_t>(m * N + n)] = s;
      mag[static_cast<size_t>(m * N + n)] = a;
    }
  }

  int64_t s[4];
  nz_storage_shape(N, K, A.elem_size(), s);
  Mat Wnz(kind, static_cast<size_t>(s[0] * s[1] * s[2] * s[3]));
  nd_to_nz(Wnd.data(), Wnz.data(), N, K, A.elem_size());
  GemmTArgs g;
  g.M = M;
  g.N = N;
  g.K = K;
  g.A = A.data();
  g.lda = lda;
  g.W = Wnz.data();
  g.r1 = s[1];

  for (const auto& ks : sets) {
    const GemmTFn fn = kind == Kind::kBf16 ? ks.k->bf16_t : kind == Kind::kF16 ? ks.k->f16_t : ks.k->s8_t;
    for (const auto& [nb, ne] : ranges(N, 16, small_ranges)) {
      CBuffer C(M, N);
      g.C = C.data();
      g.ldc = C.ldc;
      g.n_begin = nb;
      g.n_end = ne;
      fn(g);
      ASSERT_TRUE(check_c(C, kind, ref, mag, M, N, nb, ne))
          << describe(ks.name, std::string(kind_name(kind)) + "_t", M, K, N, nb, ne, lda);
    }
  }
}

const std::vector<int64_t> kMs = {1, 2, 3, 7, 8, 9, 17, 64};
const std::vector<int64_t> kKs = {1, 15, 16, 17, 31, 32, 33, 64, 130, 1536, 7168};
const std::vector<int64_t> kNs = {16, 32, 48, 80, 2112, 1, 5, 33};

void all_shapes_t(Kind kind) {
  const auto sets = kernel_sets();
  for (int64_t M : kMs)
    for (int64_t K : kKs)
      for (int64_t N : kNs) {
        const int64_t size = M * K * N;
        // The largest products only for a few M (the scalar kernel and the float64 loop are slow).
        if (size > 40'000'000 && M != 1 && M != 3) continue;
        if (size > 120'000'000 && M != 1) continue;
        check_t(kind, M, K, N, 0, sets, /*small_ranges=*/size > 2'000'000);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

TEST(GemmT, S8AllShapes) { all_shapes_t(Kind::kS8); }
TEST(GemmT, Bf16AllShapes) { all_shapes_t(Kind::kBf16); }
TEST(GemmT, F16AllShapes) { all_shapes_t(Kind::kF16); }

TEST(GemmT, PaddedLdaAndKBlocks) {
  // K around the K blocks (1024 int8, 512 fp16 / bf16, several M tiles), odd lda, M tails of the
  // 3-row tiles.
  const auto sets = kernel_sets();
  for (Kind kind : {Kind::kS8, Kind::kBf16, Kind::kF16})
    for (int64_t M : {1, 4, 5, 6, 13})
      for (int64_t K : {511, 513, 1023, 1025, 2049}) {
        check_t(kind, M, K, 37, 3, sets, false);
        if (HasFatalFailure()) return;
      }
}

TEST(GemmT, ZeroKWritesZeros) {
  for (const auto& ks : kernel_sets())
    for (Kind kind : {Kind::kS8, Kind::kBf16, Kind::kF16}) {
      std::vector<uint16_t> a(1), w(3 * 512);
      std::vector<uint32_t> c(3 * 40, 0x12345678u);
      GemmTArgs g;
      g.M = 3;
      g.N = 40;
      g.K = 0;
      g.A = a.data();
      g.W = w.data();
      g.r1 = 3;
      g.C = c.data();
      g.ldc = 40;
      g.n_begin = 16;
      g.n_end = 40;
      (kind == Kind::kBf16 ? ks.k->bf16_t : kind == Kind::kF16 ? ks.k->f16_t : ks.k->s8_t)(g);
      for (int64_t m = 0; m < 3; ++m)
        for (int64_t n = 0; n < 40; ++n)
          EXPECT_EQ(c[static_cast<size_t>(m * 40 + n)], n >= 16 ? 0u : 0x12345678u) << ks.name << " " << kind_name(kind);
    }
}

// ---------------------------------------------------------------- fp16 panels (GemmArgs)

void check_f16(int64_t M, int64_t K, int64_t N, bool nz, int64_t lda_pad, const std::vector<KernelSet>& sets,
               bool small_ranges) {
  std::mt19937 rng(static_cast<uint32_t>(M * 1000003 + K * 1009 + N * 7 + (nz ? 1 : 0) + 555));
  const int64_t lda = K + lda_pad;
  std::vector<uint16_t> A(static_cast<size_t>(M * lda));  // exactly M * lda elements
  std::vector<uint16_t> Bnd(static_cast<size_t>(K * N));  // exactly K * ldb (ldb = N)
  for (auto& v : A) v = random_value(Kind::kF16, rng);
  for (auto& v : Bnd) v = random_value(Kind::kF16, rng);

  std::vector<double> ref(static_cast<size_t>(M * N)), mag(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0, a = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = double(fp16_to_float(A[static_cast<size_t>(m * lda + k)])) *
                         double(fp16_to_float(Bnd[static_cast<size_t>(k * N + n)]));
        s += p;
        a += std::fabs(p);
      }
      ref[static_cast<size_t>(m * N + n)] = s;
      mag[static_cast<size_t>(m * N + n)] = a;
    }

  std::vector<uint16_t> Bnz;
  GemmArgs g;
  g.M = M;
  g.N = N;
  g.K = K;
  g.A = A.data();
  g.lda = lda;
  g.panel_width = 16;
  if (nz) {
    int64_t s[4];
    nz_storage_shape(K, N, 2, s);
    Bnz.resize(static_cast<size_t>(s[0] * s[1] * s[2] * s[3]));
    nd_to_nz(Bnd.data(), Bnz.data(), K, N, 2);
    g.B = Bnz.data();
    g.ldb = 16;
    g.panel_stride = s[1] * 16 * 16;
  } else {
    g.B = Bnd.data();
    g.ldb = N;
    g.panel_stride = 16;
  }
  for (const auto& ks : sets)
    for (const auto& [nb, ne] : ranges(N, 16, small_ranges)) {
      CBuffer C(M, N);
      g.C = C.data();
      g.ldc = C.ldc;
      g.n_begin = nb;
      g.n_end = ne;
      ks.k->f16(g);
      ASSERT_TRUE(check_c(C, Kind::kF16, ref, mag, M, N, nb, ne))
          << describe(ks.name, nz ? "f16 NZ" : "f16 ND", M, K, N, nb, ne, lda);
    }
}

TEST(GemmF16, AllShapes) {
  const auto sets = kernel_sets();
  for (bool nz : {true, false})
    for (int64_t M : kMs)
      for (int64_t K : {1, 2, 3, 15, 16, 17, 64, 130, 1536})
        for (int64_t N : {16, 32, 48, 80, 512, 1, 5, 33}) {
          check_f16(M, K, N, nz, 0, sets, /*small_ranges=*/M * K * N > 2'000'000);
          if (HasFatalFailure()) return;
        }
}

TEST(GemmF16, PaddedLdaAndKBlocks) {
  // K around the K blocks (AVX-512 384, AVX2 256), odd lda, M tails of the 8 / 6 row tiles.
  const auto sets = kernel_sets();
  for (int64_t M : {1, 5, 8, 13, 25})
    for (int64_t K : {7, 257, 385, 769, 1001})
      for (bool nz : {true, false}) {
        check_f16(M, K, 80, nz, 3, sets, false);
        if (HasFatalFailure()) return;
      }
}

}  // namespace
}  // namespace mlaops::kernels

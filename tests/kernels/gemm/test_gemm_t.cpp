// The transposed-NZ GEMMs (bf16_t, s8_t, f16_t; kernels/cpu/gemm/gemm.h) on every ISA the machine
// supports, against a float64 / exact int64 loop: M / K / N tails (N padded to whole 16-row tiles, K to whole k panels), the MlaPreprocess
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
#include "kernels/cpu/gemm/gemm.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"
#include "tests/kernels/gemm/gemm_test_util.h"

namespace mlaops::kernels {
namespace {

using namespace gemm_test;

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
    // int8: also with the row sums given (GemmTArgs::a_rowsum), from this row's s8_rowsum.
    std::vector<int32_t> sums(static_cast<size_t>(M));
    if (kind == Kind::kS8) ks.k->s8_rowsum(A.b.data(), lda, M, K, sums.data());
    for (const auto& [nb, ne] : ranges(N, 16, small_ranges))
      for (int given = 0; given < (kind == Kind::kS8 ? 2 : 1); ++given) {
        CBuffer C(M, N);
        g.C = C.data();
        g.ldc = C.ldc;
        g.n_begin = nb;
        g.n_end = ne;
        g.a_rowsum = given ? sums.data() : nullptr;
        Scratch scratch(kind == Kind::kBf16 ? GemmKind::kBf16T : kind == Kind::kF16 ? GemmKind::kF16T : GemmKind::kS8T, M,
                        K, ne - nb);
        g.scratch = scratch.data();
        fn(g);
        EXPECT_TRUE(scratch.canary_intact()) << ks.name << " wrote past gemm_scratch_bytes";
        ASSERT_TRUE(check_c(C, kind, ref, mag, M, N, nb, ne))
            << describe(ks.name, std::string(kind_name(kind)) + (given ? "_t (row sums given)" : "_t"), M, K, N, nb, ne,
                        lda);
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
      Scratch scratch(kind == Kind::kBf16 ? GemmKind::kBf16T : kind == Kind::kF16 ? GemmKind::kF16T : GemmKind::kS8T, 3, 0,
                      24);
      g.scratch = scratch.data();
      (kind == Kind::kBf16 ? ks.k->bf16_t : kind == Kind::kF16 ? ks.k->f16_t : ks.k->s8_t)(g);
      for (int64_t m = 0; m < 3; ++m)
        for (int64_t n = 0; n < 40; ++n)
          EXPECT_EQ(c[static_cast<size_t>(m * 40 + n)], n >= 16 ? 0u : 0x12345678u) << ks.name << " " << kind_name(kind);
    }
}

}  // namespace
}  // namespace mlaops::kernels

// Panel GEMM kernels (kernels/cpu/gemm/gemm.h: bf16, f16, s8) on every ISA the machine supports,
// against a float64 (bf16, fp16) / exact (int8) loop: NZ and ND B, M / K / N tails, n_begin / n_end sub-ranges,
// canaries around C, and exact-size A / B allocations (run under ASan to check the extents).
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
#include "tests/support/isa_list.h"

namespace mlaops::kernels {
namespace {

using namespace gemm_test;

const std::vector<int64_t> kMs = {1, 2, 3, 7, 8, 9, 17, 64};
const std::vector<int64_t> kKs = {1, 2, 3, 15, 16, 17, 64, 130, 1536};
const std::vector<int64_t> kNs = {16, 32, 48, 80, 512, 1, 5, 33};

// ---------------------------------------------------------------- bf16 / fp16 panels

// C = A x B for bf16 or fp16 (`kind`), B [K, N] as NZ panels or ND rows; `all_ranges` false:
// only the full range and one inner range.
void check_panel(Kind kind, int64_t M, int64_t K, int64_t N, bool nz, int64_t lda_pad,
                 const std::vector<KernelSet>& sets, bool all_ranges) {
  std::mt19937 rng(static_cast<uint32_t>(M * 1000003 + K * 1009 + N * 7 + (nz ? 1 : 0) + (kind == Kind::kF16 ? 555 : 0)));
  const int64_t lda = K + lda_pad;
  std::vector<uint16_t> A(static_cast<size_t>(M * lda));  // exactly M * lda elements
  std::vector<uint16_t> Bnd(static_cast<size_t>(K * N));  // exactly K * ldb (ldb = N)
  for (auto& v : A) v = random_value(kind, rng);
  for (auto& v : Bnd) v = random_value(kind, rng);

  std::vector<double> ref(static_cast<size_t>(M * N)), mag(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0, a = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = value_of(kind, A[static_cast<size_t>(m * lda + k)]) * value_of(kind, Bnd[static_cast<size_t>(k * N + n)]);
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
    for (const auto& [nb, ne] : ranges(N, 16, !all_ranges)) {
      CBuffer C(M, N);
      g.C = C.data();
      g.ldc = C.ldc;
      g.n_begin = nb;
      g.n_end = ne;
      Scratch scratch(kind == Kind::kBf16 ? GemmKind::kBf16 : GemmKind::kF16, M, K, ne - nb);
      g.scratch = scratch.data();
      (kind == Kind::kBf16 ? ks.k->bf16 : ks.k->f16)(g);
      EXPECT_TRUE(scratch.canary_intact()) << ks.name << " wrote past gemm_scratch_bytes";
      ASSERT_TRUE(check_c(C, kind, ref, mag, M, N, nb, ne))
          << describe(ks.name, std::string(kind_name(kind)) + (nz ? " NZ" : " ND"), M, K, N, nb, ne, lda);
    }
}

TEST(GemmBf16, NzAllShapes) {
  const auto sets = kernel_sets();
  for (int64_t M : kMs)
    for (int64_t K : kKs)
      for (int64_t N : kNs) {
        check_panel(Kind::kBf16, M, K, N, /*nz=*/true, 0, sets, /*all_ranges=*/K <= 130 || M <= 9);
        if (HasFatalFailure()) return;
      }
}

TEST(GemmBf16, NdAllShapes) {
  const auto sets = kernel_sets();
  for (int64_t M : kMs)
    for (int64_t K : kKs)
      for (int64_t N : kNs) {
        check_panel(Kind::kBf16, M, K, N, /*nz=*/false, 0, sets, /*all_ranges=*/K <= 130 || M <= 9);
        if (HasFatalFailure()) return;
      }
}

TEST(GemmBf16, PaddedLdaAndKBlocks) {
  // K around the K blocks (AVX-512 384, AVX2 256), odd lda, M tails of the 8 / 6 row tiles.
  const auto sets = kernel_sets();
  for (int64_t M : {1, 5, 8, 13, 25})
    for (int64_t K : {7, 385, 769, 1001})
      for (bool nz : {true, false}) {
        check_panel(Kind::kBf16, M, K, 80, nz, 3, sets, true);
        if (HasFatalFailure()) return;
      }
}

TEST(GemmF16, AllShapes) {
  const auto sets = kernel_sets();
  for (bool nz : {true, false})
    for (int64_t M : kMs)
      for (int64_t K : kKs)
        for (int64_t N : kNs) {
          check_panel(Kind::kF16, M, K, N, nz, 0, sets, /*all_ranges=*/M * K * N <= 2'000'000);
          if (HasFatalFailure()) return;
        }
}

TEST(GemmF16, PaddedLdaAndKBlocks) {
  // K around the K blocks (AVX-512 384, AVX2 256), odd lda, M tails of the 8 / 6 row tiles.
  const auto sets = kernel_sets();
  for (int64_t M : {1, 5, 8, 13, 25})
    for (int64_t K : {7, 257, 385, 769, 1001})
      for (bool nz : {true, false}) {
        check_panel(Kind::kF16, M, K, 80, nz, 3, sets, true);
        if (HasFatalFailure()) return;
      }
}

// ---------------------------------------------------------------- int8

void check_s8(int64_t M, int64_t K, int64_t N, int64_t lda_pad, const std::vector<KernelSet>& sets, bool all_ranges) {
  std::mt19937 rng(static_cast<uint32_t>(M * 1000003 + K * 1009 + N * 7 + 99));
  std::uniform_int_distribution<int> u(-128, 127);
  const int64_t lda = K + lda_pad;
  std::vector<int8_t> A(static_cast<size_t>(M * lda));
  std::vector<int8_t> Bnd(static_cast<size_t>(K * N));
  for (auto& v : A) v = static_cast<int8_t>(u(rng));
  for (auto& v : Bnd) v = static_cast<int8_t>(u(rng));
  // Extremes: row 0 of A and column 0 of B all -128 (C[0][0] = K * 16384); last row of A 127.
  for (int64_t k = 0; k < K; ++k) {
    A[k] = -128;
    Bnd[k * N] = -128;
    if (M > 1) A[(M - 1) * lda + k] = 127;
  }

  std::vector<double> ref(static_cast<size_t>(M * N));  // exact: |sum| < 2^53
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      int64_t s = 0;
      for (int64_t k = 0; k < K; ++k) s += int64_t{A[m * lda + k]} * int64_t{Bnd[k * N + n]};
      ref[m * N + n] = static_cast<double>(s);
    }

  int64_t s[4];
  nz_storage_shape(K, N, 1, s);
  std::vector<int8_t> Bnz(static_cast<size_t>(s[0] * s[1] * s[2] * s[3]));
  nd_to_nz(Bnd.data(), Bnz.data(), K, N, 1);
  GemmArgs g;
  g.M = M;
  g.N = N;
  g.K = K;
  g.A = A.data();
  g.lda = lda;
  g.B = Bnz.data();
  g.ldb = 32;
  g.panel_stride = s[1] * 16 * 32;
  g.panel_width = 32;

  for (const auto& ks : sets) {
    // The row sums a caller may pass (GemmArgs::a_rowsum): this row's s8_rowsum, exact mod 2^32.
    std::vector<int32_t> sums(static_cast<size_t>(M));
    ks.k->s8_rowsum(A.data(), lda, M, K, sums.data());
    for (int64_t m = 0; m < M; ++m) {
      int64_t e = 0;
      for (int64_t k = 0; k < K; ++k) e += A[m * lda + k];
      ASSERT_EQ(sums[m], static_cast<int32_t>(e)) << ks.name << " s8_rowsum row " << m << " K " << K;
    }
    for (const auto& [nb, ne] : ranges(N, 32, !all_ranges))
      for (const int32_t* given : {static_cast<const int32_t*>(nullptr), static_cast<const int32_t*>(sums.data())}) {
        CBuffer C(M, N);
        g.C = C.data();
        g.ldc = C.ldc;
        g.n_begin = nb;
        g.n_end = ne;
        g.a_rowsum = given;
        Scratch scratch(GemmKind::kS8, M, K, ne - nb);
        g.scratch = scratch.data();
        ks.k->s8(g);
        EXPECT_TRUE(scratch.canary_intact()) << ks.name << " wrote past gemm_scratch_bytes";
        ASSERT_TRUE(check_c(C, Kind::kS8, ref, {}, M, N, nb, ne))
            << describe(ks.name, given ? "s8 NZ (row sums given)" : "s8 NZ", M, K, N, nb, ne, lda);
      }
  }
}

TEST(GemmS8, NzAllShapes) {
  const auto sets = kernel_sets();
  for (int64_t M : kMs)
    for (int64_t K : kKs)
      for (int64_t N : kNs) {
        check_s8(M, K, N, 0, sets, K <= 130 || M <= 9);
        if (HasFatalFailure()) return;
      }
}

TEST(GemmS8, PaddedLdaAndKBlocks) {
  // K around the K blocks (512 on both ISAs) with every K % 4, odd lda, M tails of the tiles.
  const auto sets = kernel_sets();
  for (int64_t M : {1, 5, 8, 13, 25})
    for (int64_t K : {511, 513, 514, 1027, 2049}) {
      check_s8(M, K, 96, 5, sets, true);
      if (HasFatalFailure()) return;
    }
}

// Each GEMM data type is a family of its own (gemm.h): rows gemm_<type>_<isa>, best first, the
// last the scalar row, which runs every call. For the layouts the SIMD rows are written for, the
// row picked for a call is the one the registry picks at the level.
TEST(GemmRows, OneFamilyPerDataTypeEndingInTheScalarRow) {
  const GemmFamily* const fams[] = {&gemm_bf16_family(), &gemm_s8_family(), &gemm_f16_family()};
  const GemmArgs layouts[] = {gemm_layout(16, 16), gemm_layout(32, 32), gemm_layout(16, 16)};
  for (size_t f = 0; f < 3; ++f) {
    const GemmFamily& fam = *fams[f];
    SCOPED_TRACE(fam.name());
    const GemmRow& last = fam.value(fam.size() - 1);
    EXPECT_EQ(last.can_run, nullptr);
    EXPECT_EQ(std::string(fam.info(fam.size() - 1).name), std::string(fam.name()) + "_scalar");
    for (int i = 0; i + 1 < fam.size(); ++i) EXPECT_NE(*fam.info(i).calls, '\0') << fam.info(i).name;
    for (Isa isa : test_isas()) EXPECT_EQ(gemm_select(fam, isa, {layouts[f]}), fam.select(isa)) << isa_name(isa);
  }
  const GemmTFamily* const tfams[] = {&gemm_bf16_t_family(), &gemm_s8_t_family(), &gemm_f16_t_family()};
  for (const GemmTFamily* fam : tfams)
    for (int i = 0; i < fam->size(); ++i) EXPECT_EQ(fam->value(i).can_run, nullptr) << fam->info(i).name;
  EXPECT_EQ(std::string(gemm_s8_rowsum_family().info(gemm_s8_rowsum_family().size() - 1).name),
            "gemm_s8_rowsum_scalar");
}

uint64_t row_uses(const KernelFamily& fam, const char* row) { return fam.uses(fam.find(row)); }

// A bf16 call of 32-column panels: no SIMD row runs it (their tiles load 16-column panels), so
// the scalar row is picked and counted, not the row of the level; its C is the scalar kernel's.
// (Before the GEMM rows were per data type, the AVX-512 and AVX2 kernels ran such a call on the
// scalar code inside while the registry counted their own row.)
TEST(GemmRows, ACallNoSimdRowRunsRecordsTheScalarRow) {
  const GemmFamily& fam = gemm_bf16_family();
  const int64_t M = 3, K = 40, N = 64, W = 32;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint16_t> A(static_cast<size_t>(M * K)), B(static_cast<size_t>(K * N));
  for (auto& v : A) v = float_to_bf16(dist(rng));
  for (auto& v : B) v = float_to_bf16(dist(rng));
  GemmArgs g = gemm_layout(W, W);
  g.M = M, g.N = N, g.K = K;
  g.A = A.data(), g.lda = K;
  g.B = B.data(), g.panel_stride = K * W;
  g.n_begin = 0, g.n_end = N;
  for (Isa isa : test_isas()) {
    SCOPED_TRACE(isa_name(isa));
    const uint64_t scalar_before = row_uses(fam, "gemm_bf16_scalar");
    const uint64_t level_before = fam.uses(fam.select(isa));
    const int row = gemm_select(fam, isa, {g});
    EXPECT_STREQ(fam.info(row).name, "gemm_bf16_scalar");
    const GemmFn fn = gemm_pick(fam, isa, {g});
    EXPECT_EQ(row_uses(fam, "gemm_bf16_scalar"), scalar_before + 1);
    if (fam.select(isa) != row) {
      EXPECT_EQ(fam.uses(fam.select(isa)), level_before);
    }
    std::vector<float> c(static_cast<size_t>(M * N)), want(c.size());
    g.C = c.data(), g.ldc = N;
    fn(g);
    g.C = want.data();
    gemm_scalar.bf16(g);
    EXPECT_EQ(std::memcmp(c.data(), want.data(), c.size() * sizeof(float)), 0);
  }
}

// An int8 call of 32-column panels whose rows are not 32 bytes apart (ldb != 32): the AVX-512
// row (it loads 32-byte panel rows) declines it and the next row that runs it is picked and
// counted: AVX2 where this host runs it and the level allows, else the scalar row.
TEST(GemmRows, AnInt8CallTheAvx512RowDeclinesRecordsTheNextRow) {
  const GemmFamily& fam = gemm_s8_family();
  const GemmArgs call = gemm_layout(32, 64);
  for (Isa isa : test_isas()) {
    SCOPED_TRACE(isa_name(isa));
    const int row = gemm_select(fam, isa, {call});
    const int avx2 = fam.find("gemm_s8_avx2");
    const bool avx2_ok = avx2 >= 0 && fam.allowed(avx2, isa);
    EXPECT_STREQ(fam.info(row).name, avx2_ok ? "gemm_s8_avx2" : "gemm_s8_scalar");
    const uint64_t before = fam.uses(row);
    gemm_pick(fam, isa, {call});
    EXPECT_EQ(fam.uses(row), before + 1);
  }
}

TEST(Gemm, ZeroKWritesZeros) {
  for (const auto& ks : kernel_sets()) {
    std::vector<uint16_t> a(1), b(3 * 256);
    std::vector<float> c(3 * 40, 7.0f);
    GemmArgs g;
    g.M = 3;
    g.N = 40;
    g.K = 0;
    g.A = a.data();
    g.lda = 0;
    g.B = b.data();
    g.ldb = 16;
    g.panel_stride = 256;
    g.C = c.data();
    g.ldc = 40;
    g.n_begin = 16;
    g.n_end = 40;
    ks.k->bf16(g);
    for (int64_t m = 0; m < 3; ++m)
      for (int64_t n = 0; n < 40; ++n) EXPECT_EQ(c[m * 40 + n], n >= 16 ? 0.0f : 7.0f) << ks.name;
  }
}

}  // namespace
}  // namespace mlaops::kernels

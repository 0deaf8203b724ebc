// The oneDNN GEMM route (kernels/cpu/gemm/gemm_onednn.h): every type on every element type it
// runs, weights in the three layouts the operators pass (FRACTAL_NZ panels, ND bf16 / fp16 seen
// as 16-column panels, W^T in FRACTAL_NZ), K and N not multiples of any block, the full chunk and a
// shorter last chunk, padded lda / ldc, against a float64 / exact int64 loop; C's columns past N
// and the row after the last keep their canaries. Without oneDNN in the build the plans say why.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/gemm/gemm_onednn.h"
#include "mlaops/numeric.h"
#include "tests/kernels/gemm/gemm_test_util.h"

namespace mlaops::kernels {
namespace {

using namespace gemm_test;

enum class Layout { kPanelsNz, kPanelsNd, kTransposedNz };
const char* layout_name(Layout l) {
  return l == Layout::kPanelsNz ? "panels NZ" : l == Layout::kPanelsNd ? "panels ND" : "W^T NZ";
}

// The weights W [K][N] (logical values in w) stored in `layout`; storage elements of 1 or 2 bytes.
struct Weights {
  std::vector<uint8_t> bytes;
  WeightSource src;
};
Weights store(Kind kind, Layout layout, const std::vector<uint16_t>& w, int64_t K, int64_t N) {
  const int64_t es = kind == Kind::kS8 ? 1 : 2;
  Weights out;
  auto put = [&](int64_t off, uint16_t v) {
    if (es == 1) out.bytes[static_cast<size_t>(off)] = static_cast<uint8_t>(v);
    else std::memcpy(&out.bytes[static_cast<size_t>(off * 2)], &v, 2);
  };
  WeightSource& s = out.src;
  if (layout == Layout::kTransposedNz) {
    const int64_t c0 = 32 / es, r1 = (N + 15) / 16, c1 = (K + c0 - 1) / c0;
    out.bytes.assign(static_cast<size_t>(c1 * r1 * 16 * c0 * es), 0);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n)
        put(((k / c0) * r1 + n / 16) * 16 * c0 + (n % 16) * c0 + k % c0, w[static_cast<size_t>(k * N + n)]);
    s.transposed = true;
    s.r1 = r1;
  } else if (layout == Layout::kPanelsNz) {
    const int64_t W = es == 1 ? 32 : 16, rows = (K + 15) / 16 * 16, panels = (N + W - 1) / W;
    out.bytes.assign(static_cast<size_t>(panels * rows * W * es), 0);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) put((n / W) * rows * W + k * W + n % W, w[static_cast<size_t>(k * N + n)]);
    s.ldb = W, s.panel_stride = rows * W, s.panel_width = W;
  } else {  // ND row-major, exactly K x N elements (the last panel partial)
    out.bytes.assign(static_cast<size_t>(K * N * es), 0);
    for (int64_t i = 0; i < K * N; ++i) put(i, w[static_cast<size_t>(i)]);
    s.ldb = N, s.panel_stride = 16, s.panel_width = 16;
  }
  s.data = out.bytes.data();
  return out;
}

GemmElem elem_of(Kind k) { return k == Kind::kS8 ? GemmElem::kS8 : k == Kind::kF16 ? GemmElem::kF16 : GemmElem::kBf16; }

// split > 0: the weights are two tensors, columns [0, split) and [split, N), packed right one first.
void check(OnednnType type, Kind kind, Layout layout, int64_t m_max, int64_t m_last, int64_t K, int64_t N,
           int64_t lda_pad, int threads, int64_t split = 0, bool c_dense = false) {
  SCOPED_TRACE(std::string(c_dense ? "ldc N " : "ldc N+3 ") + "split " + std::to_string(split) + " " + std::string(onednn_type_name(type)) + " " + kind_name(kind) + " " + layout_name(layout) + " m " +
               std::to_string(m_max) + "/" + std::to_string(m_last) + " K " + std::to_string(K) + " N " +
               std::to_string(N) + " lda+" + std::to_string(lda_pad) + " threads " + std::to_string(threads));
  std::mt19937 rng(static_cast<uint32_t>(m_max * 131 + K * 7 + N + static_cast<int>(kind) * 1000 + lda_pad));
  const int64_t es = kind == Kind::kS8 ? 1 : 2, lda = K + lda_pad;
  std::vector<uint16_t> w(static_cast<size_t>(K * N));
  for (auto& v : w) v = random_value(kind, rng);
  if (kind == Kind::kS8)  // extremes: the first column all -128
    for (int64_t k = 0; k < K; ++k) w[static_cast<size_t>(k * N)] = 0x80;
  auto columns = [&](int64_t c0, int64_t c1) {
    std::vector<uint16_t> part(static_cast<size_t>(K * (c1 - c0)));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = c0; n < c1; ++n) part[static_cast<size_t>(k * (c1 - c0) + n - c0)] = w[static_cast<size_t>(k * N + n)];
    return store(kind, layout, part, K, c1 - c0);
  };
  const Weights W = store(kind, layout, w, K, N);
  const Weights left = columns(0, split > 0 ? split : 1), right = columns(split > 0 ? split : 0, N);
  CBuffer probe(m_max, N);
  if (c_dense) probe.ldc = N;  // oneDNN's brgemm layouts (blocked); rows N + 3 apart get its plain-layout gemm
  const OnednnGemmPlan plan = onednn_gemm_plan(type, elem_of(kind), m_max, m_last, K, N, lda, probe.ldc, threads);
  ASSERT_TRUE(plan.ok()) << plan.why_not();
  EXPECT_FALSE(plan.impl_name().empty());
  if (std::getenv("GEMM_ONEDNN_TEST_PRINT")) std::printf("%s %s %s ldc %s: %s\n", onednn_type_name(type), kind_name(kind), layout_name(layout), c_dense ? "N" : "N+3", plan.impl_name().c_str());
  std::vector<char> ws_bytes(static_cast<size_t>(plan.workspace_bytes() + 64));
  char* ws = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(ws_bytes.data()) + 63) / 64 * 64);
  if (split > 0) {
    onednn_gemm_pack(plan, right.src, ws, split, N - split);
    onednn_gemm_pack(plan, left.src, ws, 0, split);
  } else {
    onednn_gemm_pack(plan, W.src, ws);
  }
  for (const int64_t m : {m_max, m_last}) {
    std::vector<uint8_t> a(static_cast<size_t>(m * lda * es));  // exactly m rows of lda
    std::vector<uint16_t> av(static_cast<size_t>(m * K));
    for (int64_t r = 0; r < m; ++r)
      for (int64_t k = 0; k < K; ++k) {
        uint16_t v = random_value(kind, rng);
        if (kind == Kind::kS8 && r == 0) v = 0x80;  // -128 x -128 in C[0][0]
        if (kind == Kind::kS8 && r == m - 1 && m > 1) v = 0x7f;
        av[static_cast<size_t>(r * K + k)] = v;
        if (es == 1) a[static_cast<size_t>(r * lda + k)] = static_cast<uint8_t>(v);
        else std::memcpy(&a[static_cast<size_t>((r * lda + k) * 2)], &v, 2);
      }
    CBuffer C(m, N);
    if (c_dense) C.ldc = N;
    onednn_gemm_run(plan, m, a.data(), lda, C.data(), C.ldc, ws);
    std::string where;
    EXPECT_TRUE(C.canaries_intact(0, N, &where)) << where;
    int bad = 0;
    for (int64_t r = 0; r < m && bad < 5; ++r)
      for (int64_t n = 0; n < N && bad < 5; ++n) {
        double ref = 0, mag = 0;
        int64_t iref = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double x = value_of(kind, av[static_cast<size_t>(r * K + k)]), y = value_of(kind, w[static_cast<size_t>(k * N + n)]);
          ref += x * y, mag += std::fabs(x * y);
          if (kind == Kind::kS8) iref += static_cast<int64_t>(x) * static_cast<int64_t>(y);
        }
        if (kind == Kind::kS8) {
          if (C.i(r, n) != static_cast<int32_t>(iref)) {
            ++bad;
            ADD_FAILURE() << "C[" << r << "][" << n << "] = " << C.i(r, n) << ", want " << iref;
          }
        } else if (std::fabs(C.f(r, n) - ref) > 2.0 * static_cast<double>(K) * 0x1p-24 * mag + 1e-30) {
          ++bad;
          ADD_FAILURE() << "C[" << r << "][" << n << "] = " << C.f(r, n) << ", want " << ref << " (|a||w| " << mag << ")";
        }
      }
  }
}

TEST(GemmOnednn, EveryTypeLayoutAndTailAgainstFloat64) {
  if (!onednn_built()) {
    const OnednnGemmPlan p = onednn_gemm_plan(OnednnType::kBf16, GemmElem::kBf16, 4, 4, 32, 32, 32, 32, 1);
    EXPECT_FALSE(p.ok());
    EXPECT_NE(p.why_not().find("no oneDNN"), std::string::npos) << p.why_not();
    EXPECT_EQ(onednn_version(), "");
    return;
  }
  EXPECT_FALSE(onednn_version().empty());
  struct Shape {
    int64_t m_max, m_last, K, N, lda_pad;
    int threads;
  };
  const Shape shapes[] = {{17, 5, 100, 70, 3, 2}, {32, 32, 256, 128, 0, 1}, {3, 1, 33, 17, 0, 2}, {64, 40, 576, 200, 8, 2}};
  for (const Shape& s : shapes) {
    for (Layout l : {Layout::kPanelsNz, Layout::kPanelsNd, Layout::kTransposedNz}) {
      check(OnednnType::kBf16, Kind::kBf16, l, s.m_max, s.m_last, s.K, s.N, s.lda_pad, s.threads);
      check(OnednnType::kF32, Kind::kBf16, l, s.m_max, s.m_last, s.K, s.N, s.lda_pad, s.threads);
      check(OnednnType::kF32, Kind::kF16, l, s.m_max, s.m_last, s.K, s.N, s.lda_pad, s.threads);
      if (l != Layout::kPanelsNd) check(OnednnType::kU8S8, Kind::kS8, l, s.m_max, s.m_last, s.K, s.N, s.lda_pad, s.threads);
      // C rows N apart: the blocked layouts (16a64b2a, 16a64b, 16a64b4a), whose packing has its own paths
      check(OnednnType::kBf16, Kind::kBf16, l, s.m_max, s.m_last, s.K, s.N, s.lda_pad, s.threads, 0, true);
      check(OnednnType::kF32, Kind::kBf16, l, s.m_max, s.m_last, s.K, s.N, s.lda_pad, s.threads, 0, true);
      check(OnednnType::kF32, Kind::kF16, l, s.m_max, s.m_last, s.K, s.N, s.lda_pad, s.threads, 0, true);
      if (l != Layout::kPanelsNd) {
        check(OnednnType::kU8S8, Kind::kS8, l, s.m_max, s.m_last, s.K, s.N, s.lda_pad, s.threads, 0, true);
        check(OnednnType::kU8S8, Kind::kS8, l, s.m_max, s.m_last, s.K, s.N, s.lda_pad, s.threads, s.N / 3, true);
      }
      check(OnednnType::kF32, Kind::kBf16, l, s.m_max, s.m_last, s.K, s.N, s.lda_pad, s.threads, s.N / 3, true);
      // two weight tensors side by side, split inside a block and at a block edge
      for (const int64_t split : {s.N / 3, int64_t{64}}) {
        if (split <= 0 || split >= s.N) continue;
        check(OnednnType::kF32, Kind::kBf16, l, s.m_max, s.m_last, s.K, s.N, s.lda_pad, s.threads, split);
        if (l != Layout::kPanelsNd)
          check(OnednnType::kU8S8, Kind::kS8, l, s.m_max, s.m_last, s.K, s.N, s.lda_pad, s.threads, split);
      }
    }
  }
}

TEST(GemmOnednn, TypesOnlyRunTheirElementTypes) {
  EXPECT_FALSE(onednn_gemm_plan(OnednnType::kU8S8, GemmElem::kBf16, 4, 4, 32, 32, 32, 32, 1).ok());
  EXPECT_FALSE(onednn_gemm_plan(OnednnType::kBf16, GemmElem::kF16, 4, 4, 32, 32, 32, 32, 1).ok());
  EXPECT_FALSE(onednn_gemm_plan(OnednnType::kF32, GemmElem::kS8, 4, 4, 32, 32, 32, 32, 1).ok());
  EXPECT_FALSE(onednn_gemm_plan(OnednnType::kF32, GemmElem::kBf16, 0, 4, 32, 32, 32, 32, 1).ok());
}

}  // namespace
}  // namespace mlaops::kernels

// Shared pieces of the GEMM kernel tests (test_gemm.cpp, test_gemm_t.cpp): the kernels of every
// GEMM row this host can run, by level, n-range choices, a canary-guarded C, random element values of
// each kind and the check of C against a float64 / exact reference.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/gemm/gemm.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"
#include "tests/support/kernel_rows.h"

namespace mlaops::kernels::gemm_test {

struct KernelSet {
  std::shared_ptr<const GemmKernels> k;
  std::string name;
};

// Row i's value of `fam`, or that of the next row this host can run, for every i; each runnable
// row is picked as MLAOPS_KERNEL=<row> picks it (counted as used).
template <class T>
std::vector<T> values_by_row(const KernelTable<T>& fam) {
  const auto picked = runnable_rows(fam);
  std::vector<T> out(static_cast<size_t>(fam.size()));
  for (int i = fam.size() - 1; i >= 0; --i) {
    out[static_cast<size_t>(i)] = i + 1 < fam.size() ? out[static_cast<size_t>(i) + 1] : T{};
    for (const auto& p : picked)
      if (p.name == fam.info(i).name) out[static_cast<size_t>(i)] = p.value;
  }
  return out;
}

// The kernels of every GEMM family (one per data type, gemm.h) by row position (avx512, avx2,
// scalar on x86-64), for each position at which this host can run some family's row: each
// member is its family's row there, or the next row this host can run (the AVX-512 rows of CPUs
// without BF16 / VNNI: AVX2). Named by the level.
inline std::vector<KernelSet> kernel_sets() {
  const auto bf16 = values_by_row(gemm_bf16_family()), s8 = values_by_row(gemm_s8_family()),
             f16 = values_by_row(gemm_f16_family());
  const auto bf16_t = values_by_row(gemm_bf16_t_family()), s8_t = values_by_row(gemm_s8_t_family()),
             f16_t = values_by_row(gemm_f16_t_family());
  const auto rowsum = values_by_row(gemm_s8_rowsum_family());
  const KernelFamily* const fams[] = {&gemm_bf16_family(),  &gemm_s8_family(),   &gemm_f16_family(),
                                      &gemm_bf16_t_family(), &gemm_s8_t_family(), &gemm_f16_t_family(),
                                      &gemm_s8_rowsum_family()};
  std::vector<KernelSet> v;
  for (size_t i = 0; i < bf16.size(); ++i) {
    bool any = false;
    for (const KernelFamily* f : fams) any = any || f->info(static_cast<int>(i)).runnable(cpu_features());
    if (!any) continue;
    auto k = std::make_shared<const GemmKernels>(GemmKernels{bf16[i].run, s8[i].run, f16[i].run, bf16_t[i].run,
                                                             s8_t[i].run, f16_t[i].run, rowsum[i]});
    v.push_back({std::move(k), std::string("gemm_") + isa_name(gemm_bf16_family().info(static_cast<int>(i)).isa)});
  }
  return v;
}

// [n_begin, n_end) ranges at W boundaries (n_begin a multiple of W); `small`: only the full
// range and one inner range.
inline std::vector<std::pair<int64_t, int64_t>> ranges(int64_t N, int64_t W, bool small) {
  std::vector<std::pair<int64_t, int64_t>> r{{0, N}};
  if (N > W && !small) {
    r.push_back({W, N});
    r.push_back({0, W});
  }
  if (N > 3 * W) r.push_back({W, 3 * W});
  return r;
}

constexpr uint32_t kCanary = 0x7fc0dead;  // a NaN bit pattern, compared bitwise

// C with ldc = N + 3 and one extra row, filled with the canary; the kernel may write only
// rows [0, M) x columns [n_begin, n_end).
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
inline const char* kind_name(Kind k) { return k == Kind::kBf16 ? "bf16" : k == Kind::kF16 ? "f16" : "s8"; }

// A random bf16 / fp16 (bits) or int8 (low byte) value.
inline uint16_t random_value(Kind kind, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-6, 3);
  std::uniform_int_distribution<int> b(-128, 127);
  if (kind == Kind::kS8) return static_cast<uint16_t>(static_cast<uint8_t>(static_cast<int8_t>(b(rng))));
  if (rng() % 29 == 0) return 0;
  const float v = std::ldexp(u(rng), e(rng));
  return kind == Kind::kBf16 ? float_to_bf16(v) : float_to_fp16(v);
}

inline double value_of(Kind kind, uint16_t bits) {
  switch (kind) {
    case Kind::kBf16: return bf16_to_float(bits);
    case Kind::kF16: return fp16_to_float(bits);
    case Kind::kS8: return static_cast<int8_t>(static_cast<uint8_t>(bits));
  }
  return 0;
}

inline std::string describe(const std::string& isa, const std::string& kind, int64_t M, int64_t K, int64_t N,
                            int64_t nb, int64_t ne, int64_t lda) {
  return isa + " " + kind + " M=" + std::to_string(M) + " K=" + std::to_string(K) + " N=" + std::to_string(N) +
         " range=[" + std::to_string(nb) + "," + std::to_string(ne) + ") lda=" + std::to_string(lda);
}

// Checks C[m][n] for n in [nb, ne) and the canaries against ref [M, N] (exact for int8,
// 1e-5 * mag = 1e-5 * sum |a_k w_k| otherwise).
inline ::testing::AssertionResult check_c(const CBuffer& C, Kind kind, const std::vector<double>& ref,
                                          const std::vector<double>& mag, int64_t M, int64_t N, int64_t nb,
                                          int64_t ne) {
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

// A GEMM call's scratch (kernels/cpu/gemm/gemm.h): exactly gemm_scratch_bytes, 16 bytes past a 64-byte
// boundary (only 16-aligned, like a malloc'd workspace), then 64 canary bytes the call must leave
// alone (the bound holds).
class Scratch {
 public:
  Scratch(GemmKind kind, int64_t M, int64_t K, int64_t n_cols)
      : bytes_(static_cast<size_t>(gemm_scratch_bytes(kind, M, K, n_cols))), buf_(bytes_ + 3 * kCanary, kFill) {
    const auto a = reinterpret_cast<uintptr_t>(buf_.data());
    p_ = buf_.data() + (kCanary - a % kCanary) % kCanary + 16;
  }
  void* data() { return p_; }
  bool canary_intact() const {
    for (size_t i = 0; i < kCanary; ++i)
      if (p_[bytes_ + i] != kFill) return false;
    return true;
  }

 private:
  static constexpr size_t kCanary = 64;
  static constexpr unsigned char kFill = 0xA5;
  size_t bytes_;
  std::vector<unsigned char> buf_;
  unsigned char* p_ = nullptr;
};

}  // namespace mlaops::kernels::gemm_test

// MLA full quant attention rows (kernels/cpu/attention/flash_mlaq.h), every row this host runs
// (runnable_rows) against a double evaluation of the kernel contract in this file: head dims
// D 64 / 512 with rope 32 / 64, M 1..70 rows (the 4- and 6-row tiles and their tails), per-row
// position ranges that start after 0, end before the range, or are empty, ranges [p0, p1) not
// aligned to the block, block sizes 16 / 48 / 128, value = key or a separate cache, scores
// that exercise the int8 extremes (-128 x -128). Checks the unnormalised state: o / l (fp32 P
// vs BF16 P: relative 4e-3 of the row's largest |o / l|), m exactly the max score's fp32 value
// up to 1e-5 relative, l within 1e-4 relative; rows without a valid position m = -inf, l = 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/attention/flash_mlaq.h"
#include "mlaops/numeric.h"
#include "tests/support/kernel_rows.h"

namespace mlaops::kernels {
namespace {

struct Data {
  int64_t D, DR, bs, nblk, M;
  std::vector<int8_t> k, v, q;
  std::vector<uint16_t> kr, qr;
  std::vector<int32_t> ids;
  std::vector<float> fac;
  std::vector<int64_t> jlo, jhi;
  MlaqCache cache(bool separate_v) const {
    MlaqCache c;
    c.k = k.data();
    c.v = separate_v ? v.data() : k.data();
    c.kr = kr.data();
    c.block_ids = ids.data();
    c.block_size = bs;
    c.k_blk = c.v_blk = D * bs;
    c.k_slot = c.v_slot = 32;
    c.k_c1 = c.v_c1 = bs * 32;
    c.kr_blk = DR * bs;
    c.kr_slot = 16;
    c.kr_c1 = bs * 16;
    return c;
  }
};

Data make(uint32_t seed, int64_t D, int64_t DR, int64_t bs, int64_t positions, int64_t M, bool extremes) {
  std::mt19937 g(seed);
  Data d;
  d.D = D;
  d.DR = DR;
  d.bs = bs;
  d.M = M;
  const int64_t used = (positions + bs - 1) / bs;
  d.nblk = used + 2;
  auto i8 = [&]() { return extremes && g() % 2 ? static_cast<int8_t>(-128) : static_cast<int8_t>(static_cast<int>(g() % 256) - 128); };
  std::normal_distribution<float> nd(0.0f, 1.0f);
  d.k.resize(static_cast<size_t>(d.nblk * bs * D));
  d.v.resize(d.k.size());
  for (auto& x : d.k) x = i8();
  for (auto& x : d.v) x = i8();
  d.kr.resize(static_cast<size_t>(d.nblk * bs * DR));
  for (auto& x : d.kr) x = float_to_bf16(nd(g));
  d.q.resize(static_cast<size_t>(M * D));
  for (auto& x : d.q) x = i8();
  d.qr.resize(static_cast<size_t>(M * DR));
  for (auto& x : d.qr) x = float_to_bf16(nd(g) * 3000.0f);
  std::vector<int32_t> perm(static_cast<size_t>(d.nblk));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), g);
  d.ids.assign(perm.begin(), perm.begin() + used);
  d.fac.resize(static_cast<size_t>(M));
  for (auto& f : d.fac) f = 1.0f / (40000.0f + static_cast<float>(g() % 40000));
  for (int64_t m = 0; m < M; ++m) {
    int64_t lo = 0, hi = positions;
    switch (m % 5) {
      case 1: lo = static_cast<int64_t>(g() % static_cast<uint32_t>(positions + 1)); break;
      case 2: hi = static_cast<int64_t>(g() % static_cast<uint32_t>(positions + 1)); break;
      case 3: lo = hi = positions / 2; break;  // empty
      default: break;
    }
    d.jlo.push_back(lo);
    d.jhi.push_back(hi);
  }
  return d;
}

TEST(FlashMlaQuant, EveryRowMatchesTheContract) {
  const auto rows = runnable_rows(flash_mlaq_family());
  ASSERT_FALSE(rows.empty());
  struct Shape {
    int64_t D, DR, bs, positions, M, p0, p1;
    bool separate_v, extremes;
  };
  const Shape shapes[] = {
      {512, 64, 128, 700, 70, 0, 700, false, false}, {512, 64, 16, 95, 1, 0, 95, true, false},
      {512, 64, 48, 200, 13, 37, 181, true, false},  {64, 32, 16, 64, 6, 0, 64, false, true},
      {512, 64, 128, 129, 4, 64, 129, false, true},  {64, 32, 48, 5, 7, 0, 5, true, false},
      {512, 64, 128, 300, 24, 100, 100, false, false},
  };
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    const Data d = make(seed++, s.D, s.DR, s.bs, s.positions, s.M, s.extremes);
    // the contract in double: positions [max(p0, jlo), min(p1, jhi))
    const MlaqCache cache = d.cache(s.separate_v);
    std::vector<double> ro(static_cast<size_t>(s.M * s.D)), rm(static_cast<size_t>(s.M)), rl(static_cast<size_t>(s.M));
    for (int64_t m = 0; m < s.M; ++m) {
      const int64_t j0 = std::max(s.p0, d.jlo[static_cast<size_t>(m)]), j1 = std::min(s.p1, d.jhi[static_cast<size_t>(m)]);
      std::vector<double> sc;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t row = cache.block_ids[j / s.bs] * s.D * s.bs + (j % s.bs) * 32;
        const int64_t rrow = cache.block_ids[j / s.bs] * s.DR * s.bs + (j % s.bs) * 16;
        double a = 0, r = 0;
        for (int64_t c = 0; c < s.D; ++c)
          a += static_cast<double>(d.q[static_cast<size_t>(m * s.D + c)]) * cache.k[row + (c / 32) * s.bs * 32 + c % 32];
        for (int64_t c = 0; c < s.DR; ++c)
          r += static_cast<double>(bf16_to_float(d.qr[static_cast<size_t>(m * s.DR + c)])) *
               bf16_to_float(cache.kr[rrow + (c / 16) * s.bs * 16 + c % 16]);
        sc.push_back(static_cast<double>(d.fac[static_cast<size_t>(m)]) * (a + r));
        mx = std::max(mx, sc.back());
      }
      double l = 0;
      for (int64_t j = j0; j < j1; ++j) {
        const double e = std::exp(sc[static_cast<size_t>(j - j0)] - mx);
        l += e;
        const int64_t row = cache.block_ids[j / s.bs] * s.D * s.bs + (j % s.bs) * 32;
        for (int64_t c = 0; c < s.D; ++c)
          ro[static_cast<size_t>(m * s.D + c)] += e * cache.v[row + (c / 32) * s.bs * 32 + c % 32];
      }
      rm[static_cast<size_t>(m)] = mx;
      rl[static_cast<size_t>(m)] = l;
    }
    for (const auto& row : rows) {
      SCOPED_TRACE(row.name + " D " + std::to_string(s.D) + " M " + std::to_string(s.M) + " bs " + std::to_string(s.bs));
      std::vector<float> o(static_cast<size_t>(s.M * s.D), std::nanf("")), mo(static_cast<size_t>(s.M)),
          lo(static_cast<size_t>(s.M));
      std::vector<uint64_t> scratch(static_cast<size_t>(flash_mlaq_scratch_bytes(s.M, s.D, s.DR) / 8 + 8));
      MlaqArgs a;
      a.M = s.M;
      a.D = s.D;
      a.DR = s.DR;
      a.q = d.q.data();
      a.qr = d.qr.data();
      a.fac = d.fac.data();
      a.jlo = d.jlo.data();
      a.jhi = d.jhi.data();
      a.p0 = s.p0;
      a.p1 = s.p1;
      a.kv = cache;
      a.o = o.data();
      a.m = mo.data();
      a.l = lo.data();
      row.value(a, scratch.data());
      for (int64_t m = 0; m < s.M; ++m) {
        const double l = rl[static_cast<size_t>(m)];
        if (l == 0) {
          EXPECT_TRUE(std::isinf(mo[static_cast<size_t>(m)]) && mo[static_cast<size_t>(m)] < 0) << "row " << m;
          EXPECT_EQ(lo[static_cast<size_t>(m)], 0.0f) << "row " << m;
          continue;
        }
        const double mref = rm[static_cast<size_t>(m)];
        ASSERT_NEAR(mo[static_cast<size_t>(m)], mref, 1e-5 * std::fabs(mref) + 1e-6) << "row " << m;
        ASSERT_NEAR(lo[static_cast<size_t>(m)], l, 1e-4 * l) << "row " << m;
        double big = 0;
        for (int64_t c = 0; c < s.D; ++c) big = std::max(big, std::fabs(ro[static_cast<size_t>(m * s.D + c)] / l));
        for (int64_t c = 0; c < s.D; ++c) {
          const double want = ro[static_cast<size_t>(m * s.D + c)] / l, got = o[static_cast<size_t>(m * s.D + c)] / lo[static_cast<size_t>(m)];
          ASSERT_NEAR(got, want, 4e-3 * big + 1e-6) << "row " << m << " channel " << c;
        }
      }
    }
  }
}

}  // namespace
}  // namespace mlaops::kernels

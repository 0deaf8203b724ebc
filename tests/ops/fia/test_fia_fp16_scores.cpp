// FP16 scores of FusedInferAttentionScoreV4's prefill kernels are fp32 sums of exact FP16 products,
// as the NPU's (docs/ops/fused_infer_attention_score.md "Numerics"): the kernels split each FP16
// operand into exact bf16 parts (x = hi + lo) and must form every product of the parts, lo x lo
// included (without it a score moves by up to 2^-18 of sum |q k|: the fuzzer found softmaxLse
// 1.2e-5 off at scale 1, D 128).
//
// The data make every fp32 sum exact whatever its order: q and k are integers times 2^-e with at
// most 10 significant bits (so lo != 0 for most of them) and sum |q k| below 2^24 units. With one
// key per batch the row's lse is its score (exp(0) = 1) and its output is that key's value row, so
// the operator's softmaxLse must equal the exact dot product to fp32 rounding and attentionOut the
// value bits. Every ISA level and the portable panel row; shapes take the panel kernel (6 query
// rows per item) and the lane kernel (64 rows per item, AVX-512 BF16 hosts).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "mlaops/numeric.h"
#include "ops/fia/fia_harness.h"

namespace mlaops::testing {
namespace {

struct ScoreCase {
  const char* name;
  int64_t B, N, KVN, Sq, D;
  int64_t max_int;  // q, k = integer in [-max_int, max_int] * 2^-exp
  int exp;
};

// An integer in [-max_int, max_int] times 2^-e, as FP16 (exact: at most 11 significant bits).
void fill_ints(fia_test::HostTensor* t, int64_t max_int, int e, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(-max_int, max_int);
  for (int64_t i = 0; i < t->numel(); ++i) t->set_flat(i, std::ldexp(static_cast<double>(dist(rng)), -e));
}

TEST(FiaFp16Scores, LseIsTheExactDotProduct) {
  // (max_int + 2)^2 * D < 2^24: every partial sum of part products is an exact fp32 integer multiple
  const ScoreCase kCases[] = {
      {"panel D64", 2, 2, 1, 3, 64, 500, 9},    {"panel D16", 3, 4, 2, 2, 16, 1000, 10},
      {"lanes D64", 1, 16, 1, 4, 64, 500, 9},   {"lanes D128 GQA", 2, 32, 2, 2, 128, 350, 9},
  };
  int64_t lo_parts = 0;
  for (const ScoreCase& sc : kCases) {
    ASSERT_LT((sc.max_int + 2) * (sc.max_int + 2) * sc.D, int64_t{1} << 24) << sc.name;
    FiaCaseData d;
    d.canon = fia_test::make_canonical(DType::kFloat16, sc.B, sc.N, sc.KVN, sc.Sq, 1, sc.D, sc.D, 0, 3);
    fill_ints(&d.canon.q, sc.max_int, sc.exp, 11);
    fill_ints(&d.canon.k, sc.max_int, sc.exp, 12);
    for (int64_t i = 0; i < d.canon.q.numel(); ++i) {  // values with a bf16 lo part
      const double x = d.canon.q.flat(i);
      lo_parts += static_cast<double>(bf16_to_float(float_to_bf16(static_cast<float>(x)))) != x;
    }
    d.cfg.layout = "BNSD";
    d.cfg.scale = 1.0;
    d.cfg.lse = true;
    const int64_t G = sc.N / sc.KVN;
    for (const FiaKernelConfig& k : fia_kernel_configs()) {
      if (!set_isa(k.isa) || !set_kernel_override(k.override_rows)) continue;
      const std::string where = fia_kernel_config_name(sc.name, k);
      auto op = fia_test::build_fia_run(d.canon, d.cfg);
      ASSERT_NE(op, nullptr) << where;
      ASSERT_EQ(run_fia_cpp(op->params), kSuccess) << where << ": " << last_error_message();
      const fia_test::HostTensor lse = op->lse_bns(), out = op->out_bnsd();
      int64_t bad_lse = 0, bad_out = 0;
      double worst = 0;
      for (int64_t b = 0; b < sc.B; ++b)
        for (int64_t n = 0; n < sc.N; ++n)
          for (int64_t s = 0; s < sc.Sq; ++s) {
            double exact = 0;  // integer multiples of 2^-2e: exact in double
            for (int64_t c = 0; c < sc.D; ++c)
              exact += d.canon.q.get({b, n, s, c}) * d.canon.k.get({b, n / G, 0, c});
            const double got = lse.get({b, n, s, 0});
            const double diff = std::fabs(got - exact);
            worst = std::max(worst, diff);
            // the score is exact; the softmax adds at most a few fp32 ulps (m + log(1))
            if (!(diff <= 4 * std::ldexp(std::max(1.0, std::fabs(exact)), -24))) ++bad_lse;
            for (int64_t c = 0; c < sc.D; ++c)
              bad_out += out.get({b, n, s, c}) != d.canon.v.get({b, n / G, 0, c});
          }
      EXPECT_EQ(bad_lse, 0) << where << ": worst |lse - q.k| " << worst;
      EXPECT_EQ(bad_out, 0) << where;
    }
    set_kernel_override("");
    reset_isa();
  }
  EXPECT_GT(lo_parts, 0);  // the data exercise the lo parts
}

}  // namespace
}  // namespace mlaops::testing

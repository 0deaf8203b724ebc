// Property tests of the float64 MlaProlog reference (reference/mla_prolog/mla_prolog_ref.h): hand-checked
// pieces, weight-format and token-layout invariance, cache layouts and skip/empty rules, and the
// consistency between quantization scenarios.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "mlaops/mla_prolog.h"
#include "mlaops/numeric.h"
#include "mlaops/status.h"
#include "reference/mla_prolog/mla_prolog_ref.h"
#include "testkit/mla_prolog_test_data.h"

namespace mlaops {
namespace {

using testdata::HostTensor;
using testdata::make_mla_prolog_case;
using testdata::MlaPrologCase;
using testdata::MlaPrologCaseConfig;
using testdata::WeightForm;

constexpr MlaPrologScenario kAllScenarios[] = {
    MlaPrologScenario::kNoQuant, MlaPrologScenario::kPartialQuantKvNoQuant, MlaPrologScenario::kPartialQuantKvQuant,
    MlaPrologScenario::kFullQuantKvNoQuant, MlaPrologScenario::kFullQuantKvQuant};

MlaPrologCaseConfig config(MlaPrologScenario sc) {
  MlaPrologCaseConfig cfg;
  cfg.scenario = sc;
  return cfg;
}

void run_ok(const MlaPrologCase& c) {
  const Status st = mla_prolog_ref(c.params());
  ASSERT_EQ(st, kSuccess) << last_error_message();
}

// Element j of flat slot p of a cache, by the formulas of docs/ops/mla_prolog.md on a contiguous tensor.
double cache_elem(const HostTensor& cache, MlaPrologCacheMode mode, int64_t p, int64_t j) {
  const int64_t bs = cache.view.dims[1], h = cache.view.dims[3];
  int64_t off = p * h + j;
  if (mode == MlaPrologCacheMode::kPaNz) {
    const int64_t c0 = 32 / dtype_size(cache.view.dtype);
    off = (p / bs) * bs * h + (j / c0) * bs * c0 + (p % bs) * c0 + j % c0;
  }
  return load_f64(cache.view, off);
}

std::vector<int64_t> cache_indices(const MlaPrologCase& c) {
  std::vector<int64_t> v;
  for (int64_t t = 0; t < c.cache_index.numel(); ++t) v.push_back(static_cast<int64_t>(c.cache_index.get(t)));
  return v;
}

std::string name_of(MlaPrologScenario sc) { return mla_prolog_scenario_name(sc); }

// ------------------------------------------------------------------------------------------
// (a) hand-checked pieces

TEST(MlaPrologRefPieces, RmsNormKnownVector) {
  const double v[2] = {3.0, 4.0}, gamma[2] = {1.0, 2.0};
  double out[2];
  mla_prolog_rms_norm(v, gamma, 2, 0.0, out);  // rms = sqrt((9 + 16) / 2) = sqrt(12.5)
  EXPECT_DOUBLE_EQ(out[0], 3.0 / std::sqrt(12.5));
  EXPECT_DOUBLE_EQ(out[1], 8.0 / std::sqrt(12.5));
  mla_prolog_rms_norm(v, gamma, 2, 0.5, out);  // eps inside the sqrt: sqrt(12.5 + 0.5) = sqrt(13)
  EXPECT_DOUBLE_EQ(out[0], 3.0 / std::sqrt(13.0));
  const double zero[2] = {0.0, 0.0};
  mla_prolog_rms_norm(zero, gamma, 2, 1e-5, out);
  EXPECT_EQ(out[0], 0.0);
  EXPECT_EQ(out[1], 0.0);
}

TEST(MlaPrologRefPieces, RopeDeinterleavesThenRotatesHalf) {
  // v = [1, 2, 3, 4] -> u = [1, 3 | 2, 4] (even elements, then odd elements)
  const double v[4] = {1, 2, 3, 4};
  const double c[4] = {1.0, 0.0, 0.5, 2.0};
  const double s[4] = {0.0, 1.0, 0.25, -1.0};
  double out[4];
  mla_prolog_rope(v, c, s, 4, out);
  EXPECT_DOUBLE_EQ(out[0], 1 * 1.0 - 2 * 0.0);   // u0*c0 - u2*s0
  EXPECT_DOUBLE_EQ(out[1], 3 * 0.0 - 4 * 1.0);   // u1*c1 - u3*s1
  EXPECT_DOUBLE_EQ(out[2], 2 * 0.5 + 1 * 0.25);  // u2*c2 + u0*s2
  EXPECT_DOUBLE_EQ(out[3], 4 * 2.0 + 3 * -1.0);  // u3*c3 + u1*s3
  // cos = 1, sin = 0: pure de-interleave, not re-interleaved
  const double one[4] = {1, 1, 1, 1}, nil[4] = {0, 0, 0, 0};
  mla_prolog_rope(v, one, nil, 4, out);
  EXPECT_EQ(out[0], 1.0);
  EXPECT_EQ(out[1], 3.0);
  EXPECT_EQ(out[2], 2.0);
  EXPECT_EQ(out[3], 4.0);
}

TEST(MlaPrologRefPieces, DynQuantRowKnownRow) {
  // m = 127 -> scale 1, q = clamp(rint(v)) with ties to even
  const double v[6] = {127.0, 62.5, -0.5, 1.5, -2.5, 0.0};
  int8_t q[6];
  EXPECT_EQ(mla_prolog_dyn_quant_row(v, 6, q), 1.0);
  const int8_t want[6] = {127, 62, 0, 2, -2, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(q[i], want[i]) << i;
  // m = 2: scale 2/127, q = rint(v * 63.5)
  const double w[4] = {-2.0, 1.0, 0.5, 0.01};
  EXPECT_DOUBLE_EQ(mla_prolog_dyn_quant_row(w, 4, q), 2.0 / 127.0);
  EXPECT_EQ(q[0], -127);
  EXPECT_EQ(q[1], 64);  // 63.5 -> 64 (tie to even)
  EXPECT_EQ(q[2], 32);  // 31.75
  EXPECT_EQ(q[3], 1);   // 0.635
  // all-zero row: scale 0, q = 0 (documented choice)
  const double z[3] = {0.0, -0.0, 0.0};
  int8_t qz[3] = {5, 5, 5};
  EXPECT_EQ(mla_prolog_dyn_quant_row(z, 3, qz), 0.0);
  for (int8_t x : qz) EXPECT_EQ(x, 0);
}

TEST(MlaPrologRefPieces, QuantQueryRowRoundsHalfAway) {
  const double v[5] = {-127.0, 0.5, -0.5, 2.5, 126.5};
  int8_t q[5];
  EXPECT_EQ(mla_prolog_quant_query_row(v, 5, q), 1.0);
  const int8_t want[5] = {-127, 1, -1, 3, 127};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(q[i], want[i]) << i;
  const double z[2] = {0.0, 0.0};
  int8_t qz[2] = {9, 9};
  EXPECT_EQ(mla_prolog_quant_query_row(z, 2, qz), 0.0);
  EXPECT_EQ(qz[0], 0);
  EXPECT_EQ(qz[1], 0);
}

TEST(MlaPrologRefPieces, CacheOffsetsOnKnownSlots) {
  // [BlockNum 4, BlockSize 16, 1, H 32]; slot 37 -> block 2, offset 5
  int8_t i8[4 * 16 * 32];
  TensorView kv = make_view(i8, DType::kInt8, {4, 16, 1, 32});
  EXPECT_EQ(mla_prolog_cache_offset(kv, MlaPrologCacheMode::kPaBsnd, 37, 5), 37 * 32 + 5);
  // PA_NZ int8 (c0 32): 2*16*32 + (5/32)*16*32 + 5*32 + 5 = 1189
  EXPECT_EQ(mla_prolog_cache_offset(kv, MlaPrologCacheMode::kPaNz, 37, 5), 1189);
  // PA_NZ bf16 (c0 16), j = 21: 1024 + 1*16*16 + 5*16 + 5 = 1365
  uint16_t b16[4 * 16 * 32];
  TensorView kb = make_view(b16, DType::kBFloat16, {4, 16, 1, 32});
  EXPECT_EQ(mla_prolog_cache_offset(kb, MlaPrologCacheMode::kPaNz, 37, 21), 1365);
  EXPECT_EQ(mla_prolog_cache_offset(kb, MlaPrologCacheMode::kPaNz, 0, 0), 0);
  EXPECT_EQ(mla_prolog_cache_offset(kb, MlaPrologCacheMode::kPaNz, 63, 31), 3 * 512 + 256 + 15 * 16 + 15);
  // A non-contiguous block axis (blocks 1024 elements apart) is honoured in both modes.
  kb.strides[0] = 1024;
  EXPECT_EQ(mla_prolog_cache_offset(kb, MlaPrologCacheMode::kPaNz, 37, 21), 2048 + 256 + 80 + 5);
  EXPECT_EQ(mla_prolog_cache_offset(kb, MlaPrologCacheMode::kPaBsnd, 37, 21), 2048 + 5 * 32 + 21);
}

TEST(MlaPrologRefPieces, ScenarioFromDtypes) {
  const DType bf = DType::kBFloat16, i8 = DType::kInt8;
  EXPECT_EQ(mla_prolog_scenario(bf, bf, bf), MlaPrologScenario::kNoQuant);
  EXPECT_EQ(mla_prolog_scenario(bf, bf, i8), MlaPrologScenario::kNoQuant);
  EXPECT_EQ(mla_prolog_scenario(bf, i8, bf), MlaPrologScenario::kPartialQuantKvNoQuant);
  EXPECT_EQ(mla_prolog_scenario(bf, i8, i8), MlaPrologScenario::kPartialQuantKvQuant);
  EXPECT_EQ(mla_prolog_scenario(i8, i8, bf), MlaPrologScenario::kFullQuantKvNoQuant);
  EXPECT_EQ(mla_prolog_scenario(i8, bf, i8), MlaPrologScenario::kFullQuantKvQuant);
  EXPECT_STREQ(mla_prolog_cache_mode_name(MlaPrologCacheMode::kPaNz), "PA_NZ");
}

TEST(MlaPrologRefPieces, DimsFromParams) {
  MlaPrologCaseConfig cfg = config(MlaPrologScenario::kFullQuantKvQuant);
  cfg.Hcq = 40;  // not a multiple of c0 = 32: the 4-D NZ weightDq pads it to 64
  MlaPrologCase c = make_mla_prolog_case(cfg);
  MlaPrologDims d;
  ASSERT_EQ(mla_prolog_dims(c.params(), &d), kSuccess) << last_error_message();
  EXPECT_TRUE(d.bsh);
  EXPECT_EQ(d.B, 2);
  EXPECT_EQ(d.S, 3);
  EXPECT_EQ(d.T, 6);
  EXPECT_EQ(d.He, 64);
  EXPECT_EQ(d.Hcq, 40);
  EXPECT_EQ(d.N, 2);
  EXPECT_EQ(d.D, 16);
  EXPECT_EQ(d.Dr, 16);
  EXPECT_EQ(d.Hckv, 32);
  EXPECT_EQ(d.block_num, 4);
  EXPECT_EQ(d.block_size, 16);
  run_ok(c);

  cfg.bsh = false;
  cfg.weight_form = WeightForm::kNz2d;
  MlaPrologCase t = make_mla_prolog_case(cfg);
  ASSERT_EQ(mla_prolog_dims(t.params(), &d), kSuccess) << last_error_message();
  EXPECT_FALSE(d.bsh);
  EXPECT_EQ(d.T, 6);
  EXPECT_EQ(d.B, 6);
  EXPECT_EQ(d.S, 1);
  EXPECT_EQ(d.Hcq, 40);
}

// ------------------------------------------------------------------------------------------
// (b) NZ 4-D, NZ 2-D + 4-D storage and ND weights give bit-identical outputs

TEST(MlaPrologRefWeights, NzFormsAndNdAreBitIdentical) {
  for (MlaPrologScenario sc : kAllScenarios) {
    SCOPED_TRACE(name_of(sc));
    MlaPrologCaseConfig cfg = config(sc);
    cfg.N = 3;
    cfg.Dr = 8;   // uq_qr cols 72 and dkv_kr cols 40: both padded in NZ
    cfg.Hcq = 24; // padded rows in weightUqQr
    cfg.He = 40;  // padded rows in weightDq / weightDkvKr
    cfg.weight_form = WeightForm::kNz4d;
    MlaPrologCase a = make_mla_prolog_case(cfg);
    cfg.weight_form = WeightForm::kNz2d;
    MlaPrologCase b = make_mla_prolog_case(cfg);
    cfg.weight_form = WeightForm::kNd;
    MlaPrologCase c = make_mla_prolog_case(cfg);
    run_ok(a);
    run_ok(b);
    run_ok(c);
    for (const MlaPrologCase* other : {&b, &c}) {
      EXPECT_TRUE(testdata::same_bytes(a.query_out, other->query_out));
      EXPECT_TRUE(testdata::same_bytes(a.query_rope_out, other->query_rope_out));
      EXPECT_TRUE(testdata::same_bytes(a.kv_cache, other->kv_cache));
      EXPECT_TRUE(testdata::same_bytes(a.kr_cache, other->kr_cache));
      EXPECT_TRUE(testdata::same_bytes(a.dequant_scale_q_nope_out, other->dequant_scale_q_nope_out));
    }
    // the run wrote something other than the canary
    EXPECT_FALSE(testdata::all_bytes(a.query_out, cfg.canary));
    EXPECT_FALSE(testdata::all_bytes(a.query_rope_out, cfg.canary));
  }
}

TEST(MlaPrologRefWeights, StridedViewsReadAndWriteTheSameValues) {
  // token_x and query_out as views into wider buffers (row pitch + 8 elements).
  MlaPrologCaseConfig cfg = config(MlaPrologScenario::kPartialQuantKvQuant);
  cfg.bsh = false;
  MlaPrologCase a = make_mla_prolog_case(cfg);
  run_ok(a);
  MlaPrologCase b = make_mla_prolog_case(cfg);
  const int64_t T = cfg.T(), He = cfg.He, N = cfg.N, Hckv = cfg.Hckv;
  std::vector<uint16_t> x_wide(static_cast<size_t>(T * (He + 8)), 0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t k = 0; k < He; ++k)
      x_wide[static_cast<size_t>(t * (He + 8) + k)] = double_to_bf16(b.token_x.get(t * He + k));
  std::vector<uint16_t> q_wide(static_cast<size_t>(T * N * (Hckv + 8)), 0);
  MlaPrologParams p = b.params();
  p.token_x = make_view(x_wide.data(), DType::kBFloat16, {T, He});
  p.token_x.strides[0] = He + 8;
  p.query_out = make_view(q_wide.data(), DType::kBFloat16, {T, N, Hckv});
  p.query_out.strides[1] = Hckv + 8;
  p.query_out.strides[0] = N * (Hckv + 8);
  ASSERT_EQ(mla_prolog_ref(p), kSuccess) << last_error_message();
  for (int64_t r = 0; r < T * N; ++r)
    for (int64_t k = 0; k < Hckv; ++k)
      EXPECT_EQ(bf16_to_float(q_wide[static_cast<size_t>(r * (Hckv + 8) + k)]), a.query_out.get(r * Hckv + k));
  EXPECT_TRUE(testdata::same_bytes(a.kv_cache, b.kv_cache));
  EXPECT_TRUE(testdata::same_bytes(a.kr_cache, b.kr_cache));
}

// ------------------------------------------------------------------------------------------
// (c) PA_BSND and PA_NZ hold the same rows at their mapped positions

TEST(MlaPrologRefCache, BsndAndNzHoldTheSameRows) {
  for (MlaPrologScenario sc : kAllScenarios) {
    SCOPED_TRACE(name_of(sc));
    MlaPrologCaseConfig cfg = config(sc);
    cfg.Hckv = 64;  // two c0 chunks even for int8
    cfg.Dr = 32;    // two c0 chunks for bf16, one for int8
    cfg.cache_mode = MlaPrologCacheMode::kPaBsnd;
    MlaPrologCase a = make_mla_prolog_case(cfg);
    cfg.cache_mode = MlaPrologCacheMode::kPaNz;
    MlaPrologCase b = make_mla_prolog_case(cfg);
    run_ok(a);
    run_ok(b);
    EXPECT_TRUE(testdata::same_bytes(a.query_out, b.query_out));
    EXPECT_TRUE(testdata::same_bytes(a.query_rope_out, b.query_rope_out));
    int64_t checked = 0;
    for (int64_t p : cache_indices(a)) {
      for (int64_t j = 0; j < cfg.Hckv; ++j, ++checked)
        ASSERT_EQ(cache_elem(a.kv_cache, MlaPrologCacheMode::kPaBsnd, p, j),
                  cache_elem(b.kv_cache, MlaPrologCacheMode::kPaNz, p, j))
            << "slot " << p << " j " << j;
      for (int64_t j = 0; j < cfg.Dr; ++j)
        ASSERT_EQ(cache_elem(a.kr_cache, MlaPrologCacheMode::kPaBsnd, p, j),
                  cache_elem(b.kr_cache, MlaPrologCacheMode::kPaNz, p, j))
            << "slot " << p << " j " << j;
    }
    EXPECT_EQ(checked, cfg.T() * cfg.Hckv);
    // Same multiset of bytes overall: the NZ cache is a permutation of the BSND cache.
    std::vector<uint8_t> sa = a.kv_cache.bytes, sb = b.kv_cache.bytes;
    std::sort(sa.begin(), sa.end());
    std::sort(sb.begin(), sb.end());
    EXPECT_EQ(sa, sb);
  }
}

TEST(MlaPrologRefCache, NzNeedsRowWidthMultipleOfC0) {
  MlaPrologCaseConfig cfg = config(MlaPrologScenario::kNoQuant);
  cfg.Dr = 8;  // bf16 c0 = 16
  cfg.cache_mode = MlaPrologCacheMode::kPaNz;
  MlaPrologCase c = make_mla_prolog_case(cfg);
  EXPECT_EQ(mla_prolog_ref(c.params()), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("krCacheRef"), std::string::npos) << last_error_message();
  EXPECT_TRUE(testdata::all_bytes(c.kr_cache, cfg.canary));
  EXPECT_TRUE(testdata::all_bytes(c.query_out, cfg.canary));
}

// ------------------------------------------------------------------------------------------
// (d) cacheIndex -1 leaves those rows byte-identical; only the written slots change

TEST(MlaPrologRefCache, NegativeIndexSkipsTheWrite) {
  for (MlaPrologCacheMode mode : {MlaPrologCacheMode::kPaBsnd, MlaPrologCacheMode::kPaNz}) {
    for (MlaPrologScenario sc : {MlaPrologScenario::kNoQuant, MlaPrologScenario::kPartialQuantKvQuant,
                                 MlaPrologScenario::kFullQuantKvQuant}) {
      SCOPED_TRACE(name_of(sc) + " " + mla_prolog_cache_mode_name(mode));
      MlaPrologCaseConfig cfg = config(sc);
      cfg.cache_mode = mode;
      cfg.Dr = 32;  // an int8 kr cache in PA_NZ needs Dr % 32 == 0
      MlaPrologCase c = make_mla_prolog_case(cfg);
      c.cache_index.set(1, -1);
      c.cache_index.set(4, -1);
      run_ok(c);
      // Reference image: canary everywhere except the rows of the non-negative indices.
      std::set<int64_t> written;
      for (int64_t p : cache_indices(c))
        if (p >= 0) written.insert(p);
      EXPECT_EQ(written.size(), static_cast<size_t>(cfg.T() - 2));
      for (const HostTensor* cache : {&c.kv_cache, &c.kr_cache}) {
        const int64_t es = dtype_size(cache->view.dtype), slots = cfg.block_num * cfg.block_size;
        std::vector<bool> touched(cache->bytes.size(), false);
        for (int64_t p : written)
          for (int64_t j = 0; j < cache->view.dims[3]; ++j) {
            const int64_t off = mla_prolog_cache_offset(cache->view, mode, p, j);
            for (int64_t b = 0; b < es; ++b) touched[static_cast<size_t>(off * es + b)] = true;
          }
        int64_t n_touched = 0;
        for (size_t i = 0; i < cache->bytes.size(); ++i) {
          if (touched[i]) {
            ++n_touched;
          } else {
            ASSERT_EQ(cache->bytes[i], cfg.canary) << "byte " << i;
          }
        }
        EXPECT_EQ(n_touched, static_cast<int64_t>(written.size()) * cache->view.dims[3] * es);
        EXPECT_LT(n_touched, slots * cache->view.dims[3] * es);
      }
    }
  }
}

TEST(MlaPrologRefCache, DuplicateIndicesLastTokenWins) {
  MlaPrologCaseConfig cfg = config(MlaPrologScenario::kNoQuant);
  MlaPrologCase a = make_mla_prolog_case(cfg);
  MlaPrologCase b = make_mla_prolog_case(cfg);
  const double slot = a.cache_index.get(4);
  a.cache_index.set(1, slot);  // tokens 1 and 4 -> the same slot
  b.cache_index.set(1, -1);    // token 4 alone
  run_ok(a);
  run_ok(b);
  EXPECT_TRUE(testdata::same_bytes(a.kv_cache, b.kv_cache));
  EXPECT_TRUE(testdata::same_bytes(a.kr_cache, b.kr_cache));
}

// ------------------------------------------------------------------------------------------
// (e) T == 0 writes nothing; BlockNum == 0 computes the outputs and leaves the caches alone

TEST(MlaPrologRefEmpty, ZeroTokensWriteNothing) {
  for (MlaPrologScenario sc : kAllScenarios) {
    for (bool bsh : {true, false}) {
      SCOPED_TRACE(name_of(sc) + (bsh ? " BSH" : " TND"));
      MlaPrologCaseConfig cfg = config(sc);
      cfg.B = 0;
      cfg.bsh = bsh;
      MlaPrologCase c = make_mla_prolog_case(cfg);
      run_ok(c);
      for (const HostTensor* h : {&c.kv_cache, &c.kr_cache, &c.query_out, &c.query_rope_out})
        EXPECT_TRUE(testdata::all_bytes(*h, cfg.canary));
    }
  }
}

TEST(MlaPrologRefEmpty, ZeroBlocksComputeOutputsOnly) {
  for (MlaPrologScenario sc : kAllScenarios) {
    SCOPED_TRACE(name_of(sc));
    MlaPrologCaseConfig cfg = config(sc);
    MlaPrologCase full = make_mla_prolog_case(cfg);
    cfg.block_num = 0;
    MlaPrologCase empty = make_mla_prolog_case(cfg);  // cacheIndex all 0: out of [0, 0), never read
    run_ok(full);
    run_ok(empty);
    EXPECT_TRUE(testdata::same_bytes(full.query_out, empty.query_out));
    EXPECT_TRUE(testdata::same_bytes(full.query_rope_out, empty.query_rope_out));
    EXPECT_TRUE(testdata::same_bytes(full.dequant_scale_q_nope_out, empty.dequant_scale_q_nope_out));
    EXPECT_TRUE(testdata::all_bytes(empty.kv_cache, cfg.canary));  // the 1-byte canary buffer
    EXPECT_TRUE(testdata::all_bytes(empty.kr_cache, cfg.canary));
  }
}

// ------------------------------------------------------------------------------------------
// (f) BSH (B, S) and TND (T = B*S) give identical results

TEST(MlaPrologRefLayout, BshAndTndAreIdentical) {
  for (MlaPrologScenario sc : kAllScenarios) {
    for (MlaPrologCacheMode mode : {MlaPrologCacheMode::kPaBsnd, MlaPrologCacheMode::kPaNz}) {
      SCOPED_TRACE(name_of(sc) + " " + mla_prolog_cache_mode_name(mode));
      MlaPrologCaseConfig cfg = config(sc);
      cfg.cache_mode = mode;
      cfg.B = 3;
      cfg.S = 2;
      cfg.N = 4;
      cfg.Dr = 32;  // an int8 kr cache in PA_NZ needs Dr % 32 == 0
      cfg.bsh = true;
      MlaPrologCase a = make_mla_prolog_case(cfg);
      cfg.bsh = false;
      MlaPrologCase b = make_mla_prolog_case(cfg);
      ASSERT_EQ(a.query_out.view.rank, 4);
      ASSERT_EQ(b.query_out.view.rank, 3);
      run_ok(a);
      run_ok(b);
      EXPECT_TRUE(testdata::same_bytes(a.query_out, b.query_out));
      EXPECT_TRUE(testdata::same_bytes(a.query_rope_out, b.query_rope_out));
      EXPECT_TRUE(testdata::same_bytes(a.kv_cache, b.kv_cache));
      EXPECT_TRUE(testdata::same_bytes(a.kr_cache, b.kr_cache));
      EXPECT_TRUE(testdata::same_bytes(a.dequant_scale_q_nope_out, b.dequant_scale_q_nope_out));
    }
  }
}

// ------------------------------------------------------------------------------------------
// (g) consistency between scenarios

// ||a - b||_2 / ||b||_2 over one (token, head) row of n elements starting at `base`.
double rel_l2(const std::vector<double>& a, const std::vector<double>& b, int64_t base, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = base; i < base + n; ++i) {
    num += (a[static_cast<size_t>(i)] - b[static_cast<size_t>(i)]) * (a[static_cast<size_t>(i)] - b[static_cast<size_t>(i)]);
    den += b[static_cast<size_t>(i)] * b[static_cast<size_t>(i)];
  }
  return std::sqrt(num / den);
}

TEST(MlaPrologRefScenarios, PartialQuantQueryIsCloseToNoQuant) {
  // The same integer-valued weightUqQr as bf16 (NO_QUANT) and as int8 with scales 1 (PARTIAL):
  // the outputs differ only by the dynamic per-token quant of Cq (and bf16 roundings). Its
  // error is at most max|cn| / 254 per element, about 0.6% of the row norm (noise of a
  // uniform quantizer, std step/sqrt(12)); observed worst 0.8% per (token, head) row; allow 3%.
  for (bool smooth : {false, true}) {
    SCOPED_TRACE(smooth ? "smooth" : "no smooth");
    MlaPrologCaseConfig cfg = config(MlaPrologScenario::kNoQuant);
    cfg.integer_weights = true;
    cfg.unit_weight_scales = true;
    MlaPrologCase none = make_mla_prolog_case(cfg);
    cfg.scenario = MlaPrologScenario::kPartialQuantKvNoQuant;
    MlaPrologCase part = make_mla_prolog_case(cfg);
    if (smooth) {  // smooth = 1 must not change anything; it is ignored in NO_QUANT anyway
      part.smooth_scales_cq = testdata::from_values(DType::kFloat32, {1, cfg.Hcq},
                                                    std::vector<double>(static_cast<size_t>(cfg.Hcq), 1.0));
    }
    run_ok(none);
    run_ok(part);
    const std::vector<double> qa = part.query_out.values(), qb = none.query_out.values();
    const std::vector<double> ra = part.query_rope_out.values(), rb = none.query_rope_out.values();
    double worst_q = 0, worst_r = 0;
    for (int64_t r = 0; r < cfg.T() * cfg.N; ++r) {
      worst_q = std::max(worst_q, rel_l2(qa, qb, r * cfg.Hckv, cfg.Hckv));
      worst_r = std::max(worst_r, rel_l2(ra, rb, r * cfg.Dr, cfg.Dr));
    }
    EXPECT_LT(worst_q, 0.03);
    EXPECT_LT(worst_r, 0.03);
    EXPECT_GT(worst_q, 0.0);  // the quant path is really taken
    // The KV path does not depend on weightUqQr: identical caches.
    EXPECT_TRUE(testdata::same_bytes(none.kv_cache, part.kv_cache));
    EXPECT_TRUE(testdata::same_bytes(none.kr_cache, part.kr_cache));
  }
}

TEST(MlaPrologRefScenarios, SmoothScalesAreApplied) {
  MlaPrologCaseConfig cfg = config(MlaPrologScenario::kPartialQuantKvNoQuant);
  MlaPrologCase a = make_mla_prolog_case(cfg);
  cfg.smooth = true;
  MlaPrologCase b = make_mla_prolog_case(cfg);
  run_ok(a);
  run_ok(b);
  EXPECT_FALSE(testdata::same_bytes(a.query_out, b.query_out));
  EXPECT_TRUE(testdata::same_bytes(a.kv_cache, b.kv_cache));
}

TEST(MlaPrologRefScenarios, FullKvQuantMatchesFull) {
  MlaPrologCaseConfig cfg = config(MlaPrologScenario::kFullQuantKvNoQuant);
  cfg.N = 3;
  MlaPrologCase f = make_mla_prolog_case(cfg);
  cfg.scenario = MlaPrologScenario::kFullQuantKvQuant;
  MlaPrologCase q = make_mla_prolog_case(cfg);
  run_ok(f);
  run_ok(q);
  const int64_t T = cfg.T(), N = cfg.N, Hckv = cfg.Hckv, Dr = cfg.Dr;
  const double qs0 = q.quant_scale_ckv.get(0);
  for (int64_t r = 0; r < T * N; ++r) {
    const double dqs = q.dequant_scale_q_nope_out.get(r);
    double row_max = 0;
    for (int64_t k = 0; k < Hckv; ++k) row_max = std::max(row_max, std::fabs(f.query_out.get(r * Hckv + k)));
    EXPECT_NEAR(dqs, row_max / 127.0, 1e-6 * row_max) << "row " << r;
    // int8 query * dequantScaleQNope = bf16 query within one int8 step
    for (int64_t k = 0; k < Hckv; ++k)
      ASSERT_LE(std::fabs(q.query_out.get(r * Hckv + k) * dqs - f.query_out.get(r * Hckv + k)), dqs)
          << "row " << r << " k " << k;
    // query_rope(FULL+KVq) * dqs / qs0 = query_rope(FULL) within bf16 rounding
    for (int64_t i = 0; i < Dr; ++i) {
      const double want = f.query_rope_out.get(r * Dr + i);
      const double got = q.query_rope_out.get(r * Dr + i) * dqs / qs0;
      ASSERT_NEAR(got, want, std::fabs(want) * (1.0 / 128.0) + 1e-30) << "row " << r << " i " << i;
    }
  }
  // kv cache int8 = rint(kvn * qs0), the bf16 kv cache holding bf16(kvn): within 1
  for (int64_t p : cache_indices(f)) {
    for (int64_t j = 0; j < Hckv; ++j) {
      const double kv_bf16 = cache_elem(f.kv_cache, MlaPrologCacheMode::kPaBsnd, p, j);
      const double kv_i8 = cache_elem(q.kv_cache, MlaPrologCacheMode::kPaBsnd, p, j);
      ASSERT_LE(std::fabs(kv_i8 - int8_rint_sat(kv_bf16 * qs0)), 1.0) << "slot " << p << " j " << j;
    }
  }
  // kr cache stays bf16 and identical
  EXPECT_TRUE(testdata::same_bytes(f.kr_cache, q.kr_cache));
}

TEST(MlaPrologRefScenarios, PartialKvQuantCachesAreQuantizedRows) {
  MlaPrologCaseConfig cfg = config(MlaPrologScenario::kPartialQuantKvNoQuant);
  MlaPrologCase f = make_mla_prolog_case(cfg);
  cfg.scenario = MlaPrologScenario::kPartialQuantKvQuant;
  MlaPrologCase q = make_mla_prolog_case(cfg);
  run_ok(f);
  run_ok(q);
  EXPECT_TRUE(testdata::same_bytes(f.query_out, q.query_out));
  EXPECT_TRUE(testdata::same_bytes(f.query_rope_out, q.query_rope_out));
  int64_t exact = 0, total = 0;
  for (int64_t p : cache_indices(f)) {
    for (int64_t j = 0; j < cfg.Hckv; ++j, ++total) {  // per channel, from the fp32 kvn: within 1
      const double want = int8_rint_sat(cache_elem(f.kv_cache, MlaPrologCacheMode::kPaBsnd, p, j) *
                                        q.quant_scale_ckv.get(j));
      const double got = cache_elem(q.kv_cache, MlaPrologCacheMode::kPaBsnd, p, j);
      ASSERT_LE(std::fabs(got - want), 1.0) << "slot " << p << " j " << j;
      exact += got == want;
    }
    for (int64_t j = 0; j < cfg.Dr; ++j) {  // kr: quantized from the bf16-rounded row: exact
      const double want = int8_rint_sat(cache_elem(f.kr_cache, MlaPrologCacheMode::kPaBsnd, p, j) *
                                        q.quant_scale_ckr.get(j));
      ASSERT_EQ(cache_elem(q.kr_cache, MlaPrologCacheMode::kPaBsnd, p, j), want) << "slot " << p << " j " << j;
    }
  }
  EXPECT_GT(exact, total * 3 / 4);  // off-by-one only where bf16(kvn) moved across a .5
}

TEST(MlaPrologRefScenarios, ZeroQueryRowInFullKvQuant) {
  MlaPrologCaseConfig cfg = config(MlaPrologScenario::kFullQuantKvQuant);
  MlaPrologCase c = make_mla_prolog_case(cfg);
  for (int64_t i = 0; i < cfg.D * cfg.Hckv; ++i) c.weight_uk.set(i, 0.0);  // head 0 of Wuk = 0
  run_ok(c);
  for (int64_t t = 0; t < cfg.T(); ++t) {
    EXPECT_EQ(c.dequant_scale_q_nope_out.get(t * cfg.N), 0.0);
    EXPECT_GT(c.dequant_scale_q_nope_out.get(t * cfg.N + 1), 0.0);
    for (int64_t k = 0; k < cfg.Hckv; ++k) EXPECT_EQ(c.query_out.get((t * cfg.N) * cfg.Hckv + k), 0.0);
    for (int64_t i = 0; i < cfg.Dr; ++i) EXPECT_EQ(c.query_rope_out.get((t * cfg.N) * cfg.Dr + i), 0.0);
  }
}

// ------------------------------------------------------------------------------------------
// Wiring properties of RmsNorm and RoPE on the end-to-end path

TEST(MlaPrologRefProperties, KvRowHasUnitRmsWithUnitGamma) {
  MlaPrologCaseConfig cfg = config(MlaPrologScenario::kNoQuant);
  MlaPrologCase c = make_mla_prolog_case(cfg);
  for (int64_t j = 0; j < cfg.Hckv; ++j) c.rmsnorm_gamma_ckv.set(j, 1.0);
  run_ok(c);
  for (int64_t p : cache_indices(c)) {
    double ms = 0;
    for (int64_t j = 0; j < cfg.Hckv; ++j) {
      const double v = cache_elem(c.kv_cache, MlaPrologCacheMode::kPaBsnd, p, j);
      ms += v * v;
    }
    ms /= static_cast<double>(cfg.Hckv);
    EXPECT_NEAR(ms, 1.0, 2.0 / 256 + 1e-3) << "slot " << p;  // bf16 rounding + eps
  }
}

TEST(MlaPrologRefProperties, RopeRotatesTheDeinterleavedPairs) {
  // Identity tables (cos 1, sin 0) give the de-interleaved projections u; the real tables must
  // give (u[i] c - u[h+i] s, u[h+i] c + u[i] s) of them, within bf16 rounding.
  for (MlaPrologScenario sc : {MlaPrologScenario::kNoQuant, MlaPrologScenario::kPartialQuantKvQuant}) {
    SCOPED_TRACE(name_of(sc));
    MlaPrologCaseConfig cfg = config(sc);
    MlaPrologCase id = make_mla_prolog_case(cfg);
    MlaPrologCase rot = make_mla_prolog_case(cfg);
    for (int64_t i = 0; i < id.rope_cos.numel(); ++i) {
      id.rope_cos.set(i, 1.0);
      id.rope_sin.set(i, 0.0);
    }
    run_ok(id);
    run_ok(rot);
    const int64_t Dr = cfg.Dr, h = Dr / 2;
    auto check = [&](const std::vector<double>& u, const std::vector<double>& out, int64_t base, int64_t t) {
      for (int64_t i = 0; i < h; ++i) {
        const double c = rot.rope_cos.get(t * Dr + i), s = rot.rope_sin.get(t * Dr + i);
        const double lo = u[static_cast<size_t>(base + i)], hi = u[static_cast<size_t>(base + h + i)];
        const double tol = (std::fabs(lo) + std::fabs(hi)) * (1.0 / 64) + 1e-6;
        EXPECT_NEAR(out[static_cast<size_t>(base + i)], lo * c - hi * s, tol);
        EXPECT_NEAR(out[static_cast<size_t>(base + h + i)], hi * c + lo * s, tol);
      }
    };
    const std::vector<double> qu = id.query_rope_out.values(), qo = rot.query_rope_out.values();
    for (int64_t t = 0; t < cfg.T(); ++t)
      for (int64_t n = 0; n < cfg.N; ++n) check(qu, qo, (t * cfg.N + n) * Dr, t);
    if (sc == MlaPrologScenario::kNoQuant) {  // bf16 kr cache rows
      const std::vector<int64_t> idx = cache_indices(id);
      std::vector<double> ku, ko;
      for (int64_t t = 0; t < cfg.T(); ++t)
        for (int64_t j = 0; j < Dr; ++j) {
          ku.push_back(cache_elem(id.kr_cache, cfg.cache_mode, idx[static_cast<size_t>(t)], j));
          ko.push_back(cache_elem(rot.kr_cache, cfg.cache_mode, idx[static_cast<size_t>(t)], j));
        }
      for (int64_t t = 0; t < cfg.T(); ++t) check(ku, ko, t * Dr, t);
    }
    // The real tables do change the values.
    EXPECT_NE(qu, qo);
  }
}

// ------------------------------------------------------------------------------------------
// (h) errors: nothing is written

void expect_untouched(const MlaPrologCase& c) {
  for (const HostTensor* h : {&c.kv_cache, &c.kr_cache, &c.query_out, &c.query_rope_out, &c.dequant_scale_q_nope_out})
    EXPECT_TRUE(testdata::all_bytes(*h, c.cfg.canary));
}

TEST(MlaPrologRefErrors, OutOfRangeIndexFailsBeforeAnyWrite) {
  for (MlaPrologCacheMode mode : {MlaPrologCacheMode::kPaBsnd, MlaPrologCacheMode::kPaNz}) {
    MlaPrologCaseConfig cfg = config(MlaPrologScenario::kFullQuantKvQuant);
    cfg.cache_mode = mode;
    MlaPrologCase c = make_mla_prolog_case(cfg);
    const int64_t slots = cfg.block_num * cfg.block_size;
    c.cache_index.set(5, static_cast<double>(slots));  // the last token: earlier tokens are valid
    EXPECT_EQ(mla_prolog_ref(c.params()), kParamInvalid);
    const std::string msg = last_error_message();
    EXPECT_NE(msg.find("cacheIndex[5] = 64"), std::string::npos) << msg;
    expect_untouched(c);
  }
}

TEST(MlaPrologRefErrors, MissingScenarioTensorsAreRejected) {
  {
    MlaPrologCase c = make_mla_prolog_case(config(MlaPrologScenario::kFullQuantKvNoQuant));
    MlaPrologParams p = c.params();
    p.dequant_scale_x = nullptr;
    EXPECT_EQ(mla_prolog_ref(p), kParamNullptr);
    EXPECT_NE(std::string(last_error_message()).find("dequantScaleXOptional"), std::string::npos);
    expect_untouched(c);
  }
  {
    MlaPrologCase c = make_mla_prolog_case(config(MlaPrologScenario::kPartialQuantKvQuant));
    MlaPrologParams p = c.params();
    p.quant_scale_ckr = nullptr;
    EXPECT_EQ(mla_prolog_ref(p), kParamNullptr);
    expect_untouched(c);
  }
  {  // V1 cannot express full quant + KV quant: no dequantScaleQNope output
    MlaPrologCaseConfig cfg = config(MlaPrologScenario::kFullQuantKvQuant);
    cfg.q_nope_out = false;
    MlaPrologCase c = make_mla_prolog_case(cfg);
    EXPECT_EQ(mla_prolog_ref(c.params()), kParamNullptr);
    EXPECT_NE(std::string(last_error_message()).find("dequantScaleQNopeOutOptional"), std::string::npos);
    expect_untouched(c);
  }
  {  // wrong output dtype for the scenario
    MlaPrologCase c = make_mla_prolog_case(config(MlaPrologScenario::kNoQuant));
    MlaPrologParams p = c.params();
    p.query_out.dtype = DType::kInt8;
    EXPECT_EQ(mla_prolog_ref(p), kParamInvalid);
    expect_untouched(c);
  }
  {  // inconsistent shapes
    MlaPrologCase c = make_mla_prolog_case(config(MlaPrologScenario::kNoQuant));
    MlaPrologParams p = c.params();
    p.rope_sin.dims[p.rope_sin.rank - 1] = 8;
    EXPECT_EQ(mla_prolog_ref(p), kParamInvalid);
    expect_untouched(c);
  }
}

TEST(MlaPrologRefErrors, PlaceholderDequantScaleQNopeIsLeftUntouched) {
  for (MlaPrologScenario sc : kAllScenarios) {
    if (sc == MlaPrologScenario::kFullQuantKvQuant) continue;
    SCOPED_TRACE(name_of(sc));
    MlaPrologCase c = make_mla_prolog_case(config(sc));
    run_ok(c);
    EXPECT_TRUE(testdata::all_bytes(c.dequant_scale_q_nope_out, c.cfg.canary));
  }
}

}  // namespace
}  // namespace mlaops

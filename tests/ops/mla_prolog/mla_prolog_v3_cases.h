// Shared pieces of the aclnnMlaPrologV3WeightNz tests (test_mla_prolog_v3.cpp: V2 equivalence, the
// alpha scales and queryNormOut, the V3 rules; test_mla_prolog_v3_cache_modes.cpp: the V3 cache
// modes, per-tile and per-tensor KV quant; test_mla_prolog_v3_ranges.cpp: the V3 shape ranges and
// the plain aclnnMlaPrologV3): the scenario and cache-mode names, the vendor-shape cases (built once
// per process), the run against the reference under every ISA and the rejection check that proves
// no output or cache byte changed.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ops/mla_prolog/mla_prolog_aclnn_call.h"
#include "ops/mla_prolog/mla_prolog_harness.h"

namespace mlaops::testing::mla_prolog_v3 {

inline constexpr MlaPrologScenario kAll[] = {
    MlaPrologScenario::kNoQuant, MlaPrologScenario::kPartialQuantKvNoQuant, MlaPrologScenario::kPartialQuantKvQuant,
    MlaPrologScenario::kFullQuantKvNoQuant, MlaPrologScenario::kFullQuantKvQuant};
inline constexpr auto NQ = MlaPrologScenario::kNoQuant;
inline constexpr auto PQ = MlaPrologScenario::kPartialQuantKvNoQuant;
inline constexpr auto PKV = MlaPrologScenario::kPartialQuantKvQuant;
inline constexpr auto FQ = MlaPrologScenario::kFullQuantKvNoQuant;
inline constexpr auto FKV = MlaPrologScenario::kFullQuantKvQuant;

inline MlaPrologCaseConfig vendor_cfg(MlaPrologScenario sc, bool bsh, MlaPrologCacheMode mode) {
  return testdata::vendor_small_cfg(sc, bsh, mode);
}

inline MlaPrologCall v3_call() {
  MlaPrologCall c;
  c.v3 = true;
  return c;
}

// `base` through aclnnMlaPrologV3WeightNz under every ISA level (a clone per run) against the
// reference (computed once, on a clone).
inline void expect_v3_matches_reference(const MlaPrologCase& base) {
  MlaPrologCase ref = base.clone();
  ASSERT_EQ(mla_prolog_ref(ref.params()), kSuccess) << last_error_message() << " | " << describe(base.cfg);
  for (Isa isa : runnable_isas()) {
    set_isa(isa);
    SCOPED_TRACE(isa_name(isa));
    MlaPrologCase fast = base.clone();
    ASSERT_EQ(mla_prolog_call(fast, v3_call()), ACLNN_SUCCESS) << aclGetRecentErrMsg() << " | " << describe(base.cfg);
    expect_match(fast, ref);
  }
  reset_isa();
}

inline std::vector<const HostTensor*> outputs_of(const MlaPrologCase& c) {
  return {&c.query_out, &c.query_rope_out, &c.kv_cache, &c.kr_cache, &c.dequant_scale_q_nope_out,
          &c.query_norm_out, &c.dequant_scale_q_norm_out};
}

struct Snapshot {
  std::vector<std::vector<uint8_t>> bytes;
  explicit Snapshot(const MlaPrologCase& c) {
    for (const HostTensor* h : outputs_of(c)) bytes.push_back(h->bytes);
  }
  bool same(const MlaPrologCase& c) const {
    const auto o = outputs_of(c);
    for (size_t i = 0; i < o.size(); ++i)
      if (o[i]->bytes != bytes[i]) return false;
    return true;
  }
};

// The case of a scenario with queryNormOut (and its scale when quantized), built once.
inline const MlaPrologCase& v3_case(MlaPrologScenario sc) {
  static MlaPrologCase* cases[7] = {};
  const int i = static_cast<int>(sc);
  if (cases[i] == nullptr) {
    MlaPrologCaseConfig cfg = vendor_cfg(sc, false, MlaPrologCacheMode::kPaBsnd);
    cfg.query_norm = true;
    cases[i] = new MlaPrologCase(testdata::make_mla_prolog_case(cfg));
  }
  return *cases[i];
}

// Calls aclnnMlaPrologV3WeightNz on `c` with `call`; expects `code`, a message naming the
// parameter and the rule, and every output and cache byte unchanged.
inline void expect_rejected_in(const MlaPrologCase& c, aclnnStatus code, const char* param, const char* rule,
                               MlaPrologCall call) {
  const Snapshot before(c);
  call.v3 = true;
  const aclnnStatus s = mla_prolog_call(c, call);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_EQ(s, code) << msg;
  EXPECT_NE(msg.find(param), std::string::npos) << "message does not name " << param << ": " << msg;
  EXPECT_NE(msg.find(rule), std::string::npos) << "message does not name " << rule << ": " << msg;
  EXPECT_NE(msg.find("aclnnMlaPrologV3WeightNz"), std::string::npos) << msg;
  EXPECT_TRUE(before.same(c)) << "a rejected call changed an output or cache byte (" << rule << ")";
}

// The same on the scenario's case (v3_case), with the cacheMode string `cache_mode` (null: the case's).
inline void expect_rejected(MlaPrologScenario sc, aclnnStatus code, const char* param, const char* rule,
                            MlaPrologCall call, const char* cache_mode = nullptr) {
  call.cache_mode = cache_mode;
  expect_rejected_in(v3_case(sc), code, param, rule, call);
}

inline MlaPrologCall modes(int64_t w, int64_t kv, int64_t q) {
  MlaPrologCall c;
  c.modes[0] = w;
  c.modes[1] = kv;
  c.modes[2] = q;
  return c;
}
inline MlaPrologCall drop(const char* name) {
  MlaPrologCall c;
  const std::string n = name;
  c.mutate = [n](MlaPrologArgs& a) { a.passed[a.index(n)] = false; };
  return c;
}
inline MlaPrologCall edit(std::function<void(MlaPrologArgs&)> f) {
  MlaPrologCall c;
  c.mutate = std::move(f);
  return c;
}

// The V3 cache modes and per-tile KV quant.
inline constexpr auto PKVT = MlaPrologScenario::kPartialQuantKvQuantPerTile;
inline constexpr auto FKVT = MlaPrologScenario::kFullQuantKvQuantPerTile;
inline constexpr auto kPaBsnd = MlaPrologCacheMode::kPaBsnd;
inline constexpr auto kPaBlkBsnd = MlaPrologCacheMode::kPaBlkBsnd;
inline constexpr auto kPaBlkNz = MlaPrologCacheMode::kPaBlkNz;
inline constexpr auto kBsnd = MlaPrologCacheMode::kBsnd;
inline constexpr auto kTnd = MlaPrologCacheMode::kTnd;
inline constexpr auto kPaNz = MlaPrologCacheMode::kPaNz;

// A vendor-shape case in a V3 cache mode: BSND and the PA_BLK modes with tokenX [B, S, He] take
// B 2, S 3; TND T 3; the PA_BLK modes with tokenX [T, He] take batches of 3, 0, 17 and 1 tokens
// (block ids 1 + 0 + 2 + 1 with BlockSize 16).
inline MlaPrologCaseConfig mode_cfg(MlaPrologScenario sc, MlaPrologCacheMode mode, bool bsh) {
  MlaPrologCaseConfig c = vendor_cfg(sc, bsh, mode);
  c.B = bsh ? 2 : 3;
  c.S = bsh ? 3 : 1;
  if (mla_prolog_cache_blocks(mode) && !bsh) c.seq_lens = {3, 0, 17, 1};
  c.block_num = 6;
  return c;
}

// A case of a new mode, built once per (scenario, mode, token layout).
inline const MlaPrologCase& mode_case(MlaPrologScenario sc, MlaPrologCacheMode mode, bool bsh) {
  static std::map<std::tuple<int, int, bool>, std::unique_ptr<MlaPrologCase>> cases;
  std::unique_ptr<MlaPrologCase>& c = cases[{static_cast<int>(sc), static_cast<int>(mode), bsh}];
  if (c == nullptr) c = std::make_unique<MlaPrologCase>(testdata::make_mla_prolog_case(mode_cfg(sc, mode, bsh)));
  return *c;
}

}  // namespace mlaops::testing::mla_prolog_v3

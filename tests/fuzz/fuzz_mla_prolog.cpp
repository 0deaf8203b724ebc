// libFuzzer target for one MlaProlog entry point, named by mlaops_fuzz_entry (the target's one-line
// source):
// 1 aclnnMlaProlog, 2 aclnnMlaPrologV2WeightNz, 3 aclnnMlaPrologV3WeightNz, 4 the plain
// aclnnMlaPrologV3 (always ACLNN_ERR_INNER, nothing written). One input = one of the scenarios
// at the vendor's shapes (N 2, He 7168, T 3; the operator tests' fixture, built once per
// scenario together with its float64 reference), then 0..7 hostile edits of the tensors (dims,
// rank, dtype, format, strides, storage dims, present / absent, cacheIndex values) and of the
// attributes. Checks (docs/reliability/fuzz.md): no crash, no ASan / UBSan report; a rejected call
// leaves every cache and output byte at its canary; an unedited call matches the reference
// within the operator tests' tolerances (tests/ops/mla_prolog/mla_prolog_compare.h).
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz/fuzz_support.h"
#include "aclnnop/aclnn_mla_prolog_v3.h"
#include "mlaops/status.h"
#include "ops/mla_prolog/mla_prolog_aclnn_call.h"
#include "ops/mla_prolog/mla_prolog_compare.h"
#include "reference/mla_prolog/mla_prolog_ref.h"

namespace mlaops::fuzz {
namespace {

const int kEntry = mlaops_fuzz_entry;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  fail_target("fuzz_mla_prolog (entry " + std::to_string(kEntry) + ")", what, detail);
}

constexpr MlaPrologScenario kScenarios[] = {
    MlaPrologScenario::kNoQuant, MlaPrologScenario::kPartialQuantKvNoQuant, MlaPrologScenario::kPartialQuantKvQuant,
    MlaPrologScenario::kFullQuantKvNoQuant, MlaPrologScenario::kFullQuantKvQuant};
constexpr int kCount = sizeof(kScenarios) / sizeof(kScenarios[0]);

testdata::MlaPrologCaseConfig config(MlaPrologScenario sc) {
  return testdata::vendor_small_cfg(sc, false, MlaPrologCacheMode::kPaBsnd);
}

struct Fixture {
  testdata::MlaPrologCase fast, ref;
};

// Built on first use (a case and its reference run take a second at these shapes).
Fixture& fixture(int i) {
  return lazy_fixture<Fixture, kCount>(i, [](int k) {
    auto x = std::make_unique<Fixture>();
    if (kEntry == 4) {  // the plain V3 rejects everything: the small default case is enough
      x->fast = testdata::make_mla_prolog_case(testdata::MlaPrologCaseConfig{});
      return x;
    }
    x->fast = testdata::make_mla_prolog_case(config(kScenarios[k]));
    x->ref = testdata::make_mla_prolog_case(config(kScenarios[k]));
    if (mla_prolog_ref(x->ref.params()) != kSuccess) fail("reference", last_error_message());
    return x;
  });
}

void edit(FuzzedDataProvider& in, testing::MlaPrologArgs* a, testing::MlaPrologCall* call, std::string* mode,
          ExactBuffers* bufs) {
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
    case 0:
    case 1:
    case 2:  // a tensor
      edit_tensor(in, a->v, a->passed, testing::MlaPrologArgs::kCount, 9, bufs);
      break;
    case 3:  // a cacheIndex value
      edit_index<int64_t>(in, &a->v[9], a->passed[9], DType::kInt64, bufs);
      break;
    case 4: {  // the cache mode string
      static const char* const kModes[] = {"PA_BSND", "PA_NZ", "BSND", "PA_BLK_BSND", "PA_BLK_NZ", "", "pa_bsnd",
                                           "PA_BSND_"};
      *mode = in.ConsumeBool() ? std::string(in.PickValueInArray(kModes)) : in.ConsumeRandomLengthString(10);
      call->cache_mode = mode->c_str();
      break;
    }
    default: {  // epsilons, V3 modes and scales
      const int which = in.ConsumeIntegralInRange<int>(0, 6);
      if (which == 0) call->eps_cq = hostile_double(in);
      if (which == 1) call->eps_ckv = hostile_double(in);
      if (which >= 2 && which <= 4) call->modes[which - 2] = in.ConsumeIntegralInRange<int64_t>(-1, 4);
      if (which == 5) call->ckvkr_repo_mode = in.ConsumeIntegralInRange<int64_t>(-1, 2);
      if (which == 6) call->tile_size = hostile_int(in);
      break;
    }
  }
}

}  // namespace

void run_one(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  // One fixture per target by default (building one takes ~10 s of CPU under ASan at these
  // shapes); MLAOPS_FUZZ_ALL_FIXTURES=1 lets the input pick any scenario (the longer runs).
  static const bool all = std::getenv("MLAOPS_FUZZ_ALL_FIXTURES") != nullptr;
  static constexpr int kDefault[] = {0, 1, 4, 2, 0};  // per entry point
  const int sc = all ? in.ConsumeIntegralInRange<int>(0, kCount - 1) : kDefault[kEntry];
  Fixture& fx = fixture(sc);
  testdata::MlaPrologCase& c = fx.fast;
  c.reset_outputs();
  ExactBuffers bufs;
  testing::MlaPrologCall call;
  call.v2 = kEntry == 2;
  call.v3 = kEntry == 3;
  const int edits = in.ConsumeIntegralInRange<int>(0, 7);
  std::string mode;  // an edited cache mode string (call.cache_mode points at it)
  // The hook runs inside phase 1 before the attributes are read, so attribute edits apply too.
  call.mutate = [&](testing::MlaPrologArgs& a) {
    for (int k = 0; k < edits; ++k) edit(in, &a, &call, &mode, &bufs);
  };
  auto canary_kept = [&]() {
    for (const testdata::HostTensor* h : {&c.kv_cache, &c.kr_cache, &c.query_out, &c.query_rope_out,
                                          &c.dequant_scale_q_nope_out, &c.query_norm_out, &c.dequant_scale_q_norm_out})
      if (!testdata::all_bytes(*h, c.cfg.canary)) return false;
    return true;
  };
  if (kEntry == 4) {
    uint64_t ws_size = 0;
    aclOpExecutor* ex = nullptr;
    // the plain V3 takes the V3WeightNz arguments: call it through the same argument builder
    testing::MlaPrologArgs a = testing::args_of(c);
    if (call.mutate) call.mutate(a);
    std::vector<testing::AclTensor> t;
    for (int i = 0; i < testing::MlaPrologArgs::kCount; ++i) t.emplace_back(a.v[i], a.passed[i]);
    char pa_bsnd[] = "PA_BSND";
    const aclnnStatus s = aclnnMlaPrologV3GetWorkspaceSize(
        t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[10], t[11], t[9],
        t[12], t[13], t[14], t[15], t[16], t[17], t[18], t[24], t[25], call.eps_cq, call.eps_ckv, pa_bsnd, false, 0, 0,
        0, 0, 0, 128, 1.0, 1.0, t[19], t[20], t[21], t[22], t[23], &ws_size, &ex);
    if (s != ACLNN_ERR_INNER || ex != nullptr || ws_size != 0) fail("plain V3", "expected 561000 and nothing written");
    if (aclnnMlaPrologV3(nullptr, 0, nullptr, nullptr) != ACLNN_ERR_INNER) fail("plain V3", "phase 2 not 561000");
    if (!canary_kept()) fail("plain V3", "an output byte changed");
    return;
  }
  run_phases(
      edits, [&](uint64_t* size, aclOpExecutor** x) { return testing::mla_prolog_phase1(c, call, size, x); },
      [&](void* w, uint64_t size, aclOpExecutor* x) {
        return kEntry == 3   ? aclnnMlaPrologV3WeightNz(w, size, x, nullptr)
               : kEntry == 2 ? aclnnMlaPrologV2WeightNz(w, size, x, nullptr)
                             : aclnnMlaProlog(w, size, x, nullptr);
      },
      canary_kept, [&] { return testing::mla_prolog_mismatches(c, fx.ref); }, fail);
}

}  // namespace mlaops::fuzz

// libFuzzer target for aclnnMlaPreprocess (mlaops_fuzz_entry 1) or aclnnMlaPreprocessV2 (2).
// One input = one of six fixtures at the vendor's shapes (the cache modes, quant modes, weight
// forms and weight dtypes of tests/ops/mla_preprocess/test_mla_preprocess_aclnn.cpp, built once
// with their float64 reference), then 0..7 hostile edits of the tensors (dims, rank, dtype,
// format, strides, storage dims, present / absent, slotMapping values) and of the attributes.
// Checks (docs/reliability/fuzz.md): no crash, no ASan / UBSan report; a rejected call leaves
// every cache and output byte at its canary; an unedited call matches the reference within the
// operator tests' tolerances (tests/ops/mla_preprocess/mla_preprocess_compare.h).
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz/fuzz_support.h"
#include "mlaops/status.h"
#include "ops/mla_preprocess/mla_preprocess_aclnn_call.h"
#include "ops/mla_preprocess/mla_preprocess_compare.h"
#include "reference/mla_preprocess/mla_preprocess_ref.h"

namespace mlaops::fuzz {
namespace {

const int kEntry = mlaops_fuzz_entry;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  fail_target("fuzz_mla_preprocess (entry " + std::to_string(kEntry) + ")", what, detail);
}

using CM = MlaPreprocessCacheMode;
using QM = MlaPreprocessQuantMode;
using WF = testdata::MlaPreprocessWeightForm;

constexpr testdata::MlaPreprocessVendorCase kShapes[] = {
    {DType::kFloat16, 2, 16, CM::kKropeCtkv, QM::kPerTensorAsymm, false, WF::kNz4d, false},
    {DType::kBFloat16, 1, 16, CM::kInt8NzCache, QM::kPerTensorAsymm, false, WF::kNzAtb, false},
    {DType::kFloat16, 3, 16, CM::kKvCache, QM::kPerTokenSymm, true, WF::kNz2d, false},
    {DType::kBFloat16, 2, 16, CM::kNzCache, QM::kPerTokenSymm, false, WF::kNz4d, false},
    {DType::kBFloat16, 2, 16, CM::kKvCache, QM::kPerTensorAsymm, false, WF::kNz4d, true},
    {DType::kBFloat16, 1, 16, CM::kKropeCtkv, QM::kPerTensorAsymm, true, WF::kNzAtb, true},
};
constexpr int kCount = sizeof(kShapes) / sizeof(kShapes[0]);

testdata::MlaPreprocessCaseConfig config(int i) {
  testdata::MlaPreprocessCaseConfig c = testdata::vendor_cfg(kShapes[i], 50 + static_cast<uint64_t>(i));
  c.q_down = kEntry == 2;
  return c;
}

struct Fixture {
  testdata::MlaPreprocessCase fast, ref;
};

Fixture& fixture(int i) {
  return lazy_fixture<Fixture, kCount>(i, [](int k) {
    auto x = std::make_unique<Fixture>();
    x->fast = testdata::make_mla_preprocess_case(config(k));
    x->ref = testdata::make_mla_preprocess_case(config(k));
    if (mla_preprocess_ref(x->ref.params()) != kSuccess) fail("reference", last_error_message());
    return x;
  });
}

void edit(FuzzedDataProvider& in, testing::MlaPreprocessArgs* a, ExactBuffers* bufs) {
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
    case 0:
    case 1:
    case 2:  // a tensor
      edit_tensor(in, a->v, a->passed, testing::MlaPreprocessArgs::kCount, 7, bufs);
      break;
    case 3:  // a slotMapping value
      edit_index<int32_t>(in, &a->v[21], a->passed[21], DType::kInt32, bufs);
      break;
    case 4: {  // integer attributes
      int64_t* f[] = {&a->wdq_dim, &a->q_rope_dim, &a->k_rope_dim, &a->q_rotary_coeff, &a->k_rotary_coeff,
                      &a->cache_mode, &a->quant_mode, &a->wdkv_split_count};
      *f[in.ConsumeIntegralInRange<int>(0, 7)] = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(-1, 4) : hostile_int(in);
      break;
    }
    default: {  // epsilon and the flags
      const int which = in.ConsumeIntegralInRange<int>(0, 5);
      if (which == 0) a->epsilon = hostile_double(in);
      if (which == 1) a->transpose_wdq = !a->transpose_wdq;
      if (which == 2) a->transpose_wuq = !a->transpose_wuq;
      if (which == 3) a->transpose_wuk = !a->transpose_wuk;
      if (which == 4) a->do_rms_norm = !a->do_rms_norm;
      if (which == 5) a->q_down_out_flag = !a->q_down_out_flag;
      break;
    }
  }
}

}  // namespace

void run_one(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  // One fixture per target by default (building one takes seconds under ASan at these shapes);
  // MLAOPS_FUZZ_ALL_FIXTURES=1 lets the input pick any of them (the longer runs).
  static const bool all = std::getenv("MLAOPS_FUZZ_ALL_FIXTURES") != nullptr;
  Fixture& fx = fixture(all ? in.ConsumeIntegralInRange<int>(0, kCount - 1) : kEntry == 2 ? 4 : 0);
  testdata::MlaPreprocessCase& c = fx.fast;
  c.reset_outputs();
  ExactBuffers bufs;
  const int edits = in.ConsumeIntegralInRange<int>(0, 7);
  // phase 2 re-runs the hook (mla_preprocess_aclnn_call.h): record the edited args once
  testing::MlaPreprocessArgs edited = testing::args_of(c);
  for (int k = 0; k < edits; ++k) edit(in, &edited, &bufs);
  auto canary_kept = [&]() {
    for (const testdata::HostTensor* h : {&c.kv_cache, &c.kv_cache_rope, &c.q_out, &c.q_rope_out, &c.q_down_out})
      if (!testdata::all_bytes(*h, c.cfg.canary)) return false;
    return true;
  };
  run_phases(
      edits,
      [&](uint64_t* ws_size, aclOpExecutor** ex) {
        return testing::mla_preprocess_phase1(c, [&](testing::MlaPreprocessArgs& a) { a = edited; }, ws_size, ex);
      },
      [&](void* w, uint64_t size, aclOpExecutor* ex) {
        return kEntry == 2 ? aclnnMlaPreprocessV2(w, size, ex, nullptr) : aclnnMlaPreprocess(w, size, ex, nullptr);
      },
      canary_kept, [&] { return testing::mla_preprocess_mismatches(c, fx.ref); }, fail);
}

}  // namespace mlaops::fuzz

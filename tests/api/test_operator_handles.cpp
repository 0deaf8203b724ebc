// Stale handles and freed device memory through the real operators' C entry points
// (docs/c-api.md "Object API" and "Executors"; docs/reliability/handles_and_memory.md): FIA V4,
// MlaPrologV3WeightNz and MlaPreprocessV2 at the vendor's sizes.
//   * phase 1 with one argument destroyed (every tensor argument in turn, the key / value lists,
//     a list member, an int array): 161002 naming the argument (ACL-41, ACL-43, FIA-01), no
//     executor made, no output or cache byte written;
//   * phase 2 after the aclrtMalloc buffer of one tensor (every tensor argument in turn) was
//     freed: 161002 naming the tensor (ACL-66), no output or cache byte written.
// Each test prints its figures ("[ misuse ] ...": calls tried, rejected cleanly, canary
// violations).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "api/runtime/executor.h"
#include "api/fia/fia_entry.h"
#include "concurrency/concurrency_jobs.h"

namespace mlaops::testing {
namespace {

std::string msg() { return aclGetRecentErrMsg(); }

// The figures of one test.
struct Tally {
  const char* what;
  int tried = 0, rejected = 0, canary = 0;
  // A call that must be rejected with 161002 and a message naming `op`, `site` and `name`;
  // `unchanged`: no output or cache byte changed.
  void expect(aclnnStatus got, const char* op, const std::string& name, const char* site, bool unchanged) {
    ++tried;
    const std::string m = msg();
    const bool clean = got == ACLNN_ERR_PARAM_INVALID && m.find(op) != std::string::npos &&
                       m.find(name) != std::string::npos && m.find(site) != std::string::npos;
    rejected += clean ? 1 : 0;
    canary += unchanged ? 0 : 1;
    EXPECT_TRUE(clean) << name << ": status " << got << ", " << m;
    EXPECT_TRUE(unchanged) << name << ": an output or cache byte changed";
  }
  ~Tally() {
    std::printf("[ misuse   ] %s: %d calls, %d rejected cleanly, %d canary violations\n", what, tried, rejected, canary);
  }
};

// The bytes of a view's memory (its extent; the storage of a FRACTAL_NZ view).
size_t view_bytes(const TensorView& v) {
  int64_t elements = 1;
  for (int i = 0; i < v.rank; ++i) elements += (v.dims[i] - 1) * v.strides[i];
  if (v.format != Format::kND && v.storage_rank > 0) {
    int64_t storage = 1;
    for (int i = 0; i < v.storage_rank; ++i) storage *= v.storage_dims[i];
    elements = std::max(elements, storage);
  }
  const int64_t each = dtype_size(v.dtype);
  return static_cast<size_t>(each > 0 ? elements * each : (elements + 1) / 2);
}

// An aclrtMalloc copy of a view's memory (freed by the test, or at the end of the scope).
class DeviceCopy {
 public:
  explicit DeviceCopy(const TensorView& v) : bytes_(view_bytes(v)) {
    EXPECT_EQ(aclrtMalloc(&p_, bytes_, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    std::memcpy(p_, v.data, bytes_);
  }
  ~DeviceCopy() { free(); }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
  void* get() const { return p_; }
  void free() {
    if (p_ != nullptr) {
      EXPECT_EQ(aclrtFree(p_), ACL_SUCCESS);
    }
    p_ = nullptr;
  }

 private:
  size_t bytes_;
  void* p_ = nullptr;
};

class OperatorHandles : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS); }  // aclrtMalloc needs one (ACL-06)
};

// ---- MlaPrologV3WeightNz (partial quant + KV quant, He 1024) ----

const char* kMp = "aclnnMlaPrologV3WeightNz";

std::string mp_outputs(const testdata::MlaPrologCase& c) {
  std::string s;
  for (const mlaops::HostTensor* h : {&c.query_out, &c.query_rope_out, &c.kv_cache, &c.kr_cache, &c.dequant_scale_q_nope_out,
                              &c.query_norm_out, &c.dequant_scale_q_norm_out})
    s.append(reinterpret_cast<const char*>(h->bytes.data()), h->bytes.size());
  return s;
}

MlaPrologArgs mp_args(const testdata::MlaPrologCase& c) {
  MlaPrologArgs a = args_of(c);
  a.passed[21] = false;  // dequantScaleQNopeOut: only in FULL_QUANT_KV_QUANT (as mla_prolog_phase1)
  return a;
}

// Phase 1 of aclnnMlaPrologV3WeightNz on explicit handles h (prototype positions of MlaPrologArgs).
aclnnStatus mp_phase1(const testdata::MlaPrologCase& c, const std::vector<const aclTensor*>& h, uint64_t* ws,
                      aclOpExecutor** ex) {
  std::vector<aclTensor*> t;
  for (const aclTensor* x : h) t.push_back(const_cast<aclTensor*>(x));
  std::string mode = mla_prolog_cache_mode_name(c.cfg.cache_mode);
  const auto m = v3_modes(c.cfg.scenario);
  return aclnnMlaPrologV3WeightNzGetWorkspaceSize(
      t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[10], t[11], t[9], t[12], t[13], t[14], t[15], t[16],
      t[17], t[18], t[24], t[25], 1e-5, 1e-5, mode.data(), m[0], m[1], m[2], 0, 0, 128, c.cfg.qc_qr_scale,
      c.cfg.kc_scale, t[19], t[20], t[21], t[22], t[23], ws, ex);
}

TEST_F(OperatorHandles, MlaPrologV3StaleTensors) {
  Tally tally{"stale handles, aclnnMlaPrologV3WeightNz phase 1"};
  auto c = mla_prolog_case(true);
  MlaPrologArgs a = mp_args(*c);
  std::vector<AclTensor> t = a.guarded_tensors();
  std::vector<const aclTensor*> h;
  for (const AclTensor& x : t) h.push_back(x.get());
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(mp_phase1(*c, h, &ws, &ex), ACLNN_SUCCESS) << msg();  // the call is valid as it stands
  ASSERT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
  const std::string before = mp_outputs(*c);
  const size_t executors = mlaops::api::live_executor_count();
  for (int k = 0; k < MlaPrologArgs::kCount; ++k) {
    if (h[static_cast<size_t>(k)] == nullptr) continue;
    const aclTensor* stale = h[static_cast<size_t>(k)];
    t[static_cast<size_t>(k)] = AclTensor();  // destroyed
    std::vector<const aclTensor*> with = h;
    ex = nullptr;
    tally.expect(mp_phase1(*c, with, &ws, &ex), kMp, MlaPrologArgs::name(k), "ACL-41 not a live aclTensor",
                 mp_outputs(*c) == before);
    EXPECT_EQ(ex, nullptr);
    EXPECT_EQ(mlaops::api::live_executor_count(), executors);
    t[static_cast<size_t>(k)] = AclTensor(a.v[k]);  // a new one for the next round (maybe another address)
    h[static_cast<size_t>(k)] = t[static_cast<size_t>(k)].get();
    EXPECT_NE(h[static_cast<size_t>(k)], stale);  // the destroyed one is in the quarantine
  }
  EXPECT_EQ(tally.tried, 18);  // every tensor argument this scenario passes
}

TEST_F(OperatorHandles, MlaPrologV3FreedDeviceMemory) {
  Tally tally{"freed device memory, aclnnMlaPrologV3WeightNz phase 2"};
  auto c = mla_prolog_case(true);
  const MlaPrologArgs a = mp_args(*c);
  const std::string before = mp_outputs(*c);
  for (int k = 0; k < MlaPrologArgs::kCount; ++k) {
    if (!a.passed[k] || a.v[k].numel() == 0) continue;
    DeviceCopy dev(a.v[k]);
    MlaPrologCall call;
    call.v3 = true;
    call.mutate = [&](MlaPrologArgs& m) { m.v[k].data = dev.get(); };
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    ASSERT_EQ(mla_prolog_phase1(*c, call, &ws, &ex), ACLNN_SUCCESS) << MlaPrologArgs::name(k) << ": " << msg();
    dev.free();
    tally.expect(aclnn_phase2(aclnnMlaPrologV3WeightNz, ws, ex, nullptr), kMp, MlaPrologArgs::name(k),
                 "ACL-66 the tensor's memory was freed after it was bound", mp_outputs(*c) == before);
  }
  EXPECT_EQ(tally.tried, 18);
}

// ---- MlaPreprocessV2 (cache mode 3, per-token quant, qDownOut) ----

const char* kMpp = "aclnnMlaPreprocessV2";

testdata::MlaPreprocessCase mpp_case() {
  testdata::MlaPreprocessCaseConfig cfg = testdata::vendor_cfg(
      {DType::kBFloat16, 2, 16, MlaPreprocessCacheMode::kNzCache, MlaPreprocessQuantMode::kPerTokenSymm, false,
       testdata::MlaPreprocessWeightForm::kNz4d, false},
      41);
  cfg.block_num = 2;
  cfg.q_down = true;  // qDownOut: aclnnMlaPreprocessV2
  return testdata::make_mla_preprocess_case(cfg);
}

std::string mpp_outputs(const testdata::MlaPreprocessCase& c) {
  std::string s;
  for (const mlaops::HostTensor* h : {&c.q_out, &c.q_rope_out, &c.kv_cache, &c.kv_cache_rope, &c.q_down_out})
    s.append(reinterpret_cast<const char*>(h->bytes.data()), h->bytes.size());
  return s;
}

// Phase 1 of aclnnMlaPreprocessV2 on explicit handles h (prototype positions of MlaPreprocessArgs).
aclnnStatus mpp_phase1(const MlaPreprocessArgs& a, const std::vector<const aclTensor*>& h, uint64_t* ws,
                       aclOpExecutor** ex) {
  std::vector<aclTensor*> t;
  for (const aclTensor* x : h) t.push_back(const_cast<aclTensor*>(x));
  return aclnnMlaPreprocessV2GetWorkspaceSize(
      t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12], t[13], t[14], t[15], t[16],
      t[17], t[18], t[19], t[20], t[21], t[22], t[23], a.wdq_dim, a.q_rope_dim, a.k_rope_dim, a.epsilon,
      a.q_rotary_coeff, a.k_rotary_coeff, a.transpose_wdq, a.transpose_wuq, a.transpose_wuk, a.cache_mode,
      a.quant_mode, a.do_rms_norm, a.wdkv_split_count, a.q_down_out_flag, t[24], t[25], t[26], t[27], t[28], ws, ex);
}

TEST_F(OperatorHandles, MlaPreprocessV2StaleTensors) {
  Tally tally{"stale handles, aclnnMlaPreprocessV2 phase 1"};
  const testdata::MlaPreprocessCase c = mpp_case();
  MlaPreprocessArgs a = args_of(c);
  ASSERT_TRUE(a.v2);
  std::vector<AclTensor> t = a.guarded_tensors();
  std::vector<const aclTensor*> h;
  for (const AclTensor& x : t) h.push_back(x.get());
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(mpp_phase1(a, h, &ws, &ex), ACLNN_SUCCESS) << msg();
  ASSERT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
  const std::string before = mpp_outputs(c);
  const size_t executors = mlaops::api::live_executor_count();
  for (int k = 0; k < MlaPreprocessArgs::kCount; ++k) {
    if (h[static_cast<size_t>(k)] == nullptr) continue;
    t[static_cast<size_t>(k)] = AclTensor();  // destroyed; h keeps the stale handle
    ex = nullptr;
    tally.expect(mpp_phase1(a, h, &ws, &ex), kMpp, MlaPreprocessArgs::name(k), "ACL-41 not a live aclTensor",
                 mpp_outputs(c) == before);
    EXPECT_EQ(ex, nullptr);
    EXPECT_EQ(mlaops::api::live_executor_count(), executors);
    t[static_cast<size_t>(k)] = AclTensor(a.v[k]);
    h[static_cast<size_t>(k)] = t[static_cast<size_t>(k)].get();
  }
  EXPECT_EQ(tally.tried, 25);  // every tensor argument passed (placeholders included)
}

TEST_F(OperatorHandles, MlaPreprocessV2FreedDeviceMemory) {
  Tally tally{"freed device memory, aclnnMlaPreprocessV2 phase 2"};
  const testdata::MlaPreprocessCase c = mpp_case();
  const MlaPreprocessArgs a = args_of(c);
  const std::string before = mpp_outputs(c);
  for (int k = 0; k < MlaPreprocessArgs::kCount; ++k) {
    // the placeholders (tensors the modes do not read) are shared statics: leave them in place
    if (!a.passed[k] || a.v[k].numel() <= 1) continue;
    DeviceCopy dev(a.v[k]);
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    ASSERT_EQ(mla_preprocess_phase1(c, [&](MlaPreprocessArgs& m) { m.v[k].data = dev.get(); }, &ws, &ex),
              ACLNN_SUCCESS)
        << MlaPreprocessArgs::name(k) << ": " << msg();
    dev.free();
    tally.expect(aclnn_phase2(aclnnMlaPreprocessV2, ws, ex, nullptr), kMpp, MlaPreprocessArgs::name(k),
                 "ACL-66 the tensor's memory was freed after it was bound", mpp_outputs(c) == before);
  }
  EXPECT_EQ(tally.tried, 21);
}

// ---- FusedInferAttentionScoreV4 (GQA, paged KV, lse) ----

const char* kFia = "aclnnFusedInferAttentionScoreV4";

struct FiaFixture {
  std::unique_ptr<FiaCaseData> data;
  std::unique_ptr<fia_test::FiaRun> run;
  FiaAclArgs args;
  FiaFixture() {
    FiaCase fc = fia_case("", DType::kBFloat16, 2, 4, 2, 5, 40, 64, "BSH");
    fc.cfg.lse = true;
    fc.seed = 9;
    paged(fc, 3, 16);
    data = make_case_data(fc);
    run = fia_test::build_fia_run(data->canon, data->cfg);
    args = acl_args_of(*run);
  }
  std::string outputs() const {
    return std::string(reinterpret_cast<const char*>(run->out.storage.data()), run->out.storage.size() * 8) +
           std::string(reinterpret_cast<const char*>(run->lse.storage.data()), run->lse.storage.size() * 8);
  }
};

// The handles of one V4 call, each of which a test may replace (nullptr: the object's own).
struct FiaHandles {
  const aclTensor* in[FiaAclArgs::kIn] = {};
  const aclTensorList *key = nullptr, *value = nullptr;
  const aclIntArray* asl_kv = nullptr;
  const aclTensor *out = nullptr, *lse = nullptr;
};

aclnnStatus fia_phase1_with(const FiaAclObjects& o, const FiaHandles& r, uint64_t* ws, aclOpExecutor** ex) {
  const FiaAclArgs& a = o.a;
  auto t = [&](int i) { return const_cast<aclTensor*>(r.in[i] ? r.in[i] : o.t[static_cast<size_t>(i)].get()); };
  auto key = const_cast<aclTensorList*>(r.key ? r.key : o.key.get());
  auto value = const_cast<aclTensorList*>(r.value ? r.value : o.value.get());
  auto akv = const_cast<aclIntArray*>(r.asl_kv ? r.asl_kv : o.akv.get());
  auto out = const_cast<aclTensor*>(r.out ? r.out : o.out.get());
  auto lse = const_cast<aclTensor*>(r.lse ? r.lse : o.lse.get());
  return aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
      t(0), key, value, t(3), t(4), o.aq.get(), akv, t(7), t(8), t(9), t(10), t(11), t(12), t(13), t(14), t(15), t(16),
      t(17), t(18), t(19), t(20), t(21), t(22), o.apre.get(), t(24), t(25), t(26), t(27), t(28), a.num_heads, a.scale,
      a.pre, a.next, o.lp, a.kvn, a.sparse, a.inner, a.block_size, a.antiquant_mode, a.lse_flag, a.key_aq_mode,
      a.value_aq_mode, a.query_quant_mode, out, lse, ws, ex);
}

TEST_F(OperatorHandles, FiaV4StaleObjects) {
  Tally tally{"stale handles, aclnnFusedInferAttentionScoreV4 phase 1"};
  FiaFixture f;
  const FiaAclObjects o(f.args);
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(fia_phase1_with(o, {}, &ws, &ex), ACLNN_SUCCESS) << msg();
  ASSERT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
  const std::string before = f.outputs();
  const size_t executors = mlaops::api::live_executor_count();
  auto check = [&](const FiaHandles& r, const char* name, const char* site) {
    ex = nullptr;
    tally.expect(fia_phase1_with(o, r, &ws, &ex), kFia, name, site, f.outputs() == before);
    EXPECT_EQ(ex, nullptr);
    EXPECT_EQ(mlaops::api::live_executor_count(), executors);
  };
  // every passed tensor input but key / value, then the outputs: a destroyed copy of each
  for (int i = 0; i < FiaAclArgs::kIn; ++i) {
    if (!o.a.passed[i] || i == 1 || i == 2) continue;
    FiaHandles r;
    AclTensor copy(o.a.in[i]);
    r.in[i] = copy.get();
    copy.reset();
    check(r, mlaops::api::kFiaV4Inputs[i].name, "ACL-41 not a live aclTensor");
  }
  for (bool lse : {false, true}) {
    FiaHandles r;
    AclTensor copy(lse ? o.a.lse : o.a.out);
    (lse ? r.lse : r.out) = copy.get();
    copy.reset();
    check(r, lse ? "softmaxLse" : "attentionOut", "ACL-41 not a live aclTensor");
  }
  // the key / value lists: destroyed, or alive with a destroyed member
  for (bool value : {false, true}) {
    const TensorView& v = o.a.in[value ? 2 : 1];
    FiaHandles r;
    {
      AclTensorListHandle dead(v, 1, false);
      (value ? r.value : r.key) = dead.get();
    }
    check(r, value ? "value" : "key", "ACL-41 not a live aclTensorList");
    AclTensor member(v);
    const aclTensor* m[1] = {member.get()};
    aclTensorList* l = aclCreateTensorList(m, 1);
    member.reset();  // the caller destroys the member, keeps the list
    (value ? r.value : r.key) = l;
    check(r, value ? "value[0]" : "key[0]", "ACL-43 not a live member of the tensor list");
    EXPECT_EQ(aclDestroyTensorList(l), ACLNN_SUCCESS);
  }
  // the int array actualSeqLengthsKv
  {
    FiaHandles r;
    aclIntArray* arr = aclCreateIntArray(f.args.asl_kv.data(), f.args.asl_kv.size());
    ASSERT_EQ(aclDestroyIntArray(arr), ACLNN_SUCCESS);
    r.asl_kv = arr;
    // FIA's own rule (FIA-01, its coverage page names FiaSitesA.FIA01_DeadIntArray): matched here
    // by its words only
    check(r, "actualSeqLengthsKv", "not a live aclIntArray");
  }
  EXPECT_EQ(tally.tried, 9);
}

TEST_F(OperatorHandles, FiaV4FreedDeviceMemory) {
  Tally tally{"freed device memory, aclnnFusedInferAttentionScoreV4 phase 2"};
  FiaFixture f;
  const std::string before = f.outputs();
  auto run_freed = [&](TensorView* v, const char* name) {
    DeviceCopy dev(*v);
    FiaAclArgs a = f.args;
    TensorView* moved = v == &f.args.out ? &a.out : v == &f.args.lse ? &a.lse : &a.in[v - f.args.in];
    moved->data = dev.get();
    tally.expect(fia_aclnn_call(a, nullptr, [&] { dev.free(); }), kFia, name,
                 "ACL-66 the tensor's memory was freed after it was bound", f.outputs() == before);
  };
  for (int i = 0; i < FiaAclArgs::kIn; ++i) {
    if (!(f.args.passed[i] || i == 1 || i == 2)) continue;
    run_freed(&f.args.in[i], i == 1 ? "key[0]" : i == 2 ? "value[0]" : mlaops::api::kFiaV4Inputs[i].name);
  }
  run_freed(&f.args.out, "attentionOut");
  ASSERT_TRUE(f.args.lse_passed);
  run_freed(&f.args.lse, "softmaxLse");
  EXPECT_EQ(tally.tried, 6);
}

}  // namespace
}  // namespace mlaops::testing

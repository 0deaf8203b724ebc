// Fault injection (docs/reliability/guard_and_faults.md): every host allocation the library makes
// inside a C entry point is made to fail once in turn — the 1st, the 2nd, ... until a call
// completes with none failing — for phase 1 (GetWorkspaceSize: executor, plan, bound tensors) and
// phase 2 (execute: the run's buffers) of every operator's entry points. Each failure must return
// ACLNN_ERR_RUNTIME_ERROR (361001) with an "out of memory" message, leave every output and cache
// byte unchanged, and leave no executor behind; LeakSanitizer (the asan-ubsan build) checks that
// nothing leaks. The tensor objects (aclCreateTensor, ...) return null on a failed allocation.
//
// The counting hook is this binary's replacement of the global operator new (the library allocates
// with new only, core/alloc.h); it counts the allocations made while core/alloc.h's
// api_call_depth() is > 0 on the calling thread, so the test's own allocations never fail.
#include <gtest/gtest.h>
#include <execinfo.h>
#include <omp.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "api/runtime/executor.h"
#include "core/alloc.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_entry_call.h"
#include "ops/fia/fia_error_cases.h"
#include "ops/mla_preprocess/mla_preprocess_aclnn_call.h"
#include "ops/mla_prolog/mla_prolog_aclnn_call.h"

namespace {

std::atomic<bool> g_armed{false};
std::atomic<bool> g_count_all{false};  // count every allocation of the armed thread (aclCreate*)
std::atomic<int64_t> g_count{0}, g_fail_at{0}, g_in_parallel{0};
std::atomic<bool> g_injected{false};
std::atomic<bool> g_injected_in_parallel{false};

// True when this allocation is the one to fail.
bool inject() {
  if (!g_armed.load(std::memory_order_relaxed)) return false;
  // Inside a parallel region (any thread: the workers run no test code) or on a thread in a call.
  const bool in_region = omp_in_parallel() != 0;
  if (!in_region && !g_count_all.load(std::memory_order_relaxed) && mlaops::api_call_depth() == 0) return false;
  if (in_region && g_in_parallel.fetch_add(1) == 0 && std::getenv("MLAOPS_FAULT_TRACE") != nullptr) {
    void* frames[24];  // where (MLAOPS_FAULT_TRACE=1): the stack of the first allocation in a region
    backtrace_symbols_fd(frames, backtrace(frames, 24), 2);
  }
  if (g_count.fetch_add(1) + 1 != g_fail_at.load()) return false;
  g_injected_in_parallel.store(in_region);
  g_injected.store(true);
  return true;
}

void* alloc(std::size_t n, std::size_t align) {
  if (n == 0) n = 1;
  if (align <= alignof(std::max_align_t)) return std::malloc(n);
  return std::aligned_alloc(align, (n + align - 1) / align * align);
}

// Not inlined into the operator delete replacements (GCC would pair new with free and warn).
__attribute__((noinline)) void release(void* p) { std::free(p); }

}  // namespace

void* operator new(std::size_t n) {
  void* p = inject() ? nullptr : alloc(n, 0);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return inject() ? nullptr : alloc(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return inject() ? nullptr : alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  void* p = inject() ? nullptr : alloc(n, static_cast<std::size_t>(a));
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t n, std::align_val_t a) { return operator new(n, a); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return inject() ? nullptr : alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return inject() ? nullptr : alloc(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }

namespace mlaops::testing {
namespace {

struct Armed {  // fail the n-th counted allocation while alive
  explicit Armed(int64_t n, bool all = false) {
    g_count = 0;
    g_in_parallel = 0;
    g_injected = false;
    g_injected_in_parallel = false;
    g_fail_at = n;
    g_count_all = all;
    g_armed = true;
  }
  ~Armed() {
    g_armed = false;
    g_count_all = false;
  }
};

// One operator's two phases on a fixed case, and its output state.
struct Op {
  std::string name;
  std::function<aclnnStatus(uint64_t*, aclOpExecutor**)> phase1;
  std::function<aclnnStatus(void*, uint64_t, aclOpExecutor*)> phase2;
  std::function<std::vector<uint8_t>()> outputs;  // every output and cache byte
  std::function<void(const std::vector<uint8_t>&)> restore;
};

// A failed call: the code, the message, no executor left, no output or cache byte changed (every
// allocation of a call happens before its first write: GEMM scratch and row vectors live in the
// workspace, so no allocation fails inside a parallel region).
void expect_clean(const Op& op, const char* phase, int64_t n, aclnnStatus s, const std::vector<uint8_t>& before,
                  size_t live) {
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_EQ(s, ACLNN_ERR_RUNTIME_ERROR) << op.name << " " << phase << " allocation " << n << ": " << msg;
  EXPECT_NE(msg.find("out of memory"), std::string::npos) << op.name << " " << phase << " " << n << ": " << msg;
  EXPECT_FALSE(g_injected_in_parallel) << op.name << " " << phase << " allocation " << n << ": inside a parallel region";
  const bool unchanged = op.outputs() == before;
  EXPECT_TRUE(unchanged) << op.name << " " << phase << " allocation " << n << ": an output byte changed";
  if (!unchanged) op.restore(before);
  EXPECT_EQ(api::live_executor_count(), live) << op.name << " " << phase << " allocation " << n << ": executor left";
}

// Fails each allocation of phase 1, then of phase 2, in turn; returns {phase-1, phase-2} points.
std::pair<int64_t, int64_t> inject_each(const Op& op) {
  const std::vector<uint8_t> before = op.outputs();
  const size_t live = api::live_executor_count();
  int64_t p1 = -1, p2 = -1, in_region = 0;
  for (int64_t n = 1; n < 100000 && p1 < 0; ++n) {
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    aclnnStatus s;
    {
      Armed armed(n);
      s = op.phase1(&ws, &ex);
    }
    if (!g_injected) {
      EXPECT_EQ(s, ACLNN_SUCCESS) << op.name << ": " << aclGetRecentErrMsg();
      if (s == ACLNN_SUCCESS) aclDestroyAclOpExecutor(ex);
      p1 = n - 1;
    } else {
      EXPECT_FALSE(g_injected_in_parallel) << op.name << ": phase 1 runs no parallel region";
      expect_clean(op, "phase 1", n, s, before, live);
    }
  }
  for (int64_t n = 1; n < 100000 && p2 < 0; ++n) {
    uint64_t ws_size = 0;
    aclOpExecutor* ex = nullptr;
    if (op.phase1(&ws_size, &ex) != ACLNN_SUCCESS) {
      ADD_FAILURE() << op.name << ": " << aclGetRecentErrMsg();
      break;
    }
    std::vector<uint64_t> ws(ws_size / 8 + 1);
    aclnnStatus s;
    {
      Armed armed(n);
      s = op.phase2(ws.data(), ws_size, ex);
    }
    if (!g_injected) {
      in_region = g_in_parallel;
      EXPECT_EQ(in_region, 0) << op.name << ": allocations inside parallel regions (one failing there leaves partial output)";
      EXPECT_EQ(s, ACLNN_SUCCESS) << op.name << ": " << aclGetRecentErrMsg();
      EXPECT_FALSE(op.outputs() == before) << op.name << ": the call wrote nothing";
      op.restore(before);
      p2 = n - 1;
    } else {
      expect_clean(op, "phase 2", n, s, before, live);
    }
  }
  EXPECT_EQ(api::live_executor_count(), live);
  std::printf("[ faults   ] %-46s phase 1: %3lld points, phase 2: %3lld (%lld in parallel regions)\n", op.name.c_str(),
              static_cast<long long>(p1), static_cast<long long>(p2), static_cast<long long>(in_region));
  return {p1, p2};
}

std::vector<uint8_t> bytes_of(std::initializer_list<const std::vector<uint64_t>*> parts) {
  std::vector<uint8_t> b;
  for (const auto* p : parts) {
    const auto* c = reinterpret_cast<const uint8_t*>(p->data());
    b.insert(b.end(), c, c + p->size() * 8);
  }
  return b;
}
void restore_from(const std::vector<uint8_t>& b, std::initializer_list<std::vector<uint64_t>*> parts) {
  size_t at = 0;
  for (auto* p : parts) {
    std::memcpy(p->data(), b.data() + at, p->size() * 8);
    at += p->size() * 8;
  }
}

// The outputs of an Op whose tensors are byte vectors (MlaProlog, MlaPreprocess test cases).
void watch(Op& op, std::vector<std::vector<uint8_t>*> outs) {
  op.outputs = [outs] {
    std::vector<uint8_t> b;
    for (auto* o : outs) b.insert(b.end(), o->begin(), o->end());
    return b;
  };
  op.restore = [outs](const std::vector<uint8_t>& b) {
    auto at = b.begin();
    for (auto* o : outs) {
      std::copy(at, at + static_cast<std::ptrdiff_t>(o->size()), o->begin());
      at += static_cast<std::ptrdiff_t>(o->size());
    }
  };
}

Op fia_op(const std::string& name, Entry e, FiaRun& r) {
  Op op;
  op.name = name;
  op.phase1 = [e, &r](uint64_t* ws, aclOpExecutor** ex) { return entry_phase1(e, acl_args_of(r), ws, ex); };
  op.phase2 = [e](void* ws, uint64_t size, aclOpExecutor* ex) { return entry_phase2(e, ws, size, ex, nullptr); };
  op.outputs = [&r] { return bytes_of({&r.out.storage, &r.lse.storage}); };
  op.restore = [&r](const std::vector<uint8_t>& b) { restore_from(b, {&r.out.storage, &r.lse.storage}); };
  return op;
}

// Threads: 2 (the parallel paths; allocations in their regions are counted apart and must be 0).
class FaultInjection : public ::testing::Test {
 protected:
  void SetUp() override { set_num_threads(2); }
  void TearDown() override { set_num_threads(0); }
};

TEST_F(FaultInjection, FusedInferAttentionScoreV4) {
  const std::pair<Base, const char*> cases[] = {{Base::kGqaPagedTnd, "FIA V4 TND paged GQA prefill, sparse 3"},
                                                {Base::kMla, "FIA V4 MLA decode, paged"},
                                                {Base::kBsnd, "FIA V4 BSND, explicit mask"},
                                                {Base::kDecodePse, "FIA V4 BSND decode, pseShift"},
                                                {Base::kTndSink, "FIA V4 TND paged, learnableSink"}};
  for (const auto& [b, name] : cases) inject_each(fia_op(name, Entry::kFiaV4, *base(b).run));
}

TEST_F(FaultInjection, OlderFiaIfaAndPfaEntryPoints) {
  FiaRun& decode = *base(Base::kDecodePse).run;  // BSND decode with a pseShift
  FiaRun& prefill = *base(Base::kBsnd).run;      // BSND with a sparse-1 mask
  inject_each(fia_op("aclnnFusedInferAttentionScoreV3 decode", Entry::kFiaV3, decode));
  inject_each(fia_op("aclnnIncreFlashAttentionV4 decode", Entry::kIfaV4, decode));
  inject_each(fia_op("aclnnIncreFlashAttention decode", Entry::kIfaV1, decode));
  inject_each(fia_op("aclnnPromptFlashAttentionV3 BSND mask", Entry::kPfaV3, prefill));
  inject_each(fia_op("aclnnPromptFlashAttention BSND mask", Entry::kPfaV1, prefill));
}

const testdata::MlaPrologCase& prolog_case(MlaPrologScenario sc) {
  static std::unique_ptr<testdata::MlaPrologCase> cases[3];
  const int i = sc == MlaPrologScenario::kNoQuant ? 0 : sc == MlaPrologScenario::kPartialQuantKvQuant ? 1 : 2;
  if (!cases[i]) {
    testdata::MlaPrologCaseConfig c;  // the vendor's hidden sizes, 2 heads, 2 tokens
    c.scenario = sc;
    c.N = 2, c.He = 7168, c.Hcq = 1536, c.Hckv = 512, c.D = 128, c.Dr = 64, c.B = 2, c.S = 1;
    c.bsh = false;
    c.block_num = 2, c.block_size = 16;
    cases[i] = std::make_unique<testdata::MlaPrologCase>(testdata::make_mla_prolog_case(c));
  }
  return *cases[i];
}

Op prolog_op(const std::string& name, const testdata::MlaPrologCase& cc, MlaPrologCall call) {
  auto& c = const_cast<testdata::MlaPrologCase&>(cc);
  Op op;
  op.name = name;
  op.phase1 = [&c, call](uint64_t* ws, aclOpExecutor** ex) { return mla_prolog_phase1(c, call, ws, ex); };
  op.phase2 = [call](void* ws, uint64_t size, aclOpExecutor* ex) {
    return call.v3 ? aclnnMlaPrologV3WeightNz(ws, size, ex, nullptr)
           : call.v2 ? aclnnMlaPrologV2WeightNz(ws, size, ex, nullptr)
                     : aclnnMlaProlog(ws, size, ex, nullptr);
  };
  watch(op, {&c.kv_cache.bytes, &c.kr_cache.bytes, &c.query_out.bytes, &c.query_rope_out.bytes,
             &c.dequant_scale_q_nope_out.bytes, &c.query_norm_out.bytes, &c.dequant_scale_q_norm_out.bytes});
  return op;
}

TEST_F(FaultInjection, MlaProlog) {
  MlaPrologCall v1, v2, v3;
  v1.v2 = false;
  v3.v3 = true;
  inject_each(prolog_op("aclnnMlaProlog NO_QUANT", prolog_case(MlaPrologScenario::kNoQuant), v1));
  inject_each(prolog_op("aclnnMlaPrologV2WeightNz NO_QUANT", prolog_case(MlaPrologScenario::kNoQuant), v2));
  inject_each(prolog_op("aclnnMlaPrologV2WeightNz PARTIAL_QUANT_KV_QUANT",
                        prolog_case(MlaPrologScenario::kPartialQuantKvQuant), v2));
  inject_each(prolog_op("aclnnMlaPrologV3WeightNz FULL_QUANT_KV_QUANT",
                        prolog_case(MlaPrologScenario::kFullQuantKvQuant), v3));
}

TEST_F(FaultInjection, MlaPreprocessEveryCacheMode) {
  using CM = MlaPreprocessCacheMode;
  for (CM mode : {CM::kKvCache, CM::kKropeCtkv, CM::kInt8NzCache, CM::kNzCache}) {
    testdata::MlaPreprocessCaseConfig cfg;  // the vendor's hidden sizes, 16 heads, 2 tokens
    cfg.tokens = 2, cfg.heads = 16, cfg.hidden = 7168, cfg.Hckv = 512, cfg.Dr = 64, cfg.Hcq = 1536, cfg.D = 128;
    cfg.block_num = 2, cfg.block_size = 128;
    cfg.dtype = DType::kBFloat16;
    cfg.cache_mode = mode;
    cfg.q_down = mode == CM::kNzCache;  // aclnnMlaPreprocessV2
    if (mode == CM::kInt8NzCache) cfg.quant_mode = MlaPreprocessQuantMode::kPerTokenSymm;
    auto c = std::make_unique<testdata::MlaPreprocessCase>(testdata::make_mla_preprocess_case(cfg));
    Op op;
    op.name = std::string(cfg.q_down ? "aclnnMlaPreprocessV2 cacheMode " : "aclnnMlaPreprocess cacheMode ") +
              std::to_string(static_cast<int>(mode));
    op.phase1 = [&c](uint64_t* ws, aclOpExecutor** ex) { return mla_preprocess_phase1(*c, {}, ws, ex); };
    op.phase2 = [&cfg](void* ws, uint64_t size, aclOpExecutor* ex) {
      return cfg.q_down ? aclnnMlaPreprocessV2(ws, size, ex, nullptr) : aclnnMlaPreprocess(ws, size, ex, nullptr);
    };
    watch(op, {&c->kv_cache.bytes, &c->kv_cache_rope.bytes, &c->q_out.bytes, &c->q_rope_out.bytes,
               &c->q_down_out.bytes});
    inject_each(op);
  }
}

// aclCreateTensor / aclCreateTensorList / aclCreateIntArray: null on a failed allocation, nothing
// leaked (the asan-ubsan build's LeakSanitizer).
TEST(FaultInjectionObjects, CreateFunctionsReturnNull) {
  float data[8] = {};
  const int64_t dims[2] = {2, 4}, strides[2] = {4, 1};
  const int64_t values[3] = {1, 2, 3};
  int64_t points = -1;
  for (int64_t n = 1; n < 1000 && points < 0; ++n) {
    aclTensor* t = nullptr;
    aclTensorList* l = nullptr;
    aclIntArray* a = nullptr;
    {
      Armed armed(n, /*all=*/true);
      t = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 2, data);
      if (t != nullptr) {
        const aclTensor* one[1] = {t};
        l = aclCreateTensorList(one, 1);
        if (l != nullptr) a = aclCreateIntArray(values, 3);
      }
    }
    if (!g_injected) {
      ASSERT_TRUE(t && l && a);
      points = n - 1;
    } else {
      EXPECT_TRUE(t == nullptr || l == nullptr || a == nullptr) << "allocation " << n;
    }
    if (a) aclDestroyIntArray(a);
    if (l) aclDestroyTensorList(l);  // destroys t
    else if (t) aclDestroyTensor(t);
  }
  std::printf("[ faults   ] aclCreateTensor + aclCreateTensorList + aclCreateIntArray: %lld allocation points\n",
              static_cast<long long>(points));
  EXPECT_GT(points, 0);
}

}  // namespace
}  // namespace mlaops::testing

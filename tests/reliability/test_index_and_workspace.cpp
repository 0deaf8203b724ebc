// Memory safety under real serving loops (docs/c-api.md "Index tensors" and "Workspace"):
//   * a workspace overlapping any tensor bound to the call (an index tensor, an input, an output,
//     a cache) is refused in phase 2 before anything is written (FIA-18, MP-12, MPP-14): the
//     tensor at the start, the middle and the end of the workspace; every output, cache and
//     workspace byte unchanged;
//   * index tensors (block table, slot mapping, cache index) are read once: a caller thread
//     rewrites them with out-of-range values while calls run (a pipelined decode loop writing
//     the next step's indices early); every call either succeeds with the result of the valid
//     indices or is refused (161002), never reads or writes out of bounds (ASan in CI).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/mla_prolog.h"
#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_harness.h"
#include "ops/mla_preprocess/mla_preprocess_aclnn_call.h"
#include "ops/mla_prolog/mla_prolog_aclnn_call.h"
#include "testkit/mla_preprocess_test_data.h"
#include "testkit/mla_prolog_test_data.h"

namespace mlaops::testing {
namespace {

std::vector<uint8_t> bytes_of(const TensorView& v) {
  const auto* p = static_cast<const uint8_t*>(v.data);
  return std::vector<uint8_t>(p, p + v.numel() * dtype_size(v.dtype));
}

// Where a bound tensor is placed inside the workspace.
enum class At { kStart, kMiddle, kEnd };
const char* at_name(At a) { return a == At::kStart ? "start" : a == At::kMiddle ? "middle" : "end"; }

// A workspace of `ws_bytes` (filled with 0x5A) holding a copy of *v at `at`; *v is moved there.
struct OverlapWorkspace {
  std::vector<uint64_t> storage;
  uint8_t* base = nullptr;
  int64_t begin = 0, end = 0;  // the tensor's bytes in the workspace
  OverlapWorkspace(uint64_t ws_bytes, TensorView* v, At at) {
    const int64_t tb = v->numel() * dtype_size(v->dtype);
    storage.assign(static_cast<size_t>((ws_bytes + static_cast<uint64_t>(tb)) / 8 + 2), 0x5A5A5A5A5A5A5A5Aull);
    base = reinterpret_cast<uint8_t*>(storage.data());
    const int64_t ws = static_cast<int64_t>(ws_bytes);
    begin = at == At::kStart ? 0 : at == At::kMiddle ? (ws / 2) & ~int64_t{7} : std::max<int64_t>(0, (ws - tb) & ~int64_t{7});
    end = begin + tb;
    std::memcpy(base + begin, v->data, static_cast<size_t>(tb));
    v->data = base + begin;
  }
  // The workspace bytes outside the tensor are still the canary.
  bool canary_intact(uint64_t ws_bytes) const {
    for (int64_t i = 0; i < static_cast<int64_t>(ws_bytes); ++i)
      if ((i < begin || i >= end) && base[i] != 0x5A) return false;
    return true;
  }
};

TEST(WorkspaceOverlap, FiaRefusesEveryBoundTensorInsideTheWorkspace) {
  FiaCase c;
  c.B = 2, c.N = 8, c.KVN = 1, c.Sq = 1, c.Skv = 40, c.D = 64, c.Dv = 64, c.Dr = 16;
  c.act_kv = {40, 23};
  c.cfg.layout = "BNSD";
  c.cfg.paged = true;
  c.cfg.block_size = 16;
  c.cfg.value_is_key = true;
  const auto data = make_case_data(c);
  for (const char* name : {"blockTableOptional", "query", "attentionOut", "softmaxLse", "key"})
    for (At at : {At::kStart, At::kMiddle, At::kEnd}) {
      auto run = fia_test::build_fia_run(data->canon, data->cfg);
      FiaParams p = run->params;
      OpPlan plan;
      ASSERT_EQ(fused_infer_attention_score_v4_plan(p, &plan), kSuccess) << last_error_string();
      const uint64_t ws = plan.workspace_size();
      ASSERT_GT(ws, 0u);
      TensorView moved;
      TensorView* v = std::string(name) == "blockTableOptional" ? &run->block_table_view
                      : std::string(name) == "query"            ? &p.query
                      : std::string(name) == "attentionOut"     ? &p.attention_out
                      : std::string(name) == "softmaxLse"       ? &run->lse_view
                                                                : &p.key[0];
      if (v == &run->block_table_view) p.block_table = v;
      if (v == &run->lse_view) p.softmax_lse = v;
      OverlapWorkspace w(ws, v, at);
      if (v == &p.key[0]) p.value[0] = p.key[0];  // MLA: value is key
      const std::vector<uint8_t> out = bytes_of(p.attention_out), lse = bytes_of(*p.softmax_lse);
      EXPECT_EQ(fused_infer_attention_score_v4_run(plan, p, w.base, ws), kParamInvalid) << name << " " << at_name(at);
      EXPECT_NE(last_error_string().find("workspace: FIA-18 must not overlap"), std::string::npos) << last_error_string();
      EXPECT_EQ(bytes_of(p.attention_out), out) << name;
      EXPECT_EQ(bytes_of(*p.softmax_lse), lse) << name;
      EXPECT_TRUE(w.canary_intact(ws)) << name << " " << at_name(at);
    }
}

TEST(WorkspaceOverlap, MlaPrologRefusesEveryBoundTensorInsideTheWorkspace) {
  testdata::MlaPrologCaseConfig cfg;
  cfg.scenario = MlaPrologScenario::kFullQuantKvQuant;
  cfg.smooth = true;
  const testdata::MlaPrologCase base = testdata::make_mla_prolog_case(cfg);
  for (const char* name : {"cacheIndex", "queryOut", "kvCacheRef", "tokenX", "dequantScaleQNopeOutOptional"})
    for (At at : {At::kStart, At::kMiddle, At::kEnd}) {
      testdata::MlaPrologCase c = base.clone();
      MlaPrologParams p = c.params();
      OpPlan plan;
      ASSERT_EQ(mla_prolog_plan(p, &plan), kSuccess) << last_error_string();
      const uint64_t ws = plan.workspace_size();
      const std::string n = name;
      TensorView dqs = *p.dequant_scale_q_nope_out;
      TensorView* v = n == "cacheIndex" ? &p.cache_index
                      : n == "queryOut" ? &p.query_out
                      : n == "kvCacheRef" ? &p.kv_cache
                      : n == "tokenX"   ? &p.token_x
                                        : &dqs;
      p.dequant_scale_q_nope_out = &dqs;
      OverlapWorkspace w(ws, v, at);
      const std::vector<uint8_t> q = bytes_of(p.query_out), kv = bytes_of(p.kv_cache), kr = bytes_of(p.kr_cache);
      EXPECT_EQ(mla_prolog_run(plan, p, w.base, ws), kParamInvalid) << name << " " << at_name(at);
      EXPECT_NE(last_error_string().find("workspace: MP-12 must not overlap " + n), std::string::npos)
          << last_error_string();
      EXPECT_EQ(bytes_of(p.query_out), q);
      EXPECT_EQ(bytes_of(p.kv_cache), kv);
      EXPECT_EQ(bytes_of(p.kr_cache), kr);
      EXPECT_TRUE(w.canary_intact(ws)) << name << " " << at_name(at);
    }
}

TEST(WorkspaceOverlap, MlaPreprocessRefusesEveryBoundTensorInsideTheWorkspace) {
  testdata::MlaPreprocessCaseConfig cfg;
  cfg.cache_mode = MlaPreprocessCacheMode::kKropeCtkv;
  for (const char* name : {"slotMapping", "qOut", "kvCache", "input", "qRopeOut"})
    for (At at : {At::kStart, At::kMiddle, At::kEnd}) {
      testdata::MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);
      MlaPreprocessParams p = c.params();
      OpPlan plan;
      ASSERT_EQ(mla_preprocess_plan(p, &plan), kSuccess) << last_error_string();
      const uint64_t ws = plan.workspace_size();
      const std::string n = name;
      TensorView qr = *p.q_rope_out;
      TensorView* v = n == "slotMapping" ? &p.slot_mapping
                      : n == "qOut"      ? &p.q_out
                      : n == "kvCache"   ? &p.kv_cache
                      : n == "input"     ? &p.input
                                         : &qr;
      p.q_rope_out = &qr;
      OverlapWorkspace w(ws, v, at);
      if (v == &p.kv_cache) p.kv_cache_out = p.kv_cache;
      const std::vector<uint8_t> q = bytes_of(p.q_out), kv = bytes_of(p.kv_cache), qrb = bytes_of(qr);
      EXPECT_EQ(mla_preprocess_run(plan, p, w.base, ws), kParamInvalid) << name << " " << at_name(at);
      EXPECT_NE(last_error_string().find("workspace: MPP-14 must not overlap"), std::string::npos) << last_error_string();
      EXPECT_EQ(bytes_of(p.q_out), q);
      EXPECT_EQ(bytes_of(p.kv_cache), kv);
      EXPECT_EQ(bytes_of(qr), qrb);
      EXPECT_TRUE(w.canary_intact(ws)) << name << " " << at_name(at);
    }
}

// ---------------------------------------------------------------------------------------------
// Index tensors rewritten while calls run
// ---------------------------------------------------------------------------------------------

// Flips `n` int elements of `t` between their valid values and `bad` (out of range) until stopped,
// with relaxed atomic stores (the caller's writes; the library's copy is a plain read).
template <class T>
class Rewriter {
 public:
  Rewriter(void* data, int64_t n, T bad) : p_(static_cast<T*>(data)), valid_(p_, p_ + n), bad_(bad) {
    th_ = std::thread([this] {
      uint32_t x = 12345;
      while (!stop_.load(std::memory_order_relaxed)) {
        for (size_t i = 0; i < valid_.size(); ++i) {
          x = x * 1664525u + 1013904223u;
          std::atomic_ref<T>(p_[i]).store((x >> 28) == 0 ? bad_ : valid_[i], std::memory_order_relaxed);
        }
      }
      for (size_t i = 0; i < valid_.size(); ++i) std::atomic_ref<T>(p_[i]).store(valid_[i], std::memory_order_relaxed);
    });
  }
  ~Rewriter() {
    stop_.store(true);
    th_.join();
  }

 private:
  T* p_;
  std::vector<T> valid_;
  T bad_;
  std::atomic<bool> stop_{false};
  std::thread th_;
};

constexpr int kRounds = 30;

TEST(IndexRewrite, FiaBlockTableRewrittenDuringCalls) {
  FiaCase c;  // the vendor's MLA decode shapes (the C API keeps its ranges)
  c.B = 4, c.N = 8, c.KVN = 1, c.Sq = 1, c.Skv = 64, c.D = 512, c.Dv = 512, c.Dr = 64;
  c.cfg.scale = 0.04;
  c.cfg.layout = "BNSD";
  c.cfg.paged = true;
  c.cfg.block_size = 16;
  c.cfg.value_is_key = true;
  const auto data = make_case_data(c);
  auto run = fia_test::build_fia_run(data->canon, data->cfg);
  const FiaAclArgs args = acl_args_of(*run);
  ASSERT_EQ(fia_aclnn_call(args), ACLNN_SUCCESS) << last_error_string();
  const std::vector<uint8_t> want = bytes_of(run->params.attention_out);
  int ok = 0, refused = 0;
  {
    Rewriter<int32_t> w(run->block_table.data(), run->block_table.numel(), int32_t{1} << 30);
    for (int r = 0; r < kRounds; ++r) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // the writer runs between calls too
      std::memset(run->params.attention_out.data, 0, want.size());
      const aclnnStatus s = fia_aclnn_call(args);
      if (s == ACLNN_SUCCESS) {
        ++ok;
        EXPECT_EQ(bytes_of(run->params.attention_out), want) << r;
      } else {
        ++refused;
        EXPECT_EQ(s, ACLNN_ERR_PARAM_INVALID);
        EXPECT_NE(last_error_string().find("FIA-13"), std::string::npos) << last_error_string();
      }
    }
  }
  EXPECT_EQ(ok + refused, kRounds);
  std::printf("%d calls succeeded with the valid indices' result, %d refused\n", ok, refused);
}

TEST(IndexRewrite, MlaPreprocessSlotMappingRewrittenDuringCalls) {
  const testdata::MlaPreprocessCaseConfig cfg = testdata::vendor_cfg(
      {DType::kFloat16, 8, 16, MlaPreprocessCacheMode::kKropeCtkv, MlaPreprocessQuantMode::kPerTensorAsymm, false,
       testdata::MlaPreprocessWeightForm::kNz4d, false},
      3);
  testdata::MlaPreprocessCase want = testdata::make_mla_preprocess_case(cfg);
  ASSERT_EQ(mla_preprocess_call(want), ACLNN_SUCCESS) << last_error_string();
  testdata::MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);
  int ok = 0, refused = 0;
  {
    Rewriter<int32_t> w(c.slot_mapping.view.data, c.slot_mapping.numel(), int32_t{1} << 30);
    for (int r = 0; r < kRounds; ++r) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      c.reset_outputs();
      const aclnnStatus s = mla_preprocess_call(c);
      if (s == ACLNN_SUCCESS) {
        ++ok;
        EXPECT_EQ(c.q_out.bytes, want.q_out.bytes) << r;
        EXPECT_EQ(c.kv_cache.bytes, want.kv_cache.bytes) << r;
        EXPECT_EQ(c.kv_cache_rope.bytes, want.kv_cache_rope.bytes) << r;
      } else {
        ++refused;
        EXPECT_NE(last_error_string().find("MPP-17"), std::string::npos) << last_error_string();
      }
    }
  }
  EXPECT_EQ(ok + refused, kRounds);
  std::printf("%d calls succeeded with the valid indices' result, %d refused\n", ok, refused);
}

TEST(IndexRewrite, MlaPrologCacheIndexRewrittenDuringCalls) {
  testdata::MlaPrologCaseConfig cfg =
      testdata::vendor_small_cfg(MlaPrologScenario::kNoQuant, true, MlaPrologCacheMode::kPaBsnd);
  cfg.block_num = 4;
  testdata::MlaPrologCase want = testdata::make_mla_prolog_case(cfg);
  testdata::MlaPrologCase fresh = want.clone();
  ASSERT_EQ(mla_prolog_call(want), ACLNN_SUCCESS) << last_error_string();
  int ok = 0, refused = 0;
  {
    Rewriter<int64_t> w(fresh.cache_index.view.data, fresh.cache_index.numel(), int64_t{1} << 40);
    for (int r = 0; r < kRounds; ++r) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      fresh.reset_outputs();
      const aclnnStatus s = mla_prolog_call(fresh);
      if (s == ACLNN_SUCCESS) {
        ++ok;
        EXPECT_EQ(fresh.query_out.bytes, want.query_out.bytes) << r;
        EXPECT_EQ(fresh.kv_cache.bytes, want.kv_cache.bytes) << r;
      } else {
        ++refused;
        EXPECT_NE(last_error_string().find("MP-17"), std::string::npos) << last_error_string();
      }
    }
  }
  EXPECT_EQ(ok + refused, kRounds);
  std::printf("%d calls succeeded with the valid indices' result, %d refused\n", ok, refused);
}

}  // namespace
}  // namespace mlaops::testing

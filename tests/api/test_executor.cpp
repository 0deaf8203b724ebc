// The two-phase pattern and the executor rules, with a tiny test operator ("aclnnTestScale":
// out = 2 * in, rejecting negative input values in its execute-time content check).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "api/executor.h"
#include "core/error.h"

namespace {

using mlaops::api::ExecutorState;

const char* kOp = "aclnnTestScale";

// Phase 1 of the test operator: validates, builds the executor, writes nothing.
aclnnStatus TestScaleGetWorkspaceSize(const aclTensor* in, const aclTensor* out, uint64_t* ws, aclOpExecutor** ex) {
  if (ws == nullptr || ex == nullptr) return mlaops::fail(mlaops::kParamNullptr, "%s: out-pointer is null", kOp);
  auto st = std::make_shared<ExecutorState>();
  st->op = kOp;
  st->inputs.resize(1);
  st->outputs.resize(1);
  if (auto s = mlaops::api::bind_slot(in, kOp, "in", true, &st->inputs[0])) return s;
  if (auto s = mlaops::api::bind_slot(out, kOp, "out", true, &st->outputs[0])) return s;
  const int64_t n = st->inputs[0].view.numel();
  if (st->outputs[0].view.numel() != n) return mlaops::fail(mlaops::kParamInvalid, "%s: out: shape mismatch", kOp);
  st->workspace_bytes = static_cast<uint64_t>(n) * sizeof(float);
  st->run = [n](const ExecutorState& s, void* wsp, uint64_t) -> mlaops::Status {
    const float* x = s.inputs[0].view.ptr<float>();
    float* tmp = static_cast<float*>(wsp);
    for (int64_t i = 0; i < n; ++i)  // read-only pre-pass over contents
      if (x[i] < 0) return mlaops::fail(mlaops::kParamInvalid, "%s: in[%lld] = %g is negative", kOp, (long long)i, x[i]);
    for (int64_t i = 0; i < n; ++i) tmp[i] = 2 * x[i];
    std::memcpy(s.outputs[0].view.data, tmp, static_cast<size_t>(n) * sizeof(float));
    return mlaops::kSuccess;
  };
  *ws = st->workspace_bytes;
  *ex = mlaops::api::register_executor(std::move(st));
  return ACLNN_SUCCESS;
}
aclnnStatus TestScale(void* ws, uint64_t size, aclOpExecutor* ex, aclrtStream stream) {
  return mlaops::api::execute(kOp, ws, size, ex, stream);
}

struct Buffers {
  std::vector<float> in, out;
  aclTensor *tin = nullptr, *tout = nullptr;
  explicit Buffers(int64_t n) : in(static_cast<size_t>(n)), out(static_cast<size_t>(n), -7.0f) {
    for (int64_t i = 0; i < n; ++i) in[static_cast<size_t>(i)] = static_cast<float>(i);
    const int64_t d[1] = {n};
    tin = aclCreateTensor(d, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, d, 1, in.data());
    tout = aclCreateTensor(d, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, d, 1, out.data());
  }
  ~Buffers() {
    aclDestroyTensor(tin);
    aclDestroyTensor(tout);
  }
};

TEST(Executor, SynchronousRunConsumesExecutor) {
  Buffers b(100);
  const size_t before = mlaops::api::live_executor_count();
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(TestScaleGetWorkspaceSize(b.tin, b.tout, &ws_size, &ex), ACLNN_SUCCESS);
  EXPECT_EQ(ws_size, 400u);
  EXPECT_EQ(b.out[5], -7.0f);  // phase 1 wrote nothing
  std::vector<float> ws(100);
  ASSERT_EQ(TestScale(ws.data(), ws_size, ex, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(b.out[5], 10.0f);
  EXPECT_EQ(mlaops::api::live_executor_count(), before);
  // reuse of a consumed executor is an error code, never a use-after-free
  EXPECT_EQ(TestScale(ws.data(), ws_size, ex, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("not a live executor"), std::string::npos);
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(TestScale(ws.data(), ws_size, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(TestScale(ws.data(), ws_size, reinterpret_cast<aclOpExecutor*>(0x40), nullptr), ACLNN_ERR_PARAM_INVALID);
}

TEST(Executor, WorkspaceChecks) {
  Buffers b(10);
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(TestScaleGetWorkspaceSize(b.tin, b.tout, &ws_size, &ex), ACLNN_SUCCESS);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
  std::vector<float> ws(10);
  EXPECT_EQ(TestScale(nullptr, ws_size, ex, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(TestScale(ws.data(), ws_size - 1, ex, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("workspaceSize: allowed >= 40"), std::string::npos);
  EXPECT_EQ(b.out[1], -7.0f);
  EXPECT_EQ(TestScale(ws.data(), ws_size, ex, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(b.out[1], 2.0f);
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(nullptr), ACLNN_ERR_INNER_NULLPTR);
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_ERR_PARAM_INVALID);
}

TEST(Executor, ExecutorOfAnotherOperatorIsRejected) {
  Buffers b(4);
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(TestScaleGetWorkspaceSize(b.tin, b.tout, &ws_size, &ex), ACLNN_SUCCESS);
  std::vector<float> ws(4);
  EXPECT_EQ(mlaops::api::execute("aclnnOther", ws.data(), ws_size, ex, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("created by aclnnTestScale"), std::string::npos);
  EXPECT_EQ(TestScale(ws.data(), ws_size, ex, nullptr), ACLNN_SUCCESS);  // still live: not consumed
}

TEST(Executor, RepeatableRunsManyTimesAndRebinds) {
  Buffers b(8), c(8);
  for (auto& v : c.in) v = 100.0f;
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(TestScaleGetWorkspaceSize(b.tin, b.tout, &ws_size, &ex), ACLNN_SUCCESS);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
  std::vector<float> ws(8);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(TestScale(ws.data(), ws_size, ex, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(b.out[3], 6.0f);
  // re-point input 0 and output 0 at c's buffers
  ASSERT_EQ(aclSetInputTensorAddr(ex, 0, nullptr, c.in.data()), ACLNN_SUCCESS);
  ASSERT_EQ(aclSetOutputTensorAddr(ex, 0, c.tout, c.out.data()), ACLNN_SUCCESS);
  ASSERT_EQ(TestScale(ws.data(), ws_size, ex, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(c.out[3], 200.0f);
  EXPECT_EQ(aclSetInputTensorAddr(ex, 1, nullptr, c.in.data()), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclSetOutputTensorAddr(ex, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclSetInputTensorAddr(nullptr, 0, nullptr, c.in.data()), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclSetDynamicInputTensorAddr(ex, 0, 0, nullptr, c.in.data()), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclSetDynamicInputTensorAddr(ex, 5, 0, nullptr, c.in.data()), ACLNN_ERR_PARAM_INVALID);
  ASSERT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
  EXPECT_EQ(aclSetInputTensorAddr(ex, 0, nullptr, c.in.data()), ACLNN_ERR_PARAM_INVALID);
}

TEST(Executor, DynamicInputAddressOfATensorList) {
  std::vector<float> x(4, 1.0f), y(4, 3.0f);
  const int64_t d[1] = {4};
  aclTensor* t = aclCreateTensor(d, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, d, 1, x.data());
  const aclTensor* items[1] = {t};
  aclTensorList* l = aclCreateTensorList(items, 1);
  auto st = std::make_shared<ExecutorState>();
  st->op = "aclnnListSum";
  st->inputs.resize(1);
  ASSERT_EQ(mlaops::api::bind_list_slot(l, st->op.c_str(), "key", true, &st->inputs[0]), mlaops::kSuccess);
  float result = 0;
  st->run = [&result](const ExecutorState& s, void*, uint64_t) {
    result = s.inputs[0].list[0].ptr<float>()[0];
    return mlaops::kSuccess;
  };
  aclOpExecutor* ex = mlaops::api::register_executor(st);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
  ASSERT_EQ(mlaops::api::execute("aclnnListSum", nullptr, 0, ex, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(result, 1.0f);
  EXPECT_EQ(aclSetInputTensorAddr(ex, 0, nullptr, y.data()), ACLNN_ERR_PARAM_INVALID);  // a list slot
  ASSERT_EQ(aclSetDynamicInputTensorAddr(ex, 0, 0, l, y.data()), ACLNN_SUCCESS);
  EXPECT_EQ(aclSetDynamicInputTensorAddr(ex, 0, 1, l, y.data()), ACLNN_ERR_PARAM_INVALID);
  ASSERT_EQ(mlaops::api::execute("aclnnListSum", nullptr, 0, ex, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(result, 3.0f);
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensorList(l), ACLNN_SUCCESS);
  mlaops::api::TensorSlot slot;
  EXPECT_EQ(mlaops::api::bind_list_slot(nullptr, "op", "key", true, &slot), mlaops::kParamNullptr);
  EXPECT_EQ(mlaops::api::bind_list_slot(nullptr, "op", "key", false, &slot), mlaops::kSuccess);
  EXPECT_EQ(mlaops::api::bind_list_slot(l, "op", "key", true, &slot), mlaops::kParamInvalid);  // destroyed
}

TEST(Executor, StreamEnqueuesAndSynchronizeReportsFirstError) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  Buffers good(1000), bad(1000);
  bad.in[17] = -1.0f;
  std::vector<float> ws1(1000), ws2(1000), ws3(1000);
  uint64_t n1 = 0, n2 = 0, n3 = 0;
  aclOpExecutor *e1 = nullptr, *e2 = nullptr, *e3 = nullptr;
  ASSERT_EQ(TestScaleGetWorkspaceSize(good.tin, good.tout, &n1, &e1), ACLNN_SUCCESS);
  ASSERT_EQ(TestScaleGetWorkspaceSize(bad.tin, bad.tout, &n2, &e2), ACLNN_SUCCESS);
  ASSERT_EQ(TestScaleGetWorkspaceSize(good.tin, good.tout, &n3, &e3), ACLNN_SUCCESS);
  EXPECT_EQ(TestScale(ws1.data(), n1, e1, s), ACLNN_SUCCESS);  // enqueued
  EXPECT_EQ(TestScale(ws2.data(), n2, e2, s), ACLNN_SUCCESS);  // fails when it runs
  EXPECT_EQ(TestScale(ws3.data(), n3, e3, s), ACLNN_SUCCESS);
  const aclError sync = aclrtSynchronizeStream(s);
  EXPECT_EQ(sync, ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("aclnnTestScale: in[17] = -1 is negative"), std::string::npos);
  EXPECT_EQ(good.out[999], 1998.0f);
  for (float v : bad.out) ASSERT_EQ(v, -7.0f);  // nothing written by the failed call
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);  // the error was reported once
  // execute with a dead stream handle
  aclOpExecutor* e4 = nullptr;
  ASSERT_EQ(TestScaleGetWorkspaceSize(good.tin, good.tout, &n1, &e4), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(TestScale(ws1.data(), n1, e4, s), ACLNN_ERR_PARAM_INVALID);
  // null stream: the content error is returned directly
  aclOpExecutor* e5 = nullptr;
  ASSERT_EQ(TestScaleGetWorkspaceSize(bad.tin, bad.tout, &n2, &e5), ACLNN_SUCCESS);
  EXPECT_EQ(TestScale(ws2.data(), n2, e5, nullptr), ACLNN_ERR_PARAM_INVALID);
}

TEST(Executor, RepeatableExecutorOutlivesDestroyWhileQueued) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  Buffers b(1 << 16);
  uint64_t n = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(TestScaleGetWorkspaceSize(b.tin, b.tout, &n, &ex), ACLNN_SUCCESS);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
  std::vector<float> ws(1 << 16);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(TestScale(ws.data(), n, ex, s), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);  // queued runs hold their own reference
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(b.out[100], 200.0f);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST(Executor, ConcurrentCallsFromThreads) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&failures, t] {
      aclrtStream s = nullptr;
      if (aclrtCreateStream(&s) != ACL_SUCCESS) failures++;
      for (int i = 0; i < 50; ++i) {
        Buffers b(64);
        b.in[3] = static_cast<float>(t);
        uint64_t n = 0;
        aclOpExecutor* ex = nullptr;
        std::vector<float> ws(64);
        if (TestScaleGetWorkspaceSize(b.tin, b.tout, &n, &ex) != ACLNN_SUCCESS) failures++;
        if (TestScale(ws.data(), n, ex, (i % 2) ? s : nullptr) != ACLNN_SUCCESS) failures++;
        if (aclrtSynchronizeStream(s) != ACL_SUCCESS) failures++;
        if (b.out[3] != 2.0f * t) failures++;
      }
      aclrtDestroyStream(s);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace

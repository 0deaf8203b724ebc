// The two-phase pattern and the executor rules, with a tiny test operator ("aclnnTestScale":
// out = 2 * in, rejecting negative input values in its execute-time content check).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "api/runtime/executor.h"
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

// Streams need a current device on the calling thread (ACL-06), as in CANN.
void use_device() { ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS); }

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
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("workspaceSize: ACL-55 allowed >= 40"), std::string::npos);
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
  use_device();
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
  use_device();
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
      if (aclrtSetDevice(0) != ACL_SUCCESS || aclrtCreateStream(&s) != ACL_SUCCESS) failures++;
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

// A rejected executor call (docs/c-api.md, "Rules"): its status, and a message naming the function
// and the check site's words, which start with the rule id.
void expect_rule(aclnnStatus got, aclnnStatus code, const char* fn, const char* site) {
  const std::string m = aclGetRecentErrMsg();
  EXPECT_EQ(got, code) << site;
  EXPECT_NE(m.find(fn), std::string::npos) << site << ": " << m;
  EXPECT_NE(m.find(site), std::string::npos) << site << ": " << m;
}

std::string msg() { return aclGetRecentErrMsg(); }

aclTensor* vector_tensor(std::vector<float>& v) {
  const int64_t d[1] = {static_cast<int64_t>(v.size())};
  return aclCreateTensor(d, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, d, 1, v.data());
}

// The execute-time rules (ACL-50 .. ACL-56): nothing runs, nothing is written.
TEST(ExecutorRules, ExecuteAndLifetime) {
  use_device();
  Buffers b(10);
  std::vector<float> ws(10);
  expect_rule(TestScale(ws.data(), 40, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR, kOp, "ACL-50 executor is null");
  expect_rule(TestScale(ws.data(), 40, reinterpret_cast<aclOpExecutor*>(0x40), nullptr), ACLNN_ERR_PARAM_INVALID, kOp,
              "executor: ACL-52 not a live executor");
  uint64_t n = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(TestScaleGetWorkspaceSize(b.tin, b.tout, &n, &ex), ACLNN_SUCCESS);
  expect_rule(mlaops::api::execute("aclnnOther", ws.data(), n, ex, nullptr), ACLNN_ERR_PARAM_INVALID, "aclnnOther",
              "executor: ACL-53 created by aclnnTestScale, not by aclnnOtherGetWorkspaceSize");
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);  // so that the rejected calls below leave it live
  expect_rule(TestScale(nullptr, n, ex, nullptr), ACLNN_ERR_PARAM_NULLPTR, kOp,
              "workspace: ACL-54 null, but the executor needs 40 bytes");
  expect_rule(TestScale(ws.data(), n - 1, ex, nullptr), ACLNN_ERR_PARAM_INVALID, kOp,
              "workspaceSize: ACL-55 allowed >= 40 (from GetWorkspaceSize), got 39");
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  expect_rule(TestScale(ws.data(), n, ex, s), ACLNN_ERR_PARAM_INVALID, kOp,
              "stream: ACL-56 not a live stream (destroyed, or never created)");
  for (float v : b.out) ASSERT_EQ(v, -7.0f);  // no rejected call ran
  ASSERT_EQ(TestScale(ws.data(), n, ex, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(b.out[3], 6.0f);
  ASSERT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
  expect_rule(TestScale(ws.data(), n, ex, nullptr), ACLNN_ERR_PARAM_INVALID, kOp, "ACL-52 not a live executor");
  expect_rule(aclSetAclOpExecutorRepeatable(nullptr), ACLNN_ERR_PARAM_NULLPTR, "aclSetAclOpExecutorRepeatable",
              "ACL-50 executor is null");
  expect_rule(aclSetAclOpExecutorRepeatable(ex), ACLNN_ERR_PARAM_INVALID, "aclSetAclOpExecutorRepeatable",
              "executor: ACL-52 not a live executor");
  expect_rule(aclDestroyAclOpExecutor(nullptr), ACLNN_ERR_INNER_NULLPTR, "aclDestroyAclOpExecutor", "ACL-51 executor is null");
  expect_rule(aclDestroyAclOpExecutor(ex), ACLNN_ERR_PARAM_INVALID, "aclDestroyAclOpExecutor",
              "executor: ACL-52 not a live executor");
  expect_rule(aclSetInputTensorAddr(nullptr, 0, nullptr, ws.data()), ACLNN_ERR_PARAM_NULLPTR, "aclSetInputTensorAddr",
              "ACL-50 executor is null");
  expect_rule(aclSetOutputTensorAddr(ex, 0, nullptr, ws.data()), ACLNN_ERR_PARAM_INVALID, "aclSetOutputTensorAddr",
              "ACL-52 not a live executor");
  expect_rule(aclSetDynamicInputTensorAddr(nullptr, 0, 0, nullptr, ws.data()), ACLNN_ERR_PARAM_NULLPTR,
              "aclSetDynamicInputTensorAddr", "ACL-50 executor is null");
}

// The address-rebinding rules (ACL-58 .. ACL-64) on an executor with a tensor input, an optional
// input that was not passed, a tensor-list input and an output: nothing is rebound.
TEST(ExecutorRules, AddressRebinding) {
  const char* op = "aclnnRebindRules";
  std::vector<float> x(4, 1.0f), y(4, 2.0f), out(4, -7.0f), other(4, 5.0f);
  aclTensor* tx = vector_tensor(x);
  aclTensor* ty = vector_tensor(y);
  aclTensor* tout = vector_tensor(out);
  const aclTensor* items[1] = {ty};
  aclTensorList* l = aclCreateTensorList(items, 1);
  ASSERT_TRUE(tx && tout && l);
  auto st = std::make_shared<ExecutorState>();
  st->op = op;
  st->inputs.resize(3);
  st->outputs.resize(1);
  ASSERT_EQ(mlaops::api::bind_slot(tx, op, "x", true, &st->inputs[0]), mlaops::kSuccess);
  ASSERT_EQ(mlaops::api::bind_slot(nullptr, op, "maskOptional", false, &st->inputs[1]), mlaops::kSuccess);
  ASSERT_EQ(mlaops::api::bind_list_slot(l, op, "key", true, &st->inputs[2]), mlaops::kSuccess);
  ASSERT_EQ(mlaops::api::bind_slot(tout, op, "out", true, &st->outputs[0]), mlaops::kSuccess);
  st->run = [](const ExecutorState& s, void*, uint64_t) -> mlaops::Status {
    const float* a = reinterpret_cast<const float*>(s.inputs[0].view.data);
    const float* k = reinterpret_cast<const float*>(s.inputs[2].list[0].data);
    float* o = reinterpret_cast<float*>(s.outputs[0].view.data);
    for (int i = 0; i < 4; ++i) o[i] = a[i] + k[i];
    return mlaops::kSuccess;
  };
  aclOpExecutor* ex = mlaops::api::register_executor(st);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
  expect_rule(aclSetInputTensorAddr(ex, 3, nullptr, other.data()), ACLNN_ERR_PARAM_INVALID, "aclSetInputTensorAddr",
              "index: ACL-58 allowed < 3 (tensor inputs of this operator), got 3");
  expect_rule(aclSetOutputTensorAddr(ex, 1, nullptr, other.data()), ACLNN_ERR_PARAM_INVALID, "aclSetOutputTensorAddr",
              "ACL-58 allowed < 1 (tensor outputs of this operator), got 1");
  expect_rule(aclSetInputTensorAddr(ex, 2, nullptr, other.data()), ACLNN_ERR_PARAM_INVALID, "aclSetInputTensorAddr",
              "ACL-59 index 2 is a tensor list; use aclSetDynamicInputTensorAddr");
  expect_rule(aclSetInputTensorAddr(ex, 1, nullptr, other.data()), ACLNN_ERR_PARAM_INVALID, "aclSetInputTensorAddr",
              "ACL-60 index 1 is an optional tensor that was not passed");
  expect_rule(aclSetInputTensorAddr(ex, 0, tx, nullptr), ACLNN_ERR_PARAM_NULLPTR, "aclSetInputTensorAddr",
              "ACL-61 addr is null for a tensor with 4 elements");
  expect_rule(aclSetOutputTensorAddr(ex, 0, tout, nullptr), ACLNN_ERR_PARAM_NULLPTR, "aclSetOutputTensorAddr",
              "ACL-61 addr is null for a tensor with");
  expect_rule(aclSetDynamicInputTensorAddr(ex, 3, 0, l, other.data()), ACLNN_ERR_PARAM_INVALID,
              "aclSetDynamicInputTensorAddr", "irIndex: ACL-62 allowed < 3, got 3");
  expect_rule(aclSetDynamicInputTensorAddr(ex, 0, 0, l, other.data()), ACLNN_ERR_PARAM_INVALID,
              "aclSetDynamicInputTensorAddr", "ACL-63 input 0 is not a tensor list that was passed");
  expect_rule(aclSetDynamicInputTensorAddr(ex, 1, 0, l, other.data()), ACLNN_ERR_PARAM_INVALID,
              "aclSetDynamicInputTensorAddr", "ACL-63 input 1 is not a tensor list");
  expect_rule(aclSetDynamicInputTensorAddr(ex, 2, 1, l, other.data()), ACLNN_ERR_PARAM_INVALID,
              "aclSetDynamicInputTensorAddr", "relativeIndex: ACL-64 allowed < 1, got 1");
  expect_rule(aclSetDynamicInputTensorAddr(ex, 2, 0, l, nullptr), ACLNN_ERR_PARAM_NULLPTR, "aclSetDynamicInputTensorAddr",
              "ACL-61 addr is null for a non-empty tensor");
  ASSERT_EQ(mlaops::api::execute(op, nullptr, 0, ex, nullptr), ACLNN_SUCCESS);  // still the bound buffers
  for (float v : out) EXPECT_EQ(v, 3.0f);
  for (float v : other) EXPECT_EQ(v, 5.0f);
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(tx), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(tout), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensorList(l), ACLNN_SUCCESS);
}

// ACL-57: while a run of a repeatable executor is in progress on a stream, another run and every
// address rebinding of it are rejected and change nothing.
TEST(ExecutorRules, BusyExecutor) {
  use_device();
  const char* op = "aclnnBusyRules";
  std::vector<float> x(4, 1.0f), out(4, -7.0f), other(4, 5.0f);
  aclTensor* tx = vector_tensor(x);
  aclTensor* tout = vector_tensor(out);
  ASSERT_TRUE(tx && tout);
  std::atomic<bool> started{false}, release{false};
  std::atomic<int> runs{0};
  auto st = std::make_shared<ExecutorState>();
  st->op = op;
  st->inputs.resize(1);
  st->outputs.resize(1);
  ASSERT_EQ(mlaops::api::bind_slot(tx, op, "x", true, &st->inputs[0]), mlaops::kSuccess);
  ASSERT_EQ(mlaops::api::bind_slot(tout, op, "out", true, &st->outputs[0]), mlaops::kSuccess);
  st->run = [&](const ExecutorState& s, void*, uint64_t) -> mlaops::Status {
    runs++;
    started = true;
    while (!release) std::this_thread::yield();
    const float* a = reinterpret_cast<const float*>(s.inputs[0].view.data);
    float* o = reinterpret_cast<float*>(s.outputs[0].view.data);
    for (int i = 0; i < 4; ++i) o[i] = 2 * a[i];
    return mlaops::kSuccess;
  };
  aclOpExecutor* ex = mlaops::api::register_executor(st);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(mlaops::api::execute(op, nullptr, 0, ex, s), ACLNN_SUCCESS);  // queued; it waits for `release`
  while (!started) std::this_thread::yield();
  expect_rule(mlaops::api::execute(op, nullptr, 0, ex, nullptr), ACLNN_ERR_PARAM_INVALID, op,
              "executor: ACL-57 in use by another thread");
  expect_rule(aclSetInputTensorAddr(ex, 0, tx, other.data()), ACLNN_ERR_PARAM_INVALID, "aclSetInputTensorAddr",
              "ACL-57 in use by another thread");
  expect_rule(aclSetOutputTensorAddr(ex, 0, tout, other.data()), ACLNN_ERR_PARAM_INVALID, "aclSetOutputTensorAddr",
              "ACL-57 in use by another thread");
  expect_rule(aclSetDynamicInputTensorAddr(ex, 0, 0, nullptr, other.data()), ACLNN_ERR_PARAM_INVALID,
              "aclSetDynamicInputTensorAddr", "ACL-57 in use by another thread");
  release = true;
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(runs.load(), 1);
  for (float v : out) EXPECT_EQ(v, 2.0f);
  for (float v : other) EXPECT_EQ(v, 5.0f);
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(tx), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(tout), ACLNN_SUCCESS);
}

// Device memory freed between the phases (ACL-66, docs/c-api.md "Executors"): tensors in
// aclrtMalloc memory, one of them freed after phase 1: the run is rejected with 161002 naming the
// operator, the tensor and the freed allocation, before anything runs (the workspace, written
// first by the operator, keeps its canary; the output keeps its bytes).
struct DeviceBuffers {
  int64_t n;
  void *in = nullptr, *out = nullptr;
  aclTensor *tin = nullptr, *tout = nullptr;
  explicit DeviceBuffers(int64_t count) : n(count) {
    EXPECT_EQ(aclrtMalloc(&in, bytes(), ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    EXPECT_EQ(aclrtMalloc(&out, bytes(), ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    for (int64_t i = 0; i < n; ++i) {
      static_cast<float*>(in)[i] = static_cast<float>(i);
      static_cast<float*>(out)[i] = -7.0f;
    }
    const int64_t d[1] = {n};
    tin = aclCreateTensor(d, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, d, 1, in);
    tout = aclCreateTensor(d, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, d, 1, out);
  }
  size_t bytes() const { return static_cast<size_t>(n) * sizeof(float); }
  void free_in() {
    ASSERT_EQ(aclrtFree(in), ACL_SUCCESS);
    in = nullptr;
  }
  void free_out() {
    ASSERT_EQ(aclrtFree(out), ACL_SUCCESS);
    out = nullptr;
  }
  ~DeviceBuffers() {
    aclDestroyTensor(tin);
    aclDestroyTensor(tout);
    if (in) aclrtFree(in);
    if (out) aclrtFree(out);
  }
};

TEST(ExecutorRules, FreedDeviceMemory) {
  use_device();
  std::vector<float> ws(64, 123.0f);
  {  // the input freed: rejected, the output and the workspace untouched, the executor consumed
    DeviceBuffers b(64);
    uint64_t n = 0;
    aclOpExecutor* ex = nullptr;
    ASSERT_EQ(TestScaleGetWorkspaceSize(b.tin, b.tout, &n, &ex), ACLNN_SUCCESS);
    const uintptr_t base = reinterpret_cast<uintptr_t>(b.in);
    b.free_in();
    expect_rule(TestScale(ws.data(), n, ex, nullptr), ACLNN_ERR_PARAM_INVALID, kOp,
                "in: ACL-66 the tensor's memory was freed after it was bound");
    char range[96];
    std::snprintf(range, sizeof range, "aclrtMalloc allocation [%#zx, %#zx) (256 bytes)", static_cast<size_t>(base),
                  static_cast<size_t>(base + 256));
    EXPECT_NE(msg().find(range), std::string::npos) << msg();
    for (int64_t i = 0; i < b.n; ++i) ASSERT_EQ(static_cast<float*>(b.out)[i], -7.0f);
    for (float v : ws) ASSERT_EQ(v, 123.0f);
    EXPECT_EQ(TestScale(ws.data(), n, ex, nullptr), ACLNN_ERR_PARAM_INVALID);  // consumed, as any failed run
  }
  {  // the output freed: rejected before the operator runs (its workspace keeps the canary)
    DeviceBuffers b(64);
    uint64_t n = 0;
    aclOpExecutor* ex = nullptr;
    ASSERT_EQ(TestScaleGetWorkspaceSize(b.tin, b.tout, &n, &ex), ACLNN_SUCCESS);
    b.free_out();
    expect_rule(TestScale(ws.data(), n, ex, nullptr), ACLNN_ERR_PARAM_INVALID, kOp,
                "out: ACL-66 the tensor's memory was freed after it was bound");
    for (float v : ws) ASSERT_EQ(v, 123.0f);
  }
  {  // aclrtMallocHost memory is tracked too; a view in the middle of an allocation
    void* h = nullptr;
    ASSERT_EQ(aclrtMallocHost(&h, 1024), ACL_SUCCESS);
    std::vector<float> out(16, -7.0f);
    const int64_t d[1] = {16};
    aclTensor* tin = aclCreateTensor(d, 1, ACL_FLOAT, nullptr, 16, ACL_FORMAT_ND, nullptr, 0, h);  // bytes 64..128
    aclTensor* tout = aclCreateTensor(d, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, d, 1, out.data());
    uint64_t n = 0;
    aclOpExecutor* ex = nullptr;
    ASSERT_EQ(TestScaleGetWorkspaceSize(tin, tout, &n, &ex), ACLNN_SUCCESS);
    ASSERT_EQ(aclrtFreeHost(h), ACL_SUCCESS);
    expect_rule(TestScale(ws.data(), n, ex, nullptr), ACLNN_ERR_PARAM_INVALID, kOp,
                "in: ACL-66 the tensor's memory was freed after it was bound");
    EXPECT_NE(msg().find("lay in the aclrtMallocHost allocation"), std::string::npos) << msg();
    for (float v : out) ASSERT_EQ(v, -7.0f);
    aclDestroyTensor(tin);
    aclDestroyTensor(tout);
  }
  {  // queued: the run fails on the stream; aclrtSynchronizeStream returns it
    DeviceBuffers b(64);
    uint64_t n = 0;
    aclOpExecutor* ex = nullptr;
    ASSERT_EQ(TestScaleGetWorkspaceSize(b.tin, b.tout, &n, &ex), ACLNN_SUCCESS);
    b.free_in();
    aclrtStream s = nullptr;
    ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    ASSERT_EQ(TestScale(ws.data(), n, ex, s), ACLNN_SUCCESS);
    expect_rule(aclrtSynchronizeStream(s), ACLNN_ERR_PARAM_INVALID, kOp,
                "in: ACL-66 the tensor's memory was freed after it was bound");
    for (int64_t i = 0; i < b.n; ++i) ASSERT_EQ(static_cast<float*>(b.out)[i], -7.0f);
    ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  }
  for (float v : ws) ASSERT_EQ(v, 123.0f);
}

// Rebinding an address re-records where the tensor lies: the old buffer may then be freed; a
// new aclrtMalloc buffer freed before the run is rejected; host memory is never tracked.
TEST(ExecutorRules, FreedDeviceMemoryAfterRebinding) {
  use_device();
  DeviceBuffers b(16), c(16);
  std::vector<float> ws(16), host(16, 4.0f);
  uint64_t n = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(TestScaleGetWorkspaceSize(b.tin, b.tout, &n, &ex), ACLNN_SUCCESS);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
  ASSERT_EQ(aclSetInputTensorAddr(ex, 0, b.tin, c.in), ACLNN_SUCCESS);
  b.free_in();  // no longer bound
  ASSERT_EQ(TestScale(ws.data(), n, ex, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(static_cast<float*>(b.out)[3], 6.0f);
  c.free_in();  // bound now
  expect_rule(TestScale(ws.data(), n, ex, nullptr), ACLNN_ERR_PARAM_INVALID, kOp,
              "in: ACL-66 the tensor's memory was freed after it was bound");
  EXPECT_NE(msg().find("or the last address rebinding"), std::string::npos) << msg();
  ASSERT_EQ(aclSetInputTensorAddr(ex, 0, b.tin, host.data()), ACLNN_SUCCESS);  // host memory: not tracked
  ASSERT_EQ(TestScale(ws.data(), n, ex, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(static_cast<float*>(b.out)[3], 8.0f);
  ASSERT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
}

// A tensor-list element freed between the phases: named with its index; the run does not start.
// And a buffer allocated again at a freed one's address (by the caller, or as the call's
// workspace) is another allocation: simulated by a recorded id that is not the live one's.
TEST(ExecutorRules, FreedDeviceMemoryOfAListElementOrAllocatedAgain) {
  use_device();
  void *x = nullptr, *y = nullptr;
  ASSERT_EQ(aclrtMalloc(&x, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&y, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  const int64_t d[1] = {16};
  const aclTensor* items[2] = {aclCreateTensor(d, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, d, 1, x),
                               aclCreateTensor(d, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, d, 1, y)};
  aclTensorList* l = aclCreateTensorList(items, 2);
  auto st = std::make_shared<ExecutorState>();
  st->op = "aclnnListRun";
  st->inputs.resize(1);
  ASSERT_EQ(mlaops::api::bind_list_slot(l, st->op.c_str(), "key", true, &st->inputs[0]), mlaops::kSuccess);
  bool ran = false;
  st->run = [&ran](const ExecutorState&, void*, uint64_t) {
    ran = true;
    return mlaops::kSuccess;
  };
  aclOpExecutor* ex = mlaops::api::register_executor(st);
  ASSERT_EQ(aclrtFree(y), ACL_SUCCESS);
  expect_rule(mlaops::api::execute("aclnnListRun", nullptr, 0, ex, nullptr), ACLNN_ERR_PARAM_INVALID, "aclnnListRun",
              "key[1]: ACL-66 the tensor's memory was freed after it was bound");
  EXPECT_FALSE(ran);
  ASSERT_EQ(aclDestroyTensorList(l), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtFree(x), ACL_SUCCESS);

  void* a = nullptr;
  ASSERT_EQ(aclrtMalloc(&a, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ExecutorState again;
  again.op = "aclnnAgain";
  again.inputs.resize(1);
  again.inputs[0].present = true;
  again.inputs[0].name = "query";
  const mlaops::TensorView v = mlaops::make_view(static_cast<char*>(a) + 128, mlaops::DType::kFloat32, {32});
  again.inputs[0].memory = mlaops::api::locate(v);
  ASSERT_TRUE(again.inputs[0].memory.tracked);
  EXPECT_EQ(again.inputs[0].memory.lo, reinterpret_cast<uintptr_t>(a) + 128);
  EXPECT_EQ(again.inputs[0].memory.hi, reinterpret_cast<uintptr_t>(a) + 256);
  EXPECT_EQ(mlaops::api::check_bound_memory(again), mlaops::kSuccess);
  again.inputs[0].memory.alloc.id += 1000000;  // the allocation at that address is not the one bound
  expect_rule(mlaops::api::check_bound_memory(again), ACLNN_ERR_PARAM_INVALID, "aclnnAgain",
              "query: ACL-66 the tensor's memory was freed after it was bound");
  EXPECT_NE(msg().find("an allocation made at that address since is another buffer"), std::string::npos) << msg();
  again.inputs[0].memory.alloc.id -= 1000000;
  ASSERT_EQ(aclrtFree(a), ACL_SUCCESS);
  EXPECT_EQ(mlaops::api::check_bound_memory(again), mlaops::kParamInvalid);
}

// After aclFinalize the streams and the device stay usable, as in CANN (aclFinalize releases
// neither: docs/c-api.md, "Runtime"); operators never needed aclInit.
TEST(Executor, StreamsAndOperatorsAfterFinalize) {
  use_device();
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
  Buffers b(8);
  std::vector<float> ws(8);
  uint64_t n = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(TestScaleGetWorkspaceSize(b.tin, b.tout, &n, &ex), ACLNN_SUCCESS);
  ASSERT_EQ(TestScale(ws.data(), n, ex, s), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(b.out[3], 6.0f);
  ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

// The cost of the ACL-66 check (docs/reliability/handles_and_memory.md): an MLA decode call binds 8
// tensors (query, key[0], value[0], blockTable, queryRope, keyRope, attentionOut, softmaxLse), all
// in aclrtMalloc memory, here among 1000 live allocations; the check is timed over 20000 runs.
TEST(ExecutorRules, DeviceMemoryCheckCost) {
  use_device();
  std::vector<void*> buffers(1000);
  for (void*& p : buffers) ASSERT_EQ(aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ExecutorState st;
  st.op = "aclnnCheckCost";
  st.inputs.resize(8);
  for (size_t i = 0; i < st.inputs.size(); ++i) {
    st.inputs[i].present = true;
    st.inputs[i].name = "t";
    st.inputs[i].memory = mlaops::api::locate(
        mlaops::make_view(static_cast<char*>(buffers[i * 120]) + 64, mlaops::DType::kBFloat16, {512}));
    ASSERT_TRUE(st.inputs[i].memory.tracked);
  }
  constexpr int kRuns = 20000;
  const auto t0 = std::chrono::steady_clock::now();
  int failures = 0;
  for (int r = 0; r < kRuns; ++r) failures += mlaops::api::check_bound_memory(st) != mlaops::kSuccess ? 1 : 0;
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kRuns;
  EXPECT_EQ(failures, 0);
  std::printf("[ cost     ] ACL-66 check: %.0f ns per run of 8 tracked tensors (%.0f ns per tensor), 1000 live "
              "allocations\n",
              ns, ns / 8);
  EXPECT_LT(ns, 100000.0);  // a lookup per tensor: far below the operator's microseconds
  for (void* p : buffers) ASSERT_EQ(aclrtFree(p), ACL_SUCCESS);
}

}  // namespace

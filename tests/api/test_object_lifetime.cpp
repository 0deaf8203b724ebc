// Use after destroy (docs/c-api.md, "Object API"; api/runtime/objects.h): a destroyed handle of every
// object kind is rejected (161002) and touches nothing, whatever objects were created since; its
// memory is not handed to a new object while it is in the quarantine (kQuarantineSize later
// destroys); a tensor list never destroys or binds a tensor that is not its own live member
// (generations); executor handles are never reused; the registry from many threads at once.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "api/runtime/executor.h"
#include "api/runtime/objects.h"

namespace {

using mlaops::api::ObjKind;

std::string msg() { return aclGetRecentErrMsg(); }

void expect_rule(aclnnStatus got, aclnnStatus code, const char* fn, const char* site) {
  EXPECT_EQ(got, code) << site;
  EXPECT_NE(msg().find(fn), std::string::npos) << site << ": " << msg();
  EXPECT_NE(msg().find(site), std::string::npos) << site << ": " << msg();
}

aclTensor* make_tensor(float* data, int64_t n) {
  const int64_t d[1] = {n};
  return aclCreateTensor(d, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, d, 1, data);
}

// The view dims of a live tensor (its first dim), -1 when the getter fails.
int64_t first_dim(const aclTensor* t) {
  int64_t* dims = nullptr;
  uint64_t n = 0;
  if (aclGetViewShape(t, &dims, &n) != ACLNN_SUCCESS) return -1;
  const int64_t d = n > 0 ? dims[0] : 0;
  delete[] dims;
  return d;
}

// One object kind through its C functions: make one whose size (elements) is n, destroy, and
// read the size back (-1 when the call fails; scalars have no getter: their size is 1).
struct Kind {
  const char* name;
  const char* destroy_fn;
  std::function<void*(int64_t n)> make;
  std::function<aclnnStatus(void*)> destroy;
  std::function<int64_t(void*)> size;
};

// An int / float / bool array kind: make it from `values`, destroy, size.
template <class A, class V>
Kind array_kind(const char* name, const char* destroy_fn, A* (*create)(const V*, uint64_t),
                aclnnStatus (*destroy)(const A*), aclnnStatus (*get_size)(const A*, uint64_t*), const V* values) {
  return {name, destroy_fn, [=](int64_t n) -> void* { return create(values, static_cast<uint64_t>(n)); },
          [=](void* p) { return destroy(static_cast<A*>(p)); },
          [=](void* p) {
            uint64_t n = 0;
            return get_size(static_cast<A*>(p), &n) == ACLNN_SUCCESS ? static_cast<int64_t>(n) : -1;
          }};
}

std::vector<Kind> kinds(std::vector<float>* data) {
  static const int64_t iv[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  static const float fv[8] = {};
  static const bool bv[8] = {};
  float* d = data->data();
  return {
      {"tensor", "aclDestroyTensor", [d](int64_t n) -> void* { return make_tensor(d, n); },
       [](void* p) { return aclDestroyTensor(static_cast<aclTensor*>(p)); },
       [](void* p) { return first_dim(static_cast<aclTensor*>(p)); }},
      {"scalar", "aclDestroyScalar",
       [d](int64_t) -> void* { return aclCreateScalar(d, ACL_FLOAT); },
       [](void* p) { return aclDestroyScalar(static_cast<aclScalar*>(p)); }, [](void*) -> int64_t { return 1; }},
      array_kind("int array", "aclDestroyIntArray", aclCreateIntArray, aclDestroyIntArray, aclGetIntArraySize, iv),
      array_kind("float array", "aclDestroyFloatArray", aclCreateFloatArray, aclDestroyFloatArray, aclGetFloatArraySize,
                 fv),
      array_kind("bool array", "aclDestroyBoolArray", aclCreateBoolArray, aclDestroyBoolArray, aclGetBoolArraySize, bv),
      {"tensor list", "aclDestroyTensorList",
       [d](int64_t n) -> void* {
         std::vector<const aclTensor*> members;
         for (int64_t i = 0; i < n; ++i) members.push_back(make_tensor(d, 2));
         return aclCreateTensorList(members.data(), members.size());
       },
       [](void* p) { return aclDestroyTensorList(static_cast<aclTensorList*>(p)); },
       [](void* p) {
         uint64_t n = 0;
         return aclGetTensorListSize(static_cast<aclTensorList*>(p), &n) == ACLNN_SUCCESS ? static_cast<int64_t>(n) : -1;
       }},
  };
}

// Destroys `n` objects (scalars), pushing older destroyed objects through the quarantine.
void churn(size_t n) {
  float f = 0;
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(aclDestroyScalar(aclCreateScalar(&f, ACL_FLOAT)), ACLNN_SUCCESS);
}

// The user's report: the allocator handed a destroyed object's address to the next object (50 of
// 50 tries), so a second destroy destroyed the new one and getters read it. Now the destroyed
// object's memory stays allocated: the new object gets another address, the stale handle is
// rejected everywhere, and the new object is untouched.
TEST(ObjectLifetime, DoubleDestroyOfEveryKindTouchesNothing) {
  std::vector<float> data(8, 1.0f);
  for (const Kind& k : kinds(&data)) {
    SCOPED_TRACE(k.name);
    for (int attempt = 0; attempt < 50; ++attempt) {
      void* old = k.make(3);
      ASSERT_NE(old, nullptr);
      ASSERT_EQ(k.destroy(old), ACLNN_SUCCESS);
      void* fresh = k.make(5);
      ASSERT_NE(fresh, nullptr);
      EXPECT_NE(fresh, old) << "attempt " << attempt;
      expect_rule(k.destroy(old), ACLNN_ERR_PARAM_INVALID, k.destroy_fn, "ACL-33 not a live object");
      if (std::string(k.name) != "scalar") {
        EXPECT_EQ(k.size(old), -1);  // stale in the getter
      }
      EXPECT_EQ(k.size(fresh), std::string(k.name) == "scalar" ? 1 : 5);  // the new object is untouched
      ASSERT_EQ(k.destroy(fresh), ACLNN_SUCCESS);
    }
  }
}

// The bound: a destroyed object stays in the quarantine for kQuarantineSize - 1 later destroys
// (of any kind); until then no new object gets its address and its handle is rejected.
TEST(ObjectLifetime, QuarantineHoldsTheLastDestroyedObjects) {
  std::vector<float> data(8);
  aclTensor* t = make_tensor(data.data(), 4);
  ASSERT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
  size_t reused = 0;
  for (size_t i = 0; i + 1 < mlaops::api::kQuarantineSize; ++i) {
    aclTensor* x = make_tensor(data.data(), 4);
    reused += x == t ? 1 : 0;
    ASSERT_EQ(aclDestroyTensor(x), ACLNN_SUCCESS);
  }
  EXPECT_EQ(reused, 0u);
  EXPECT_EQ(first_dim(t), -1);
  expect_rule(aclDestroyTensor(t), ACLNN_ERR_PARAM_INVALID, "aclDestroyTensor", "ACL-33 not a live object");
}

// A list destroys exactly its own live members: not one the caller destroyed first, not one listed
// twice a second time, not one another list destroyed, and not a new tensor at a member's old
// address (simulated here by registering the quarantined shell anew: the allocator can hand the
// address out once the member has left the quarantine); an operator refuses a list whose member
// is gone or replaced (ACL-43, naming the element). The churn at the end frees everything the
// quarantine holds: a double destroy would be a double free there.
TEST(ObjectLifetime, ListDestroysOnlyItsOwnLiveMembers) {
  std::vector<float> data(8);
  aclTensor* a = make_tensor(data.data(), 2);
  aclTensor* b = make_tensor(data.data(), 2);
  const aclTensor* ab[2] = {a, b};
  aclTensorList* l = aclCreateTensorList(ab, 2);
  ASSERT_NE(l, nullptr);
  mlaops::api::TensorSlot slot;
  ASSERT_EQ(mlaops::api::bind_list_slot(l, "aclnnOp", "value", true, &slot), mlaops::kSuccess);
  EXPECT_EQ(slot.list.size(), 2u);
  ASSERT_EQ(aclDestroyTensor(a), ACLNN_SUCCESS);  // the caller destroys a member first
  // an operator refuses the list (naming the element); the list itself stays live
  EXPECT_EQ(mlaops::api::bind_list_slot(l, "aclnnOp", "value", true, &slot), mlaops::kParamInvalid);
  EXPECT_NE(msg().find("aclnnOp: value[0]: ACL-43 not a live member of the tensor list (the tensor it was created with "
                       "was destroyed"),
            std::string::npos)
      << msg();
  EXPECT_FALSE(slot.present);
  uint64_t n = 0;
  EXPECT_EQ(aclGetTensorListSize(l, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 2u);
  ASSERT_EQ(aclDestroyTensorList(l), ACLNN_SUCCESS);
  EXPECT_FALSE(mlaops::api::is_live(b, ObjKind::kTensor));

  aclTensor* c = make_tensor(data.data(), 2);
  const aclTensor* cc[2] = {c, c};
  aclTensorList* twice = aclCreateTensorList(cc, 2);
  ASSERT_EQ(aclDestroyTensorList(twice), ACLNN_SUCCESS);
  EXPECT_FALSE(mlaops::api::is_live(c, ObjKind::kTensor));

  aclTensor* s = make_tensor(data.data(), 2);
  const aclTensor* ss[1] = {s};
  aclTensorList* l1 = aclCreateTensorList(ss, 1);
  aclTensorList* l2 = aclCreateTensorList(ss, 1);
  ASSERT_EQ(aclDestroyTensorList(l1), ACLNN_SUCCESS);
  EXPECT_FALSE(mlaops::api::is_live(s, ObjKind::kTensor));
  ASSERT_EQ(aclDestroyTensorList(l2), ACLNN_SUCCESS);  // s is no longer its live member

  aclTensor* m = make_tensor(data.data(), 2);
  aclTensor* keep = make_tensor(data.data(), 2);
  const aclTensor* mk[2] = {m, keep};
  aclTensorList* l3 = aclCreateTensorList(mk, 2);
  ASSERT_EQ(aclDestroyTensor(m), ACLNN_SUCCESS);
  mlaops::api::register_object(m, ObjKind::kTensor);  // "a new tensor at m's address": a new generation
  ASSERT_TRUE(mlaops::api::is_live(m, ObjKind::kTensor));
  EXPECT_EQ(mlaops::api::bind_list_slot(l3, "aclnnOp", "key", true, &slot), mlaops::kParamInvalid);
  EXPECT_NE(msg().find("aclnnOp: key[0]: ACL-43 not a live member of the tensor list"), std::string::npos) << msg();
  EXPECT_FALSE(slot.present);
  ASSERT_EQ(aclDestroyTensorList(l3), ACLNN_SUCCESS);
  EXPECT_TRUE(mlaops::api::is_live(m, ObjKind::kTensor));  // not the list's member: left alone
  EXPECT_FALSE(mlaops::api::is_live(keep, ObjKind::kTensor));
  ASSERT_TRUE(mlaops::api::unregister_object(m, ObjKind::kTensor));  // the shell stays the quarantine's
  churn(mlaops::api::kQuarantineSize + 16);
}

// Executor handles are never-reused ids (api/runtime/executor.h): a destroyed or consumed handle stays
// dead however many executors are made after it, in every call that takes one.
TEST(ObjectLifetime, ExecutorHandlesAreNeverReused) {
  auto make = [] {
    auto st = std::make_shared<mlaops::api::ExecutorState>();
    st->op = "aclnnLifetimeTest";
    st->run = [](const mlaops::api::ExecutorState&, void*, uint64_t) { return mlaops::kSuccess; };
    return mlaops::api::register_executor(std::move(st));
  };
  aclOpExecutor* dead = make();
  ASSERT_EQ(aclDestroyAclOpExecutor(dead), ACLNN_SUCCESS);
  std::set<aclOpExecutor*> made;
  for (int i = 0; i < 2000; ++i) made.insert(make());
  EXPECT_EQ(made.size(), 2000u);
  EXPECT_EQ(made.count(dead), 0u);
  const char* kNotLive = "ACL-52 not a live executor";
  expect_rule(mlaops::api::execute("aclnnLifetimeTest", nullptr, 0, dead, nullptr), ACLNN_ERR_PARAM_INVALID,
              "aclnnLifetimeTest", kNotLive);
  expect_rule(aclDestroyAclOpExecutor(dead), ACLNN_ERR_PARAM_INVALID, "aclDestroyAclOpExecutor", kNotLive);
  expect_rule(aclSetAclOpExecutorRepeatable(dead), ACLNN_ERR_PARAM_INVALID, "aclSetAclOpExecutorRepeatable", kNotLive);
  float x = 0;
  expect_rule(aclSetInputTensorAddr(dead, 0, nullptr, &x), ACLNN_ERR_PARAM_INVALID, "aclSetInputTensorAddr", kNotLive);
  expect_rule(aclSetOutputTensorAddr(dead, 0, nullptr, &x), ACLNN_ERR_PARAM_INVALID, "aclSetOutputTensorAddr", kNotLive);
  expect_rule(aclSetDynamicInputTensorAddr(dead, 0, 0, nullptr, &x), ACLNN_ERR_PARAM_INVALID,
              "aclSetDynamicInputTensorAddr", kNotLive);
  for (aclOpExecutor* e : made) ASSERT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
}

// The registry from 4 threads at once (its mutex; the tsan preset can run this binary too): in
// each round every thread makes its own tensors, an int array and a list, then (all threads at
// once) destroys them, a member before its list on even rounds, then checks that every stale
// handle of its own is rejected. The checks run between barriers, while no thread destroys, so
// the handles are in the quarantine (at most 20 destroys per round); over the rounds the
// quarantine turns over about 5 times. No stale handle is accepted, nothing is destroyed twice (a
// double free would abort in the evictions).
TEST(ObjectLifetime, RegistryFromManyThreads) {
  constexpr int kThreads = 4, kRounds = 1000;
  std::atomic<int> accepted_stale{0}, failures{0};
  std::barrier sync(kThreads);
  std::vector<std::thread> th;
  for (int t = 0; t < kThreads; ++t)
    th.emplace_back([&, t] {
      std::vector<float> data(8, static_cast<float>(t));
      for (int r = 0; r < kRounds; ++r) {
        aclTensor* a = make_tensor(data.data(), 2);
        aclTensor* b = make_tensor(data.data(), 3);
        const int64_t v[2] = {r, t};
        aclIntArray* ia = aclCreateIntArray(v, 2);
        const aclTensor* ab[2] = {a, b};
        aclTensorList* l = aclCreateTensorList(ab, 2);
        sync.arrive_and_wait();
        if (!a || !b || !ia || !l) failures.fetch_add(1);
        if (r % 2 == 0 && aclDestroyTensor(a) != ACLNN_SUCCESS) failures.fetch_add(1);
        if (aclDestroyTensorList(l) != ACLNN_SUCCESS || aclDestroyIntArray(ia) != ACLNN_SUCCESS) failures.fetch_add(1);
        sync.arrive_and_wait();
        uint64_t n = 0;
        if (aclDestroyTensor(a) == ACLNN_SUCCESS) accepted_stale.fetch_add(1);
        if (aclDestroyTensor(b) == ACLNN_SUCCESS) accepted_stale.fetch_add(1);
        if (aclGetIntArraySize(ia, &n) == ACLNN_SUCCESS) accepted_stale.fetch_add(1);
        if (aclGetTensorListSize(l, &n) == ACLNN_SUCCESS) accepted_stale.fetch_add(1);
        sync.arrive_and_wait();
      }
    });
  for (auto& x : th) x.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(accepted_stale.load(), 0);
}

}  // namespace

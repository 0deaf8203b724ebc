// The aclnn object API: aclCreateTensor and friends, getters, destruction rules.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "api/runtime/executor.h"
#include "api/runtime/objects.h"

namespace {

std::string msg() { return aclGetRecentErrMsg(); }

// A rejected object call (docs/c-api.md, "Rules"): its status, and a message naming the function
// and the check site's words, which start with the rule id.
void expect_rule(aclnnStatus got, aclnnStatus code, const char* fn, const char* site) {
  EXPECT_EQ(got, code) << site;
  EXPECT_NE(msg().find(fn), std::string::npos) << site << ": " << msg();
  EXPECT_NE(msg().find(site), std::string::npos) << site << ": " << msg();
}
// A create call that returned null; its message names the function and the site.
template <class T>
void expect_null(T* got, const char* fn, const char* site) {
  EXPECT_EQ(got, nullptr) << site;
  EXPECT_NE(msg().find(fn), std::string::npos) << site << ": " << msg();
  EXPECT_NE(msg().find(site), std::string::npos) << site << ": " << msg();
}

TEST(AclnnObjects, CreateTensorContiguousAndGetters) {
  std::vector<uint16_t> data(2 * 3 * 4);
  const int64_t dims[3] = {2, 3, 4};
  aclTensor* t = aclCreateTensor(dims, 3, ACL_BF16, nullptr, 0, ACL_FORMAT_ND, dims, 3, data.data());
  ASSERT_NE(t, nullptr);
  int64_t* out = nullptr;
  uint64_t n = 0;
  ASSERT_EQ(aclGetViewShape(t, &out, &n), ACLNN_SUCCESS);
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(out[2], 4);
  delete[] out;
  ASSERT_EQ(aclGetViewStrides(t, &out, &n), ACLNN_SUCCESS);
  EXPECT_EQ(out[0], 12);
  EXPECT_EQ(out[1], 4);
  EXPECT_EQ(out[2], 1);
  delete[] out;
  ASSERT_EQ(aclGetStorageShape(t, &out, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 3u);
  delete[] out;
  int64_t off = -1;
  EXPECT_EQ(aclGetViewOffset(t, &off), ACLNN_SUCCESS);
  EXPECT_EQ(off, 0);
  aclFormat f;
  EXPECT_EQ(aclGetFormat(t, &f), ACLNN_SUCCESS);
  EXPECT_EQ(f, ACL_FORMAT_ND);
  aclDataType dt;
  EXPECT_EQ(aclGetDataType(t, &dt), ACLNN_SUCCESS);
  EXPECT_EQ(dt, ACL_BF16);
  EXPECT_EQ(aclGetDataType(t, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetViewShape(t, &out, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetStorageShape(nullptr, &out, &n), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetViewStrides(t, nullptr, &n), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetViewOffset(nullptr, &off), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetFormat(nullptr, &f), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
  // use after destroy: an error code
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclGetFormat(t, &f), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyTensor(nullptr), ACLNN_ERR_PARAM_NULLPTR);
}

TEST(AclnnObjects, StridesAndOffsetAreInElements) {
  std::vector<float> data(20);
  const int64_t dims[2] = {2, 3};
  const int64_t strides[2] = {5, 1};
  const int64_t storage[1] = {20};
  aclTensor* t = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 2, ACL_FORMAT_ND, storage, 1, data.data());
  ASSERT_NE(t, nullptr);
  mlaops::TensorView v;
  bool present = false;
  ASSERT_EQ(mlaops::api::to_view(t, "op", "x", true, &v, &present), mlaops::kSuccess);
  EXPECT_TRUE(present);
  EXPECT_EQ(v.data, data.data() + 2);  // offset 2 elements = 8 bytes
  EXPECT_EQ(v.strides[0], 5);
  EXPECT_FALSE(v.is_contiguous());
  aclDestroyTensor(t);
}

TEST(AclnnObjects, CreateTensorRejectsInconsistentArguments) {
  std::vector<float> data(16);
  const int64_t dims[2] = {4, 4};
  const int64_t neg[2] = {4, -1};
  const int64_t small[1] = {15};
  const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  const int64_t nstride[2] = {-4, 1};
  const int64_t huge[2] = {1LL << 40, 1LL << 40};
  EXPECT_EQ(aclCreateTensor(nullptr, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 2, data.data()), nullptr);
  EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 2, data.data()), nullptr);
  EXPECT_EQ(aclCreateTensor(neg, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data.data()), nullptr);
  EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, small, 1, data.data()), nullptr);
  EXPECT_NE(msg().find("reaches past the storage"), std::string::npos);
  EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 1, ACL_FORMAT_ND, dims, 2, data.data()), nullptr);
  EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, -1, ACL_FORMAT_ND, nullptr, 0, data.data()), nullptr);
  EXPECT_EQ(aclCreateTensor(nine, 9, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data.data()), nullptr);
  EXPECT_EQ(aclCreateTensor(dims, 2, static_cast<aclDataType>(5), nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data.data()),
            nullptr);
  EXPECT_EQ(aclCreateTensor(dims, 2, ACL_DT_UNDEFINED, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data.data()), nullptr);
  EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, static_cast<aclFormat>(5), nullptr, 0, data.data()),
            nullptr);
  EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, nstride, 0, ACL_FORMAT_ND, nullptr, 0, data.data()), nullptr);
  EXPECT_EQ(aclCreateTensor(huge, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data.data()), nullptr);
  // accepted: scalar (0-d), empty, null data (rejected later by operators if non-empty)
  aclTensor* s = aclCreateTensor(nullptr, 0, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data.data());
  ASSERT_NE(s, nullptr);
  const int64_t empty[2] = {0, 5};
  aclTensor* e = aclCreateTensor(empty, 2, ACL_BF16, nullptr, 0, ACL_FORMAT_ND, empty, 2, nullptr);
  ASSERT_NE(e, nullptr);
  aclTensor* nd = aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 2, nullptr);
  ASSERT_NE(nd, nullptr);
  mlaops::TensorView v;
  bool present;
  EXPECT_EQ(mlaops::api::to_view(e, "op", "x", true, &v, &present), mlaops::kSuccess);
  EXPECT_EQ(mlaops::api::to_view(nd, "aclnnOp", "query", true, &v, &present), mlaops::kParamInvalid);
  EXPECT_NE(msg().find("aclnnOp: query: ACL-42 tensor data is null"), std::string::npos);
  EXPECT_EQ(mlaops::api::to_view(nullptr, "aclnnOp", "query", true, &v, &present), mlaops::kParamNullptr);
  EXPECT_EQ(mlaops::api::to_view(nullptr, "aclnnOp", "mask", false, &v, &present), mlaops::kSuccess);
  EXPECT_FALSE(present);
  aclDestroyTensor(s);
  aclDestroyTensor(e);
  aclDestroyTensor(nd);
  EXPECT_EQ(mlaops::api::to_view(nd, "aclnnOp", "query", true, &v, &present), mlaops::kParamInvalid);
}

TEST(AclnnObjects, FractalNzBothForms) {
  std::vector<uint16_t> w(96 * 448 * 16 * 16);
  const int64_t nz4[4] = {96, 448, 16, 16};
  aclTensor* a = aclCreateTensor(nz4, 4, ACL_BF16, nullptr, 0, ACL_FORMAT_FRACTAL_NZ, nz4, 4, w.data());
  ASSERT_NE(a, nullptr);
  const int64_t logical[2] = {7168, 1536};
  aclTensor* b = aclCreateTensor(logical, 2, ACL_BF16, nullptr, 0, ACL_FORMAT_FRACTAL_NZ, nz4, 4, w.data());
  ASSERT_NE(b, nullptr);
  aclDestroyTensor(a);
  aclDestroyTensor(b);
}

TEST(AclnnObjects, ScalarsArraysLists) {
  float f = 1.5f;
  aclScalar* s = aclCreateScalar(&f, ACL_FLOAT);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(aclCreateScalar(nullptr, ACL_FLOAT), nullptr);
  EXPECT_EQ(aclCreateScalar(&f, ACL_INT4), nullptr);
  EXPECT_EQ(aclDestroyScalar(s), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyScalar(s), ACLNN_ERR_PARAM_INVALID);

  const int64_t iv[3] = {1, 2, 3};
  aclIntArray* ia = aclCreateIntArray(iv, 3);
  ASSERT_NE(ia, nullptr);
  uint64_t n = 0;
  EXPECT_EQ(aclGetIntArraySize(ia, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(ia->values[2], 3);
  EXPECT_EQ(aclCreateIntArray(nullptr, 2), nullptr);
  aclIntArray* ie = aclCreateIntArray(nullptr, 0);
  ASSERT_NE(ie, nullptr);
  EXPECT_EQ(aclGetIntArraySize(ie, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 0u);
  const float fv[2] = {1, 2};
  aclFloatArray* fa = aclCreateFloatArray(fv, 2);
  ASSERT_NE(fa, nullptr);
  EXPECT_EQ(aclGetFloatArraySize(fa, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(aclCreateFloatArray(nullptr, 1), nullptr);
  const bool bv[4] = {true, false, true, true};
  aclBoolArray* ba = aclCreateBoolArray(bv, 4);
  ASSERT_NE(ba, nullptr);
  EXPECT_EQ(aclGetBoolArraySize(ba, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 4u);
  EXPECT_EQ(aclCreateBoolArray(nullptr, 1), nullptr);
  // destroying an object through the wrong kind's function is an error, not UB
  EXPECT_EQ(aclDestroyFloatArray(reinterpret_cast<aclFloatArray*>(ia)), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclGetBoolArraySize(reinterpret_cast<aclBoolArray*>(fa), &n), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyIntArray(ia), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyIntArray(ie), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyIntArray(ia), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyFloatArray(fa), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyBoolArray(ba), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyBoolArray(nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetIntArraySize(nullptr, &n), ACLNN_ERR_PARAM_NULLPTR);
}

TEST(AclnnObjects, TensorListOwnsItsTensors) {
  std::vector<uint16_t> data(8);
  const int64_t dims[1] = {8};
  aclTensor* a = aclCreateTensor(dims, 1, ACL_FLOAT16, nullptr, 0, ACL_FORMAT_ND, dims, 1, data.data());
  aclTensor* b = aclCreateTensor(dims, 1, ACL_FLOAT16, nullptr, 0, ACL_FORMAT_ND, dims, 1, data.data());
  const aclTensor* items[2] = {a, b};
  aclTensorList* l = aclCreateTensorList(items, 2);
  ASSERT_NE(l, nullptr);
  uint64_t n = 0;
  EXPECT_EQ(aclGetTensorListSize(l, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 2u);
  // a caller that also destroys a member first (as some programs do) gets no double free
  EXPECT_EQ(aclDestroyTensor(a), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensorList(l), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(b), ACLNN_ERR_PARAM_INVALID);  // destroyed with the list
  EXPECT_EQ(aclDestroyTensorList(l), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyTensorList(nullptr), ACLNN_ERR_PARAM_NULLPTR);
  const aclTensor* bad[1] = {nullptr};
  EXPECT_EQ(aclCreateTensorList(bad, 1), nullptr);
  EXPECT_EQ(aclCreateTensorList(nullptr, 1), nullptr);
  aclTensorList* empty = aclCreateTensorList(nullptr, 0);
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(aclDestroyTensorList(empty), ACLNN_SUCCESS);
  EXPECT_EQ(aclnnInit(nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclnnFinalize(), ACLNN_SUCCESS);
}

// The rules of aclCreateTensor (ACL-20 .. ACL-29, docs/c-api.md "Rules"), each check site by the
// words of its message.
TEST(AclnnObjectRules, CreateTensor) {
  std::vector<float> data(16);
  const int64_t dims[2] = {4, 4};
  const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  const char* fn = "aclCreateTensor";
  expect_null(aclCreateTensor(nine, 9, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data.data()), fn,
              "viewDimsNum/storageDimsNum: ACL-20 allowed <= 8, got 9/0");
  expect_null(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nine, 9, data.data()), fn,
              "ACL-20 allowed <= 8, got 2/9");
  expect_null(aclCreateTensor(nullptr, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 2, data.data()), fn,
              "ACL-21 viewDims/storageDims is null with a non-zero count");
  expect_null(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 2, data.data()), fn,
              "ACL-21 viewDims/storageDims is null");
  expect_null(aclCreateTensor(dims, 2, static_cast<aclDataType>(5), nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data.data()),
              fn, "dataType: ACL-22 not a known aclDataType");
  expect_null(aclCreateTensor(dims, 2, ACL_DT_UNDEFINED, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data.data()), fn,
              "ACL-22 not a known aclDataType");
  expect_null(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, static_cast<aclFormat>(5), nullptr, 0, data.data()), fn,
              "format: ACL-23 not a known aclFormat");
  expect_null(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, -1, ACL_FORMAT_ND, nullptr, 0, data.data()), fn,
              "offset: ACL-24 allowed >= 0, got -1");
  const int64_t nstride[2] = {-4, 1};
  expect_null(aclCreateTensor(dims, 2, ACL_FLOAT, nstride, 0, ACL_FORMAT_ND, nullptr, 0, data.data()), fn,
              "stride: ACL-25 allowed >= 0, got -4");
  const int64_t neg[2] = {4, -1};
  const int64_t huge[2] = {1LL << 40, 1LL << 40};
  expect_null(aclCreateTensor(neg, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data.data()), fn,
              "viewDims: ACL-26 each dim must be >= 0");
  expect_null(aclCreateTensor(huge, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data.data()), fn,
              "ACL-26 each dim must be >= 0 and the product must fit int64");
  expect_null(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, neg, 2, data.data()), fn,
              "storageDims: ACL-27 each dim must be >= 0");
  expect_null(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, huge, 2, data.data()), fn,
              "ACL-27 each dim must be >= 0 and the product must fit int64");
  const int64_t three[1] = {3};
  const int64_t far[1] = {1LL << 62};
  expect_null(aclCreateTensor(three, 1, ACL_FLOAT, far, 0, ACL_FORMAT_ND, nullptr, 0, data.data()), fn,
              "ACL-28 view extent overflows int64");  // (3 - 1) * 2^62 elements
  const int64_t big[1] = {1LL << 62};
  expect_null(aclCreateTensor(big, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data.data()), fn,
              "ACL-28 view extent overflows int64");  // 2^62 elements of 4 bytes
  const int64_t small[1] = {15};
  expect_null(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, small, 1, data.data()), fn,
              "ACL-29 the view (offset 0, extent 16 elements) reaches past the storage (15 elements)");
  expect_null(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 1, ACL_FORMAT_ND, dims, 2, data.data()), fn,
              "ACL-29 the view (offset 1");
}

// The rules of the other create calls, the destroy calls and the getters (ACL-21, ACL-30 ..
// ACL-33); out-values stay untouched.
TEST(AclnnObjectRules, ScalarsArraysListsDestroyAndGetters) {
  float f = 1.0f;
  expect_null(aclCreateScalar(nullptr, ACL_FLOAT), "aclCreateScalar", "ACL-30 value must be non-null");
  expect_null(aclCreateScalar(&f, ACL_INT4), "aclCreateScalar", "ACL-30 value must be non-null and dataType a whole-byte type");
  expect_null(aclCreateIntArray(nullptr, 2), "aclCreateIntArray", "ACL-21 value is null with size 2");
  expect_null(aclCreateFloatArray(nullptr, 1), "aclCreateFloatArray", "ACL-21 value is null with size");
  expect_null(aclCreateBoolArray(nullptr, 3), "aclCreateBoolArray", "ACL-21 value is null with size");
  expect_null(aclCreateTensorList(nullptr, 1), "aclCreateTensorList", "ACL-21 value is null with size 1");
  std::vector<float> data(4);
  const int64_t dims[1] = {4};
  aclTensor* t = aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 1, data.data());
  ASSERT_NE(t, nullptr);
  const aclTensor* with_null[2] = {t, nullptr};
  expect_null(aclCreateTensorList(with_null, 2), "aclCreateTensorList", "ACL-31 value[");
  EXPECT_NE(msg().find("value[1] is not a live aclTensor"), std::string::npos) << msg();
  aclTensor* dead = aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 1, data.data());
  ASSERT_EQ(aclDestroyTensor(dead), ACLNN_SUCCESS);
  const aclTensor* with_dead[1] = {dead};
  expect_null(aclCreateTensorList(with_dead, 1), "aclCreateTensorList", "ACL-31 value[");

  // destroy: null, then dead
  expect_rule(aclDestroyTensor(nullptr), ACLNN_ERR_PARAM_NULLPTR, "aclDestroyTensor", "ACL-32 argument is null");
  expect_rule(aclDestroyScalar(nullptr), ACLNN_ERR_PARAM_NULLPTR, "aclDestroyScalar", "ACL-32 argument is null");
  expect_rule(aclDestroyIntArray(nullptr), ACLNN_ERR_PARAM_NULLPTR, "aclDestroyIntArray", "ACL-32 argument is null");
  expect_rule(aclDestroyFloatArray(nullptr), ACLNN_ERR_PARAM_NULLPTR, "aclDestroyFloatArray", "ACL-32 argument is null");
  expect_rule(aclDestroyBoolArray(nullptr), ACLNN_ERR_PARAM_NULLPTR, "aclDestroyBoolArray", "ACL-32 argument is null");
  expect_rule(aclDestroyTensorList(nullptr), ACLNN_ERR_PARAM_NULLPTR, "aclDestroyTensorList", "ACL-32 argument is null");
  expect_rule(aclDestroyTensor(dead), ACLNN_ERR_PARAM_INVALID, "aclDestroyTensor",
              "ACL-33 not a live object (already destroyed, or never created)");
  expect_rule(aclDestroyIntArray(reinterpret_cast<const aclIntArray*>(t)), ACLNN_ERR_PARAM_INVALID, "aclDestroyIntArray",
              "ACL-33 not a live object (already destroyed");  // a live object of another kind
  const aclTensor* one[1] = {t};
  aclTensorList* l = aclCreateTensorList(one, 1);
  ASSERT_NE(l, nullptr);
  ASSERT_EQ(aclDestroyTensorList(l), ACLNN_SUCCESS);  // destroys t too
  expect_rule(aclDestroyTensorList(l), ACLNN_ERR_PARAM_INVALID, "aclDestroyTensorList",
              "ACL-33 not a live object (already destroyed, or never created)");

  // getters: null arguments, then dead objects
  aclTensor* g = aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 1, data.data());
  ASSERT_NE(g, nullptr);
  int64_t* arr = reinterpret_cast<int64_t*>(0x10);
  uint64_t n = 77;
  int64_t off = 77;
  aclFormat fmt = ACL_FORMAT_NC1HWC0;
  aclDataType dt = ACL_INT8;
  expect_rule(aclGetViewShape(nullptr, &arr, &n), ACLNN_ERR_PARAM_NULLPTR, "aclGetViewShape", "ACL-32 null argument");
  expect_rule(aclGetViewShape(g, nullptr, &n), ACLNN_ERR_PARAM_NULLPTR, "aclGetViewShape", "ACL-32 null argument");
  expect_rule(aclGetViewShape(g, &arr, nullptr), ACLNN_ERR_PARAM_NULLPTR, "aclGetViewShape", "ACL-32 viewDimsNum is null");
  expect_rule(aclGetStorageShape(g, &arr, nullptr), ACLNN_ERR_PARAM_NULLPTR, "aclGetStorageShape",
              "ACL-32 storageDimsNum is null");
  expect_rule(aclGetViewStrides(g, &arr, nullptr), ACLNN_ERR_PARAM_NULLPTR, "aclGetViewStrides", "ACL-32 stridesNum is null");
  expect_rule(aclGetViewOffset(g, nullptr), ACLNN_ERR_PARAM_NULLPTR, "aclGetViewOffset", "ACL-32 null argument");
  expect_rule(aclGetFormat(nullptr, &fmt), ACLNN_ERR_PARAM_NULLPTR, "aclGetFormat", "ACL-32 null argument");
  expect_rule(aclGetDataType(g, nullptr), ACLNN_ERR_PARAM_NULLPTR, "aclGetDataType", "ACL-32 null argument");
  expect_rule(aclGetIntArraySize(nullptr, &n), ACLNN_ERR_PARAM_NULLPTR, "aclGetIntArraySize", "ACL-32 null argument");
  expect_rule(aclGetFloatArraySize(nullptr, &n), ACLNN_ERR_PARAM_NULLPTR, "aclGetFloatArraySize", "ACL-32 null argument");
  expect_rule(aclGetBoolArraySize(nullptr, &n), ACLNN_ERR_PARAM_NULLPTR, "aclGetBoolArraySize", "ACL-32 null argument");
  expect_rule(aclGetTensorListSize(nullptr, &n), ACLNN_ERR_PARAM_NULLPTR, "aclGetTensorListSize", "ACL-32 null argument");
  ASSERT_EQ(aclDestroyTensor(g), ACLNN_SUCCESS);
  // a new tensor exists meanwhile: it does not get g's address (the quarantine, docs/c-api.md)
  aclTensor* fresh = aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 1, data.data());
  ASSERT_NE(fresh, nullptr);
  EXPECT_NE(fresh, g);
  expect_rule(aclGetViewShape(g, &arr, &n), ACLNN_ERR_PARAM_INVALID, "aclGetViewShape", "ACL-33 not a live object");
  expect_rule(aclGetStorageShape(g, &arr, &n), ACLNN_ERR_PARAM_INVALID, "aclGetStorageShape", "ACL-33 not a live object");
  expect_rule(aclGetViewStrides(g, &arr, &n), ACLNN_ERR_PARAM_INVALID, "aclGetViewStrides", "ACL-33 not a live object");
  expect_rule(aclGetViewOffset(g, &off), ACLNN_ERR_PARAM_INVALID, "aclGetViewOffset", "ACL-33 not a live object");
  expect_rule(aclGetFormat(g, &fmt), ACLNN_ERR_PARAM_INVALID, "aclGetFormat", "ACL-33 not a live object");
  expect_rule(aclGetDataType(g, &dt), ACLNN_ERR_PARAM_INVALID, "aclGetDataType", "ACL-33 not a live object");
  expect_rule(aclGetIntArraySize(reinterpret_cast<aclIntArray*>(g), &n), ACLNN_ERR_PARAM_INVALID, "aclGetIntArraySize",
              "ACL-33 not a live object");
  expect_rule(aclGetFloatArraySize(reinterpret_cast<aclFloatArray*>(g), &n), ACLNN_ERR_PARAM_INVALID,
              "aclGetFloatArraySize", "ACL-33 not a live object");
  expect_rule(aclGetBoolArraySize(reinterpret_cast<aclBoolArray*>(g), &n), ACLNN_ERR_PARAM_INVALID, "aclGetBoolArraySize",
              "ACL-33 not a live object");
  expect_rule(aclGetTensorListSize(l, &n), ACLNN_ERR_PARAM_INVALID, "aclGetTensorListSize", "ACL-33 not a live object");
  EXPECT_EQ(arr, reinterpret_cast<int64_t*>(0x10));
  EXPECT_EQ(n, 77u);
  EXPECT_EQ(off, 77);
  EXPECT_EQ(fmt, ACL_FORMAT_NC1HWC0);
  EXPECT_EQ(dt, ACL_INT8);
  EXPECT_EQ(aclGetFormat(fresh, &fmt), ACLNN_SUCCESS);  // untouched
  EXPECT_EQ(fmt, ACL_FORMAT_ND);
  EXPECT_EQ(aclDestroyTensor(fresh), ACLNN_SUCCESS);
}

// The argument binding every operator uses (to_view, bind_slot, bind_list_slot; ACL-40 ..
// ACL-42); the operators name their own rule for a null required argument first (FIA-01, MP-01,
// MPP-01), so these are reached through the generic binding.
TEST(AclnnObjectRules, OperatorArgumentBinding) {
  std::vector<float> data(4);
  const int64_t dims[1] = {4};
  mlaops::TensorView v;
  bool present = true;
  EXPECT_EQ(mlaops::api::to_view(nullptr, "aclnnOp", "query", true, &v, &present), mlaops::kParamNullptr);
  EXPECT_NE(msg().find("aclnnOp: query: ACL-40 required tensor is null"), std::string::npos) << msg();
  EXPECT_FALSE(present);
  aclTensor* nd = aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 1, nullptr);
  ASSERT_NE(nd, nullptr);
  EXPECT_EQ(mlaops::api::to_view(nd, "aclnnOp", "key", true, &v, &present), mlaops::kParamInvalid);
  EXPECT_NE(msg().find("aclnnOp: key: ACL-42 tensor data is null but the tensor has 4 elements"), std::string::npos) << msg();
  EXPECT_FALSE(present);
  ASSERT_EQ(aclDestroyTensor(nd), ACLNN_SUCCESS);
  EXPECT_EQ(mlaops::api::to_view(nd, "aclnnOp", "value", false, &v, &present), mlaops::kParamInvalid);
  EXPECT_NE(msg().find("aclnnOp: value: ACL-41 not a live aclTensor (destroyed, or never created by aclCreateTensor)"),
            std::string::npos)
      << msg();
  EXPECT_FALSE(present);
  mlaops::api::TensorSlot slot;
  EXPECT_EQ(mlaops::api::bind_list_slot(nullptr, "aclnnOp", "key", true, &slot), mlaops::kParamNullptr);
  EXPECT_NE(msg().find("aclnnOp: key: ACL-40 required tensor list is null"), std::string::npos) << msg();
  EXPECT_FALSE(slot.present);
  aclTensor* t = aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 1, data.data());
  const aclTensor* one[1] = {t};
  aclTensorList* l = aclCreateTensorList(one, 1);
  ASSERT_NE(l, nullptr);
  ASSERT_EQ(aclDestroyTensorList(l), ACLNN_SUCCESS);
  EXPECT_EQ(mlaops::api::bind_list_slot(l, "aclnnOp", "value", true, &slot), mlaops::kParamInvalid);
  EXPECT_NE(msg().find("aclnnOp: value: ACL-41 not a live aclTensorList"), std::string::npos) << msg();
  EXPECT_FALSE(slot.present);
}

}  // namespace

// The aclnn object API: aclCreateTensor and friends, getters, destruction rules.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "api/objects.h"

namespace {

std::string msg() { return aclGetRecentErrMsg(); }

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
  EXPECT_NE(msg().find("aclnnOp: query: tensor data is null"), std::string::npos);
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

}  // namespace

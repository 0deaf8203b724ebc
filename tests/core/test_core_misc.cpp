// Checked arithmetic, workspace layout, dtype tables, TensorView helpers, element access.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/checked_math.h"
#include "core/element_access.h"
#include "core/workspace.h"
#include "mlaops/dtype.h"
#include "mlaops/tensor_view.h"

namespace mlaops {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(CheckedMath, DetectsOverflow) {
  int64_t out;
  EXPECT_TRUE(mul_ok(1 << 20, 1 << 20, &out));
  EXPECT_EQ(out, int64_t(1) << 40);
  EXPECT_FALSE(mul_ok(kMax, 2, &out));
  EXPECT_FALSE(add_ok(kMax, 1, &out));
  EXPECT_TRUE(product_ok({65536, 128, 1, 576}, &out));
  EXPECT_EQ(out, 65536LL * 128 * 576);
  EXPECT_FALSE(product_ok({1LL << 32, 1LL << 32}, &out));
  EXPECT_FALSE(product_ok({4, -1}, &out));
  EXPECT_EQ(checked_mul({1LL << 40, 1LL << 40}, &out, "kvCache"), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("kvCache: tensor too large"), std::string::npos);
  EXPECT_EQ(checked_add(kMax, 5, &out, "ws"), kParamInvalid);
  EXPECT_EQ(checked_mul({3, 4}, &out, "x"), kSuccess);
  EXPECT_EQ(out, 12);
  EXPECT_EQ(ceil_div(129, 128), 2);
  EXPECT_EQ(round_up(129, 64), 192);
}

TEST(Workspace, LayoutAlignsAndChecks) {
  WorkspaceLayout l("test_op", "TEST-01 workspace overflows int64");
  int64_t a, b, c;
  EXPECT_EQ(l.total(), 0);
  ASSERT_EQ(l.add(10, &a), kSuccess);
  ASSERT_EQ(l.add(100, &b), kSuccess);
  ASSERT_EQ(l.add(0, &c), kSuccess);
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 64);
  EXPECT_EQ(c, 192);
  EXPECT_EQ(l.total(), 192);
  EXPECT_EQ(l.add(-1, &a), kParamInvalid);
  EXPECT_EQ(l.add(kMax, &a), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("test_op: workspace: TEST-01 workspace overflows int64; allowed"),
            std::string::npos)
      << last_error_message();
  EXPECT_EQ(l.total(), 192);  // a failed add reserves nothing
  std::vector<char> buf(256);
  WorkspaceArena arena(buf.data(), buf.size());
  EXPECT_EQ(arena.at<char>(b), buf.data() + 64);
}

TEST(DType, TableMatchesVendorValues) {
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2);
  EXPECT_EQ(dtype_size(DType::kInt8), 1);
  EXPECT_EQ(dtype_size(DType::kInt64), 8);
  EXPECT_EQ(dtype_size(DType::kComplex128), 16);
  EXPECT_EQ(dtype_size(DType::kInt4), 0);
  EXPECT_EQ(dtype_size(DType::kUndefined), 0);
  EXPECT_EQ(static_cast<int>(DType::kBFloat16), 27);
  EXPECT_EQ(static_cast<int>(Format::kFractalNZ), 29);
  EXPECT_TRUE(dtype_is_known(27));
  EXPECT_FALSE(dtype_is_known(5));
  EXPECT_FALSE(dtype_is_known(28));
  EXPECT_TRUE(format_is_known(2));
  EXPECT_FALSE(format_is_known(5));
  EXPECT_STREQ(dtype_name(DType::kBFloat16), "BF16");
  EXPECT_STREQ(format_name(Format::kFractalNZ), "FRACTAL_NZ");
  EXPECT_STREQ(dtype_name(static_cast<DType>(5)), "UNDEFINED");
}

TEST(TensorView, ContiguityNumelShape) {
  std::vector<float> buf(24);
  TensorView v = make_view(buf.data(), DType::kFloat32, {2, 3, 4});
  EXPECT_EQ(v.numel(), 24);
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.strides[0], 12);
  EXPECT_EQ(v.dim(-1), 4);
  char s[32];
  EXPECT_STREQ(shape_string(v, s, sizeof s), "[2, 3, 4]");
  v.strides[0] = 13;
  EXPECT_FALSE(v.is_contiguous());
  int64_t n;
  EXPECT_TRUE(checked_numel(v, &n));
  EXPECT_TRUE(checked_nbytes(v, &n));
  EXPECT_EQ(n, 96);
  v.dims[0] = -1;
  EXPECT_FALSE(checked_numel(v, &n));
  TensorView e = make_view(nullptr, DType::kBFloat16, {0, 5});
  EXPECT_TRUE(e.empty());
}

TEST(ElementAccess, LoadStoreEveryDtype) {
  const DType types[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt8,
                         DType::kUInt8,   DType::kInt16,   DType::kUInt16,  DType::kInt32,    DType::kUInt32,
                         DType::kInt64,   DType::kUInt64,  DType::kBool};
  for (DType t : types) {
    std::vector<char> buf(64, 0);
    TensorView v = make_view(buf.data(), t, {4});
    if (t == DType::kInt16 || t == DType::kUInt16 || t == DType::kUInt32 || t == DType::kUInt64) {
      // store_f64 covers the types operators write; the rest are read-only here.
      std::memset(buf.data(), 0, buf.size());
      continue;
    }
    store_f64(v, 2, 1.0);
    EXPECT_EQ(load_f64(v, 2), 1.0) << dtype_name(t);
    EXPECT_EQ(load_f64(v, 1), 0.0) << dtype_name(t);
  }
  std::vector<uint16_t> bf(2);
  TensorView vb = make_view(bf.data(), DType::kBFloat16, {2});
  store_f64(vb, 0, 1.0 + 1.0 / 512);  // below the tie: rounds down
  EXPECT_EQ(bf[0], 0x3f80);
  std::vector<int8_t> i8(1);
  TensorView vi = make_view(i8.data(), DType::kInt8, {1});
  store_f64(vi, 0, 300.0);
  EXPECT_EQ(i8[0], 127);
  std::vector<int64_t> i64 = {1, (1LL << 62) + 1};
  TensorView vl = make_view(i64.data(), DType::kInt64, {2});
  EXPECT_EQ(load_i64(vl, 1), (1LL << 62) + 1);
  std::vector<float> m(6);
  TensorView vm = make_view(m.data(), DType::kFloat32, {2, 3});
  const int64_t idx[2] = {1, 2};
  EXPECT_EQ(elem_offset(vm, idx), 5);
  EXPECT_EQ(linear_to_offset(vm, 4), 4);
  vm.strides[0] = 4;  // padded rows
  EXPECT_EQ(linear_to_offset(vm, 4), 5);
}

}  // namespace
}  // namespace mlaops

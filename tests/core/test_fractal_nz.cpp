// FRACTAL_NZ packing and the two tensor forms (core/fractal_nz.h).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/fractal_nz.h"
#include "mlaops/tensor_view.h"

namespace mlaops {
namespace {

TEST(FractalNz, IndexFormulaMatchesSpec) {
  // bf16 (He=7168, Hcq=1536) -> storage (96, 448, 16, 16)
  int64_t s[4];
  nz_storage_shape(7168, 1536, 2, s);
  EXPECT_EQ(s[0], 96);
  EXPECT_EQ(s[1], 448);
  EXPECT_EQ(s[2], 16);
  EXPECT_EQ(s[3], 16);
  nz_storage_shape(7168, 1536, 1, s);
  EXPECT_EQ(s[0], 48);
  EXPECT_EQ(s[3], 32);
  NzMatrix m{7168, 1536, 448, 96, 16};
  // W[r][c] at ((c/16)*448 + r/16)*256 + (r%16)*16 + c%16
  EXPECT_EQ(m.index(0, 0), 0);
  EXPECT_EQ(m.index(0, 1), 1);
  EXPECT_EQ(m.index(1, 0), 16);
  EXPECT_EQ(m.index(16, 0), 256);
  EXPECT_EQ(m.index(0, 16), 448 * 256);
  EXPECT_EQ(m.index(37, 1000), ((1000 / 16) * 448 + 37 / 16) * 256 + (37 % 16) * 16 + 1000 % 16);
}

template <class T>
void round_trip(int64_t rows, int64_t cols) {
  std::vector<T> nd(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < nd.size(); ++i) nd[i] = static_cast<T>(i % 120 + 1);  // never 0
  int64_t s[4];
  nz_storage_shape(rows, cols, sizeof(T), s);
  std::vector<T> nz(static_cast<size_t>(s[0] * s[1] * s[2] * s[3]), T(99));
  nd_to_nz(nd.data(), nz.data(), rows, cols, sizeof(T));
  NzMatrix m{rows, cols, s[1], s[0], s[3]};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(nz[m.index(r, c)], nd[r * cols + c]);
  // padding is zero
  int64_t nonzero = 0;
  for (T v : nz) nonzero += v != T(0);
  EXPECT_EQ(nonzero, rows * cols);
  std::vector<T> back(nd.size());
  nz_to_nd(nz.data(), back.data(), rows, cols, sizeof(T));
  EXPECT_EQ(back, nd);
}

TEST(FractalNz, RoundTripAlignedAndPadded) {
  round_trip<uint16_t>(32, 48);
  round_trip<uint16_t>(17, 5);    // padded rows and cols
  round_trip<int8_t>(16, 64);
  round_trip<int8_t>(3, 33);
  round_trip<uint16_t>(1, 1);
}

TEST(FractalNz, ResolveFourDimView) {
  std::vector<uint16_t> buf(3 * 4 * 16 * 16);
  TensorView v = make_view(buf.data(), DType::kBFloat16, {3, 4, 16, 16}, Format::kFractalNZ);
  NzMatrix m;
  ASSERT_EQ(resolve_nz(v, "op", "w", "rule", &m), kSuccess);
  EXPECT_EQ(m.rows, 64);
  EXPECT_EQ(m.cols, 48);
  EXPECT_EQ(m.c0, 16);
}

TEST(FractalNz, ResolveTwoDimViewWithStorage) {
  std::vector<int8_t> buf(2 * 3 * 16 * 32);
  TensorView v = make_view(buf.data(), DType::kInt8, {40, 64}, Format::kFractalNZ);
  v.storage_rank = 4;
  const int64_t st[4] = {2, 3, 16, 32};
  std::memcpy(v.storage_dims, st, sizeof st);
  NzMatrix m;
  ASSERT_EQ(resolve_nz(v, "op", "w", "rule", &m), kSuccess);
  EXPECT_EQ(m.rows, 40);
  EXPECT_EQ(m.cols, 64);
  EXPECT_EQ(m.r1, 3);
  EXPECT_EQ(m.c0, 32);
}

TEST(FractalNz, ResolveRejectsInconsistentShapes) {
  std::vector<uint16_t> buf(4096);
  NzMatrix m;
  TensorView bad_c0 = make_view(buf.data(), DType::kBFloat16, {2, 2, 16, 32}, Format::kFractalNZ);
  EXPECT_EQ(resolve_nz(bad_c0, "opX", "weightDq", "rule", &m), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("weightDq"), std::string::npos);
  EXPECT_NE(std::string(last_error_message()).find("opX"), std::string::npos);
  TensorView bad_rank = make_view(buf.data(), DType::kBFloat16, {2, 2, 16}, Format::kFractalNZ);
  EXPECT_EQ(resolve_nz(bad_rank, "op", "w", "rule", &m), kParamInvalid);
  TensorView no_storage = make_view(buf.data(), DType::kBFloat16, {32, 32}, Format::kFractalNZ);
  no_storage.storage_rank = 2;
  EXPECT_EQ(resolve_nz(no_storage, "op", "w", "rule", &m), kParamInvalid);
  TensorView mismatch = make_view(buf.data(), DType::kBFloat16, {64, 32}, Format::kFractalNZ);
  mismatch.storage_rank = 4;
  const int64_t st[4] = {2, 3, 16, 16};  // R1 = 3 but rows 64 need 4
  std::memcpy(mismatch.storage_dims, st, sizeof st);
  EXPECT_EQ(resolve_nz(mismatch, "op", "w", "rule", &m), kParamInvalid);
  TensorView f32 = make_view(buf.data(), DType::kFloat64, {1, 1, 16, 4}, Format::kFractalNZ);
  EXPECT_EQ(resolve_nz(f32, "op", "w", "rule", &m), kSuccess);  // 8-byte elements: c0 = 4
  TensorView odd = make_view(buf.data(), DType::kComplex128, {1, 1, 16, 2}, Format::kFractalNZ);
  EXPECT_EQ(resolve_nz(odd, "op", "w", "rule", &m), kSuccess);
}

}  // namespace
}  // namespace mlaops

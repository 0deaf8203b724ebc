// The .npy reader / writer of the mlaops command (tools/npy.h): round trips of every dtype,
// byte-exact headers as NumPy writes them, and rejection of malformed or truncated files.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/element_access.h"
#include "tools/npy.h"

namespace mlaops::tools {
namespace {

std::vector<uint8_t> make_file(const std::string& header_dict, const std::vector<uint8_t>& data, int major = 1) {
  std::string h = header_dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64 != 0) h.push_back(' ');
  h.push_back('\n');
  std::vector<uint8_t> f = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) f.push_back(static_cast<uint8_t>((h.size() >> (8 * i)) & 0xff));
  f.insert(f.end(), h.begin(), h.end());
  f.insert(f.end(), data.begin(), data.end());
  return f;
}

std::string parse_error(const std::vector<uint8_t>& f) {
  NpyArray a;
  std::string e;
  EXPECT_FALSE(npy_parse(f.data(), f.size(), &a, &e));
  return e;
}

TEST(npy, RoundTripEveryDtype) {
  const DType dtypes[] = {DType::kFloat64, DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt8,
                          DType::kUInt8,   DType::kInt16,   DType::kUInt16,  DType::kInt32,    DType::kUInt32,
                          DType::kInt64,   DType::kUInt64,  DType::kBool};
  for (DType dt : dtypes) {
    const int64_t es = dtype_size(dt);
    std::vector<uint8_t> bytes(static_cast<size_t>(2 * 3 * 4 * es));
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(dt == DType::kBool ? i % 2 : i * 37 + 11);
    const TensorView v = make_view(bytes.data(), dt, {2, 3, 4});
    std::vector<uint8_t> file;
    std::string e;
    ASSERT_TRUE(npy_serialize(v, &file, &e)) << dtype_name(dt) << ": " << e;
    EXPECT_EQ(file.size() % 64, bytes.size() % 64) << "header padded to 64 bytes";
    NpyArray a;
    ASSERT_TRUE(npy_parse(file.data(), file.size(), &a, &e)) << dtype_name(dt) << ": " << e;
    EXPECT_EQ(a.view.dtype, dt);
    ASSERT_EQ(a.view.rank, 3);
    EXPECT_EQ(a.view.dims[0], 2);
    EXPECT_EQ(a.view.dims[1], 3);
    EXPECT_EQ(a.view.dims[2], 4);
    EXPECT_TRUE(a.view.is_contiguous());
    ASSERT_EQ(a.nbytes(), static_cast<int64_t>(bytes.size()));
    EXPECT_EQ(std::memcmp(a.bytes(), bytes.data(), bytes.size()), 0) << dtype_name(dt);
  }
}

TEST(npy, HeaderAsNumpyWritesIt) {
  float vals[3] = {1.0f, -2.5f, 3.25f};
  std::vector<uint8_t> file;
  std::string e;
  ASSERT_TRUE(npy_serialize(make_view(vals, DType::kFloat32, {3}), &file, &e)) << e;
  ASSERT_EQ(file.size(), 128u + 12u);
  EXPECT_EQ(file[6], 1);
  EXPECT_EQ(file[8] | (file[9] << 8), 118);
  const std::string header(reinterpret_cast<const char*>(file.data()) + 10, 118);
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  EXPECT_EQ(header.substr(0, dict.size()), dict);
  EXPECT_EQ(header.find_first_not_of(' ', dict.size()), header.size() - 1);
  EXPECT_EQ(header.back(), '\n');
  // descrs: bf16 as the 2-byte void NumPy writes for ml_dtypes.bfloat16; 1-byte types with '|'
  EXPECT_EQ(npy_descr(DType::kBFloat16), "|V2");
  EXPECT_EQ(npy_descr(DType::kInt8), "|i1");
  EXPECT_EQ(npy_descr(DType::kBool), "|b1");
  EXPECT_EQ(npy_dtype("<V2"), DType::kBFloat16);
  EXPECT_EQ(npy_dtype("bfloat16"), DType::kBFloat16);
  EXPECT_EQ(npy_dtype("<i1"), DType::kInt8);
  EXPECT_EQ(npy_dtype(">f4"), DType::kUndefined);
  EXPECT_EQ(npy_descr(DType::kInt4), "");
}

TEST(npy, ScalarEmptyAndStridedViews) {
  double x = 4.5;
  std::vector<uint8_t> file;
  std::string e;
  ASSERT_TRUE(npy_serialize(make_view(&x, DType::kFloat64, nullptr, 0), &file, &e)) << e;
  NpyArray a;
  ASSERT_TRUE(npy_parse(file.data(), file.size(), &a, &e)) << e;
  EXPECT_EQ(a.view.rank, 0);
  EXPECT_EQ(load_f64(a.view, 0), 4.5);

  int32_t none = 0;
  ASSERT_TRUE(npy_serialize(make_view(&none, DType::kInt32, {0, 5}), &file, &e)) << e;
  ASSERT_TRUE(npy_parse(file.data(), file.size(), &a, &e)) << e;
  EXPECT_EQ(a.view.rank, 2);
  EXPECT_EQ(a.view.numel(), 0);

  // a transposed (non-contiguous) view is written in its logical order
  int16_t m[6] = {0, 1, 2, 3, 4, 5};  // [2, 3]
  TensorView t = make_view(m, DType::kInt16, {3, 2});
  t.strides[0] = 1;
  t.strides[1] = 3;
  ASSERT_TRUE(npy_serialize(t, &file, &e)) << e;
  ASSERT_TRUE(npy_parse(file.data(), file.size(), &a, &e)) << e;
  const int16_t expect[6] = {0, 3, 1, 4, 2, 5};
  EXPECT_EQ(std::memcmp(a.bytes(), expect, sizeof expect), 0);
}

TEST(npy, ReadsVersion2AndLenientSpellings) {
  const std::vector<uint8_t> data = {1, 2, 3, 4};
  NpyArray a;
  std::string e;
  auto f = make_file("{\"shape\": (2, 2L,), 'fortran_order': False, 'descr': '<u1'}", data, 2);
  ASSERT_TRUE(npy_parse(f.data(), f.size(), &a, &e)) << e;
  EXPECT_EQ(a.view.dtype, DType::kUInt8);
  EXPECT_EQ(a.view.dims[1], 2);
  f = make_file("{'descr': 'bfloat16', 'fortran_order': False, 'shape': (2,)}", data);
  ASSERT_TRUE(npy_parse(f.data(), f.size(), &a, &e)) << e;
  EXPECT_EQ(a.view.dtype, DType::kBFloat16);
  EXPECT_EQ(a.view.numel(), 2);
}

TEST(npy, RejectsMalformedHeaders) {
  const std::vector<uint8_t> d4 = {0, 0, 0, 0};
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  EXPECT_NE(parse_error({}).find("not a .npy file"), std::string::npos);
  EXPECT_NE(parse_error({'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0}).find("not a .npy file"), std::string::npos);
  auto f = make_file(ok, d4);
  f[6] = 4;
  EXPECT_NE(parse_error(f).find("version 4.0"), std::string::npos);
  f = make_file(ok, d4);
  f[8] = 0xff;  // header length beyond the file
  EXPECT_NE(parse_error(f).find("truncated header"), std::string::npos);
  f = make_file(ok, d4);
  f.resize(9);  // cut inside the length field
  EXPECT_NE(parse_error(f).find("length field is cut"), std::string::npos);
  f = make_file(ok, d4);
  f[f.size() - 5] = ' ';  // the newline that ends the header
  EXPECT_NE(parse_error(f).find("newline"), std::string::npos);

  const struct {
    const char* dict;
    const char* expect;
  } bad[] = {
      {"['descr', '<f4']", "not a dict"},
      {"{'descr': '<f4', 'fortran_order': False}", "lacks 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", "unexpected key 'extra'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1)}", "(n,) expected"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [1]}", "must be a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", "non-negative integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "overflows int64"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4)}", "overflows int64"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", "',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", "after the header dict"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", "must be a string"},
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (1,)}", "big-endian"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (1,)}", "unsupported dtype '<c8'"},
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (1,)}", "Fortran-order"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}", "rank 9"},
      {"{'descr': '<f4', 'fortran_order' False, 'shape': (1,)}", "':' expected"},
      {"{'descr", "quoted key"},
  };
  for (const auto& b : bad) {
    const std::string e = parse_error(make_file(b.dict, d4));
    EXPECT_NE(e.find(b.expect), std::string::npos) << b.dict << " -> " << e;
  }
}

TEST(npy, RejectsTruncatedOrOversizedData) {
  const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
  std::vector<uint8_t> data(48, 0);
  NpyArray a;
  std::string e;
  auto f = make_file(dict, data);
  ASSERT_TRUE(npy_parse(f.data(), f.size(), &a, &e)) << e;
  for (size_t cut : {1u, 8u, 47u, 48u}) {
    // A copy of the first size - cut bytes (resize() would trip GCC 12's -Wstringop-overflow
    // false positive under -O1 + sanitizers).
    std::vector<uint8_t> g(f.begin(), f.end() - static_cast<std::ptrdiff_t>(cut));
    e = parse_error(g);
    EXPECT_NE(e.find("truncated data: the shape needs 48 bytes"), std::string::npos) << e;
  }
  f.push_back(0);
  EXPECT_NE(parse_error(f).find("1 unexpected bytes"), std::string::npos);
}

TEST(npy, Files) {
  const std::string path = ::testing::TempDir() + "mlaops_test_npy.npy";
  uint16_t h[4] = {0x3f80, 0x4000, 0xbf80, 0x0000};  // bf16 1, 2, -1, 0
  std::string e;
  ASSERT_TRUE(npy_write(path, make_view(h, DType::kBFloat16, {4}), &e)) << e;
  NpyArray a;
  ASSERT_TRUE(npy_read(path, &a, &e)) << e;
  EXPECT_EQ(a.view.dtype, DType::kBFloat16);
  EXPECT_EQ(load_f64(a.view, 2), -1.0);
  std::remove(path.c_str());
  EXPECT_FALSE(npy_read(path, &a, &e));
  EXPECT_NE(e.find(path + ": cannot open"), std::string::npos);
  EXPECT_FALSE(npy_write("/nonexistent-dir/x.npy", make_view(h, DType::kBFloat16, {4}), &e));
  EXPECT_NE(e.find("cannot create"), std::string::npos);
  EXPECT_FALSE(npy_write(path, make_view(h, DType::kInt4, {4}), &e));
  EXPECT_NE(e.find("no .npy equivalent"), std::string::npos);
}

}  // namespace
}  // namespace mlaops::tools

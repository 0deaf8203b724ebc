// securec.h: every function's normal and error paths, the reset of the destination on error,
// and that nothing at or past dest + destMax is ever written (a canary region follows destMax).
#include "securec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr unsigned char kCanary = 0xA5;
constexpr unsigned char kFill = 0x5A;
constexpr size_t kCanaryLen = 64;

// A destination of destMax bytes (pre-filled with kFill) followed by a canary region.
struct Dest {
  explicit Dest(size_t destMax) : max(destMax), bytes(destMax + kCanaryLen, kCanary) {
    std::memset(bytes.data(), kFill, destMax);
  }
  char* c() { return reinterpret_cast<char*>(bytes.data()); }
  void* v() { return bytes.data(); }
  bool canary_intact() const {
    for (size_t i = max; i < bytes.size(); ++i)
      if (bytes[i] != kCanary) return false;
    return true;
  }
  bool all(size_t from, size_t to, unsigned char b) const {
    for (size_t i = from; i < to; ++i)
      if (bytes[i] != b) return false;
    return true;
  }
  bool untouched() const { return all(0, max, kFill) && canary_intact(); }
  std::string str() const { return std::string(reinterpret_cast<const char*>(bytes.data())); }
  size_t max;
  std::vector<unsigned char> bytes;
};

// A null pointer the compiler cannot see through (no null-argument / null-format warnings).
template <class T>
T* opaque_null() {
  static T* volatile p = nullptr;
  return p;
}

const char kSrc[] = "0123456789abcdefghijklmnopqrstuvwxyz";  // 36 characters

}  // namespace

TEST(securec, ErrorValues) {
  EXPECT_EQ(EOK, 0);
  EXPECT_EQ(EINVAL, 22);
  EXPECT_EQ(ERANGE, 34);
  EXPECT_EQ(EINVAL_AND_RESET, 150);
  EXPECT_EQ(ERANGE_AND_RESET, 162);
  EXPECT_EQ(EOVERLAP_AND_RESET, 182);
  EXPECT_EQ(SECUREC_MEM_MAX_LEN, size_t{0x7fffffff});
  errno_t e = EOK;
  EXPECT_EQ(sizeof(e), sizeof(int));
}

// ---- memcpy_s ----
TEST(securec, MemcpyCopies) {
  Dest d(16);
  EXPECT_EQ(memcpy_s(d.v(), 16, kSrc, 10), EOK);
  EXPECT_EQ(std::memcmp(d.v(), kSrc, 10), 0);
  EXPECT_TRUE(d.all(10, 16, kFill));
  EXPECT_TRUE(d.canary_intact());
  EXPECT_EQ(memcpy_s(d.v(), 16, kSrc, 16), EOK);  // count == destMax
  EXPECT_EQ(std::memcmp(d.v(), kSrc, 16), 0);
  EXPECT_TRUE(d.canary_intact());
  Dest z(16);
  EXPECT_EQ(memcpy_s(z.v(), 16, kSrc, 0), EOK);  // count 0: nothing written
  EXPECT_TRUE(z.untouched());
  EXPECT_EQ(memcpy_s(z.v(), 16, z.v(), 16), EOK);  // onto itself
  EXPECT_TRUE(z.untouched());
}

TEST(securec, MemcpyErrors) {
  Dest d(16);
  EXPECT_EQ(memcpy_s(opaque_null<void>(), 16, kSrc, 4), EINVAL);
  EXPECT_EQ(memcpy_s(d.v(), 0, kSrc, 0), ERANGE);
  EXPECT_TRUE(d.untouched());
  EXPECT_EQ(memcpy_s(d.v(), SECUREC_MEM_MAX_LEN + 1, kSrc, 4), ERANGE);
  EXPECT_TRUE(d.untouched());
  EXPECT_EQ(memcpy_s(d.v(), 16, opaque_null<const void>(), 4), EINVAL_AND_RESET);
  EXPECT_TRUE(d.all(0, 16, 0));  // zeroed up to destMax
  EXPECT_TRUE(d.canary_intact());
  Dest r(16);
  EXPECT_EQ(memcpy_s(r.v(), 16, kSrc, 17), ERANGE_AND_RESET);
  EXPECT_TRUE(r.all(0, 16, 0));
  EXPECT_TRUE(r.canary_intact());
}

TEST(securec, MemcpyOverlap) {
  Dest d(32);
  std::memcpy(d.v(), kSrc, 32);
  EXPECT_EQ(memcpy_s(d.c() + 4, 28, d.c(), 8), EOVERLAP_AND_RESET);  // src before dest
  EXPECT_TRUE(d.all(4, 32, 0));
  EXPECT_TRUE(d.canary_intact());
  std::memcpy(d.v(), kSrc, 32);
  EXPECT_EQ(memcpy_s(d.c(), 8, d.c() + 7, 8), EOVERLAP_AND_RESET);  // src after dest, 1 byte shared
  EXPECT_TRUE(d.all(0, 8, 0));
  EXPECT_EQ(std::memcmp(d.c() + 8, kSrc + 8, 24), 0);  // nothing past destMax written
  std::memcpy(d.v(), kSrc, 32);
  EXPECT_EQ(memcpy_s(d.c(), 8, d.c() + 8, 8), EOK);  // adjacent: no overlap
  EXPECT_EQ(std::memcmp(d.c(), kSrc + 8, 8), 0);
}

// ---- memmove_s ----
TEST(securec, MemmoveCopiesOverlapping) {
  Dest d(32);
  std::memcpy(d.v(), kSrc, 32);
  EXPECT_EQ(memmove_s(d.c() + 4, 28, d.c(), 10), EOK);
  EXPECT_EQ(std::memcmp(d.c() + 4, kSrc, 10), 0);
  EXPECT_EQ(memmove_s(d.c(), 32, d.c() + 4, 10), EOK);
  EXPECT_EQ(std::memcmp(d.c(), kSrc, 10), 0);
  EXPECT_TRUE(d.canary_intact());
  Dest e(8);
  EXPECT_EQ(memmove_s(e.v(), 8, kSrc, 8), EOK);
  EXPECT_EQ(std::memcmp(e.v(), kSrc, 8), 0);
  EXPECT_TRUE(e.canary_intact());
}

TEST(securec, MemmoveErrors) {
  Dest d(16);
  EXPECT_EQ(memmove_s(opaque_null<void>(), 16, kSrc, 4), EINVAL);
  EXPECT_EQ(memmove_s(d.v(), 0, kSrc, 0), ERANGE);
  EXPECT_EQ(memmove_s(d.v(), SECUREC_MEM_MAX_LEN + 1, kSrc, 1), ERANGE);
  EXPECT_TRUE(d.untouched());
  EXPECT_EQ(memmove_s(d.v(), 16, opaque_null<const void>(), 4), EINVAL_AND_RESET);
  EXPECT_TRUE(d.all(0, 16, 0));
  Dest r(16);
  EXPECT_EQ(memmove_s(r.v(), 16, kSrc, 17), ERANGE_AND_RESET);
  EXPECT_TRUE(r.all(0, 16, 0));
  EXPECT_TRUE(r.canary_intact());
}

// ---- memset_s ----
TEST(securec, Memset) {
  Dest d(16);
  EXPECT_EQ(memset_s(d.v(), 16, 0x11, 10), EOK);
  EXPECT_TRUE(d.all(0, 10, 0x11));
  EXPECT_TRUE(d.all(10, 16, kFill));
  EXPECT_EQ(memset_s(d.v(), 16, 0x22, 0), EOK);
  EXPECT_TRUE(d.all(0, 10, 0x11));
  EXPECT_EQ(memset_s(d.v(), 16, 0x33, 16), EOK);
  EXPECT_TRUE(d.all(0, 16, 0x33));
  EXPECT_TRUE(d.canary_intact());
}

TEST(securec, MemsetErrors) {
  Dest d(16);
  EXPECT_EQ(memset_s(opaque_null<void>(), 16, 0, 4), EINVAL);
  EXPECT_EQ(memset_s(d.v(), 0, 0, 0), ERANGE);
  EXPECT_EQ(memset_s(d.v(), SECUREC_MEM_MAX_LEN + 1, 0, 1), ERANGE);
  EXPECT_TRUE(d.untouched());
  EXPECT_EQ(memset_s(d.v(), 16, 0x44, 100), ERANGE_AND_RESET);  // fills destMax bytes only
  EXPECT_TRUE(d.all(0, 16, 0x44));
  EXPECT_TRUE(d.canary_intact());
}

// ---- strcpy_s ----
TEST(securec, Strcpy) {
  Dest d(8);
  EXPECT_EQ(strcpy_s(d.c(), 8, "abc"), EOK);
  EXPECT_EQ(d.str(), "abc");
  EXPECT_TRUE(d.all(4, 8, kFill));
  EXPECT_EQ(strcpy_s(d.c(), 8, "1234567"), EOK);  // exactly fits
  EXPECT_EQ(d.str(), "1234567");
  EXPECT_EQ(strcpy_s(d.c(), 8, ""), EOK);
  EXPECT_EQ(d.str(), "");
  EXPECT_EQ(strcpy_s(d.c(), 1, ""), EOK);
  EXPECT_TRUE(d.canary_intact());
  std::strcpy(d.c(), "self");
  EXPECT_EQ(strcpy_s(d.c(), 8, d.c()), EOK);  // onto itself
  EXPECT_EQ(d.str(), "self");
}

TEST(securec, StrcpyErrors) {
  Dest d(8);
  EXPECT_EQ(strcpy_s(opaque_null<char>(), 8, "abc"), EINVAL);
  EXPECT_EQ(strcpy_s(d.c(), 0, "abc"), ERANGE);
  EXPECT_EQ(strcpy_s(d.c(), SECUREC_STRING_MAX_LEN + 1, "abc"), ERANGE);
  EXPECT_TRUE(d.untouched());
  EXPECT_EQ(strcpy_s(d.c(), 8, opaque_null<const char>()), EINVAL_AND_RESET);
  EXPECT_EQ(d.bytes[0], 0);
  EXPECT_TRUE(d.all(1, 8, kFill));
  Dest r(8);
  EXPECT_EQ(strcpy_s(r.c(), 8, "12345678"), ERANGE_AND_RESET);  // 8 chars + NUL > 8
  EXPECT_EQ(r.bytes[0], 0);
  EXPECT_TRUE(r.all(1, 8, kFill));
  EXPECT_TRUE(r.canary_intact());
  Dest o(32);
  std::strcpy(o.c(), "overlapping");
  EXPECT_EQ(strcpy_s(o.c() + 2, 30, o.c()), EOVERLAP_AND_RESET);
  EXPECT_EQ(o.bytes[2], 0);
  std::strcpy(o.c(), "overlapping");
  EXPECT_EQ(strcpy_s(o.c(), 32, o.c() + 2), EOVERLAP_AND_RESET);
  EXPECT_EQ(o.bytes[0], 0);
  EXPECT_TRUE(o.canary_intact());
}

// ---- strncpy_s ----
TEST(securec, Strncpy) {
  Dest d(8);
  EXPECT_EQ(strncpy_s(d.c(), 8, "abcdef", 3), EOK);
  EXPECT_EQ(d.str(), "abc");
  EXPECT_TRUE(d.all(4, 8, kFill));
  EXPECT_EQ(strncpy_s(d.c(), 8, "ab", 5), EOK);  // count beyond the source
  EXPECT_EQ(d.str(), "ab");
  EXPECT_EQ(strncpy_s(d.c(), 8, "abcdefghijkl", 7), EOK);  // count = destMax - 1
  EXPECT_EQ(d.str(), "abcdefg");
  EXPECT_EQ(strncpy_s(d.c(), 8, "abc", 100), EOK);  // count > destMax, short source
  EXPECT_EQ(d.str(), "abc");
  EXPECT_EQ(strncpy_s(d.c(), 8, "xyz", 0), EOK);  // count 0: empty string
  EXPECT_EQ(d.str(), "");
  EXPECT_TRUE(d.canary_intact());
  std::strcpy(d.c(), "self");
  EXPECT_EQ(strncpy_s(d.c(), 8, d.c(), 2), EOK);
  EXPECT_EQ(d.str(), "se");
}

TEST(securec, StrncpyErrors) {
  Dest d(8);
  EXPECT_EQ(strncpy_s(opaque_null<char>(), 8, "abc", 3), EINVAL);
  EXPECT_EQ(strncpy_s(d.c(), 0, "abc", 3), ERANGE);
  EXPECT_EQ(strncpy_s(d.c(), SECUREC_STRING_MAX_LEN + 1, "abc", 3), ERANGE);
  EXPECT_TRUE(d.untouched());
  EXPECT_EQ(strncpy_s(d.c(), 8, opaque_null<const char>(), 3), EINVAL_AND_RESET);
  EXPECT_EQ(d.bytes[0], 0);
  EXPECT_TRUE(d.all(1, 8, kFill));
  Dest r(8);
  EXPECT_EQ(strncpy_s(r.c(), 8, "abcdefghijkl", 8), ERANGE_AND_RESET);
  EXPECT_EQ(r.bytes[0], 0);
  EXPECT_TRUE(r.all(1, 8, kFill));
  EXPECT_EQ(strncpy_s(r.c(), 8, "abcdefghijkl", 100), ERANGE_AND_RESET);
  EXPECT_EQ(strncpy_s(r.c(), 8, "abc", SECUREC_STRING_MAX_LEN + 1), ERANGE_AND_RESET);
  EXPECT_TRUE(r.canary_intact());
  Dest o(32);
  std::strcpy(o.c(), "overlapping");
  EXPECT_EQ(strncpy_s(o.c() + 3, 29, o.c(), 5), EOVERLAP_AND_RESET);
  EXPECT_EQ(o.bytes[3], 0);
  EXPECT_TRUE(o.canary_intact());
}

// ---- strcat_s / strncat_s ----
TEST(securec, Strcat) {
  Dest d(8);
  std::strcpy(d.c(), "ab");
  EXPECT_EQ(strcat_s(d.c(), 8, "cd"), EOK);
  EXPECT_EQ(d.str(), "abcd");
  EXPECT_EQ(strcat_s(d.c(), 8, "efg"), EOK);  // exactly fills destMax
  EXPECT_EQ(d.str(), "abcdefg");
  EXPECT_EQ(strcat_s(d.c(), 8, ""), EOK);
  EXPECT_EQ(d.str(), "abcdefg");
  EXPECT_TRUE(d.canary_intact());
}

TEST(securec, StrcatErrors) {
  Dest d(8);
  EXPECT_EQ(strcat_s(opaque_null<char>(), 8, "abc"), EINVAL);
  EXPECT_EQ(strcat_s(d.c(), 0, "abc"), ERANGE);
  EXPECT_EQ(strcat_s(d.c(), SECUREC_STRING_MAX_LEN + 1, "abc"), ERANGE);
  EXPECT_TRUE(d.untouched());
  EXPECT_EQ(strcat_s(d.c(), 8, "abc"), EINVAL_AND_RESET);  // dest not terminated within 8
  EXPECT_EQ(d.bytes[0], 0);
  EXPECT_TRUE(d.all(1, 8, kFill));
  std::strcpy(d.c(), "ab");
  EXPECT_EQ(strcat_s(d.c(), 8, opaque_null<const char>()), EINVAL_AND_RESET);
  EXPECT_EQ(d.bytes[0], 0);
  std::strcpy(d.c(), "abcd");
  EXPECT_EQ(strcat_s(d.c(), 8, "efgh"), ERANGE_AND_RESET);  // 8 chars + NUL > 8
  EXPECT_EQ(d.bytes[0], 0);
  EXPECT_EQ(std::memcmp(d.c() + 1, "bcd", 4), 0);  // nothing appended
  EXPECT_TRUE(d.canary_intact());
  Dest o(32);
  std::strcpy(o.c(), "abc");
  EXPECT_EQ(strcat_s(o.c(), 32, o.c()), EOVERLAP_AND_RESET);
  EXPECT_EQ(o.bytes[0], 0);
  std::strcpy(o.c(), "abc");
  std::strcpy(o.c() + 5, "xyz");
  EXPECT_EQ(strcat_s(o.c(), 32, o.c() + 5), EOVERLAP_AND_RESET);  // appended text reaches src
  EXPECT_EQ(o.bytes[0], 0);
  std::strcpy(o.c(), "abc");
  std::strcpy(o.c() + 8, "xyz");
  EXPECT_EQ(strcat_s(o.c(), 32, o.c() + 8), EOK);  // same buffer, disjoint ranges
  EXPECT_EQ(o.str(), "abcxyz");
  EXPECT_TRUE(o.canary_intact());
}

TEST(securec, Strncat) {
  Dest d(8);
  std::strcpy(d.c(), "ab");
  EXPECT_EQ(strncat_s(d.c(), 8, "cdefgh", 2), EOK);
  EXPECT_EQ(d.str(), "abcd");
  EXPECT_EQ(strncat_s(d.c(), 8, "ef", 10), EOK);
  EXPECT_EQ(d.str(), "abcdef");
  EXPECT_EQ(strncat_s(d.c(), 8, "ghijkl", 1), EOK);
  EXPECT_EQ(d.str(), "abcdefg");
  EXPECT_EQ(strncat_s(d.c(), 8, "zzz", 0), EOK);
  EXPECT_EQ(d.str(), "abcdefg");
  EXPECT_TRUE(d.canary_intact());
  Dest e(8);
  EXPECT_EQ(strncat_s(opaque_null<char>(), 8, "a", 1), EINVAL);
  EXPECT_EQ(strncat_s(e.c(), 0, "a", 1), ERANGE);
  EXPECT_TRUE(e.untouched());
  std::strcpy(e.c(), "abcd");
  EXPECT_EQ(strncat_s(e.c(), 8, "efghij", 4), ERANGE_AND_RESET);
  EXPECT_EQ(e.bytes[0], 0);
  std::strcpy(e.c(), "abcd");
  EXPECT_EQ(strncat_s(e.c(), 8, "efg", SECUREC_STRING_MAX_LEN + 1), ERANGE_AND_RESET);
  EXPECT_EQ(strncat_s(e.c(), 8, opaque_null<const char>(), 1), EINVAL_AND_RESET);
  std::strcpy(e.c(), "abcd");
  EXPECT_EQ(strncat_s(e.c(), 8, e.c() + 1, 2), EOVERLAP_AND_RESET);
  EXPECT_EQ(e.bytes[0], 0);
  EXPECT_TRUE(e.canary_intact());
}

// ---- sprintf_s / vsprintf_s ----
namespace {
int call_vsprintf_s(char* d, size_t m, const char* f, ...) {
  va_list ap;
  va_start(ap, f);
  const int r = vsprintf_s(d, m, f, ap);
  va_end(ap);
  return r;
}
int call_vsnprintf_s(char* d, size_t m, size_t n, const char* f, ...) {
  va_list ap;
  va_start(ap, f);
  const int r = vsnprintf_s(d, m, n, f, ap);
  va_end(ap);
  return r;
}
}  // namespace

TEST(securec, Sprintf) {
  Dest d(16);
  EXPECT_EQ(sprintf_s(d.c(), 16, "%d-%s", 42, "x"), 4);
  EXPECT_EQ(d.str(), "42-x");
  EXPECT_TRUE(d.all(5, 16, kFill));
  EXPECT_EQ(sprintf_s(d.c(), 16, "%s", "123456789012345"), 15);  // exactly fits
  EXPECT_EQ(d.str(), "123456789012345");
  EXPECT_EQ(call_vsprintf_s(d.c(), 16, "%.2f", 1.5), 4);
  EXPECT_EQ(d.str(), "1.50");
  EXPECT_EQ(sprintf_s(d.c(), 16, "%s", ""), 0);
  EXPECT_EQ(d.str(), "");
  EXPECT_TRUE(d.canary_intact());
}

TEST(securec, SprintfErrors) {
  Dest d(8);
  EXPECT_EQ(sprintf_s(opaque_null<char>(), 8, "%d", 1), -1);
  EXPECT_EQ(sprintf_s(d.c(), 0, "%d", 1), -1);
  EXPECT_EQ(sprintf_s(d.c(), SECUREC_STRING_MAX_LEN + 1, "%d", 1), -1);
  EXPECT_TRUE(d.untouched());
  EXPECT_EQ(sprintf_s(d.c(), 8, opaque_null<const char>(), 1), -1);
  EXPECT_EQ(d.bytes[0], 0);
  Dest t(8);
  EXPECT_EQ(sprintf_s(t.c(), 8, "%s", "12345678"), -1);  // does not fit: error, dest reset
  EXPECT_EQ(t.bytes[0], 0);
  EXPECT_TRUE(t.canary_intact());
  Dest v(8);
  EXPECT_EQ(call_vsprintf_s(v.c(), 8, "%s", kSrc), -1);
  EXPECT_EQ(v.bytes[0], 0);
  EXPECT_EQ(call_vsprintf_s(opaque_null<char>(), 8, "%d", 1), -1);
  EXPECT_TRUE(v.canary_intact());
}

// ---- snprintf_s / vsnprintf_s ----
TEST(securec, Snprintf) {
  Dest d(16);
  EXPECT_EQ(snprintf_s(d.c(), 16, 15, "%d/%d", 3, 4), 3);
  EXPECT_EQ(d.str(), "3/4");
  EXPECT_EQ(snprintf_s(d.c(), 16, 3, "%s", "abc"), 3);  // exactly count characters
  EXPECT_EQ(d.str(), "abc");
  EXPECT_EQ(snprintf_s(d.c(), 16, 100, "%s", "abc"), 3);  // count >= destMax, fits
  EXPECT_EQ(d.str(), "abc");
  EXPECT_EQ(snprintf_s(d.c(), 16, static_cast<size_t>(-1), "%s", "abc"), 3);
  EXPECT_EQ(call_vsnprintf_s(d.c(), 16, 15, "%x", 255u), 2);
  EXPECT_EQ(d.str(), "ff");
  EXPECT_TRUE(d.canary_intact());
}

TEST(securec, SnprintfTruncation) {
  // count < destMax: truncated to count characters, -1, the text is kept.
  Dest d(16);
  EXPECT_EQ(snprintf_s(d.c(), 16, 5, "%s", kSrc), -1);
  EXPECT_EQ(d.str(), "01234");
  EXPECT_TRUE(d.all(6, 16, kFill));
  EXPECT_EQ(snprintf_s(d.c(), 16, 15, "%s", kSrc), -1);
  EXPECT_EQ(d.str(), "0123456789abcde");
  EXPECT_EQ(snprintf_s(d.c(), 16, 0, "%s", kSrc), -1);
  EXPECT_EQ(d.str(), "");
  EXPECT_EQ(snprintf_s(d.c(), 16, 0, "%s", ""), 0);
  EXPECT_EQ(call_vsnprintf_s(d.c(), 16, 4, "%s", kSrc), -1);
  EXPECT_EQ(d.str(), "0123");
  EXPECT_TRUE(d.canary_intact());
  // count >= destMax and the output does not fit: error, dest reset.
  Dest e(8);
  EXPECT_EQ(snprintf_s(e.c(), 8, 8, "%s", kSrc), -1);
  EXPECT_EQ(e.bytes[0], 0);
  EXPECT_TRUE(e.canary_intact());
  Dest f(8);
  EXPECT_EQ(snprintf_s(f.c(), 8, static_cast<size_t>(-1), "%s", kSrc), -1);
  EXPECT_EQ(f.bytes[0], 0);
  EXPECT_TRUE(f.canary_intact());
}

TEST(securec, SnprintfErrors) {
  Dest d(8);
  EXPECT_EQ(snprintf_s(opaque_null<char>(), 8, 7, "%d", 1), -1);
  EXPECT_EQ(snprintf_s(d.c(), 0, 0, "%d", 1), -1);
  EXPECT_EQ(snprintf_s(d.c(), SECUREC_STRING_MAX_LEN + 1, 7, "%d", 1), -1);
  EXPECT_TRUE(d.untouched());
  EXPECT_EQ(snprintf_s(d.c(), 8, 7, opaque_null<const char>(), 1), -1);
  EXPECT_EQ(d.bytes[0], 0);
  Dest c(8);
  EXPECT_EQ(snprintf_s(c.c(), 8, SECUREC_STRING_MAX_LEN, "%d", 1), -1);  // count too large
  EXPECT_EQ(c.bytes[0], 0);
  EXPECT_EQ(call_vsnprintf_s(opaque_null<char>(), 8, 7, "%d", 1), -1);
  EXPECT_TRUE(c.canary_intact());
}

// Every function, every destMax in 1..24 and every count / source length in 0..40: nothing
// past destMax is ever written, and the result is EOK (>= 0) exactly when the data fits.
TEST(securec, NeverWritesPastDestMax) {
  for (size_t destMax = 1; destMax <= 24; ++destMax) {
    for (size_t n = 0; n <= 36; ++n) {
      const std::string s(kSrc, n);
      const bool mem_fits = n <= destMax;
      const bool str_fits = n < destMax;
      {
        Dest d(destMax);
        EXPECT_EQ(memcpy_s(d.v(), destMax, kSrc, n) == EOK, mem_fits);
        EXPECT_TRUE(d.canary_intact());
      }
      {
        Dest d(destMax);
        EXPECT_EQ(memmove_s(d.v(), destMax, kSrc, n) == EOK, mem_fits);
        EXPECT_TRUE(d.canary_intact());
      }
      {
        Dest d(destMax);
        EXPECT_EQ(memset_s(d.v(), destMax, 1, n) == EOK, mem_fits);
        EXPECT_TRUE(d.canary_intact());
      }
      {
        Dest d(destMax);
        EXPECT_EQ(strcpy_s(d.c(), destMax, s.c_str()) == EOK, str_fits);
        EXPECT_TRUE(d.canary_intact());
      }
      for (size_t count = 0; count <= 40; count += 3) {
        Dest d(destMax);
        EXPECT_EQ(strncpy_s(d.c(), destMax, s.c_str(), count) == EOK, std::min(n, count) < destMax);
        EXPECT_TRUE(d.canary_intact());
        Dest c(destMax);
        c.bytes[0] = 'x';
        c.bytes[destMax > 1 ? 1 : 0] = '\0';
        const size_t have = destMax > 1 ? 1 : 0;
        EXPECT_EQ(strncat_s(c.c(), destMax, s.c_str(), count) == EOK,
                  have < destMax && have + std::min(n, count) < destMax);
        EXPECT_TRUE(c.canary_intact());
        Dest p(destMax);
        const int r = snprintf_s(p.c(), destMax, count, "%s", s.c_str());
        EXPECT_TRUE(p.canary_intact());
        if (count < destMax) {
          EXPECT_EQ(r, n <= count ? static_cast<int>(n) : -1);
          EXPECT_EQ(p.str(), s.substr(0, std::min(n, count)));
        } else {
          EXPECT_EQ(r, str_fits ? static_cast<int>(n) : -1);
        }
      }
      {
        Dest d(destMax);
        d.bytes[0] = '\0';
        EXPECT_EQ(strcat_s(d.c(), destMax, s.c_str()) == EOK, str_fits);
        EXPECT_TRUE(d.canary_intact());
      }
      {
        Dest d(destMax);
        EXPECT_EQ(sprintf_s(d.c(), destMax, "%s", s.c_str()), str_fits ? static_cast<int>(n) : -1);
        EXPECT_TRUE(d.canary_intact());
      }
    }
  }
}

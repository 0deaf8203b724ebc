// The bounded memory and string functions of securec.h (Huawei securec / C11 Annex K style).
// Every write is bounded by destMax; the error results and the reset of the destination
// follow securec (docs/sdk-headers.md).
#include "securec.h"

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

constexpr size_t kMemMax = SECUREC_MEM_MAX_LEN;
constexpr size_t kStrMax = SECUREC_STRING_MAX_LEN;

// Whether [a, a + na) and [b, b + nb) share a byte (addresses compared as integers, so that
// pointers into different objects are never compared with <).
bool overlaps(const void* a, size_t na, const void* b, size_t nb) {
  const uintptr_t pa = reinterpret_cast<uintptr_t>(a);
  const uintptr_t pb = reinterpret_cast<uintptr_t>(b);
  if (na == 0 || nb == 0) return false;
  return pa < pb ? pb - pa < na : pa - pb < nb;
}

// strlen bounded by max (reads at most max characters).
size_t bounded_len(const char* s, size_t max) {
  size_t n = 0;
  while (n < max && s[n] != '\0') ++n;
  return n;
}

bool bad_dest_max(size_t destMax, size_t limit) { return destMax == 0 || destMax > limit; }

// The argument checks shared by strcat_s and strncat_s (EOK: go on).
errno_t cat_args(char* strDest, size_t destMax, const char* strSrc) {
  if (bad_dest_max(destMax, kStrMax)) return ERANGE;
  if (strDest == nullptr) return EINVAL;
  if (strSrc == nullptr) {
    strDest[0] = '\0';
    return EINVAL_AND_RESET;
  }
  return EOK;
}

// strcat_s / strncat_s after the argument checks; srcLimit is the number of source characters
// that may be appended (count for strncat_s, unbounded for strcat_s).
errno_t cat(char* strDest, size_t destMax, const char* strSrc, size_t srcLimit) {
  const size_t destLen = bounded_len(strDest, destMax);
  if (destLen == destMax) {  // not terminated within destMax
    strDest[0] = '\0';
    return EINVAL_AND_RESET;
  }
  const size_t room = destMax - destLen;  // >= 1, the terminator included
  const size_t srcLen = bounded_len(strSrc, srcLimit < room ? srcLimit : room);
  if (srcLen >= room) {
    strDest[0] = '\0';
    return ERANGE_AND_RESET;
  }
  // The whole destination string after the append against the source bytes read.
  if (overlaps(strDest, destLen + srcLen + 1, strSrc, srcLen + (srcLen < srcLimit ? 1 : 0))) {
    strDest[0] = '\0';
    return EOVERLAP_AND_RESET;
  }
  std::memcpy(strDest + destLen, strSrc, srcLen);
  strDest[destLen + srcLen] = '\0';
  return EOK;
}

// Formats into strDest with at most n - 1 characters and a terminator (1 <= n <= destMax).
// Returns vsnprintf's result: the full length of the output, or < 0 on an output error.
int format_into(char* strDest, size_t n, const char* format, va_list argList) {
  return std::vsnprintf(strDest, n, format, argList);
}

}  // namespace

extern "C" {

errno_t memcpy_s(void* dest, size_t destMax, const void* src, size_t count) {
  if (bad_dest_max(destMax, kMemMax)) return ERANGE;
  if (dest == nullptr) return EINVAL;
  if (src == nullptr) {
    std::memset(dest, 0, destMax);
    return EINVAL_AND_RESET;
  }
  if (count > destMax) {
    std::memset(dest, 0, destMax);
    return ERANGE_AND_RESET;
  }
  if (dest == src || count == 0) return EOK;
  if (overlaps(dest, count, src, count)) {
    std::memset(dest, 0, destMax);
    return EOVERLAP_AND_RESET;
  }
  std::memcpy(dest, src, count);
  return EOK;
}

errno_t memmove_s(void* dest, size_t destMax, const void* src, size_t count) {
  if (bad_dest_max(destMax, kMemMax)) return ERANGE;
  if (dest == nullptr) return EINVAL;
  if (src == nullptr) {
    std::memset(dest, 0, destMax);
    return EINVAL_AND_RESET;
  }
  if (count > destMax) {
    std::memset(dest, 0, destMax);
    return ERANGE_AND_RESET;
  }
  if (dest != src && count != 0) std::memmove(dest, src, count);
  return EOK;
}

errno_t memset_s(void* dest, size_t destMax, int c, size_t count) {
  if (bad_dest_max(destMax, kMemMax)) return ERANGE;
  if (dest == nullptr) return EINVAL;
  if (count > destMax) {
    std::memset(dest, c, destMax);
    return ERANGE_AND_RESET;
  }
  std::memset(dest, c, count);
  return EOK;
}

errno_t strcpy_s(char* strDest, size_t destMax, const char* strSrc) {
  if (bad_dest_max(destMax, kStrMax)) return ERANGE;
  if (strDest == nullptr) return EINVAL;
  if (strSrc == nullptr) {
    strDest[0] = '\0';
    return EINVAL_AND_RESET;
  }
  const size_t srcLen = bounded_len(strSrc, destMax);  // destMax: does not fit
  if (srcLen >= destMax) {
    strDest[0] = '\0';
    return ERANGE_AND_RESET;
  }
  if (strDest == strSrc) return EOK;  // a string copied onto itself
  if (overlaps(strDest, srcLen + 1, strSrc, srcLen + 1)) {
    strDest[0] = '\0';
    return EOVERLAP_AND_RESET;
  }
  std::memcpy(strDest, strSrc, srcLen + 1);
  return EOK;
}

errno_t strncpy_s(char* strDest, size_t destMax, const char* strSrc, size_t count) {
  if (bad_dest_max(destMax, kStrMax)) return ERANGE;
  if (strDest == nullptr) return EINVAL;
  if (strSrc == nullptr) {
    strDest[0] = '\0';
    return EINVAL_AND_RESET;
  }
  if (count > kStrMax) {
    strDest[0] = '\0';
    return ERANGE_AND_RESET;
  }
  const size_t limit = count < destMax ? count : destMax;
  const size_t srcLen = bounded_len(strSrc, limit);  // characters to copy; destMax: too long
  if (srcLen >= destMax) {
    strDest[0] = '\0';
    return ERANGE_AND_RESET;
  }
  if (strDest == strSrc) {  // copied onto itself: only the terminator moves
    strDest[srcLen] = '\0';
    return EOK;
  }
  if (overlaps(strDest, srcLen + 1, strSrc, srcLen + (srcLen < limit ? 1 : 0))) {
    strDest[0] = '\0';
    return EOVERLAP_AND_RESET;
  }
  std::memcpy(strDest, strSrc, srcLen);
  strDest[srcLen] = '\0';
  return EOK;
}

errno_t strcat_s(char* strDest, size_t destMax, const char* strSrc) {
  const errno_t e = cat_args(strDest, destMax, strSrc);
  if (e != EOK) return e;
  return cat(strDest, destMax, strSrc, SIZE_MAX);
}

errno_t strncat_s(char* strDest, size_t destMax, const char* strSrc, size_t count) {
  const errno_t e = cat_args(strDest, destMax, strSrc);
  if (e != EOK) return e;
  if (count > kStrMax) {
    strDest[0] = '\0';
    return ERANGE_AND_RESET;
  }
  return cat(strDest, destMax, strSrc, count);
}

int vsprintf_s(char* strDest, size_t destMax, const char* format, va_list argList) {
  if (strDest == nullptr || bad_dest_max(destMax, kStrMax)) return -1;
  if (format == nullptr) {
    strDest[0] = '\0';
    return -1;
  }
  const int r = format_into(strDest, destMax, format, argList);
  if (r < 0 || static_cast<size_t>(r) >= destMax) {
    strDest[0] = '\0';
    return -1;
  }
  return r;
}

int sprintf_s(char* strDest, size_t destMax, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  const int r = vsprintf_s(strDest, destMax, format, ap);
  va_end(ap);
  return r;
}

int vsnprintf_s(char* strDest, size_t destMax, size_t count, const char* format, va_list argList) {
  if (strDest == nullptr || bad_dest_max(destMax, kStrMax)) return -1;
  if (format == nullptr || (count > kStrMax - 1 && count != SIZE_MAX)) {
    strDest[0] = '\0';
    return -1;
  }
  if (count < destMax) {
    const int r = format_into(strDest, count + 1, format, argList);
    if (r < 0) {
      strDest[0] = '\0';
      return -1;
    }
    return static_cast<size_t>(r) > count ? -1 : r;  // truncated: text kept, -1
  }
  const int r = format_into(strDest, destMax, format, argList);
  if (r < 0 || static_cast<size_t>(r) >= destMax) {
    strDest[0] = '\0';
    return -1;
  }
  return r;
}

int snprintf_s(char* strDest, size_t destMax, size_t count, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  const int r = vsnprintf_s(strDest, destMax, count, format, ap);
  va_end(ap);
  return r;
}

}  // extern "C"

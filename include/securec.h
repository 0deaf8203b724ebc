/*
 * mlaops drop-in for the securec header of the Ascend SDK (Huawei securec / libboundscheck,
 * C11 Annex K style): the bounded memory and string functions that Ascend programs call
 * (memcpy_s, memmove_s, memset_s, strcpy_s, strncpy_s, strcat_s, strncat_s, sprintf_s,
 * vsprintf_s, snprintf_s, vsnprintf_s), the errno_t type and the error values. The functions
 * live in libmlaops (-lc_sec, as CANN build scripts write it, resolves to it). Valid C99 and
 * C++. See docs/sdk-headers.md.
 *
 * Common rules:
 *  * destMax is the size in bytes of the destination buffer; nothing at or past
 *    dest + destMax is ever written, whatever the other arguments are.
 *  * destMax == 0 or destMax > SECUREC_MEM_MAX_LEN (SECUREC_STRING_MAX_LEN for the string
 *    functions) gives ERANGE (-1 for the printf family) and writes nothing; dest == NULL gives
 *    EINVAL (-1) and writes nothing.
 *  * Any other error with a usable destination resets it, as securec does, and returns the
 *    *_AND_RESET value: the mem* functions zero dest[0 .. destMax) (memset_s fills it with c),
 *    the str* and printf functions set dest[0] = '\0'.
 *  * memcpy_s, strcpy_s, strncpy_s, strcat_s and strncat_s refuse overlapping source and
 *    destination (EOVERLAP_AND_RESET); memmove_s allows overlap. Copying a buffer or string
 *    onto itself (dest == src) is EOK for memcpy_s, strcpy_s and strncpy_s.
 */
#ifndef MLAOPS_SECUREC_H_
#define MLAOPS_SECUREC_H_

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>

#ifndef MLAOPS_SECUREC_API
#if defined(_MSC_VER)
#define MLAOPS_SECUREC_API
#else
#define MLAOPS_SECUREC_API __attribute__((visibility("default")))
#endif
#endif

#if defined(__GNUC__)
#define MLAOPS_SECUREC_PRINTF(fmt, first) __attribute__((format(printf, fmt, first)))
#else
#define MLAOPS_SECUREC_PRINTF(fmt, first)
#endif

/* errno_t: int, unless the C library (Annex K, MSVC, Apple) already defines it. */
#if !defined(MLAOPS_SECUREC_ERRNO_T_DEFINED) && !defined(_ERRNO_T_DEFINED) && \
    !defined(_ERRNO_T) && !defined(__errno_t_defined) &&                                     \
    !(defined(__STDC_LIB_EXT1__) && defined(__STDC_WANT_LIB_EXT1__))
#define MLAOPS_SECUREC_ERRNO_T_DEFINED 1
typedef int errno_t;
#endif

#ifndef EOK
#define EOK 0
#endif
#ifndef EINVAL
#define EINVAL 22
#endif
#ifndef ERANGE
#define ERANGE 34
#endif
#ifndef EINVAL_AND_RESET
#define EINVAL_AND_RESET (22 | 128)
#endif
#ifndef ERANGE_AND_RESET
#define ERANGE_AND_RESET (34 | 128)
#endif
#ifndef EOVERLAP_AND_RESET
#define EOVERLAP_AND_RESET (54 | 128)
#endif

/* The largest destMax accepted (2 GiB - 1), as in securec. */
#ifndef SECUREC_MEM_MAX_LEN
#define SECUREC_MEM_MAX_LEN ((size_t)0x7fffffffUL)
#endif
#ifndef SECUREC_STRING_MAX_LEN
#define SECUREC_STRING_MAX_LEN ((size_t)0x7fffffffUL)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Copies count bytes (no overlap allowed). dest valid but src NULL: EINVAL_AND_RESET;
 * count > destMax: ERANGE_AND_RESET; overlap: EOVERLAP_AND_RESET (dest zeroed in all three). */
MLAOPS_SECUREC_API errno_t memcpy_s(void *dest, size_t destMax, const void *src, size_t count);

/* Copies count bytes, overlap allowed. src NULL: EINVAL_AND_RESET; count > destMax:
 * ERANGE_AND_RESET (dest zeroed in both). */
MLAOPS_SECUREC_API errno_t memmove_s(void *dest, size_t destMax, const void *src, size_t count);

/* Sets count bytes to (unsigned char)c. count > destMax: fills dest[0 .. destMax) with c and
 * returns ERANGE_AND_RESET. */
MLAOPS_SECUREC_API errno_t memset_s(void *dest, size_t destMax, int c, size_t count);

/* Copies strSrc with its terminator. strSrc NULL: EINVAL_AND_RESET; strlen(strSrc) >= destMax:
 * ERANGE_AND_RESET; overlap: EOVERLAP_AND_RESET (strDest[0] = '\0' in all three). */
MLAOPS_SECUREC_API errno_t strcpy_s(char *strDest, size_t destMax, const char *strSrc);

/* Copies at most count characters of strSrc and a terminator. count == 0 gives "" and EOK.
 * min(strlen(strSrc), count) >= destMax or count > SECUREC_STRING_MAX_LEN: ERANGE_AND_RESET;
 * strSrc NULL: EINVAL_AND_RESET; overlap: EOVERLAP_AND_RESET (strDest[0] = '\0'). */
MLAOPS_SECUREC_API errno_t strncpy_s(char *strDest, size_t destMax, const char *strSrc, size_t count);

/* Appends strSrc. strDest not terminated within destMax or strSrc NULL: EINVAL_AND_RESET;
 * result (with terminator) longer than destMax: ERANGE_AND_RESET; overlap (strSrc == strDest
 * included): EOVERLAP_AND_RESET (strDest[0] = '\0' in all cases). */
MLAOPS_SECUREC_API errno_t strcat_s(char *strDest, size_t destMax, const char *strSrc);

/* Appends at most count characters of strSrc and a terminator; errors as strcat_s, plus
 * count > SECUREC_STRING_MAX_LEN: ERANGE_AND_RESET. */
MLAOPS_SECUREC_API errno_t strncat_s(char *strDest, size_t destMax, const char *strSrc, size_t count);

/* Formatted output into strDest (at most destMax bytes with the terminator). Return the number
 * of characters written (terminator excluded), or -1 on error: strDest / format NULL, bad
 * destMax, an output error, or output that does not fit (strDest[0] = '\0' then). */
MLAOPS_SECUREC_API int sprintf_s(char *strDest, size_t destMax, const char *format, ...)
    MLAOPS_SECUREC_PRINTF(3, 4);
MLAOPS_SECUREC_API int vsprintf_s(char *strDest, size_t destMax, const char *format, va_list argList)
    MLAOPS_SECUREC_PRINTF(3, 0);

/* As sprintf_s, writing at most min(count, destMax - 1) characters:
 *  * count < destMax: output longer than count is truncated to count characters (terminated)
 *    and -1 is returned; strDest keeps the truncated text.
 *  * count >= destMax (count == (size_t)-1 included): output that does not fit in destMax - 1
 *    characters is an error: strDest[0] = '\0', -1.
 * count > SECUREC_STRING_MAX_LEN - 1 (other than (size_t)-1) is a parameter error (-1). */
MLAOPS_SECUREC_API int snprintf_s(char *strDest, size_t destMax, size_t count, const char *format, ...)
    MLAOPS_SECUREC_PRINTF(4, 5);
MLAOPS_SECUREC_API int vsnprintf_s(char *strDest, size_t destMax, size_t count, const char *format,
                                   va_list argList) MLAOPS_SECUREC_PRINTF(4, 0);

#ifdef __cplusplus
}
#endif

#endif /* MLAOPS_SECUREC_H_ */

// Symbol visibility for the mlaops C++ API (the library builds with hidden visibility).
#pragma once

#if defined(_MSC_VER)
#define MLAOPS_API
#else
#define MLAOPS_API __attribute__((visibility("default")))
#endif

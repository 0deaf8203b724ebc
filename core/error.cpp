#include "core/error.h"

#include "core/log.h"

#include <cstdarg>
#include <cstdio>
#include <vector>

namespace mlaops {
namespace {

thread_local std::string g_last_error;

std::string vformat(const char* fmt, va_list ap) {
  va_list copy;
  va_copy(copy, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n <= 0) return std::string();
  std::vector<char> buf(static_cast<size_t>(n) + 1);
  std::vsnprintf(buf.data(), buf.size(), fmt, ap);
  return std::string(buf.data(), static_cast<size_t>(n));
}

}  // namespace

Status fail(Status code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_last_error = vformat(fmt, ap);
  va_end(ap);
  return code;
}

int fail_code_at(const char* file, int line, int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_last_error = vformat(fmt, ap);
  va_end(ap);
  if (log_enabled(LogLevel::kError, kLogAcl))
    log_line(LogLevel::kError, kLogAcl, file, line, "%s (error %d)", g_last_error.c_str(), code);
  return code;
}

void set_last_error(const std::string& message) { g_last_error = message; }
void clear_last_error() { g_last_error.clear(); }
std::string last_error_string() { return g_last_error; }
const char* last_error_message() { return g_last_error.c_str(); }

}  // namespace mlaops

// Host logging in CANN's form (docs/c-api.md, "Logging"): silent on the console by default;
// ASCEND_LOG_PRINT_TO_STDOUT=1 (or the older ASCEND_SLOG_PRINT_TO_STDOUT=1) prints the lines to
// stdout, ASCEND_PROCESS_LOG_PATH=<dir> writes them to <dir>/debug/plog/plog-<pid>_<time>.log,
// both filtered by ASCEND_GLOBAL_LOG_LEVEL (0 debug, 1 info, 2 warning, 3 error (default),
// 4 none) and ASCEND_MODULE_LOG_LEVEL (MOD=lvl[:MOD=lvl...]). One line:
//   [LEVEL] MODULE(PID,PNAME):YYYY-MM-DD-hh:mm:ss.mmm.uuu [file:line]text
#pragma once

namespace mlaops {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kNull = 4 };

// Modules as CANN names them: aclnn operators log as OP, the acl runtime as ASCENDCL.
inline constexpr const char* kLogOp = "OP";
inline constexpr const char* kLogAcl = "ASCENDCL";

// True when a line of `level` from `module` would go somewhere (cheap: settings are cached).
bool log_enabled(LogLevel level, const char* module);

// Writes one line; `file` is reduced to its base name.
void log_line(LogLevel level, const char* module, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// Re-reads the environment (aclInit does; tests that change the variables call it).
void reload_log_settings();

}  // namespace mlaops

#define MLAOPS_LOG(level, module, ...)                                                       \
  do {                                                                                       \
    if (::mlaops::log_enabled((level), (module)))                                            \
      ::mlaops::log_line((level), (module), __FILE__, __LINE__, __VA_ARGS__);                \
  } while (0)

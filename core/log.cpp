#include "core/log.h"

#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace mlaops {
namespace {

struct Settings {
  bool to_stdout = false;
  std::string dir;  // log root for files ("" = no files)
  int global = static_cast<int>(LogLevel::kError);
  std::vector<std::pair<std::string, int>> modules;
};

std::mutex g_mu;
Settings* g_settings = nullptr;  // guarded by g_mu; never freed (used at exit)
FILE* g_file = nullptr;

// "0".."4" -> level; anything else -> -1.
int parse_level(const char* s) {
  if (s == nullptr || s[0] < '0' || s[0] > '4' || s[1] != '\0') return -1;
  return s[0] - '0';
}

// "1"/"0"; other values keep the default (0).
bool parse_flag(const char* s) { return s != nullptr && std::strcmp(s, "1") == 0; }

Settings read_settings() {
  Settings s;
  const char* now = std::getenv("ASCEND_LOG_PRINT_TO_STDOUT");
  s.to_stdout = parse_flag(now != nullptr ? now : std::getenv("ASCEND_SLOG_PRINT_TO_STDOUT"));
  if (const char* dir = std::getenv("ASCEND_PROCESS_LOG_PATH"); dir != nullptr && dir[0] != '\0') s.dir = dir;
  const int g = parse_level(std::getenv("ASCEND_GLOBAL_LOG_LEVEL"));
  if (g >= 0) s.global = g;
  // MOD=lvl[:MOD=lvl...]; malformed: ignored entirely.
  if (const char* m = std::getenv("ASCEND_MODULE_LOG_LEVEL"); m != nullptr && m[0] != '\0') {
    std::vector<std::pair<std::string, int>> mods;
    std::string all(m);
    bool ok = true;
    size_t pos = 0;
    while (ok && pos <= all.size()) {
      const size_t end = std::min(all.find(':', pos), all.size());
      const std::string item = all.substr(pos, end - pos);
      const size_t eq = item.find('=');
      const int lvl = eq == std::string::npos ? -1 : parse_level(item.substr(eq + 1).c_str());
      if (eq == 0 || lvl < 0) ok = false;
      else mods.emplace_back(item.substr(0, eq), lvl);
      pos = end + 1;
    }
    if (ok) s.modules = std::move(mods);
  }
  return s;
}

const Settings& settings_locked() {
  if (g_settings == nullptr) g_settings = new Settings(read_settings());
  return *g_settings;
}

int threshold(const Settings& s, const char* module) {
  for (const auto& m : s.modules)
    if (m.first == module) return m.second;
  return s.global;
}

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARNING";
    case LogLevel::kError: return "ERROR";
    default: return "NULL";
  }
}

std::string process_name() {
  char buf[256] = {0};
  FILE* f = std::fopen("/proc/self/comm", "r");
  if (f != nullptr) {
    if (std::fgets(buf, sizeof buf, f) == nullptr) buf[0] = '\0';
    std::fclose(f);
  }
  std::string n(buf);
  while (!n.empty() && (n.back() == '\n' || n.back() == '\r')) n.pop_back();
  return n.empty() ? "unknown" : n;
}

void make_dirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') ::mkdir(path.substr(0, i).c_str(), 0750);
}

// Opens <dir>/debug/plog/plog-<pid>_<time>.log once; nullptr when it cannot.
FILE* log_file_locked(const Settings& s) {
  if (g_file != nullptr || s.dir.empty()) return g_file;
  const std::string d = s.dir + "/debug/plog";
  make_dirs(d);
  char stamp[32];
  const std::time_t t = std::time(nullptr);
  std::tm tmv{};
  localtime_r(&t, &tmv);
  std::strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &tmv);
  const std::string path = d + "/plog-" + std::to_string(::getpid()) + "_" + stamp + ".log";
  g_file = std::fopen(path.c_str(), "a");
  return g_file;
}

}  // namespace

bool log_enabled(LogLevel level, const char* module) {
  std::lock_guard<std::mutex> lock(g_mu);
  const Settings& s = settings_locked();
  if (!s.to_stdout && s.dir.empty()) return false;
  const int th = threshold(s, module);
  return th < static_cast<int>(LogLevel::kNull) && static_cast<int>(level) >= th;
}

void reload_log_settings() {
  std::lock_guard<std::mutex> lock(g_mu);
  delete g_settings;
  g_settings = new Settings(read_settings());
  if (g_file != nullptr) {
    std::fclose(g_file);
    g_file = nullptr;
  }
}

void log_line(LogLevel level, const char* module, const char* file, int line, const char* fmt, ...) {
  char text[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  const char* base = std::strrchr(file, '/');
  base = base != nullptr ? base + 1 : file;
  struct timeval tv {};
  ::gettimeofday(&tv, nullptr);
  std::tm tmv{};
  const std::time_t secs = tv.tv_sec;
  localtime_r(&secs, &tmv);
  static const std::string pname = process_name();
  char head[160];
  std::snprintf(head, sizeof head, "[%s] %s(%d,%s):%04d-%02d-%02d-%02d:%02d:%02d.%03d.%03d ", level_name(level),
                module, static_cast<int>(::getpid()), pname.c_str(), tmv.tm_year + 1900, tmv.tm_mon + 1, tmv.tm_mday,
                tmv.tm_hour, tmv.tm_min, tmv.tm_sec, static_cast<int>(tv.tv_usec / 1000),
                static_cast<int>(tv.tv_usec % 1000));
  std::lock_guard<std::mutex> lock(g_mu);
  const Settings& s = settings_locked();
  if (s.to_stdout) {
    std::fprintf(stdout, "%s[%s:%d]%s\n", head, base, line, text);
    std::fflush(stdout);
  } else if (FILE* f = log_file_locked(s)) {
    std::fprintf(f, "%s[%s:%d]%s\n", head, base, line, text);
    std::fflush(f);
  }
}

}  // namespace mlaops

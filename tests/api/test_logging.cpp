// Logging like CANN (docs/c-api.md, "Logging"): silent by default; the ASCEND_* variables turn on
// stdout or file logs, filtered by level and module; one line per event in CANN's format.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_mla_prolog_v2_weight_nz.h"
#include "aclnnop/aclnn_mla_prolog_v3.h"
#include "api/runtime/executor.h"
#include "core/log.h"

namespace {

const char* const kVars[] = {"ASCEND_LOG_PRINT_TO_STDOUT", "ASCEND_SLOG_PRINT_TO_STDOUT", "ASCEND_GLOBAL_LOG_LEVEL",
                             "ASCEND_MODULE_LOG_LEVEL", "ASCEND_PROCESS_LOG_PATH"};

class Logging : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* v : kVars) unsetenv(v);
    mlaops::reload_log_settings();
  }
  static void set(const char* var, const char* value) {
    setenv(var, value, 1);
    mlaops::reload_log_settings();
  }
  // Runs f with stdout redirected to a file; returns what was printed.
  template <class F>
  static std::string capture(F&& f) {
    std::fflush(stdout);
    char path[] = "/tmp/mlaops_log_XXXXXX";
    const int fd = mkstemp(path);
    const int saved = dup(1);
    dup2(fd, 1);
    f();
    std::fflush(stdout);
    dup2(saved, 1);
    close(saved);
    close(fd);
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::remove(path);
    return ss.str();
  }
};

// One parsed line: [LEVEL] MODULE(PID,PNAME):YYYY-MM-DD-hh:mm:ss.mmm.uuu [file:line]text
// (parsed by hand: std::regex draws a GCC 12 warning at -O1, which the sanitizer build uses).
struct Line {
  std::string level, module, pid, pname, file, line, text;
};

bool digits(const std::string& s, size_t at, size_t n) {
  if (at + n > s.size()) return false;
  for (size_t i = 0; i < n; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[at + i]))) return false;
  return true;
}

// Parses exactly one newline-terminated line; false if `s` is not one well-formed line.
bool parse_line(const std::string& s, Line* out) {
  if (s.empty() || s.back() != '\n' || s.find('\n') != s.size() - 1 || s[0] != '[') return false;
  size_t p = s.find("] ");
  if (p == std::string::npos) return false;
  out->level = s.substr(1, p - 1);
  if (out->level != "DEBUG" && out->level != "INFO" && out->level != "WARNING" && out->level != "ERROR") return false;
  size_t q = s.find('(', p);
  size_t c = s.find(',', q);
  size_t r = s.find("):", c);
  if (q == std::string::npos || c == std::string::npos || r == std::string::npos) return false;
  out->module = s.substr(p + 2, q - p - 2);
  out->pid = s.substr(q + 1, c - q - 1);
  out->pname = s.substr(c + 1, r - c - 1);
  if (out->pid.empty() || !digits(out->pid, 0, out->pid.size()) || out->pname.empty()) return false;
  // YYYY-MM-DD-hh:mm:ss.mmm.uuu
  const size_t t = r + 2;
  const char* shape = "dddd-dd-dd-dd:dd:dd.ddd.ddd ";
  for (size_t i = 0; shape[i] != '\0'; ++i) {
    if (t + i >= s.size()) return false;
    if (shape[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(s[t + i])) : s[t + i] != shape[i]) return false;
  }
  const size_t b = t + std::strlen(shape);
  if (b >= s.size() || s[b] != '[') return false;
  const size_t colon = s.find(':', b), close = s.find(']', b);
  if (colon == std::string::npos || close == std::string::npos || colon > close) return false;
  out->file = s.substr(b + 1, colon - b - 1);
  out->line = s.substr(colon + 1, close - colon - 1);
  if (out->line.empty() || !digits(out->line, 0, out->line.size())) return false;
  out->text = s.substr(close + 1, s.size() - close - 2);
  return true;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

TEST_F(Logging, SilentByDefault) {
  const std::string out = capture([] { EXPECT_EQ(aclrtSetDevice(100), ACL_ERROR_RT_INVALID_DEVICEID); });
  EXPECT_EQ(out, "");
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("deviceId"), std::string::npos);  // the message is still kept
}

TEST_F(Logging, RuntimeErrorToStdoutInCannFormat) {
  set("ASCEND_SLOG_PRINT_TO_STDOUT", "1");
  const std::string out = capture([] { EXPECT_EQ(aclrtSetDevice(100), ACL_ERROR_RT_INVALID_DEVICEID); });
  Line m;
  ASSERT_TRUE(parse_line(out, &m)) << out;
  EXPECT_EQ(m.level, "ERROR");
  EXPECT_EQ(m.module, "ASCENDCL");
  EXPECT_EQ(std::stol(m.pid), static_cast<long>(getpid()));
  EXPECT_EQ(m.file, "acl_runtime.cpp");
  EXPECT_NE(m.text.find("aclrtSetDevice: deviceId: ACL-05 allowed [0, 8)"), std::string::npos) << out;
  EXPECT_NE(m.text.find("got 100"), std::string::npos) << out;
  EXPECT_NE(m.text.find("107001"), std::string::npos) << out;
}

TEST_F(Logging, RejectedAclnnCallLogsOneErrorLineNamingTheOperator) {
  set("ASCEND_LOG_PRINT_TO_STDOUT", "1");
  const std::string out =
      capture([] { EXPECT_NE(aclnnMlaPrologV2WeightNz(nullptr, 0, nullptr, nullptr), ACLNN_SUCCESS); });
  Line m;
  ASSERT_TRUE(parse_line(out, &m)) << out;
  EXPECT_EQ(m.level, "ERROR");
  EXPECT_EQ(m.module, "OP");
  EXPECT_NE(m.text.find("aclnnMlaPrologV2WeightNz failed, status 161001: aclnnMlaPrologV2WeightNz: ACL-50 executor is null"),
            std::string::npos)
      << out;
}

// The plain aclnnMlaPrologV3 (the vendor's unsupported entry point): each function logs one ERROR
// line saying "not supported" and returns 561000.
TEST_F(Logging, PlainMlaPrologV3LogsNotSupported) {
  set("ASCEND_LOG_PRINT_TO_STDOUT", "1");
  std::string out = capture([] { EXPECT_EQ(aclnnMlaPrologV3(nullptr, 0, nullptr, nullptr), ACLNN_ERR_INNER); });
  Line m;
  ASSERT_TRUE(parse_line(out, &m)) << out;
  EXPECT_EQ(m.level, "ERROR");
  EXPECT_EQ(m.module, "OP");
  EXPECT_NE(m.text.find("aclnnMlaPrologV3 failed, status 561000: aclnnMlaPrologV3: ACL-65 not supported"),
            std::string::npos)
      << out;
  out = capture([] {
    EXPECT_EQ(aclnnMlaPrologV3GetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                               nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                               nullptr, nullptr, nullptr, nullptr, nullptr, 1e-5, 1e-5, nullptr, false,
                                               0, 0, 0, 0, 0, 128, 1.0, 1.0, nullptr, nullptr, nullptr, nullptr,
                                               nullptr, nullptr, nullptr),
              ACLNN_ERR_INNER);
  });
  ASSERT_TRUE(parse_line(out, &m)) << out;
  EXPECT_EQ(m.level, "ERROR");
  EXPECT_NE(m.text.find("status 561000: aclnnMlaPrologV3GetWorkspaceSize: ACL-65 not supported"), std::string::npos)
      << out;
}

TEST_F(Logging, TheNewVariableWinsOverTheOldOne) {
  set("ASCEND_SLOG_PRINT_TO_STDOUT", "1");
  set("ASCEND_LOG_PRINT_TO_STDOUT", "0");
  EXPECT_EQ(capture([] { aclrtSetDevice(100); }), "");
  set("ASCEND_LOG_PRINT_TO_STDOUT", "yes");  // not 0 or 1: the default (files, none configured)
  EXPECT_EQ(capture([] { aclrtSetDevice(100); }), "");
}

TEST_F(Logging, GlobalLevelFilters) {
  set("ASCEND_LOG_PRINT_TO_STDOUT", "1");
  set("ASCEND_GLOBAL_LOG_LEVEL", "4");  // null: nothing
  EXPECT_EQ(capture([] { aclrtSetDevice(100); }), "");
  set("ASCEND_GLOBAL_LOG_LEVEL", "2");  // warnings and errors
  const std::string warn = capture([] { mlaops::api::warn_deprecated_once("aclnnLogTestOp", "aclnnLogTestOpV2"); });
  Line w;
  ASSERT_TRUE(parse_line(warn, &w)) << warn;
  EXPECT_EQ(w.level, "WARNING");
  EXPECT_EQ(w.module, "OP");
  EXPECT_TRUE(starts_with(w.text, "aclnnLogTestOp is deprecated")) << warn;
  EXPECT_NE(w.text.find("aclnnLogTestOpV2"), std::string::npos) << warn;
  EXPECT_EQ(capture([] { mlaops::api::warn_deprecated_once("aclnnLogTestOp", "aclnnLogTestOpV2"); }), "");  // once
  EXPECT_EQ(capture([] { aclDestroyAclOpExecutor(nullptr); }).find("DEBUG"), std::string::npos);
  set("ASCEND_GLOBAL_LOG_LEVEL", "0");  // debug: successful calls are logged too
  const std::string dbg = capture([] {
    EXPECT_EQ(aclnnMlaPrologV2WeightNz(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    mlaops::api::log_result("aclnnLogTestOp", __FILE__, __LINE__, ACLNN_SUCCESS);
  });
  EXPECT_NE(dbg.find("[ERROR] OP("), std::string::npos) << dbg;
  EXPECT_NE(dbg.find("[DEBUG] OP("), std::string::npos) << dbg;
  EXPECT_NE(dbg.find("[test_logging.cpp:"), std::string::npos) << dbg;
  EXPECT_NE(dbg.find("aclnnLogTestOp: success"), std::string::npos) << dbg;
  set("ASCEND_GLOBAL_LOG_LEVEL", "7");  // out of range: the default (error)
  EXPECT_NE(capture([] { aclrtSetDevice(100); }).find("[ERROR] ASCENDCL("), std::string::npos);
}

TEST_F(Logging, ModuleLevelOverridesTheGlobalOne) {
  set("ASCEND_LOG_PRINT_TO_STDOUT", "1");
  set("ASCEND_MODULE_LOG_LEVEL", "OP=4:ASCENDCL=3");
  EXPECT_EQ(capture([] { aclnnMlaPrologV2WeightNz(nullptr, 0, nullptr, nullptr); }), "");
  EXPECT_NE(capture([] { aclrtSetDevice(100); }).find("[ERROR] ASCENDCL("), std::string::npos);
  set("ASCEND_MODULE_LOG_LEVEL", "OP=4:ASCENDCL");  // malformed: ignored entirely
  EXPECT_NE(capture([] { aclnnMlaPrologV2WeightNz(nullptr, 0, nullptr, nullptr); }).find("[ERROR] OP("),
            std::string::npos);
}

TEST_F(Logging, FilesUnderTheProcessLogPath) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mlaops_plog_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  set("ASCEND_PROCESS_LOG_PATH", dir.c_str());
  EXPECT_EQ(capture([] { aclrtSetDevice(100); }), "");  // not on the console
  mlaops::reload_log_settings();                         // closes the file
  const std::filesystem::path plog = dir / "debug" / "plog";
  ASSERT_TRUE(std::filesystem::is_directory(plog));
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(plog)) {
    ++files;
    EXPECT_EQ(e.path().filename().string().rfind("plog-" + std::to_string(getpid()) + "_", 0), 0u) << e.path();
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    Line m;
    const std::string text = ss.str();
    EXPECT_TRUE(parse_line(text, &m)) << text;
  }
  EXPECT_EQ(files, 1);
  std::filesystem::remove_all(dir);
}

}  // namespace

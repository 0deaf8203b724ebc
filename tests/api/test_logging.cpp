// Logging like CANN (docs/c-api.md, "Logging"): silent by default; the ASCEND_* variables turn on
// stdout or file logs, filtered by level and module; one line per event in CANN's format.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_mla_prolog_v2_weight_nz.h"
#include "aclnnop/aclnn_mla_prolog_v3.h"
#include "api/executor.h"
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

// [LEVEL] MODULE(PID,PNAME):YYYY-MM-DD-hh:mm:ss.mmm.uuu [file:line]text
const std::regex kLine(
    R"(\[(DEBUG|INFO|WARNING|ERROR)\] (OP|ASCENDCL)\((\d+),([^)]+)\):\d{4}-\d{2}-\d{2}-\d{2}:\d{2}:\d{2}\.\d{3}\.\d{3} \[([A-Za-z0-9_.]+):(\d+)\](.*)\n)");

TEST_F(Logging, SilentByDefault) {
  const std::string out = capture([] { EXPECT_EQ(aclrtSetDevice(100), ACL_ERROR_RT_INVALID_DEVICEID); });
  EXPECT_EQ(out, "");
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("deviceId"), std::string::npos);  // the message is still kept
}

TEST_F(Logging, RuntimeErrorToStdoutInCannFormat) {
  set("ASCEND_SLOG_PRINT_TO_STDOUT", "1");
  const std::string out = capture([] { EXPECT_EQ(aclrtSetDevice(100), ACL_ERROR_RT_INVALID_DEVICEID); });
  std::smatch m;
  ASSERT_TRUE(std::regex_match(out, m, kLine)) << out;
  EXPECT_EQ(m[1], "ERROR");
  EXPECT_EQ(m[2], "ASCENDCL");
  EXPECT_EQ(std::stol(m[3]), static_cast<long>(getpid()));
  EXPECT_EQ(m[5], "acl_runtime.cpp");
  EXPECT_NE(m[7].str().find("aclrtSetDevice: deviceId: allowed [0, 8)"), std::string::npos) << out;
  EXPECT_NE(m[7].str().find("got 100"), std::string::npos) << out;
  EXPECT_NE(m[7].str().find("107001"), std::string::npos) << out;
}

TEST_F(Logging, RejectedAclnnCallLogsOneErrorLineNamingTheOperator) {
  set("ASCEND_LOG_PRINT_TO_STDOUT", "1");
  const std::string out =
      capture([] { EXPECT_NE(aclnnMlaPrologV2WeightNz(nullptr, 0, nullptr, nullptr), ACLNN_SUCCESS); });
  std::smatch m;
  ASSERT_TRUE(std::regex_match(out, m, kLine)) << out;
  EXPECT_EQ(m[1], "ERROR");
  EXPECT_EQ(m[2], "OP");
  EXPECT_NE(m[7].str().find("aclnnMlaPrologV2WeightNz failed, status 161001: aclnnMlaPrologV2WeightNz: executor is null"),
            std::string::npos)
      << out;
}

// The plain aclnnMlaPrologV3 (the vendor's unsupported entry point): each function logs one ERROR
// line saying "not supported" and returns 561000.
TEST_F(Logging, PlainMlaPrologV3LogsNotSupported) {
  set("ASCEND_LOG_PRINT_TO_STDOUT", "1");
  std::string out = capture([] { EXPECT_EQ(aclnnMlaPrologV3(nullptr, 0, nullptr, nullptr), ACLNN_ERR_INNER); });
  std::smatch m;
  ASSERT_TRUE(std::regex_match(out, m, kLine)) << out;
  EXPECT_EQ(m[1], "ERROR");
  EXPECT_EQ(m[2], "OP");
  EXPECT_NE(m[7].str().find("aclnnMlaPrologV3 failed, status 561000: aclnnMlaPrologV3: not supported"),
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
  ASSERT_TRUE(std::regex_match(out, m, kLine)) << out;
  EXPECT_EQ(m[1], "ERROR");
  EXPECT_NE(m[7].str().find("status 561000: aclnnMlaPrologV3GetWorkspaceSize: not supported"), std::string::npos)
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
  EXPECT_TRUE(std::regex_search(warn, std::regex(R"(^\[WARNING\] OP\(.*aclnnLogTestOp is deprecated.*aclnnLogTestOpV2)")))
      << warn;
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
    std::smatch m;
    const std::string text = ss.str();
    EXPECT_TRUE(std::regex_match(text, m, kLine)) << text;
  }
  EXPECT_EQ(files, 1);
  std::filesystem::remove_all(dir);
}

}  // namespace

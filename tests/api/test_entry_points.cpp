// The entry-point table (ops/common/operators.cpp) against what ships: every aclnnop header's entry
// point has a row, every row's header exists, and every available row's two functions are
// exported by the shared library (a program linked with -lopapi finds them).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "ops/common/operators.h"

namespace mlaops {
namespace {

std::set<std::string> table_names() {
  std::set<std::string> names;
  for (const OperatorInfo* o = operator_table(); o->name != nullptr; ++o) names.insert(o->name);
  return names;
}

TEST(EntryPoints, EveryHeaderEntryPointHasARow) {
  const std::set<std::string> names = table_names();
  // "aclnn<Name>GetWorkspaceSize(" declarations (std::regex is avoided: GCC 12 warns inside it at -O1).
  const std::string head = "aclnn", tail = "GetWorkspaceSize(";
  int headers = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(MLAOPS_INCLUDE_DIR) + "/aclnnop")) {
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    ++headers;
    int found = 0;
    for (size_t at = text.find(tail); at != std::string::npos; at = text.find(tail, at + 1)) {
      const size_t begin = text.rfind(head, at);
      ASSERT_NE(begin, std::string::npos) << e.path();
      const std::string name = text.substr(begin + head.size(), at - begin - head.size());
      ++found;
      EXPECT_TRUE(names.count(name)) << e.path() << " declares aclnn" << name << " without a table row";
    }
    EXPECT_GT(found, 0) << e.path();
  }
  EXPECT_GE(headers, 4);
}

TEST(EntryPoints, AvailableRowsAreExportedAndHaveTheirHeader) {
  void* lib = dlopen(MLAOPS_SHARED_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  int available = 0;
  for (const OperatorInfo* o = operator_table(); o->name != nullptr; ++o) {
    const std::string name = o->name;
    EXPECT_EQ(std::string(o->entry_points), "aclnn" + name + "GetWorkspaceSize, aclnn" + name);
    EXPECT_NE(std::string(o->inner), "");
    EXPECT_NE(std::string(o->features), "");
    if (!o->available) continue;
    ++available;
    EXPECT_TRUE(std::filesystem::exists(std::string(MLAOPS_INCLUDE_DIR) + "/" + o->header)) << o->header;
    EXPECT_NE(dlsym(lib, ("aclnn" + name + "GetWorkspaceSize").c_str()), nullptr) << name;
    EXPECT_NE(dlsym(lib, ("aclnn" + name).c_str()), nullptr) << name;
  }
  EXPECT_GE(available, 4);
  dlclose(lib);
}

}  // namespace
}  // namespace mlaops

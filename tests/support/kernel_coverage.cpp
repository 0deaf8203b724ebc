// The kernel_coverage test (tests/CMakeLists.txt, docs/testing.md): fails when a kernel row this
// host can run appears in no file of the usage directory that the test processes wrote
// (tests/support/kernel_usage.cpp), naming those rows.
// Usage: kernel_coverage DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "mlaops/runtime.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kernel_coverage DIR\n");
    return 2;
  }
  std::set<std::string> used;
  int files = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1], ec)) {
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) used.insert(line);
    ++files;
  }
  int runnable = 0;
  std::string missing;
  for (const mlaops::KernelInfo& k : mlaops::kernel_list()) {
    if (!k.runnable) continue;
    ++runnable;
    if (used.count(k.name) == 0) missing += std::string(" ") + k.name;
  }
  std::printf("kernel coverage: %d usage files in %s; %d kernel rows runnable here\n", files, argv[1],
              runnable);
  if (!missing.empty()) {
    std::printf("kernel rows this host can run that no test used:%s\n", missing.c_str());
    return 1;
  }
  std::printf("every one was used\n");
  return 0;
}

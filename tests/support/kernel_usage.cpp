// The kernel-usage recorder linked into every test binary (tests/CMakeLists.txt): when
// MLAOPS_KERNEL_USAGE_DIR is set, the process appends at exit the names of the kernel rows it
// used (kernel_list() uses > 0), one a line, to <dir>/usage-<pid>.txt (append: a later process
// with the same pid adds to the union). tests/support/kernel_coverage.cpp reads the directory.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <type_traits>

#include "core/kernel_registry.h"
#include "mlaops/runtime.h"

namespace mlaops {
namespace {

// The families are function-local statics built after this recorder, so they are destroyed
// before it runs: they must have nothing to destroy.
static_assert(std::is_trivially_destructible_v<KernelTable<const void*>>);

struct Recorder {
  ~Recorder() {
    const char* dir = std::getenv("MLAOPS_KERNEL_USAGE_DIR");
    if (dir == nullptr || *dir == '\0') return;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::ofstream out(std::string(dir) + "/usage-" + std::to_string(getpid()) + ".txt", std::ios::app);
    for (const KernelInfo& k : kernel_list())
      if (k.uses > 0) out << k.name << '\n';
  }
};

const Recorder recorder;

}  // namespace
}  // namespace mlaops

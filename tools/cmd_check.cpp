// `mlaops check` (golden mode). Placeholder until the implementation lands: it says so and fails.
#include <cstdio>

#include "tools/commands.h"

namespace mlaops::tools {

int cmd_check(int, char**) {
  std::fputs("mlaops check: not available in this build yet\n", stderr);
  return 2;
}

}  // namespace mlaops::tools

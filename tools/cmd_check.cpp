// `mlaops check` (golden mode): builds one case of an operator with deterministic random data,
// runs the fast path (the operator's C++ API) and the float64 reference on separate copies, and
// compares every output with the operator tests' rules (testkit/compare.h and the harnesses).
// --from-files DIR compares outputs another implementation saved as .npy (e.g. an NPU run)
// instead of running the fast path; --save DIR writes the case's inputs and the reference
// outputs (and case.json) so that such a run can be set up with the same data. docs/cli.md.
//
// This file dispatches; the shared parts are check_common.h / .cpp, each op has its own file
// (check_mla_prolog.cpp, check_fia.cpp, check_mla_preprocess.cpp).
#include <cstdio>
#include <cstring>

#include "tools/check_common.h"
#include "tools/commands.h"

namespace mlaops::tools {

int cmd_check(int argc, char** argv) {
  for (int i = 0; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(check::usage().c_str(), stdout);
      return 0;
    }
  try {
    const check::Options o = check::parse_args(argc, argv);
    if (o.op == check::kProlog) return check::check_mla_prolog(o);
    if (o.op == check::kFia) return check::check_fia(o);
    return check::check_mla_preprocess(o);
  } catch (const check::UsageError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "mlaops check: %s\nRun 'mlaops check --help' for the options.\n", e.msg.c_str());
    return 2;
  }
}

}  // namespace mlaops::tools

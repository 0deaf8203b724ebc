// The `mlaops` command: dispatches to the subcommands of tools/commands.h.
#include <cstdio>
#include <cstring>
#include <string>

#include "tools/commands.h"

namespace mlaops::tools {

const Command* command_table() {
  static const Command kCommands[] = {
      {"demo", cmd_demo, "a DeepSeek MLA attention layer serving requests on this CPU, checked and timed"},
      {"check", cmd_check, "golden mode: an operator's fast path (or saved .npy outputs) vs the float64 reference"},
      {"bench", cmd_bench, "the machine's limits, then every operator case vs its roofline bound and peers (JSON, PNG)"},
      {"info", cmd_info, "version, CPU features, the ISA and thread count in use, the operators"},
      {nullptr, nullptr, nullptr},
  };
  return kCommands;
}

}  // namespace mlaops::tools

namespace {

void usage(FILE* out) {
  std::fputs("usage: mlaops <command> [options]\n\ncommands:\n", out);
  for (const mlaops::tools::Command* c = mlaops::tools::command_table(); c->name; ++c)
    std::fprintf(out, "  %-8s %s\n", c->name, c->summary);
  std::fputs("\nRun 'mlaops <command> --help' for a command's options.\n"
             "Environment: MLAOPS_ISA=scalar|avx2|avx512 forces an ISA level; MLAOPS_NUM_THREADS (or\n"
             "OMP_NUM_THREADS) sets the thread count; MLAOPS_GEMM=auto|own|onednn|onednn-bf16|onednn-f32\n"
             "chooses where the projection GEMMs run (docs/runtime.md \"GEMM routes\").\n",
             out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return 0;
  }
  for (const mlaops::tools::Command* c = mlaops::tools::command_table(); c->name; ++c)
    if (std::strcmp(argv[1], c->name) == 0) return c->run(argc - 2, argv + 2);
  std::fprintf(stderr, "mlaops: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}

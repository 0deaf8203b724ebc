// The `mlaops` command. Subcommands: info (more arrive with the operators: demo, check, bench).
#include <cstdio>
#include <cstring>
#include <string>

#include "mlaops/runtime.h"
#include "ops/operators.h"

namespace {

const char* kUsage =
    "usage: mlaops <command> [options]\n"
    "\n"
    "commands:\n"
    "  info     version, CPU features, the ISA and thread count in use, the operators\n"
    "\n"
    "Run 'mlaops <command> --help' for a command's options.\n"
    "Environment: MLAOPS_ISA=scalar|avx2|avx512 forces an ISA level; MLAOPS_NUM_THREADS (or\n"
    "OMP_NUM_THREADS) sets the thread count.\n";

const char* kInfoUsage =
    "usage: mlaops info\n"
    "\n"
    "Prints the mlaops version, the CPU features detected, the ISA level the kernels use\n"
    "(MLAOPS_ISA can lower it), the thread count, and each operator with its aclnn entry points.\n";

const char* yes(bool b) { return b ? "yes" : "no"; }

int cmd_info(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kInfoUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "mlaops info: unknown option '%s'\n\n%s", argv[i], kInfoUsage);
    return 2;
  }
  const mlaops::CpuFeatures& f = mlaops::cpu_features();
  std::printf("mlaops %s\n", mlaops::version());
  std::printf("cpu features: avx2 %s, fma %s, f16c %s, avx512f %s, avx512bw %s, avx512vl %s, avx512dq %s,\n"
              "              avx512_bf16 %s, avx512_vnni %s, avx_vnni %s, amx_bf16 %s, amx_int8 %s\n",
              yes(f.avx2), yes(f.fma), yes(f.f16c), yes(f.avx512f), yes(f.avx512bw), yes(f.avx512vl),
              yes(f.avx512dq), yes(f.avx512_bf16), yes(f.avx512_vnni), yes(f.avx_vnni), yes(f.amx_bf16),
              yes(f.amx_int8));
  std::printf("isa: %s (detected %s)\n", mlaops::isa_name(mlaops::active_isa()),
              mlaops::isa_name(mlaops::detected_isa()));
  std::printf("threads: %d\n", mlaops::num_threads());
  std::printf("operators:\n");
  for (const mlaops::OperatorInfo* op = mlaops::operator_table(); op->name != nullptr; ++op)
    std::printf("  %-28s %-13s %s\n", op->name, op->available ? "available" : "not yet", op->entry_points);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "info") return cmd_info(argc - 2, argv + 2);
  std::fprintf(stderr, "mlaops: unknown command '%s'\n\n%s", argv[1], kUsage);
  return 2;
}

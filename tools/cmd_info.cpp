// `mlaops info`: version, CPU features, the ISA and thread count in use, the kernel rows of every
// family (docs/runtime.md), the operators.
#include <cstdio>
#include <cstring>
#include <string>

#include "core/kernel_registry.h"
#include "mlaops/runtime.h"
#include "ops/common/gemm_route.h"
#include "ops/common/operators.h"
#include "tools/commands.h"

namespace mlaops::tools {
namespace {

const char* kInfoUsage =
    "usage: mlaops info\n"
    "\n"
    "Prints the mlaops version, the CPU features detected, the ISA level the kernels use\n"
    "(MLAOPS_ISA can lower it), the thread count, every kernel row of every family (its level,\n"
    "whether this CPU can run it or what it needs, '>' on the row each family picks now,\n"
    "and the calls it runs when not every call: each GEMM data type is a family, and a\n"
    "call a row does not run goes to the next row; MLAOPS_KERNEL forces rows), and every aclnn entry point with the operator it runs,\n"
    "whether the vendor marks it deprecated, and what it supports.\n";


// One line per row: family, '>' on the row the family picks at the active level, name, level,
// "runnable" or what it needs, and the calls it runs when not all (the GEMM rows, one family per
// data type: a call of another panel layout runs on the next row that takes it).
void print_kernel_rows() {
  const std::string forced = kernel_override();
  std::printf("kernel override: %s\n", forced.empty() ? "none (MLAOPS_KERNEL unset)" : forced.c_str());
  std::printf("kernel rows (> picked at the active level):\n");
  int n = 0;
  const KernelFamily* const* fams = kernel_families(&n);
  for (int f = 0; f < n; ++f) {
    const KernelFamily& fam = *fams[f];
    const int picked = fam.select(active_isa());
    for (int i = 0; i < fam.size(); ++i) {
      const KernelRowInfo& r = fam.info(i);
      std::string here = r.runnable(cpu_features()) ? std::string("runnable") : std::string("needs ") + r.needs;
      if (*r.calls) here += std::string(", runs only ") + r.calls;  // other calls: the next row
      std::printf("  %-20s %c %-28s %-7s %s\n", fam.name(), i == picked ? '>' : ' ', r.name, isa_name(r.isa),
                  here.c_str());
    }
  }
}

}  // namespace

int cmd_info(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kInfoUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "mlaops info: unknown option '%s'\n\n%s", argv[i], kInfoUsage);
    return 2;
  }
  std::printf("mlaops %s\n", version());
#if defined(MLAOPS_ARCH_X86_64)
  const CpuFeatures& f = cpu_features();
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  std::printf("cpu features: avx2 %s, fma %s, f16c %s, avx512f %s, avx512bw %s, avx512vl %s, avx512dq %s,\n"
              "              avx512_bf16 %s, avx512_vnni %s, avx_vnni %s, amx_bf16 %s, amx_int8 %s\n",
              yes(f.avx2), yes(f.fma), yes(f.f16c), yes(f.avx512f), yes(f.avx512bw), yes(f.avx512vl),
              yes(f.avx512dq), yes(f.avx512_bf16), yes(f.avx512_vnni), yes(f.avx_vnni), yes(f.amx_bf16),
              yes(f.amx_int8));
#else
  std::printf("cpu features: not detected (the SIMD kernels are x86-64 code; this build has the portable rows)\n");
#endif
  std::printf("isa: %s (detected %s)\n", isa_name(active_isa()), isa_name(detected_isa()));
  std::printf("threads: %d\n", num_threads());
  // GEMM routes (docs/runtime.md): where the projection GEMMs may run, decided per shape at plan time
  std::printf("gemm route: %s (MLAOPS_GEMM=auto|own|onednn|onednn-bf16|onednn-f32); %s\n",
              gemm_route_name(gemm_route_setting()), onednn_info().c_str());
  std::printf("  auto: own below %lld rows per chunk or %.0f MFLOP per call, else both timed once per shape and "
              "oneDNN taken when %.0f %% faster (mlaops bench lists the decisions)\n",
              (long long)kGemmRouteRules.min_rows, kGemmRouteRules.min_work / 1e6, 100.0 * (1.0 - kGemmRouteRules.margin));
  print_kernel_rows();
  std::printf("entry points (aclnn<name>GetWorkspaceSize + aclnn<name>; inner operator; what it supports):\n");
  for (const OperatorInfo* op = operator_table(); op->name != nullptr; ++op)
    std::printf("  %-28s %-9s %-12s %-27s %s\n", op->name, op->available ? "available" : "not yet",
                op->deprecated ? "(deprecated)" : "", op->inner, op->features);
  return 0;
}

}  // namespace mlaops::tools

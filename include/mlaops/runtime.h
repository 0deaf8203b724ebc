// Run-time facts and settings of the mlaops C++ API: version, CPU features, the active ISA,
// and the thread count. See docs/runtime.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlaops/export.h"

namespace mlaops {

MLAOPS_API const char* version();

enum class Isa : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false, bmi2 = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512_bf16 = false, avx512_vnni = false, avx_vnni = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;
};

// What the CPU and the OS support (CPUID + XGETBV), detected once.
MLAOPS_API const CpuFeatures& cpu_features();
// The best ISA level the machine supports: kAvx512 needs AVX-512 F/BW/VL/DQ with OS support
// for the zmm state; kAvx2 needs AVX2 + FMA + F16C.
MLAOPS_API Isa detected_isa();
// The ISA the kernels use: the MLAOPS_ISA environment variable (scalar|avx2|avx512, read once)
// or set_isa(), capped at detected_isa().
MLAOPS_API Isa active_isa();
// Forces an ISA level for this process; false (nothing changed) if the machine lacks it.
MLAOPS_API bool set_isa(Isa isa);
// Back to MLAOPS_ISA / the detected level.
MLAOPS_API void reset_isa();
MLAOPS_API const char* isa_name(Isa isa);
// Parses "scalar", "avx2", "avx512"; false on anything else.
MLAOPS_API bool parse_isa(const char* text, Isa* out);

// Threads used by one operator call: set_num_threads(n) if n > 0 was called, else the
// MLAOPS_NUM_THREADS environment variable, else OpenMP's default (OMP_NUM_THREADS or the
// number of CPUs).
MLAOPS_API int num_threads();
MLAOPS_API void set_num_threads(int n);  // n <= 0: back to the default

// The ISA levels this machine can run, scalar first (the list every test iterates).
MLAOPS_API std::vector<Isa> runnable_isas();

// Kernel rows of every family (docs/runtime.md): families list their rows best first, the
// portable row last; a call picks the first row this host can run, the active level allows
// and the kernel override (if it names rows of the family) names.
struct KernelInfo {
  const char* family;
  const char* name;      // <family>_<isa>[_<variant>]
  Isa isa;               // the level the row belongs to
  bool runnable;         // this host has what it needs
  const char* needs;     // what it needs, in words
  uint64_t uses;         // times picked in this process
};
MLAOPS_API std::vector<KernelInfo> kernel_list();
// Restricts each family named in `names` (comma-separated row names, as MLAOPS_KERNEL) to
// those rows, which then run even above the active ISA level; null or "" clears. Returns false,
// changing nothing, when a name is unknown or this host cannot run it.
MLAOPS_API bool set_kernel_override(const char* names);

// GEMM routes (docs/runtime.md "GEMM routes"): the projection GEMMs run on the library's kernels
// ("own") or on oneDNN's matmul (which picks AMX by itself where the CPU has it) over the weights
// converted on each call; decided at plan time per shape, by measurement unless forced.
enum class GemmRouteSetting : int { kAuto = 0, kOwn = 1, kOnednn = 2, kOnednnBf16 = 3, kOnednnF32 = 4 };
// set_gemm_route() if called, else the MLAOPS_GEMM environment variable (read once), else kAuto.
MLAOPS_API GemmRouteSetting gemm_route_setting();
// "auto" | "own" | "onednn" | "onednn-bf16" | "onednn-f32"; null or "": back to MLAOPS_GEMM. False
// (nothing changed) on anything else. Plans made afterwards follow it.
MLAOPS_API bool set_gemm_route(const char* text);
MLAOPS_API bool parse_gemm_route(const char* text, GemmRouteSetting* out);
MLAOPS_API const char* gemm_route_name(GemmRouteSetting s);
// "oneDNN 2.6.3 (avx512_core_bf16)" (the version and the instruction set oneDNN uses here), or
// "not built with oneDNN".
MLAOPS_API std::string onednn_info();
// One decision of this process: a GEMM step of an operator at one shape.
struct GemmRouteInfo {
  std::string op, what;   // "mla_prolog", "x @ W_DQ"
  std::string elem;       // the operands' type: "bf16", "fp16", "int8"
  int64_t m = 0, k = 0, n = 0;  // rows per chunk, depth, columns
  int threads = 1;
  std::string route;      // "own", "onednn-bf16", "onednn-f32", "onednn-u8s8"
  std::string impl;       // oneDNN's implementation when measured ("brg:avx512_core")
  double own_ms = 0, onednn_ms = 0;  // per call, when measured (0: not measured)
  std::string why;
};
MLAOPS_API std::vector<GemmRouteInfo> gemm_route_decisions();

}  // namespace mlaops

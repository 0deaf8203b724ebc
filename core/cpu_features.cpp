// CPU feature detection (CPUID + XGETBV on x86; no features elsewhere) and the active-ISA
// selection of include/mlaops/runtime.h.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mlaops/runtime.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace mlaops {
namespace {

#if defined(__x86_64__) || defined(__i386__)
uint64_t xgetbv0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1;
  const bool avx = (c >> 28) & 1;
  const bool fma = (c >> 12) & 1;
  const bool f16c = (c >> 29) & 1;
  uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool ymm_os = (xcr0 & 0x6) == 0x6;            // SSE + AVX state
  const bool zmm_os = (xcr0 & 0xe6) == 0xe6;          // + opmask, ZMM_Hi256, Hi16_ZMM
  const bool amx_os = (xcr0 & (3ull << 17)) == (3ull << 17);
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  const bool avx2 = (b >> 5) & 1;
  f.bmi2 = (b >> 8) & 1;
  if (avx && ymm_os) {
    f.avx2 = avx2;
    f.fma = fma;
    f.f16c = f16c;
  }
  if (zmm_os) {
    f.avx512f = (b >> 16) & 1;
    f.avx512dq = (b >> 17) & 1;
    f.avx512bw = (b >> 30) & 1;
    f.avx512vl = (b >> 31) & 1;
    f.avx512_vnni = (c >> 11) & 1;
  }
  if (amx_os) {
    f.amx_bf16 = (d >> 22) & 1;
    f.amx_tile = (d >> 24) & 1;
    f.amx_int8 = (d >> 25) & 1;
  }
  unsigned a1, b1, c1, d1;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  if (zmm_os) f.avx512_bf16 = (a1 >> 5) & 1;
  if (ymm_os) f.avx_vnni = (a1 >> 4) & 1;
#endif
  return f;
}

Isa detect_isa(const CpuFeatures& f) {
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx2 && f.fma && f.f16c) return Isa::kAvx512;
  if (f.avx2 && f.fma && f.f16c) return Isa::kAvx2;
  return Isa::kScalar;
}

// -1 = no override; else an Isa value.
std::atomic<int> g_isa_override{-1};

Isa env_isa() {
  static const Isa value = [] {
    const Isa best = detect_isa(cpu_features());
    const char* env = std::getenv("MLAOPS_ISA");
    if (env == nullptr || *env == '\0') return best;
    Isa want;
    if (!parse_isa(env, &want)) {
      std::fprintf(stderr, "mlaops: MLAOPS_ISA=%s is not one of scalar|avx2|avx512; using %s\n", env,
                   isa_name(best));
      return best;
    }
    if (static_cast<int>(want) > static_cast<int>(best)) {
      std::fprintf(stderr, "mlaops: MLAOPS_ISA=%s is not supported by this CPU; using %s\n", env,
                   isa_name(best));
      return best;
    }
    return want;
  }();
  return value;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

Isa detected_isa() { return detect_isa(cpu_features()); }

std::vector<Isa> runnable_isas() {
  std::vector<Isa> out;
  for (int i = 0; i <= static_cast<int>(detected_isa()); ++i) out.push_back(static_cast<Isa>(i));
  return out;
}

Isa active_isa() {
  const int o = g_isa_override.load(std::memory_order_relaxed);
  return o >= 0 ? static_cast<Isa>(o) : env_isa();
}

bool set_isa(Isa isa) {
  if (static_cast<int>(isa) > static_cast<int>(detected_isa()) || static_cast<int>(isa) < 0) return false;
  g_isa_override.store(static_cast<int>(isa), std::memory_order_relaxed);
  return true;
}

void reset_isa() { g_isa_override.store(-1, std::memory_order_relaxed); }

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "unknown";
}

bool parse_isa(const char* text, Isa* out) {
  if (text == nullptr) return false;
  if (std::strcmp(text, "scalar") == 0) { *out = Isa::kScalar; return true; }
  if (std::strcmp(text, "avx2") == 0) { *out = Isa::kAvx2; return true; }
  if (std::strcmp(text, "avx512") == 0) { *out = Isa::kAvx512; return true; }
  return false;
}

}  // namespace mlaops

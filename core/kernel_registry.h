// Kernel registry: every kernel family (GEMM, attention, softmax, convert, dequant, rows, ...) is
// one table of rows, best first and the portable row last. A row has a name of the grammar
// <family>_<isa>[_<variant>] (unique across families), the ISA level it belongs to and a host
// gate (the CPU features it needs). Selection takes the first row that
//   * this host can run (its gate),
//   * the active level allows (MLAOPS_ISA / set_isa: rows above the level are skipped),
//   * the kernel override allows (MLAOPS_KERNEL / set_kernel_override: when it names rows of
//     this family, only those rows; a named row also runs above the active level),
// and the operator's plan may skip further rows for a shape they do not handle (the plan
// records why). A family whose rows run only some calls (the GEMM rows: a panel layout) selects
// with select_where, so the row picked, counted and reported is the one whose code runs. Every
// pick is counted, so tests can prove each row this host can run was exercised (docs/runtime.md,
// docs/testing.md).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "mlaops/runtime.h"

namespace mlaops {

// True when this CPU (and its OS) can run a row.
using HostGate = bool (*)(const CpuFeatures&);
inline bool gate_always(const CpuFeatures&) { return true; }

// Host gates of the x86 rows, each with its `needs` text. Every kernels/cpu/*_avx2* file is
// compiled with AVX2, FMA, F16C and BMI2 and every *_avx512* file with those and AVX-512
// F/BW/VL/DQ/BF16/VNNI (cmake/MlaopsFlags.cmake), so a row of such a file needs at least the
// first set (AVX2) or both sets minus BF16 / VNNI (AVX-512); it needs AVX512_BF16 (vdpbf16ps,
// vcvtne2ps2bf16) or AVX512_VNNI (vpdpbusd) when its code uses those instructions.
inline bool gate_avx2(const CpuFeatures& f) { return f.avx2 && f.fma && f.f16c && f.bmi2; }
inline bool gate_avx512(const CpuFeatures& f) {
  return gate_avx2(f) && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
}
inline bool gate_avx512_bf16(const CpuFeatures& f) { return gate_avx512(f) && f.avx512_bf16; }
inline bool gate_avx512_vnni(const CpuFeatures& f) { return gate_avx512(f) && f.avx512_vnni; }
inline bool gate_avx512_bf16_vnni(const CpuFeatures& f) { return gate_avx512_bf16(f) && f.avx512_vnni; }
inline constexpr char kNeedsAvx2[] = "AVX2 FMA F16C BMI2";
inline constexpr char kNeedsAvx512[] = "AVX2 FMA F16C BMI2 AVX512F/BW/VL/DQ";
inline constexpr char kNeedsAvx512Bf16[] = "AVX2 FMA F16C BMI2 AVX512F/BW/VL/DQ AVX512_BF16";
inline constexpr char kNeedsAvx512Vnni[] = "AVX2 FMA F16C BMI2 AVX512F/BW/VL/DQ AVX512_VNNI";
inline constexpr char kNeedsAvx512Bf16Vnni[] = "AVX2 FMA F16C BMI2 AVX512F/BW/VL/DQ AVX512_BF16 AVX512_VNNI";

struct KernelRowInfo {
  const char* name = "";    // <family>_<isa>[_<variant>]
  Isa isa = Isa::kScalar;   // the level the row belongs to
  HostGate runnable = gate_always;
  const char* needs = "";   // the gate in words, for messages ("AVX512_BF16")
  const char* calls = "";   // the calls it runs, in words, when not every call ("16-column panels")
};

// The untyped part of a family: row descriptions, selection, use counts.
class KernelFamily {
 public:
  static constexpr int kMaxRows = 16;

  const char* name() const { return name_; }
  int size() const { return n_; }
  const KernelRowInfo& info(int i) const { return info_[static_cast<size_t>(i)]; }
  // Whether row i may be picked now for the active level `isa`; on false, *why (optional) says why
  // ("needs AVX512_BF16", "above the active level avx2", "not named by the kernel override").
  bool allowed(int i, Isa isa, std::string* why = nullptr) const;
  // The first allowed row; the portable (last) row when none is.
  int select(Isa isa) const;
  // The first allowed row i for which runs(i) is true (the row runs the call at hand); the
  // portable (last) row when none is.
  template <class Runs>
  int select_where(Isa isa, Runs runs) const {
    for (int i = 0; i < n_; ++i)
      if (allowed(i, isa) && runs(i)) return i;
    return n_ - 1;
  }
  // The row named `name`, or -1.
  int find(const char* name) const;
  void note_use(int i) const { uses_[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed); }
  uint64_t uses(int i) const { return uses_[static_cast<size_t>(i)].load(std::memory_order_relaxed); }

 protected:
  KernelFamily(const char* name, int n) : name_(name), n_(n) {}
  std::array<KernelRowInfo, kMaxRows> info_{};

 private:
  const char* name_;
  int n_;
  mutable std::array<std::atomic<uint64_t>, kMaxRows> uses_{};
};

// A family whose rows carry a value of type T (a function pointer or a pointer to a table of them).
template <class T>
class KernelTable : public KernelFamily {
 public:
  struct Row {
    KernelRowInfo info;
    T value;
  };
  template <size_t N>
  KernelTable(const char* family, const Row (&rows)[N]) : KernelFamily(family, static_cast<int>(N)) {
    static_assert(N >= 1 && N <= kMaxRows, "a family has 1..16 rows");
    for (size_t i = 0; i < N; ++i) {
      info_[i] = rows[i].info;
      values_[i] = rows[i].value;
    }
  }
  const T& value(int i) const { return values_[static_cast<size_t>(i)]; }
  // select + note_use: the value of the row chosen for the active level `isa`.
  const T& pick(Isa isa) const {
    const int i = select(isa);
    note_use(i);
    return values_[static_cast<size_t>(i)];
  }

 private:
  std::array<T, kMaxRows> values_{};
};

// The kernel override (comma-separated row names; empty = none). Set from MLAOPS_KERNEL at the
// first use (a name that is no row of this build, or a row this CPU cannot run, is dropped with
// one warning on stderr), or by set_kernel_override (include/mlaops/runtime.h), which rejects
// such names. The unchecked setter takes any names (the registry's own tests use it).
std::string kernel_override();
void set_kernel_override_unchecked(const std::string& names);
// Whether the override names `row`, and whether it names any row starting with "<family>_".
bool kernel_override_names(const char* row);
bool kernel_override_names_family(const KernelFamily& f);

// Every family of this build (kernels/cpu/families.cpp), for kernel_list, the kernel override,
// `mlaops info` and the kernel coverage test.
const KernelFamily* const* kernel_families(int* count);

}  // namespace mlaops

// Shared validation helpers of the ops/*_check.cpp files. Every failure returns kParamInvalid
// (kParamNullptr for a missing required tensor) with a message
//   "<op>: <param>: <rule id> <rule>; allowed <allowed>, got <actual>"
// so tests can match the rule id and users see both values.
#pragma once

#include <cstdint>
#include <array>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/plan_state.h"
#include "mlaops/plan.h"
#include "mlaops/runtime.h"
#include "core/kernel_registry.h"
#include "kernels/cpu/gemm/gemm.h"
#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

namespace mlaops::check {

// "[2, 3, 4]"
std::string shape_str(const TensorView& t);
// the strides, "[12, 4, 1]"
std::string strides_str(const TensorView& t);
std::string dims_str(std::initializer_list<int64_t> dims);
std::string dtype_set_str(std::initializer_list<DType> set);

Status dtype_in(const char* op, const char* name, const char* rule, const TensorView& t,
                std::initializer_list<DType> allowed);
Status rank_in(const char* op, const char* name, const char* rule, const TensorView& t,
               std::initializer_list<int> allowed);
Status format_in(const char* op, const char* name, const char* rule, const TensorView& t,
                 std::initializer_list<Format> allowed);
// Exact shape; both shapes are printed.
Status shape_eq(const char* op, const char* name, const char* rule, const TensorView& t,
                std::initializer_list<int64_t> expected);
// Row-major dense and element-aligned data pointer; product of dims fits int64 bytes.
Status dense(const char* op, const char* name, const char* rule, const TensorView& t);
// An optional tensor that the current mode forbids / requires.
Status absent(const char* op, const char* name, const char* rule, const TensorView* t, const char* why);
Status present(const char* op, const char* name, const char* rule, const TensorView* t, const char* why);
// Integer value in a set or range.
Status value_in(const char* op, const char* name, const char* rule, int64_t v, std::initializer_list<int64_t> allowed);
Status value_range(const char* op, const char* name, const char* rule, int64_t v, int64_t lo, int64_t hi);
// v in [lo, hi] and a multiple of step (> 0).
Status value_range_step(const char* op, const char* name, const char* rule, int64_t v, int64_t lo, int64_t hi,
                        int64_t step);
// A floating-point attribute the kernels use as float32: finite once narrowed to float32 (NaN,
// +-inf and magnitudes above FLT_MAX fail) and, with non_negative, >= 0. See docs/numerics.md.
Status finite_f32(const char* op, const char* name, const char* rule, double v, bool non_negative = false);

// Outputs must not overlap each other or any input (except the exact in/out identities the
// operator allows, which are simply not listed as outputs). Each entry: name, view; a view's
// bytes are the span its strides reach (its first to its last element).
struct Region {
  const char* name;
  const TensorView* view;
};
Status no_overlap(const char* op, const char* rule, const std::vector<Region>& outputs,
                  const std::vector<Region>& inputs);

// Phase 2: the bytes of the workspace a plan uses, [workspace, workspace + bytes), overlap none of
// `tensors` (every tensor bound to the call: inputs, outputs, caches); `rule` is the operator's
// aliasing rule. Nothing is written before this holds.
Status workspace_disjoint(const char* op, const char* rule, const void* workspace, uint64_t bytes,
                          const std::vector<Region>& tensors);

// Reads a C string attribute with a length bound (never past max_len bytes).
std::string bounded_string(const char* s, size_t max_len, bool* truncated);

// ---- support tables ----
// An operator's support sets are rows of data (ops/<op>_check.h): a row names a parameter, the
// values it may take and the rule id. The same rows drive the checks and the negative tests.

// Short names for the tables' rows.
namespace names {
inline constexpr DType F16 = DType::kFloat16;
inline constexpr DType BF16 = DType::kBFloat16;
inline constexpr DType F32 = DType::kFloat32;
inline constexpr DType I8 = DType::kInt8;
inline constexpr DType I32 = DType::kInt32;
inline constexpr DType I64 = DType::kInt64;
inline constexpr Format ND = Format::kND;
inline constexpr Format NCHW = Format::kNCHW;
inline constexpr Format NZ = Format::kFractalNZ;
}  // namespace names

// A small set of allowed values, usable in constexpr tables (at most kMax values).
template <class T>
struct Allowed {
  static constexpr int kMax = 10;
  constexpr Allowed(std::initializer_list<T> list) {
    for (T x : list) v[n++] = x;
  }
  constexpr bool has(T x) const {
    for (int i = 0; i < n; ++i)
      if (v[i] == x) return true;
    return false;
  }
  constexpr std::span<const T> values() const { return {v, static_cast<size_t>(n)}; }
  T v[kMax]{};
  int n = 0;
};

struct DtypeRow {
  const char* param;
  Allowed<DType> allowed;
  const char* rule;
};
struct FormatRow {
  const char* param;
  Allowed<Format> allowed;
  const char* rule;
};
struct RankRow {
  const char* param;
  Allowed<int> allowed;
  const char* rule;
};
// The expected shape of a tensor, as the operator's dim symbols.
template <class Sym>
struct ShapeRow {
  const char* param;
  Allowed<Sym> dims;
  const char* rule;
};
// The allowed values of a dim symbol: the set, or the range [lo, hi] when the set is empty (and,
// with step > 0, the multiples of step in it).
template <class Sym>
struct ValueRow {
  Sym sym;
  const char* param;  // the tensor the symbol is read from (named in the message)
  const char* rule;   // "MP-07 He"
  Allowed<int64_t> set;
  int64_t lo = 0, hi = 0;
  int64_t step = 0;
};

// A tensor parameter by its name; null = an absent optional tensor.
struct Named {
  const char* name;
  const TensorView* t;
};
// The tensor `name` when it is given (present, with a dtype); else null.
const TensorView* given(std::span<const Named> tensors, const char* name);

// Every row whose tensor is given.
Status check_rows(const char* op, std::span<const DtypeRow> rows, std::span<const Named> tensors);
Status check_rows(const char* op, std::span<const FormatRow> rows, std::span<const Named> tensors);
Status check_rows(const char* op, std::span<const RankRow> rows, std::span<const Named> tensors);

Status dtype_in(const char* op, const char* name, const char* rule, const TensorView& t, std::span<const DType> allowed);
Status shape_eq(const char* op, const char* name, const char* rule, const TensorView& t,
                std::span<const int64_t> expected);
Status value_in(const char* op, const char* name, const char* rule, int64_t v, std::span<const int64_t> allowed);

// Every ShapeRow whose tensor is given; values[sym] is the value of a symbol.
template <class Rows, size_t N>
Status check_shapes(const char* op, const Rows& rows, std::span<const Named> tensors,
                    const std::array<int64_t, N>& values) {
  for (const auto& row : rows) {
    const TensorView* t = given(tensors, row.param);
    if (t == nullptr) continue;
    int64_t dims[kMaxRank];
    for (int i = 0; i < row.dims.n; ++i) dims[i] = values[static_cast<size_t>(row.dims.v[i])];
    MLAOPS_TRY(shape_eq(op, row.param, row.rule, *t, std::span<const int64_t>(dims, static_cast<size_t>(row.dims.n))));
  }
  return kSuccess;
}
// Every ValueRow: its symbol's value is in the set, or in [lo, hi] when the set is empty.
template <class Rows, size_t N>
Status check_values(const char* op, const Rows& rows, const std::array<int64_t, N>& values) {
  for (const auto& row : rows) {
    const int64_t x = values[static_cast<size_t>(row.sym)];
    MLAOPS_TRY(row.set.n > 0  ? value_in(op, row.param, row.rule, x, row.set.values())
               : row.step > 0 ? value_range_step(op, row.param, row.rule, x, row.lo, row.hi, row.step)
                              : value_range(op, row.param, row.rule, x, row.lo, row.hi));
  }
  return kSuccess;
}

// dense() in parts: the byte size fits int64; the view is row-major dense (both phase 1); the
// data pointer is aligned to the element size (every phase: pointers may change).
Status fits(const char* op, const char* name, const char* rule, const TensorView& t);
Status contiguous(const char* op, const char* name, const char* rule, const TensorView& t);
Status aligned(const char* op, const char* name, const char* rule, const TensorView& t);
// The elements a tensor occupies, for the aliasing rule: for a 2-D FRACTAL_NZ view with 4-D
// storage dims, the storage (read densely); otherwise the view itself.
TensorView flat_storage(const TensorView& t);
// Null data with a non-zero extent.
Status has_data(const char* op, const char* name, const char* rule, const TensorView& t);

// ---- phase 2 with a plan ----

// The state of `plan` when it is a valid plan of operator `op` (PlanState::op); else
// kParamNullptr (a default-constructed plan, or one whose planning failed) or kParamInvalid
// (another operator's plan).
template <class State>
Status plan_state(const OpPlan& plan, const char* op, const State** out) {
  const auto* s = dynamic_cast<const State*>(plan.state());
  if (s != nullptr && std::string(s->op) == op) {
    *out = s;
    return kSuccess;
  }
  if (!plan.valid())
    return fail(kParamNullptr, "%s: plan: not a valid plan (default-constructed, or its planning failed)", op);
  return fail(kParamInvalid, "%s: plan: made for %s; allowed a plan of %s", op, plan.op(), op);
}
// The call's signature equals the planned one; else names the first differing field.
Status same_call(const char* op, const char* rule, const CallSignature& planned, const CallSignature& got);
// The caller's workspace holds the plan's bytes.
Status workspace_ok(const char* op, uint64_t needed, const void* workspace, uint64_t workspace_size);

// ---- kernel choice (the operators' plans) ----
// The row a plan chose for one kind of work: the family (core/kernel_registry.h), the row it
// picks at the plan's level, and the kernel of the row's table the work uses ("" for several).
struct KernelPick {
  const char* work = "";  // "x projection [W_DQ | W_DKV_KR]"
  const KernelFamily* family = nullptr;
  int row = 0;
  const char* kernel = "";  // "s8"
  Isa isa = Isa::kScalar;   // the plan's level
};

// The row family `fam` picks at `isa` (counted as used) into *table, and its description.
template <class T>
KernelPick pick_row(const char* work, const KernelTable<const T*>& fam, const char* kernel, Isa isa, const T** table) {
  const int row = fam.select(isa);
  fam.note_use(row);
  *table = fam.value(row);
  return {work, &fam, row, kernel, isa};
}
// The same, keeping one kernel of the row's table: *fn = table->*member.
template <class T, class Fn>
KernelPick pick_kernel(const char* work, const KernelTable<const T*>& fam, const char* kernel, Fn T::*member, Isa isa,
                       Fn* fn) {
  const T* table = nullptr;
  const KernelPick k = pick_row(work, fam, kernel, isa, &table);
  *fn = table->*member;
  return k;
}

// The GEMM row of family `fam` (kernels/cpu/gemm/gemm.h) at `isa` that runs every call in `calls`
// (their panel layouts), counted as used, into *fn, and its description.
template <class Args, class Fn>
KernelPick pick_gemm(const char* work, const KernelTable<kernels::GemmRowOf<Args, Fn>>& fam, Isa isa,
                     std::initializer_list<Args> calls, Fn* fn) {
  const int row = kernels::gemm_select(fam, isa, calls);
  fam.note_use(row);
  *fn = fam.value(row).run;
  return {work, &fam, row, "", isa};
}

// "  <work>: <row> <kernel>" per pick, then per family why the rows before its pick were skipped
// (this CPU lacks a feature, above the active level, not named by the kernel override, or the
// row runs only other calls: "runs only <its calls>").
std::string explain_kernels(std::span<const KernelPick> picks);

}  // namespace mlaops::check

#include "ops/common/check_util.h"

#include <algorithm>
#include <cmath>

#include <cstring>

#include "core/checked_math.h"
#include "core/error.h"

namespace mlaops::check {

std::string shape_str(const TensorView& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i) s += (i ? ", " : "") + std::to_string(t.dims[i]);
  return s + "]";
}

std::string strides_str(const TensorView& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i) s += (i ? ", " : "") + std::to_string(t.strides[i]);
  return s + "]";
}

std::string dims_str(std::initializer_list<int64_t> dims) {
  std::string s = "[";
  bool first = true;
  for (int64_t d : dims) {
    s += (first ? "" : ", ") + std::to_string(d);
    first = false;
  }
  return s + "]";
}

std::string dtype_set_str(std::initializer_list<DType> set) {
  std::string s = "{";
  bool first = true;
  for (DType d : set) {
    s += (first ? "" : ", ") + std::string(dtype_name(d));
    first = false;
  }
  return s + "}";
}

Status dtype_in(const char* op, const char* name, const char* rule, const TensorView& t,
                std::initializer_list<DType> allowed) {
  for (DType d : allowed)
    if (t.dtype == d) return kSuccess;
  return fail(kParamInvalid, "%s: %s: %s dtype; allowed %s, got %s", op, name, rule, dtype_set_str(allowed).c_str(),
              dtype_name(t.dtype));
}

Status rank_in(const char* op, const char* name, const char* rule, const TensorView& t,
               std::initializer_list<int> allowed) {
  std::string set;
  for (int r : allowed) {
    if (t.rank == r) return kSuccess;
    set += (set.empty() ? "" : " or ") + std::to_string(r);
  }
  return fail(kParamInvalid, "%s: %s: %s dim count; allowed %s, got %d (shape %s)", op, name, rule, set.c_str(),
              t.rank, shape_str(t).c_str());
}

Status format_in(const char* op, const char* name, const char* rule, const TensorView& t,
                 std::initializer_list<Format> allowed) {
  std::string set;
  for (Format f : allowed) {
    if (t.format == f) return kSuccess;
    set += (set.empty() ? "" : ", ") + std::string(format_name(f));
  }
  return fail(kParamInvalid, "%s: %s: %s format; allowed {%s}, got %s", op, name, rule, set.c_str(),
              format_name(t.format));
}

Status shape_eq(const char* op, const char* name, const char* rule, const TensorView& t,
                std::initializer_list<int64_t> expected) {
  bool ok = t.rank == static_cast<int>(expected.size());
  int i = 0;
  for (int64_t d : expected) {
    if (ok && t.dims[i] != d) ok = false;
    ++i;
  }
  if (ok) return kSuccess;
  return fail(kParamInvalid, "%s: %s: %s shape; allowed %s, got %s", op, name, rule, dims_str(expected).c_str(),
              shape_str(t).c_str());
}

Status dense(const char* op, const char* name, const char* rule, const TensorView& t) {
  int64_t bytes;
  MLAOPS_CHECK(checked_nbytes(t, &bytes), kParamInvalid, "%s: %s: %s tensor too large (size overflows int64), shape %s",
               op, name, rule, shape_str(t).c_str());
  MLAOPS_CHECK(t.is_contiguous(), kParamInvalid,
               "%s: %s: %s must be contiguous (row-major dense); got shape %s with strides %s", op, name, rule,
               shape_str(t).c_str(), strides_str(t).c_str());
  return aligned(op, name, rule, t);
}

Status absent(const char* op, const char* name, const char* rule, const TensorView* t, const char* why) {
  if (t == nullptr) return kSuccess;
  return fail(kParamInvalid, "%s: %s: %s must be absent (null) %s; allowed null, got a tensor %s", op, name, rule, why,
              shape_str(*t).c_str());
}

Status present(const char* op, const char* name, const char* rule, const TensorView* t, const char* why) {
  if (t != nullptr) return kSuccess;
  return fail(kParamInvalid, "%s: %s: %s is required %s; allowed a tensor, got null", op, name, rule, why);
}

Status value_in(const char* op, const char* name, const char* rule, int64_t v, std::initializer_list<int64_t> allowed) {
  for (int64_t a : allowed)
    if (v == a) return kSuccess;
  std::string set = "{";
  bool first = true;
  for (int64_t a : allowed) {
    set += (first ? "" : ", ") + std::to_string(a);
    first = false;
  }
  return fail(kParamInvalid, "%s: %s: %s value; allowed %s}, got %lld", op, name, rule, set.c_str(), (long long)v);
}

Status value_range(const char* op, const char* name, const char* rule, int64_t v, int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi) return kSuccess;
  return fail(kParamInvalid, "%s: %s: %s value; allowed [%lld, %lld], got %lld", op, name, rule, (long long)lo,
              (long long)hi, (long long)v);
}

Status finite_f32(const char* op, const char* name, const char* rule, double v, bool non_negative) {
  const float f = static_cast<float>(v);  // |v| > FLT_MAX narrows to +-inf
  if (std::isfinite(v) && std::isfinite(f) && (!non_negative || v >= 0)) return kSuccess;
  return fail(kParamInvalid, "%s: %s: %s value; allowed finite in float32%s, got %g", op, name,
              rule, non_negative ? " and >= 0" : "", v);
}

Status value_range_step(const char* op, const char* name, const char* rule, int64_t v, int64_t lo, int64_t hi,
                        int64_t step) {
  if (v >= lo && v <= hi && v % step == 0) return kSuccess;
  return fail(kParamInvalid, "%s: %s: %s value; allowed multiples of %lld in [%lld, %lld], got %lld", op, name,
              rule, (long long)step, (long long)lo, (long long)hi, (long long)v);
}

namespace {
// The bytes the view reaches, from its lowest to its highest element (a dense view: its size).
bool extent(const TensorView& t, uintptr_t* lo, uintptr_t* hi) {
  int64_t bytes;
  if (t.data == nullptr || !checked_nbytes(t, &bytes) || bytes == 0) return false;
  int64_t first = 0, last = 0;  // element offsets from data
  for (int i = 0; i < t.rank; ++i) {
    int64_t step;
    if (!mul_ok(t.dims[i] - 1, t.strides[i], &step) || !add_ok(step < 0 ? first : last, step, step < 0 ? &first : &last))
      return false;
  }
  const int64_t es = std::max<int64_t>(1, dtype_size(t.dtype));
  int64_t span, lo_bytes;
  if (!add_ok(last - first, 1, &span) || !mul_ok(span, es, &span) || !mul_ok(first, es, &lo_bytes)) return false;
  *lo = reinterpret_cast<uintptr_t>(t.data) + static_cast<uintptr_t>(lo_bytes);
  *hi = *lo + static_cast<uintptr_t>(span);
  return true;
}
}  // namespace

Status no_overlap(const char* op, const char* rule, const std::vector<Region>& outputs,
                  const std::vector<Region>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    uintptr_t a0, a1;
    if (outputs[i].view == nullptr || !extent(*outputs[i].view, &a0, &a1)) continue;
    auto test = [&](const Region& r) -> Status {
      uintptr_t b0, b1;
      if (r.view == nullptr || !extent(*r.view, &b0, &b1)) return kSuccess;
      if (a0 < b1 && b0 < a1)
        return fail(kParamInvalid, "%s: %s: %s must not overlap %s; allowed disjoint memory, got bytes [%p, %p) and [%p, %p)",
                    op, outputs[i].name, rule, r.name, reinterpret_cast<void*>(a0), reinterpret_cast<void*>(a1),
                    reinterpret_cast<void*>(b0), reinterpret_cast<void*>(b1));
      return kSuccess;
    };
    for (size_t j = i + 1; j < outputs.size(); ++j) MLAOPS_TRY(test(outputs[j]));
    for (const Region& r : inputs) MLAOPS_TRY(test(r));
  }
  return kSuccess;
}

Status workspace_disjoint(const char* op, const char* rule, const void* workspace, uint64_t bytes,
                          const std::vector<Region>& tensors) {
  if (workspace == nullptr || bytes == 0) return kSuccess;
  const TensorView ws = make_view(const_cast<void*>(workspace), DType::kUInt8, {static_cast<int64_t>(bytes)});
  return no_overlap(op, rule, {{"workspace", &ws}}, tensors);
}

std::string bounded_string(const char* s, size_t max_len, bool* truncated) {
  size_t n = 0;
  while (n < max_len && s[n] != '\0') ++n;
  *truncated = n == max_len;  // no NUL within max_len bytes (nothing past them is read)
  return std::string(s, n);
}


// ---- support tables ----

const TensorView* given(std::span<const Named> tensors, const char* name) {
  for (const Named& n : tensors)
    if (std::strcmp(n.name, name) == 0) return n.t != nullptr && n.t->dtype != DType::kUndefined ? n.t : nullptr;
  return nullptr;
}

namespace {

// "{A, B}" (or "2 or 3" for ranks, as rank_in writes them).
template <class T, class Name>
std::string set_str(std::span<const T> set, const char* sep, Name name) {
  std::string s;
  for (const T& x : set) s += (s.empty() ? "" : sep) + std::string(name(x));
  return s;
}

}  // namespace

Status dtype_in(const char* op, const char* name, const char* rule, const TensorView& t, std::span<const DType> allowed) {
  for (DType d : allowed)
    if (t.dtype == d) return kSuccess;
  return fail(kParamInvalid, "%s: %s: %s dtype; allowed {%s}, got %s", op, name, rule,
              set_str(allowed, ", ", dtype_name).c_str(), dtype_name(t.dtype));
}

Status check_rows(const char* op, std::span<const DtypeRow> rows, std::span<const Named> tensors) {
  for (const DtypeRow& r : rows)
    if (const TensorView* t = given(tensors, r.param)) MLAOPS_TRY(dtype_in(op, r.param, r.rule, *t, r.allowed.values()));
  return kSuccess;
}

Status check_rows(const char* op, std::span<const FormatRow> rows, std::span<const Named> tensors) {
  for (const FormatRow& r : rows) {
    const TensorView* t = given(tensors, r.param);
    if (t == nullptr || r.allowed.has(t->format)) continue;
    return fail(kParamInvalid, "%s: %s: %s format; allowed {%s}, got %s", op, r.param, r.rule,
                set_str(r.allowed.values(), ", ", format_name).c_str(), format_name(t->format));
  }
  return kSuccess;
}

Status check_rows(const char* op, std::span<const RankRow> rows, std::span<const Named> tensors) {
  for (const RankRow& r : rows) {
    const TensorView* t = given(tensors, r.param);
    if (t == nullptr || r.allowed.has(t->rank)) continue;
    return fail(kParamInvalid, "%s: %s: %s dim count; allowed %s, got %d (shape %s)", op, r.param, r.rule,
                set_str(r.allowed.values(), " or ", [](int x) { return std::to_string(x); }).c_str(), t->rank,
                shape_str(*t).c_str());
  }
  return kSuccess;
}

Status shape_eq(const char* op, const char* name, const char* rule, const TensorView& t,
                std::span<const int64_t> expected) {
  bool ok = t.rank == static_cast<int>(expected.size());
  for (int i = 0; ok && i < t.rank; ++i) ok = t.dims[i] == expected[static_cast<size_t>(i)];
  if (ok) return kSuccess;
  return fail(kParamInvalid, "%s: %s: %s shape; allowed [%s], got %s", op, name, rule,
              set_str(expected, ", ", [](int64_t x) { return std::to_string(x); }).c_str(), shape_str(t).c_str());
}

Status value_in(const char* op, const char* name, const char* rule, int64_t v, std::span<const int64_t> allowed) {
  for (int64_t a : allowed)
    if (v == a) return kSuccess;
  return fail(kParamInvalid, "%s: %s: %s value; allowed {%s}, got %lld", op, name, rule,
              set_str(allowed, ", ", [](int64_t x) { return std::to_string(x); }).c_str(), (long long)v);
}

Status fits(const char* op, const char* name, const char* rule, const TensorView& t) {
  int64_t bytes;
  MLAOPS_CHECK(checked_nbytes(t, &bytes), kParamInvalid, "%s: %s: %s tensor too large (size overflows int64), shape %s",
               op, name, rule, shape_str(t).c_str());
  return kSuccess;
}

Status contiguous(const char* op, const char* name, const char* rule, const TensorView& t) {
  MLAOPS_CHECK(t.is_contiguous(), kParamInvalid,
               "%s: %s: %s must be contiguous (row-major dense); got shape %s with strides %s", op, name, rule,
               shape_str(t).c_str(), strides_str(t).c_str());
  return kSuccess;
}

Status aligned(const char* op, const char* name, const char* rule, const TensorView& t) {
  const int64_t es = dtype_size(t.dtype);
  MLAOPS_CHECK(es <= 0 || reinterpret_cast<uintptr_t>(t.data) % static_cast<uintptr_t>(es) == 0, kParamInvalid,
               "%s: %s: %s data pointer must be aligned to the element size (%lld bytes); got %p", op, name, rule,
               (long long)es, t.data);
  return kSuccess;
}

TensorView flat_storage(const TensorView& t) {
  if (t.format == Format::kFractalNZ && t.rank == 2 && t.storage_rank == 4)
    return make_view(t.data, t.dtype, {t.storage_dims[0] * t.storage_dims[1] * t.storage_dims[2] * t.storage_dims[3]});
  return t;  // its elements: the span its strides reach
}

Status has_data(const char* op, const char* name, const char* rule, const TensorView& t) {
  int64_t n = 0;
  if (t.data != nullptr || !checked_numel(t, &n) || n == 0) return kSuccess;
  return fail(kParamInvalid, "%s: %s: %s data pointer; allowed non-null for a tensor of %lld elements, got null", op,
              name, rule, (long long)n);
}

// ---- phase 2 with a plan ----

Status same_call(const char* op, const char* rule, const CallSignature& planned, const CallSignature& got) {
  std::string diff;
  if (planned.matches(got, &diff)) return kSuccess;
  return fail(kParamInvalid, "%s: plan: %s the call must match the planned one (shapes, dtypes, formats, strides, "
              "attributes): %s", op, rule, diff.c_str());
}

Status workspace_ok(const char* op, uint64_t needed, const void* workspace, uint64_t workspace_size) {
  MLAOPS_CHECK(workspace_size >= needed, kParamInvalid, "%s: workspaceSize: allowed >= %llu, got %llu", op,
               (unsigned long long)needed, (unsigned long long)workspace_size);
  MLAOPS_CHECK(workspace != nullptr || needed == 0, kParamNullptr, "%s: workspace: null, but %llu bytes are needed", op,
               (unsigned long long)needed);
  return kSuccess;
}

// ---- kernel choice ----

std::string explain_kernels(std::span<const KernelPick> picks) {
  std::string s;
  for (const KernelPick& k : picks)
    s += std::string("  ") + k.work + ": " + k.family->info(k.row).name + (*k.kernel ? " " : "") + k.kernel + "\n";
  std::vector<const KernelFamily*> seen;
  for (const KernelPick& k : picks) {
    if (std::find(seen.begin(), seen.end(), k.family) != seen.end()) continue;
    seen.push_back(k.family);
    std::string skipped;
    for (int i = 0; i < k.row; ++i) {
      std::string why;
      if (k.family->allowed(i, k.isa, &why)) why = std::string("runs only ") + k.family->info(i).calls;
      skipped += std::string(skipped.empty() ? "" : "; ") + k.family->info(i).name + ": " + why;
    }
    if (!skipped.empty()) s += std::string("  ") + k.family->name() + " rows skipped: " + skipped + "\n";
  }
  return s;
}

}  // namespace mlaops::check

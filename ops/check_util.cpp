#include "ops/check_util.h"

#include <cstring>

#include "core/checked_math.h"
#include "core/error.h"

namespace mlaops::check {

std::string shape_str(const TensorView& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i) s += (i ? ", " : "") + std::to_string(t.dims[i]);
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
  MLAOPS_CHECK(t.is_contiguous(), kParamInvalid, "%s: %s: %s must be contiguous (row-major dense); got strides of %s",
               op, name, rule, shape_str(t).c_str());
  const int64_t es = dtype_size(t.dtype);
  MLAOPS_CHECK(es <= 0 || reinterpret_cast<uintptr_t>(t.data) % static_cast<uintptr_t>(es) == 0, kParamInvalid,
               "%s: %s: %s data pointer must be aligned to the element size (%lld bytes); got %p", op, name, rule,
               (long long)es, t.data);
  return kSuccess;
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

namespace {
bool extent(const TensorView& t, uintptr_t* lo, uintptr_t* hi) {
  int64_t bytes;
  if (t.data == nullptr || !checked_nbytes(t, &bytes) || bytes == 0) return false;
  *lo = reinterpret_cast<uintptr_t>(t.data);
  *hi = *lo + static_cast<uintptr_t>(bytes);
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

std::string bounded_string(const char* s, size_t max_len, bool* truncated) {
  size_t n = 0;
  while (n < max_len && s[n] != '\0') ++n;
  *truncated = n == max_len;  // no NUL within max_len bytes (nothing past them is read)
  return std::string(s, n);
}

}  // namespace mlaops::check

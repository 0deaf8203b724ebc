// Strided inputs read as their logical tensors (auto_contiguous.h).
#include "ops/common/auto_contiguous.h"

#include <cstring>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/workspace.h"
#include "ops/common/check_util.h"

namespace mlaops {
namespace {

using check::shape_str;
using check::strides_str;

// Nothing to copy: empty (or of a size that overflows int64: the operator's size rule refuses
// it), or row-major dense.
bool is_dense(const TensorView& t) {
  int64_t n;
  return !checked_numel(t, &n) || n == 0 || t.is_contiguous();
}

// The source view with its dims merged where the source is contiguous across them (dims of
// size 1 dropped): fewer, longer runs to copy.
struct Runs {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
};

Runs merge_dims(const TensorView& t) {
  Runs r;
  for (int i = 0; i < t.rank; ++i) {
    if (t.dims[i] == 1) continue;
    if (r.rank > 0 && r.strides[r.rank - 1] == t.dims[i] * t.strides[i]) {  // previous dim steps over this one
      r.dims[r.rank - 1] *= t.dims[i];
      r.strides[r.rank - 1] = t.strides[i];
      continue;
    }
    r.dims[r.rank] = t.dims[i];
    r.strides[r.rank] = t.strides[i];
    ++r.rank;
  }
  if (r.rank == 0) {  // a single element
    r.rank = 1;
    r.dims[0] = 1;
    r.strides[0] = 1;
  }
  return r;
}

// Copies rows [row0, row1) of the merged view (a row: the last merged dim) into dst (dense).
template <int kEs>
void copy_rows(const Runs& r, const char* src, char* dst, int64_t row0, int64_t row1) {
  const int last = r.rank - 1;
  const int64_t n = r.dims[last], step = r.strides[last] * kEs;
  for (int64_t row = row0; row < row1; ++row) {
    int64_t off = 0, rem = row;
    for (int i = last - 1; i >= 0; --i) {
      off += (rem % r.dims[i]) * r.strides[i];
      rem /= r.dims[i];
    }
    const char* s = src + off * kEs;
    char* d = dst + row * n * kEs;
    if (r.strides[last] == 1) {
      std::memcpy(d, s, static_cast<size_t>(n * kEs));
    } else {
      for (int64_t j = 0; j < n; ++j) std::memcpy(d + j * kEs, s + j * step, kEs);
    }
  }
}

template <int kEs>
void copy_view(const TensorView& t, void* dst) {
  const Runs r = merge_dims(t);
  int64_t rows = 1;
  for (int i = 0; i + 1 < r.rank; ++i) rows *= r.dims[i];
  const int64_t row_bytes = r.dims[r.rank - 1] * kEs;
  // about 64 KiB per chunk: small tensors are copied inline
  const int64_t min_rows = row_bytes >= 65536 ? 1 : 65536 / row_bytes;
  const char* src = static_cast<const char*>(t.data);
  char* out = static_cast<char*>(dst);
  parallel_for(rows, min_rows, [&](int64_t b, int64_t e) { copy_rows<kEs>(r, src, out, b, e); });
}

void copy_dense(const TensorView& t, void* dst) {
  switch (dtype_size(t.dtype)) {
    case 1: copy_view<1>(t, dst); break;
    case 2: copy_view<2>(t, dst); break;
    case 4: copy_view<4>(t, dst); break;
    case 8: copy_view<8>(t, dst); break;
    default: copy_view<16>(t, dst); break;  // complex128 (stage_plan admits sizes 1..16)
  }
}

bool is_nz(Format f) {
  return f == Format::kFractalNZ || f == Format::kFractalNZ_C0_16 || f == Format::kFractalNZ_C0_32 ||
         f == Format::kFractalNZ_C0_2 || f == Format::kFractalNZ_C0_4 || f == Format::kFractalNZ_C0_8;
}

}  // namespace

void make_dense(TensorView* v) {
  int64_t stride = 1;
  for (int i = v->rank - 1; i >= 0; --i) {
    v->strides[i] = stride;
    // wraps (unsigned) for sizes the operators reject by their checked byte size
    stride = static_cast<int64_t>(static_cast<uint64_t>(stride) * static_cast<uint64_t>(v->dims[i] > 0 ? v->dims[i] : 1));
  }
}

void add_optional_slots(std::span<const OptionalInput> inputs, std::vector<TensorView>* store,
                        std::vector<StageSlot>* slots) {
  for (const OptionalInput& in : inputs) {
    if (*in.field == nullptr) continue;
    MLAOPS_DCHECK(store->size() < store->capacity());  // reserved: no reallocation under the slots
    TensorView* copy = &store->emplace_back(**in.field);
    *in.field = copy;
    slots->push_back({in.name, copy, in.snapshot});
  }
}

std::string StagePlan::explain() const {
  if (entries.empty()) return "";
  std::string s = "inputs copied to dense buffers at the front of the workspace (strided views; index tensors, read "
                  "once) (" + std::to_string(bytes) + " bytes):";
  for (const Entry& e : entries)
    s += " " + e.name + " " + e.shape + " strides " + e.strides + " -> [" + std::to_string(e.offset) + ", " +
         std::to_string(e.offset + e.bytes) + ");";
  return s;
}

Status stage_plan(const char* op, const char* rule, std::span<const StageSlot> slots, StagePlan* plan) {
  StagePlan out;
  WorkspaceLayout layout(op, rule);
  for (size_t i = 0; i < slots.size(); ++i) {
    TensorView& t = *slots[i].view;
    const char* name = slots[i].name.c_str();
    // read in place: a dense view; an empty one (nothing is read); a FRACTAL_NZ tensor, which is
    // read as its storage and checked by the operator's own rules
    const int64_t es = dtype_size(t.dtype);
    const bool copyable = es >= 1 && es <= 16 && (es & (es - 1)) == 0;
    int64_t n;
    if (t.dtype == DType::kUndefined || !checked_numel(t, &n) || n == 0 || is_nz(t.format) ||
        (is_dense(t) && !(slots[i].snapshot && copyable)))
      continue;  // absent; nothing read; read as storage; read in place (a snapshot of another dtype: the
                 // operator's dtype rule refuses it)
    for (int d = 0; d < t.rank; ++d)
      MLAOPS_CHECK(t.strides[d] >= 0, kParamInvalid,
                   "%s: %s: %s strides; allowed >= 0 (a strided view is read as its logical tensor), got %s (shape %s)",
                   op, name, rule, strides_str(t).c_str(), shape_str(t).c_str());
    MLAOPS_CHECK(copyable, kParamInvalid,
                 "%s: %s: %s a strided view of %s; allowed row-major dense strides for this element type, got shape %s "
                 "with strides %s",
                 op, name, rule, dtype_name(t.dtype), shape_str(t).c_str(), strides_str(t).c_str());
    int64_t bytes;
    MLAOPS_CHECK(checked_nbytes(t, &bytes), kParamInvalid, "%s: %s: %s byte size overflows int64, shape %s", op, name,
                 rule, shape_str(t).c_str());
    StagePlan::Entry e;
    e.slot = i;
    e.bytes = bytes;
    e.name = slots[i].name;
    e.shape = shape_str(t);
    e.strides = strides_str(t);
    MLAOPS_TRY(layout.add(bytes, &e.offset));
    out.entries.push_back(std::move(e));
    make_dense(&t);
  }
  out.bytes = layout.total();
  *plan = std::move(out);
  return kSuccess;
}

Status stage_run(const char* op, const char* rule, std::span<const StageSlot> slots, const StagePlan& plan,
                 void* workspace, uint64_t workspace_size) {
  // Every check first: nothing is copied unless every slot can be read.
  size_t next = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    const bool planned = next < plan.entries.size() && plan.entries[next].slot == i;
    if (planned) {
      ++next;
      continue;
    }
    const TensorView& t = *slots[i].view;
    MLAOPS_CHECK(is_dense(t) || is_nz(t.format), kParamInvalid,
                 "%s: %s: %s strides differ from the planned call (no dense buffer was planned for this input); "
                 "allowed the planned row-major dense strides, got shape %s with strides %s",
                 op, slots[i].name.c_str(), rule, shape_str(t).c_str(), strides_str(t).c_str());
  }
  if (plan.entries.empty()) return kSuccess;
  MLAOPS_CHECK(workspace_size >= static_cast<uint64_t>(plan.bytes), kParamInvalid,
               "%s: workspaceSize: %s the dense copies of the strided inputs; allowed >= %lld bytes, got %llu", op, rule,
               (long long)plan.bytes, (unsigned long long)workspace_size);
  MLAOPS_CHECK(workspace != nullptr, kParamNullptr, "%s: workspace: %s null, but %lld bytes are needed", op, rule,
               (long long)plan.bytes);
  for (const StagePlan::Entry& e : plan.entries) {
    TensorView& t = *slots[e.slot].view;
    void* dst = static_cast<char*>(workspace) + e.offset;
    if (!is_dense(t)) copy_dense(t, dst);
    else std::memcpy(dst, t.data, static_cast<size_t>(e.bytes));  // dense now: the same bytes, same layout
    t.data = dst;
    make_dense(&t);
  }
  return kSuccess;
}

}  // namespace mlaops

// Shared pieces of the libFuzzer targets (docs/reliability/fuzz.md):
//  * ExactBuffers: every tensor the targets pass lives in its own heap block of exactly the bytes
//    the tensor describes (its storage dims, else its view extent), so AddressSanitizer reports
//    any read or write outside it; outputs are snapshotted and compared after a rejected call.
//  * mutate_view / hostile_int: the hostile edits of a valid case (dims, rank, dtype, format,
//    strides, storage dims, optional inputs dropped or added, hostile integers).
// The valid cases come from the operator tests' case builders (testkit/*_test_data.h).
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

// The entry point of a target: its own one-line source (tests/fuzz/CMakeLists.txt).
extern "C" const int mlaops_fuzz_entry;

namespace mlaops::fuzz {

// One input of a target: each family's source (fuzz_<family>.cpp) defines it; the libFuzzer entry
// (fuzz_main.cpp, linked into every target) calls it.
void run_one(const uint8_t* data, size_t size);

// Reports a failure of target `who` (its name and entry point) and aborts: libFuzzer keeps the input.
[[noreturn]] inline void fail_target(const std::string& who, const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s %s: %s\n", who.c_str(), what, detail.c_str());
  std::abort();
}

// Fixture i (of kN) of a target, made by `build(i)` (a std::unique_ptr<F>) on first use and kept
// for the process: building one with its float64 reference takes seconds under ASan.
template <class F, int kN, class Build>
F& lazy_fixture(int i, Build&& build) {
  static std::array<std::unique_ptr<F>, kN> made;
  std::unique_ptr<F>& slot = made[static_cast<size_t>(i)];
  if (!slot) slot = build(i);
  return *slot;
}

// Bytes of n elements of dtype dt (sub-byte types packed).
inline int64_t bytes_of(DType dt, int64_t n) {
  switch (dt) {
    case DType::kInt4:
    case DType::kFloat4E2M1:
    case DType::kFloat4E1M2: return (n + 1) / 2;
    case DType::kUInt1: return (n + 7) / 8;
    case DType::kFloat6E3M2:
    case DType::kFloat6E2M3: return (n * 6 + 7) / 8;
    default: return n * std::max<int64_t>(dtype_size(dt), 1);
  }
}

// Elements a view may touch: the storage dims' product when it has storage dims, else the view
// extent (max linear index + 1); -1 when that does not fit in int64 or is negative.
inline int64_t view_elements(const TensorView& v) {
  __int128 n = 1;
  if (v.storage_rank > 0) {
    for (int i = 0; i < v.storage_rank; ++i) {
      if (v.storage_dims[i] < 0) return -1;
      n *= v.storage_dims[i];
      if (n > (static_cast<__int128>(1) << 62)) return -1;
    }
    return static_cast<int64_t>(n);
  }
  __int128 last = 0;
  for (int i = 0; i < v.rank; ++i) {
    if (v.dims[i] < 0 || v.strides[i] < 0) return -1;
    if (v.dims[i] == 0) return 0;
    last += static_cast<__int128>(v.dims[i] - 1) * v.strides[i];
    if (last > (static_cast<__int128>(1) << 62)) return -1;
  }
  return static_cast<int64_t>(last + 1);
}

// The largest block a target allocates for one tensor; a mutation that needs more is not made
// (a too-small block for a huge view would make a correct read look like an overflow).
inline constexpr int64_t kMaxTensorBytes = 8 << 20;

// Owns exact-size heap blocks; a block of 0 bytes is a real (0-byte) allocation, so any access
// through it is reported.
class ExactBuffers {
 public:
  // A block of `bytes` (<= kMaxTensorBytes) filled from `src` (may be shorter: rest zero).
  void* alloc(int64_t bytes, const void* src = nullptr, int64_t src_bytes = 0) {
    auto* p = static_cast<unsigned char*>(std::malloc(static_cast<size_t>(std::max<int64_t>(bytes, 0))));
    if (p == nullptr && bytes > 0) std::abort();
    blocks_.emplace_back(p);
    if (bytes > 0) {
      std::memset(p, 0, static_cast<size_t>(bytes));
      if (src != nullptr) std::memcpy(p, src, static_cast<size_t>(std::min(bytes, src_bytes)));
    }
    return p;
  }
  // Moves the data of a valid view into an exact block (the source holds the whole extent).
  bool rehome(TensorView* v) {
    const int64_t n = view_elements(*v);
    if (n < 0 || n > 8 * kMaxTensorBytes) return false;  // (bytes_of would overflow)
    const int64_t bytes = bytes_of(v->dtype, n);
    if (bytes > kMaxTensorBytes) return false;
    v->data = alloc(bytes, v->data, v->data ? bytes : 0);
    return true;
  }
  // A fresh block for a mutated view, filled with a pattern of `seed`; false (view unchanged
  // data) when the view is too large or malformed.
  bool refill(TensorView* v, uint8_t seed) {
    const int64_t n = view_elements(*v);
    if (n < 0 || n > 8 * kMaxTensorBytes) return false;  // (bytes_of would overflow)
    const int64_t bytes = bytes_of(v->dtype, n);
    if (bytes > kMaxTensorBytes) return false;
    auto* p = static_cast<unsigned char*>(alloc(bytes));
    uint32_t x = 0x9e3779b9u ^ seed;
    for (int64_t i = 0; i < bytes; ++i) {
      x = x * 1664525u + 1013904223u;
      p[i] = seed & 1 ? static_cast<unsigned char>(x >> 24) : static_cast<unsigned char>(seed);
    }
    v->data = p;
    return true;
  }

 private:
  struct Free {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<unsigned char, Free>> blocks_;
};

// The bytes a view covers (for output snapshots).
inline std::vector<unsigned char> snapshot(const TensorView& v) {
  const int64_t n = view_elements(v);
  if (n <= 0 || v.data == nullptr) return {};
  const auto* p = static_cast<const unsigned char*>(v.data);
  return std::vector<unsigned char>(p, p + bytes_of(v.dtype, n));
}

// Every DType / Format value the C API knows, and a few it does not.
inline DType any_dtype(FuzzedDataProvider& in) {
  static const int32_t kValues[] = {0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 27, 29, 30, 33, 34, 35, 36, 37,
                                    38, 39, 40, 41, 5, 99};
  return static_cast<DType>(in.PickValueInArray(kValues));
}
inline Format any_format(FuzzedDataProvider& in) {
  static const int32_t kValues[] = {-1, 0, 1, 2, 3, 4, 29, 30, 32, 33, 35, 47, 50, 51, 2, 2, 29, 29, 1000};
  return static_cast<Format>(in.PickValueInArray(kValues));
}

// A hostile 64-bit integer: edge values, small values, or raw bytes.
inline int64_t hostile_int(FuzzedDataProvider& in) {
  static const int64_t kEdges[] = {0,  1,  -1, 2,  3,  15, 16, 17, 31, 32, 63,  64, 127, 128, 129, 255, 256, 512,
                                   1024, 2048, 65536, 2147483647, -2147483648LL, 4294967296LL,
                                   std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
  switch (in.ConsumeIntegralInRange<int>(0, 2)) {
    case 0: return in.PickValueInArray(kEdges);
    case 1: return in.ConsumeIntegralInRange<int64_t>(-4, 300);
    default: return in.ConsumeIntegral<int64_t>();
  }
}
inline double hostile_double(FuzzedDataProvider& in) {
  static const double kEdges[] = {0.0, -0.0, 1.0, -1.0, 0.5, 1e-30, 1e30, 65504.0, 1e300,
                                  std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                                  std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::denorm_min()};
  return in.ConsumeBool() ? in.PickValueInArray(kEdges) : in.ConsumeFloatingPoint<double>();
}

// One hostile edit of a view; reallocates its block exactly to the new extent (or leaves the
// view as it was when the new extent is too large). Returns false when nothing changed.
// `storage_passed`: false where the caller creates the aclTensor with storage dims = view dims
// (the tensor lists of tests/ops/fia/fia_aclnn_call.h), so the block follows the view extent.
inline bool mutate_view(FuzzedDataProvider& in, TensorView* v, ExactBuffers* bufs, bool storage_passed = true) {
  TensorView m = *v;
  const int kind = in.ConsumeIntegralInRange<int>(0, 7);
  const int i = m.rank > 0 ? in.ConsumeIntegralInRange<int>(0, m.rank - 1) : 0;
  switch (kind) {
    case 0:  // one dim
      if (m.rank == 0) return false;
      m.dims[i] = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(0, 80) : hostile_int(in);
      break;
    case 1:  // rank: drop or append a dim of 1 / n
      if (m.rank > 1 && in.ConsumeBool()) {
        --m.rank;
      } else if (m.rank < kMaxRank) {
        m.dims[m.rank] = in.ConsumeIntegralInRange<int64_t>(0, 3);
        m.strides[m.rank] = 1;
        ++m.rank;
      }
      break;
    case 2: m.dtype = any_dtype(in); break;
    case 3: m.format = any_format(in); break;
    case 4:  // one stride
      if (m.rank == 0) return false;
      m.strides[i] = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(0, 4096) : hostile_int(in);
      break;
    case 5:  // storage dims: none, or the view dims, or a shrunk copy
      if (in.ConsumeBool()) {
        m.storage_rank = 0;
      } else {
        m.storage_rank = m.rank;
        for (int k = 0; k < m.rank; ++k) m.storage_dims[k] = m.dims[k];
        if (m.rank > 0) m.storage_dims[i] = in.ConsumeIntegralInRange<int64_t>(0, std::max<int64_t>(m.dims[i], 1));
      }
      break;
    case 6:  // dims swapped (same bytes, another shape)
      if (m.rank < 2) return false;
      std::swap(m.dims[0], m.dims[m.rank - 1]);
      break;
    default: {  // contiguous strides for the current dims
      int64_t s = 1;
      for (int k = m.rank - 1; k >= 0; --k) {
        m.strides[k] = s;
        s *= std::max<int64_t>(1, std::min<int64_t>(m.dims[k], int64_t{1} << 20));
      }
      break;
    }
  }
  if (!storage_passed) m.storage_rank = 0;
  // aclCreateTensor refuses negative strides/dims itself; keep them so the C API's checks run.
  if (!bufs->refill(&m, in.ConsumeIntegral<uint8_t>())) {
    // Too large to allocate: only pass it when it cannot be a valid tensor anyway.
    if (view_elements(m) >= 0) return false;
    m.data = nullptr;
  }
  *v = m;
  return true;
}

// One hostile edit of tensor argument i of `views` / `passed` (count n): present <-> absent (an
// added one copies the description of donor 0..donors-1 with a fresh block) or mutate_view.
inline void edit_tensor(FuzzedDataProvider& in, TensorView* views, bool* passed, int n, int donors,
                        ExactBuffers* bufs) {
  const int i = in.ConsumeIntegralInRange<int>(0, n - 1);
  if (in.ConsumeIntegralInRange<int>(0, 3) == 0) {
    passed[i] = !passed[i];
    if (passed[i] && views[i].rank == 0) {
      views[i] = views[in.ConsumeIntegralInRange<int>(0, donors - 1)];
      if (!bufs->refill(&views[i], in.ConsumeIntegral<uint8_t>())) passed[i] = false;
    }
  } else if (passed[i]) {
    mutate_view(in, &views[i], bufs);
  }
}

// One hostile value in a copy of an integer index tensor (cacheIndex, slotMapping), so that the
// fixture it came from stays valid.
template <class T>
inline void edit_index(FuzzedDataProvider& in, TensorView* v, bool passed, DType dt, ExactBuffers* bufs) {
  const int64_t n = view_elements(*v);
  if (!passed || n <= 0 || v->dtype != dt) return;
  const int64_t bytes = bytes_of(dt, n);
  v->data = bufs->alloc(bytes, v->data, bytes);
  static_cast<T*>(v->data)[in.ConsumeIntegralInRange<int64_t>(0, n - 1)] = static_cast<T>(hostile_int(in));
}

// Phase 1 (`phase1(&ws_size, &executor)`), then phase 2 (`phase2(workspace, size, executor)`)
// on an exact workspace block. A rejected or failed call must leave `kept()` true; an unedited
// one (edits == 0) must succeed and `mismatches()` (its comparison with the float64 reference)
// must return "". Failures go to `fail(phase, detail)` (which does not return).
template <class P1, class P2, class Kept, class Mismatches, class Fail>
inline void run_phases(int edits, P1&& phase1, P2&& phase2, Kept&& kept, Mismatches&& mismatches, Fail&& fail) {
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  if (phase1(&ws_size, &ex) != ACLNN_SUCCESS) {
    if (edits == 0) fail("phase 1", std::string("an unedited call was rejected: ") + last_error_message());
    if (!kept()) fail("phase 1", "a rejected call changed a cache or output byte");
    return;
  }
  if (ws_size > (uint64_t{1} << 32)) fail("phase 1", "workspace over 4 GiB");
  ExactBuffers ws;
  void* w = ws_size > 0 ? ws.alloc(static_cast<int64_t>(ws_size)) : nullptr;
  if (phase2(w, ws_size, ex) != ACLNN_SUCCESS) {
    if (edits == 0) fail("phase 2", std::string("an unedited call failed: ") + last_error_message());
    if (!kept()) fail("phase 2", "a failed call changed a cache or output byte");
    return;
  }
  if (edits > 0) return;
  const std::string bad = mismatches();
  if (!bad.empty()) fail("compare", bad);
}

}  // namespace mlaops::fuzz

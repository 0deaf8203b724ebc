// Strided twins of operator inputs (ops/common/auto_contiguous.h, docs/c-api.md "Strided inputs"): the
// same logical values in another memory layout, with poison bytes (0xFF: NaN for the float types,
// -1 for the integers) in every gap, so that a test can check that an operator reads a strided
// view as its logical tensor.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "mlaops/tensor_view.h"

namespace mlaops::testing {

enum class TwinLayout {
  kPadded,    // row-major with every dim after the first padded (the last by 3 elements), offset 7
  kReversed,  // the dims' storage order reversed (column-major; a vector: stride 2), offset 5
};

inline const char* twin_name(TwinLayout l) { return l == TwinLayout::kPadded ? "padded" : "reversed"; }

class TwinStore {
 public:
  // Replaces *v (a dense ND view) by a view of a new buffer holding the same values laid out as
  // `layout`. FRACTAL_NZ views, empty views and sub-byte types are left as they are.
  void twin(TensorView* v, TwinLayout layout) {
    const int64_t es = dtype_size(v->dtype);
    if (v->rank == 0 || v->empty() || es <= 0 || v->format == Format::kFractalNZ) return;
    int64_t strides[kMaxRank];
    int64_t offset = 0;
    if (layout == TwinLayout::kPadded) {
      int64_t s = 1;
      for (int i = v->rank - 1; i >= 0; --i) {
        strides[i] = s;
        s *= v->dims[i] + (i == 0 ? 0 : i == v->rank - 1 ? 3 : 1);
      }
      offset = 7;
    } else {
      int64_t s = v->rank == 1 ? 2 : 1;
      for (int i = 0; i < v->rank; ++i) {
        strides[i] = s;
        s *= v->dims[i];
      }
      offset = 5;
    }
    int64_t span = offset + 1;
    for (int i = 0; i < v->rank; ++i) span += (v->dims[i] - 1) * strides[i];
    auto buf = std::make_unique<std::vector<uint64_t>>(static_cast<size_t>((span * es + 7) / 8 + 1), ~uint64_t{0});
    char* base = reinterpret_cast<char*>(buf->data()) + offset * es;
    const char* src = static_cast<const char*>(v->data);
    int64_t idx[kMaxRank] = {};
    const int64_t n = v->numel();
    for (int64_t i = 0; i < n; ++i) {  // element i of the dense source, row-major
      int64_t off = 0;
      for (int d = 0; d < v->rank; ++d) off += idx[d] * strides[d];
      std::memcpy(base + off * es, src + i * es, static_cast<size_t>(es));
      for (int d = v->rank - 1; d >= 0; --d) {
        if (++idx[d] < v->dims[d]) break;
        idx[d] = 0;
      }
    }
    v->data = base;
    for (int i = 0; i < v->rank; ++i) v->strides[i] = strides[i];
    set_storage(v, span - offset);
    buffers_.push_back(std::move(buf));
  }

  // A view of `dims` whose dim `axis` has stride 0, holding `src`'s values with that dim dropped
  // (src: dense, dims without `axis`): what torch's expand() gives.
  TensorView broadcast(const TensorView& src, const std::vector<int64_t>& dims, int axis) {
    const int64_t es = dtype_size(src.dtype);
    auto buf = std::make_unique<std::vector<uint64_t>>(static_cast<size_t>((src.numel() * es + 7) / 8 + 1), 0);
    std::memcpy(buf->data(), src.data, static_cast<size_t>(src.numel() * es));
    TensorView v = make_view(buf->data(), src.dtype, dims.data(), static_cast<int>(dims.size()), src.format);
    int64_t s = 1;
    for (int i = v.rank - 1; i >= 0; --i) {
      if (i == axis) {
        v.strides[i] = 0;
        continue;
      }
      v.strides[i] = s;
      s *= v.dims[i];
    }
    set_storage(&v, src.numel());
    buffers_.push_back(std::move(buf));
    return v;
  }

  // The storage a C caller declares for a strided view (aclCreateTensor's storageDims): one dim
  // of `elements` from the view's data.
  static void set_storage(TensorView* v, int64_t elements) {
    v->storage_rank = 1;
    v->storage_dims[0] = elements;
  }

 private:
  std::vector<std::unique_ptr<std::vector<uint64_t>>> buffers_;
};

}  // namespace mlaops::testing

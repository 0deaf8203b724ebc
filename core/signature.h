// CallSignature: the facts of an operator call a plan depends on (dtypes, formats, ranks, dims
// and strides of every tensor, attributes, host int arrays), as named integers. A plan stores
// the signature of the call it was made for; phase 2 recomputes it from the tensors it is given
// and refuses a mismatch with a message naming the first differing field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlaops/tensor_view.h"

namespace mlaops {

class CallSignature {
 public:
  void add(const char* name, int64_t v) { fields_.push_back({name, v}); }
  void add(const char* name, double v);
  void add(const char* name, const std::string& s);
  // dtype, format, rank, dims and strides (a null pointer is recorded as absent).
  void add(const char* name, const TensorView* t);
  void add(const char* name, const TensorView& t) { add(name, &t); }
  void add(const char* name, const std::vector<int64_t>* a);

  // True when equal; otherwise *diff (optional) names the first differing field with both values.
  bool matches(const CallSignature& other, std::string* diff) const;

 private:
  struct Field {
    const char* name;
    int64_t value;
  };
  std::vector<Field> fields_;
};

}  // namespace mlaops

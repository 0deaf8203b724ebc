// The entry-point table (data, not if-chains): every aclnn entry point mlaops exports, the inner
// operator it runs, whether the vendor marks it deprecated, and what it supports. `mlaops info`
// prints it; tests check it against the headers and the shared library's symbols.
#pragma once

namespace mlaops {

struct OperatorInfo {
  const char* name;          // the entry point without the "aclnn" prefix, e.g. "MlaPrologV2WeightNz"
  const char* entry_points;  // the aclnn functions, comma separated
  const char* header;        // the aclnnop header
  bool available;            // implemented in this build
  const char* inner;         // the operator it runs (docs/ops/)
  bool deprecated;           // the vendor's header marks it deprecated (one WARNING log on first call)
  const char* features;      // what it supports, in a line
};

// The rows, ending with a row whose name is nullptr.
const OperatorInfo* operator_table();

}  // namespace mlaops

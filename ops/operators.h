// The operator table (data, not if-chains): what `mlaops info` lists and what the tests iterate.
#pragma once

namespace mlaops {

struct OperatorInfo {
  const char* name;          // e.g. "MlaPrologV2WeightNz"
  const char* entry_points;  // the aclnn functions, comma separated
  const char* header;        // the aclnnop header
  bool available;            // implemented in this build
};

// The rows, ending with a row whose name is nullptr.
const OperatorInfo* operator_table();

}  // namespace mlaops

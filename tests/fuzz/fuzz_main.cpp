// The libFuzzer entry of every target (tests/fuzz/CMakeLists.txt): one input to the family's
// run_one (fuzz_support.h).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mlaops::fuzz::run_one(data, size);
  return 0;
}

// The heap blocks of a guard-page binary (docs/reliability/guard_and_faults.md). Its global
// operator new / delete (tests/support/guard_heap.cpp) note every live block; GuardScope::place
// (tests/support/guarded_alloc.h) copies a view into a guarded region only when its bytes lie
// inside one block, so the harness reads only memory the test allocated: a fake address (a
// phase-1-only description), a view edited to reach past its buffer, or a buffer on the stack or
// in static storage is left where it is, unread. Outside the guard binaries no block is noted
// and nothing is placed (their guard mode is off anyway).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlaops::testing {

// (Not const void*: GCC takes a const pointer argument as a read of the fresh block's bytes.)
void note_heap_block(void* p, size_t bytes);
void forget_heap_block(void* p);
bool heap_block_holds(const void* p, size_t bytes);  // [p, p + bytes) inside one live block

// Tensors left in place because their bytes are not inside one heap block, since the process
// started (guard_main.cpp prints it with guarded_tensor_count()).
int64_t unowned_tensor_count();

}  // namespace mlaops::testing

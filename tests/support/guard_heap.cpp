// The guard-page binaries' record of the heap blocks the process allocated
// (docs/reliability/guard_and_faults.md): every form of the global operator new / delete is
// replaced here, so each live block's address and size are known to the guard harness
// (note_heap_block / forget_heap_block, tests/support/guard_heap.h). GuardScope::place copies a
// tensor only when its bytes lie inside one such block: the tests' tensors are std::vector /
// HostTensor buffers, and a view that reaches past its block (a negative test's edited dims or
// dtype) or points at no block at all (a phase-1-only description with a fake address) is left
// where it is, never read. Linked into the guard-page binaries only (tests/CMakeLists.txt).
#include <cstdlib>
#include <new>

#include "tests/support/guard_heap.h"

namespace {

void* allocate(std::size_t bytes, std::size_t align) {
  if (bytes == 0) bytes = 1;
  void* p = nullptr;
  if (align <= alignof(std::max_align_t)) {
    p = std::malloc(bytes);
  } else if (posix_memalign(&p, align, bytes) != 0) {
    p = nullptr;
  }
  if (p != nullptr) mlaops::testing::note_heap_block(p, bytes);
  return p;
}

void* allocate_or_throw(std::size_t bytes, std::size_t align) {
  for (;;) {
    if (void* p = allocate(bytes, align)) return p;
    std::new_handler h = std::get_new_handler();
    if (h == nullptr) throw std::bad_alloc();
    h();
  }
}

void release(void* p) {
  if (p == nullptr) return;
  mlaops::testing::forget_heap_block(p);
  std::free(p);
}

constexpr std::size_t kDefault = alignof(std::max_align_t);

}  // namespace

void* operator new(std::size_t n) { return allocate_or_throw(n, kDefault); }
void* operator new[](std::size_t n) { return allocate_or_throw(n, kDefault); }
void* operator new(std::size_t n, std::align_val_t a) { return allocate_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, kDefault); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, kDefault); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}

void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }

#include "tests/support/guarded_alloc.h"
#include "tests/support/guard_heap.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

namespace mlaops::testing {
namespace {

// Memory and streams need a current device on the calling thread, as on CANN (docs/c-api.md,
// ACL-06): every test binary's main thread sets device 0 before its tests, as a vendor program
// does first; threads a test starts set their own.
const bool g_main_thread_device = aclrtSetDevice(0) == ACL_SUCCESS;

std::atomic<int> g_mode{static_cast<int>(GuardMode::kOff)};
std::atomic<int64_t> g_placed{0};
std::atomic<int64_t> g_workspaces{0};
std::atomic<int64_t> g_unowned{0};
thread_local GuardScope* t_scope = nullptr;

size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

// Bits per element: whole-byte dtypes, and the packed 4-bit ones (2 per byte).
int64_t element_bits(DType t) {
  switch (t) {
    case DType::kInt4:
    case DType::kFloat4E2M1:
    case DType::kFloat4E1M2: return 4;
    default: return dtype_size(t) * 8;
  }
}

// The live heap blocks (address -> size) of a guard-page binary, noted by its operator new /
// delete (tests/support/guard_heap.cpp). The map's nodes come from malloc, not operator new (no
// recursion); the object is never destroyed (blocks are freed during static destruction too).
template <class T>
struct MallocAllocator {
  using value_type = T;
  MallocAllocator() = default;
  template <class U>
  MallocAllocator(const MallocAllocator<U>&) {}
  T* allocate(size_t n) {
    if (void* p = std::malloc(n * sizeof(T))) return static_cast<T*>(p);
    std::abort();
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  bool operator==(const MallocAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const MallocAllocator<U>&) const { return false; }
};
struct HeapBlocks {
  std::mutex m;
  std::map<uintptr_t, size_t, std::less<uintptr_t>, MallocAllocator<std::pair<const uintptr_t, size_t>>> live;
};
HeapBlocks& heap_blocks() {
  alignas(HeapBlocks) static unsigned char storage[sizeof(HeapBlocks)];
  static HeapBlocks* const h = new (storage) HeapBlocks;
  return *h;
}

// True when [p, p + n) lies inside one live heap block: bytes the process allocated.
bool inside_heap_block(const char* p, size_t n) {
  HeapBlocks& h = heap_blocks();
  const uintptr_t b = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(h.m);
  auto it = h.live.upper_bound(b);
  if (it == h.live.begin()) return false;
  --it;
  return b - it->first <= it->second && n <= it->second - (b - it->first);
}

// Copies the test's bytes into a writable region, chunk by chunk, writing only the chunks that
// differ (a reused region mostly holds them already).
void refill(char* dst, const char* src, size_t n) {
  constexpr size_t kChunk = size_t{1} << 18;
  for (size_t off = 0; off < n; off += kChunk) {
    const size_t m = std::min(kChunk, n - off);
    if (std::memcmp(dst + off, src + off, m) != 0) std::memcpy(dst + off, src + off, m);
  }
}

// Regions of finished calls, kept for the next call of the same tensors (the table-driven
// negative tests pass the same vendor-sized weights hundreds of times): mapping and filling a
// fresh region each time dominated their run time. A reused region gets the same placement (same
// bytes, mode, alignment) and is refilled from the test's bytes, so a call sees exactly what a
// fresh region would hold.
struct CachedRegion {
  const char* orig;
  size_t bytes, align, residue;
  GuardMode mode;
  std::unique_ptr<GuardedBuffer> buf;
};
constexpr size_t kCacheBytes = size_t{1} << 30;
constexpr size_t kCacheEntries = 64;
thread_local std::vector<CachedRegion> t_cache;  // oldest first
thread_local size_t t_cache_bytes = 0;

std::unique_ptr<GuardedBuffer> take_cached(const char* orig, size_t bytes, GuardMode mode, size_t align, size_t residue) {
  for (size_t i = t_cache.size(); i-- > 0;) {
    CachedRegion& c = t_cache[i];
    if (c.orig == orig && c.bytes == bytes && c.mode == mode && c.align == align && c.residue == residue) {
      std::unique_ptr<GuardedBuffer> buf = std::move(c.buf);
      t_cache_bytes -= bytes;
      t_cache.erase(t_cache.begin() + static_cast<std::ptrdiff_t>(i));
      return buf;
    }
  }
  return nullptr;
}

void put_cached(const char* orig, size_t bytes, GuardMode mode, size_t align, size_t residue,
                std::unique_ptr<GuardedBuffer> buf) {
  if (bytes > kCacheBytes) return;
  t_cache.push_back({orig, bytes, align, residue, mode, std::move(buf)});
  t_cache_bytes += bytes;
  while (t_cache_bytes > kCacheBytes || t_cache.size() > kCacheEntries) {
    t_cache_bytes -= t_cache.front().bytes;
    t_cache.erase(t_cache.begin());
  }
}

}  // namespace

GuardMode guard_mode() { return static_cast<GuardMode>(g_mode.load()); }
void set_guard_mode(GuardMode mode) { g_mode.store(static_cast<int>(mode)); }
const char* guard_mode_name(GuardMode mode) {
  switch (mode) {
    case GuardMode::kOff: return "off";
    case GuardMode::kTrailing: return "trailing";
    case GuardMode::kLeading: return "leading";
  }
  return "?";
}

GuardedBuffer::GuardedBuffer(size_t bytes, GuardMode mode, size_t align, size_t residue) : bytes_(bytes) {
  const size_t page = page_size();
  const size_t body = std::max(page, (bytes + align + page - 1) / page * page);
  map_bytes_ = body + 2 * page;
  map_ = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (map_ == MAP_FAILED) {
    std::perror("GuardedBuffer: mmap");
    std::abort();
  }
  char* base = static_cast<char*>(map_);
  if (mprotect(base, page, PROT_NONE) != 0 || mprotect(base + page + body, page, PROT_NONE) != 0) {
    std::perror("GuardedBuffer: mprotect");
    std::abort();
  }
  if (mode == GuardMode::kLeading) {
    data_ = base + page + residue % align;
  } else {
    data_ = base + page + body - bytes;
    data_ -= (reinterpret_cast<uintptr_t>(data_) - residue) & (align - 1);
  }
}

GuardedBuffer::~GuardedBuffer() {
  if (map_ != nullptr) munmap(map_, map_bytes_);
}

void GuardedBuffer::set_writable(bool writable) {
  const size_t page = page_size();
  if (mprotect(static_cast<char*>(map_) + page, map_bytes_ - 2 * page, writable ? PROT_READ | PROT_WRITE : PROT_READ) != 0) {
    std::perror("GuardedBuffer: mprotect");
    std::abort();
  }
}

int64_t view_extent_bytes(const TensorView& v) {
  const int64_t bits = element_bits(v.dtype);
  if (bits <= 0) return -1;
  int64_t reach = 1;  // elements
  for (int i = 0; i < v.rank; ++i) {
    if (v.dims[i] == 0) {
      reach = 0;
      break;
    }
    if (v.strides[i] < 0) return -1;
    reach += (v.dims[i] - 1) * v.strides[i];
  }
  int64_t storage = 0;
  if (v.storage_rank > 0) {
    storage = 1;
    for (int i = 0; i < v.storage_rank; ++i) storage *= v.storage_dims[i];
  }
  return (std::max(reach, storage) * bits + 7) / 8;
}

GuardScope::GuardScope() : prev_(t_scope) { t_scope = this; }

GuardScope::~GuardScope() {
  for (Group& g : groups_) {
    if (!executing_) break;  // rejected in phase 1: the regions stayed read-only
    const char* now = g.buf->data();
    for (size_t b = 0; b < g.bytes; b += 4096) {  // block compare first: most bytes are unchanged inputs
      const size_t e = std::min(g.bytes, b + 4096);
      if (std::memcmp(now + b, g.initial.data() + b, e - b) == 0) continue;
      for (size_t i = b; i < e; ++i)
        if (now[i] != g.initial[i]) g.orig[i] = now[i];
    }
  }
  for (Group& g : groups_)
    put_cached(g.orig, g.bytes, g.mode, g.align, g.residue, std::move(g.buf));
  for (std::unique_ptr<GuardedBuffer>& w : workspaces_) {
    const size_t bytes = w->size();  // before the move (argument order is unspecified)
    put_cached(nullptr, bytes, guard_mode(), 64, 0, std::move(w));
  }
  t_scope = prev_;
}

bool GuardScope::inside(const void* p) const {
  const char* c = static_cast<const char*>(p);
  for (const Group& g : groups_)
    if (c >= g.buf->data() && c <= g.buf->data() + g.bytes) return true;
  return false;
}

void GuardScope::place(TensorView* const* views, size_t n) {
  const GuardMode mode = guard_mode();
  if (mode == GuardMode::kOff) return;
  struct Item {
    TensorView* v;
    char* begin;
    char* end;
    size_t es;
  };
  std::vector<Item> items;
  for (size_t i = 0; i < n; ++i) {
    TensorView* v = views[i];
    if (v == nullptr || v->data == nullptr || inside(v->data)) continue;
    const int64_t bytes = view_extent_bytes(*v);
    if (bytes < 0) continue;
    char* b = static_cast<char*>(v->data);
    items.push_back({v, b, b + bytes, static_cast<size_t>(std::max<int64_t>(1, dtype_size(v->dtype)))});
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.begin < b.begin; });
  // Overlapping (or identical) ranges share one region, at the same relative offsets.
  for (size_t i = 0; i < items.size();) {
    char* begin = items[i].begin;
    char* end = items[i].end;
    size_t align = items[i].es;
    size_t j = i + 1;
    while (j < items.size() && items[j].begin < end + (items[j].begin == items[j].end ? 1 : 0)) {
      end = std::max(end, items[j].end);
      align = std::max(align, items[j].es);
      ++j;
    }
    const size_t bytes = static_cast<size_t>(end - begin);
    // Only bytes the test allocated are copied: a range outside every live heap block (a fake
    // address of a phase-1-only description, a view edited to reach past its buffer) stays where
    // it is, unread; the call rejects it in phase 1 without reading it.
    if (!inside_heap_block(begin, bytes)) {
      g_unowned.fetch_add(static_cast<int64_t>(j - i));
      i = j;
      continue;
    }
    const size_t residue = reinterpret_cast<uintptr_t>(begin) % align;
    std::unique_ptr<GuardedBuffer> buf = take_cached(begin, bytes, mode, align, residue);
    if (buf != nullptr) {
      buf->set_writable(true);
      refill(buf->data(), begin, bytes);
    } else {
      buf = std::make_unique<GuardedBuffer>(bytes, mode, align, residue);
      std::memcpy(buf->data(), begin, bytes);
    }
    buf->set_writable(executing_);  // read-only until phase 2
    for (size_t k = i; k < j; ++k) {
      items[k].v->data = buf->data() + (items[k].begin - begin);
      g_placed.fetch_add(1);
    }
    groups_.push_back({begin, bytes, std::move(buf), {}, mode, align, residue});
    i = j;
  }
}

void GuardScope::refresh() {
  for (Group& g : groups_) {
    if (!executing_) g.buf->set_writable(true);
    std::memcpy(g.buf->data(), g.orig, g.bytes);  // a block place() found live
    if (executing_) {
      std::memcpy(g.initial.data(), g.buf->data(), g.bytes);
    } else {
      g.buf->set_writable(false);
    }
  }
}

void* GuardScope::execute(size_t bytes) {
  if (!executing_) {
    executing_ = true;
    for (Group& g : groups_) {
      g.buf->set_writable(true);
      g.initial.assign(g.buf->data(), g.buf->data() + g.bytes);
    }
  }
  if (bytes == 0) return nullptr;
  // 64: the alignment of the library's workspace layout (its totals are multiples of it)
  // (a workspace of an earlier call is reused as it is: like aclrtMalloc's, it holds old bytes)
  std::unique_ptr<GuardedBuffer> ws = take_cached(nullptr, bytes, guard_mode(), 64, 0);
  if (ws == nullptr) ws = std::make_unique<GuardedBuffer>(bytes, guard_mode(), 64, 0);
  workspaces_.push_back(std::move(ws));
  g_workspaces.fetch_add(1);
  return workspaces_.back()->data();
}

GuardScope* current_guard_scope() { return t_scope; }

void guard_views(TensorView* const* views, size_t n) {
  if (t_scope != nullptr) t_scope->place(views, n);
}

void guard_refresh() {
  if (t_scope != nullptr) t_scope->refresh();
}

void note_heap_block(void* p, size_t bytes) {
  HeapBlocks& h = heap_blocks();
  std::lock_guard<std::mutex> lock(h.m);
  h.live[reinterpret_cast<uintptr_t>(p)] = bytes;
}

void forget_heap_block(void* p) {
  HeapBlocks& h = heap_blocks();
  std::lock_guard<std::mutex> lock(h.m);
  h.live.erase(reinterpret_cast<uintptr_t>(p));
}

bool heap_block_holds(const void* p, size_t bytes) { return inside_heap_block(static_cast<const char*>(p), bytes); }

int64_t guarded_tensor_count() { return g_placed.load(); }
int64_t unowned_tensor_count() { return g_unowned.load(); }
int64_t guarded_workspace_count() { return g_workspaces.load(); }

}  // namespace mlaops::testing

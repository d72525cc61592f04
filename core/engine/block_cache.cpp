#include "core/engine/block_cache.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <list>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace ctrax::block_cache {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kKeep = false;   // let ASan see every free
#else
constexpr bool kKeep = true;
#endif

// Set once this thread's cache is destroyed: a tensor freed later (a static one at exit) goes
// straight back to the system. Trivially destructible, so it outlives the cache.
thread_local bool t_ended = false;

constexpr std::size_t kSmallClass = 16;

// Blocks up to kIndexed bytes are kept in an array by size (one vector per multiple of 64
// bytes): decoding asks for a few hundred a token, and a hash lookup each was a visible share of
// its fixed cost. Larger ones (rarer, and of more sizes) in a map.
constexpr std::size_t kIndexed = std::size_t{64} << 10;

struct Cache {
  std::array<std::vector<void*>, kIndexed / 64> indexed;              // [bytes / 64 − 1]
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks;   // by size in bytes, above kIndexed
  std::size_t held = 0;
  std::array<std::vector<void*>, kMaxSmall / kSmallClass> small;     // class c: blocks of 16 (c + 1) bytes
  ~Cache() {
    t_ended = true;
    for (auto& [bytes, blocks] : free_blocks)
      for (void* p : blocks) std::free(p);
    for (auto& blocks : indexed)
      for (void* p : blocks) std::free(p);
    for (auto& blocks : small)
      for (void* p : blocks) ::operator delete(p);
  }
};

std::size_t small_class(std::size_t bytes) { return (bytes + kSmallClass - 1) / kSmallClass - 1; }

Cache& cache() {
  thread_local Cache c;
  return c;
}

// The free blocks of this size (at most kMaxBlock); `make`: create the list if there is none yet.
std::vector<void*>* blocks_of(Cache& c, std::size_t bytes, bool make) {
  if (bytes <= kIndexed && bytes % 64 == 0) return bytes == 0 ? nullptr : &c.indexed[bytes / 64 - 1];
  if (make) return &c.free_blocks[bytes];
  const auto it = c.free_blocks.find(bytes);
  return it == c.free_blocks.end() ? nullptr : &it->second;
}

// THE LARGE BLOCKS' POOL (block_cache.hpp, LARGE BLOCKS): the idle blocks in one list, oldest
// first, and by size, so a request takes the smallest that fits and a miss can unmap the blocks
// idle the longest; the blocks in use by address, with their sizes.
struct Large {
  void* block;
  std::size_t bytes;   // its mapped size
};

struct LargePool {
  std::mutex mutex;
  std::list<Large> idle;                                                       // oldest first
  std::map<std::size_t, std::vector<std::list<Large>::iterator>> by_size;     // each oldest first
  std::unordered_map<void*, std::size_t> in_use;
  std::size_t idle_bytes = 0, live_bytes = 0, high_water = 0;

  // The smallest idle block of `bytes` up to four times that (a shorter batch's request takes a
  // longer one's block, its pages already touched), or nullptr.
  void* take(std::size_t bytes) {
    for (auto it = by_size.lower_bound(bytes); it != by_size.end() && it->first <= 4 * bytes; ++it) {
      if (it->second.empty()) continue;
      const auto block = it->second.back();   // the newest of its size: its pages the likeliest cached
      it->second.pop_back();
      Large found = *block;
      idle.erase(block);
      idle_bytes -= found.bytes;
      use(found);
      return found.block;
    }
    return nullptr;
  }
  void use(const Large& b) {
    in_use.emplace(b.block, b.bytes);
    live_bytes += b.bytes;
    high_water = std::max(high_water, live_bytes);
  }
  // Unmaps the oldest idle blocks until `fits()`.
  template <class Fits>
  void shrink_until(Fits fits) {
    while (!idle.empty() && !fits()) {
      const Large oldest = idle.front();
      auto& of_size = by_size[oldest.bytes];
      of_size.erase(of_size.begin());
      idle.pop_front();
      idle_bytes -= oldest.bytes;
      ::munmap(oldest.block, oldest.bytes);
    }
  }
};

LargePool& large_pool() {
  static LargePool* pool = new LargePool;   // never destroyed: tensors freed at exit still return here
  return *pool;
}

// A large request's mapped size: rounded up to a sixteenth of its power of two (at most 6.25%
// more), so the batches of a task whose lengths vary (translation's buckets) meet fewer sizes.
std::size_t large_class(std::size_t bytes) {
  const std::size_t power = std::size_t{1} << (63 - __builtin_clzll(bytes));
  const std::size_t step = std::max<std::size_t>(power / 16, 4096);
  return (bytes + step - 1) / step * step;
}

void* acquire_large(std::size_t bytes) {
  const std::size_t cls = large_class(bytes);
  LargePool& pool = large_pool();
  {
    const std::lock_guard<std::mutex> lock(pool.mutex);
    if (void* p = pool.take(cls)) return p;
    // A miss maps a new block. First the idle blocks that would take the pool past the most its
    // blocks were ever in use at once go back to the system, oldest first.
    const std::size_t high = std::max(pool.high_water, pool.live_bytes + cls);
    pool.shrink_until([&] { return pool.live_bytes + pool.idle_bytes + cls <= high; });
  }
  void* p = ::mmap(nullptr, cls, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const std::lock_guard<std::mutex> lock(pool.mutex);
  pool.use({p, cls});
  return p;
}

void release_large(void* block) {
  LargePool& pool = large_pool();
  const std::lock_guard<std::mutex> lock(pool.mutex);
  const auto it = pool.in_use.find(block);
  if (it == pool.in_use.end()) std::abort();   // not a block acquire_large gave: memory is corrupt
  const std::size_t bytes = it->second;
  pool.in_use.erase(it);
  pool.live_bytes -= bytes;
  pool.idle.push_back({block, bytes});
  pool.by_size[bytes].push_back(std::prev(pool.idle.end()));
  pool.idle_bytes += bytes;
}

}  // namespace

LargeBlocks large_blocks() {
  LargePool& pool = large_pool();
  const std::lock_guard<std::mutex> lock(pool.mutex);
  return {pool.live_bytes, pool.idle_bytes, pool.high_water};
}

void release_idle_large_blocks() {
  LargePool& pool = large_pool();
  const std::lock_guard<std::mutex> lock(pool.mutex);
  pool.shrink_until([] { return false; });
}

void* acquire(std::size_t bytes) {
  if (kKeep && bytes > kMaxBlock) return acquire_large(bytes);
  if (kKeep && bytes <= kMaxBlock) {
    Cache& c = cache();
    std::vector<void*>* blocks = blocks_of(c, bytes, false);
    if (blocks && !blocks->empty()) {
      void* p = blocks->back();
      blocks->pop_back();
      c.held -= bytes;
      return p;
    }
  }
  return std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
}

void release(void* block, std::size_t bytes) {
  if (kKeep && bytes > kMaxBlock) return release_large(block);
  if (kKeep && bytes > 0 && bytes <= kMaxBlock && !t_ended) {
    Cache& c = cache();
    if (c.held + bytes <= kMaxHeld) {
      std::vector<void*>& blocks = *blocks_of(c, bytes, true);
      if (blocks.size() < kMaxPerSize) {
        blocks.push_back(block);
        c.held += bytes;
        return;
      }
    }
  }
  std::free(block);
}

std::size_t held() { return t_ended ? 0 : cache().held; }

void* acquire_small(std::size_t bytes) {
  if (bytes == 0 || bytes > kMaxSmall) return ::operator new(bytes);
  if (kKeep && !t_ended) {
    std::vector<void*>& blocks = cache().small[small_class(bytes)];
    if (!blocks.empty()) {
      void* p = blocks.back();
      blocks.pop_back();
      return p;
    }
  }
  // Always the class's whole size: the block may be freed on another thread and kept there for
  // any request of its class.
  return ::operator new((small_class(bytes) + 1) * kSmallClass);
}

void release_small(void* block, std::size_t bytes) {
  if (kKeep && bytes > 0 && bytes <= kMaxSmall && !t_ended) {
    std::vector<void*>& blocks = cache().small[small_class(bytes)];
    if (blocks.size() < kMaxPerSmall) {
      blocks.push_back(block);
      return;
    }
  }
  ::operator delete(block);
}

}  // namespace ctrax::block_cache

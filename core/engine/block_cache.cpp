#include "core/engine/block_cache.hpp"

#include <array>
#include <cstdlib>
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

}  // namespace

void* acquire(std::size_t bytes) {
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

#include "core/engine/block_cache.hpp"

#include <cstdlib>
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

struct Cache {
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks;   // by size in bytes
  std::size_t held = 0;
  ~Cache() {
    t_ended = true;
    for (auto& [bytes, blocks] : free_blocks)
      for (void* p : blocks) std::free(p);
  }
};

Cache& cache() {
  thread_local Cache c;
  return c;
}

}  // namespace

void* acquire(std::size_t bytes) {
  if (kKeep && bytes <= kMaxBlock) {
    Cache& c = cache();
    auto it = c.free_blocks.find(bytes);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      c.held -= bytes;
      return p;
    }
  }
  return std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
}

void release(void* block, std::size_t bytes) {
  if (kKeep && bytes <= kMaxBlock && !t_ended) {
    Cache& c = cache();
    if (c.held + bytes <= kMaxHeld) {
      std::vector<void*>& blocks = c.free_blocks[bytes];
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

}  // namespace ctrax::block_cache

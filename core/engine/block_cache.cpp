#include "core/engine/block_cache.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <set>
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

constexpr std::size_t round_up(std::size_t n, std::size_t step) { return (n + step - 1) / step * step; }

// Large blocks are cut from arenas of at least kArenaBytes (a larger request maps one of its own,
// rounded up to a sixteenth of kArenaBytes), in whole pages.
constexpr std::size_t kArenaBytes = std::size_t{64} << 20;
constexpr std::size_t kPageBytes = 4096;

// A thread's freed blocks, in an array by size (one vector per multiple of 64 bytes): decoding
// asks for a few hundred a token, and a hash lookup each was a visible share of its fixed cost.
struct Cache {
  std::array<std::vector<void*>, kMaxBlock / 64> indexed;            // [bytes / 64 − 1]
  std::size_t held = 0;
  std::array<std::vector<void*>, kMaxSmall / kSmallClass> small;     // class c: blocks of 16 (c + 1) bytes
  ~Cache() {
    t_ended = true;
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

// THE LARGE BLOCKS' ARENAS (block_cache.hpp, LARGE BLOCKS). Free space is kept as runs, each
// in two indexes: by address (to merge a freed block with the free runs beside it) and by size
// (a request takes the smallest run that holds it, the lowest such first). A run never crosses
// from one arena into the next, even where the system mapped them side by side.
struct Arena {
  std::size_t bytes;   // mapped
  std::size_t live;    // of them in blocks handed out
};

struct LargePool {
  std::mutex mutex;
  std::map<char*, Arena> arenas;                          // by base address
  std::map<char*, std::size_t> runs;                      // free runs: address → bytes
  std::set<std::pair<std::size_t, char*>> runs_by_size;   // the same runs, smallest first
  std::unordered_map<void*, std::size_t> in_use;          // handed-out blocks → bytes
  std::size_t mapped = 0, live_bytes = 0, high_water = 0;

  std::map<char*, Arena>::iterator arena_of(char* p) { return std::prev(arenas.upper_bound(p)); }
  void add_run(char* at, std::size_t bytes) {
    runs.emplace(at, bytes);
    runs_by_size.emplace(bytes, at);
  }
  void remove_run(std::map<char*, std::size_t>::iterator run) {
    runs_by_size.erase({run->second, run->first});
    runs.erase(run);
  }
  // Returns to the system every arena nothing is handed out from (a request none of them held).
  void unmap_free_arenas() {
    for (auto a = arenas.begin(); a != arenas.end();) {
      if (a->second.live != 0) {
        ++a;
        continue;
      }
      remove_run(runs.find(a->first));   // a free arena is one run
      ::munmap(a->first, a->second.bytes);
      mapped -= a->second.bytes;
      a = arenas.erase(a);
    }
  }
  bool map_arena(std::size_t at_least) {
    const std::size_t bytes = std::max(kArenaBytes, round_up(at_least, kArenaBytes / 16));
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    arenas.emplace(static_cast<char*>(p), Arena{bytes, 0});
    add_run(static_cast<char*>(p), bytes);
    mapped += bytes;
    return true;
  }
  void* take(std::size_t bytes) {
    auto best = runs_by_size.lower_bound({bytes, nullptr});
    if (best == runs_by_size.end()) {
      unmap_free_arenas();
      if (!map_arena(bytes)) return nullptr;
      best = runs_by_size.lower_bound({bytes, nullptr});
    }
    char* const at = best->second;
    const std::size_t run_bytes = best->first;
    remove_run(runs.find(at));
    if (run_bytes > bytes) add_run(at + bytes, run_bytes - bytes);
    arena_of(at)->second.live += bytes;
    in_use.emplace(at, bytes);
    live_bytes += bytes;
    high_water = std::max(high_water, live_bytes);
    return at;
  }
  void give_back(void* block) {
    const auto it = in_use.find(block);
    if (it == in_use.end()) std::abort();   // not a block take() gave: memory is corrupt
    char* at = static_cast<char*>(block);
    std::size_t bytes = it->second;
    in_use.erase(it);
    live_bytes -= bytes;
    const auto arena = arena_of(at);
    arena->second.live -= bytes;
    char* const arena_end = arena->first + arena->second.bytes;
    if (at + bytes < arena_end) {
      if (const auto next = runs.find(at + bytes); next != runs.end()) {
        bytes += next->second;
        remove_run(next);
      }
    }
    if (at > arena->first) {
      if (auto prev = runs.lower_bound(at); prev != runs.begin()) {
        --prev;
        if (prev->first + prev->second == at) {
          at = prev->first;
          bytes += prev->second;
          remove_run(prev);
        }
      }
    }
    add_run(at, bytes);
  }
};

LargePool& large_pool() {
  static LargePool* pool = new LargePool;   // never destroyed: tensors freed at exit still return here
  return *pool;
}

}  // namespace

LargeBlocks large_blocks() {
  LargePool& pool = large_pool();
  const std::lock_guard<std::mutex> lock(pool.mutex);
  return {pool.live_bytes, pool.mapped - pool.live_bytes, pool.high_water};
}

void release_idle_large_blocks() {
  LargePool& pool = large_pool();
  const std::lock_guard<std::mutex> lock(pool.mutex);
  pool.unmap_free_arenas();
  // The free runs left lie in arenas still in use: their whole pages go back, their addresses stay.
  for (const auto& [at, bytes] : pool.runs) {
    char* const first = reinterpret_cast<char*>(round_up(reinterpret_cast<std::uintptr_t>(at), kPageBytes));
    char* const end = at + bytes;
    if (end - first >= static_cast<std::ptrdiff_t>(kPageBytes))
      ::madvise(first, static_cast<std::size_t>(end - first) / kPageBytes * kPageBytes, MADV_DONTNEED);
  }
}

void* acquire(std::size_t bytes) {
  bytes = round_up(std::max<std::size_t>(bytes, 1), 64);
  if (kKeep && bytes > kMaxBlock) {
    LargePool& pool = large_pool();
    const std::lock_guard<std::mutex> lock(pool.mutex);
    return pool.take(round_up(bytes, kPageBytes));
  }
  if (kKeep) {
    Cache& c = cache();
    std::vector<void*>& blocks = c.indexed[bytes / 64 - 1];
    if (!blocks.empty()) {
      void* p = blocks.back();
      blocks.pop_back();
      c.held -= bytes;
      return p;
    }
  }
  return std::aligned_alloc(64, bytes);
}

void release(void* block, std::size_t bytes) {
  bytes = round_up(std::max<std::size_t>(bytes, 1), 64);
  if (kKeep && bytes > kMaxBlock) {
    LargePool& pool = large_pool();
    const std::lock_guard<std::mutex> lock(pool.mutex);
    return pool.give_back(block);
  }
  if (kKeep && !t_ended) {
    Cache& c = cache();
    std::vector<void*>& blocks = c.indexed[bytes / 64 - 1];
    if (c.held + bytes <= kMaxHeld && blocks.size() < kMaxPerSize) {
      blocks.push_back(block);
      c.held += bytes;
      return;
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

// ctrax/core/engine/block_cache.hpp — where a tensor's memory comes from: freed blocks first.
//
// Decoding one token runs ~90 ops, each making a small new tensor (a row of 256 or 1,024 floats,
// a few heads' scores), and frees it a moment later. Every tensor is 64-byte aligned
// (tensor.cpp), and glibc serves aligned requests outside its fast per-thread cache: each one
// walks the heap's bins, and each free merges neighbours back (_int_malloc, _int_free,
// malloc_consolidate: a visible share of a decoding step in a profile, docs/11_performance.md). The same sizes come back every token,
// so each thread keeps the blocks it frees, by size, and hands them out again:
//
//   void* p = block_cache::acquire(1024);   // a freed 1,024-byte block if there is one, else new
//   block_cache::release(p, 1024);          // kept for the next acquire(1024) on this thread
//
// Bounds: blocks up to kMaxBlock bytes, at most kMaxPerSize blocks of one size and kMaxHeld bytes
// per thread. A thread's blocks are returned to the system when it ends. Under AddressSanitizer
// nothing is kept, so a use after free is still caught.
//
// LARGE BLOCKS (above kMaxBlock: a training step's activations and gradients) are cut from
// arenas the process maps from the system (64 MB each, or one request's size if larger), and a
// freed one merges with the free space beside it. A request takes the smallest free run that holds
// it; only when none does is an arena mapped, after the arenas nothing is cut from are given back
// (none of them held the request). Why not glibc's heap: there the blocks a step keeps for its
// backward pass, and the small objects that outlive a step, split the free space, and the next
// step's large requests no longer fit in it — the heap grew well past what the step held at once
// (docs/11_performance.md measures it). Why not a pool of whole blocks kept by size: where
// batch shapes vary (translation's length buckets), a pool's idle blocks of one step's sizes wait
// while the next asks for others; runs cut and merged serve any size from pages already touched.
// Why above 64 KB and not 1 MB: a thread's cache keeps blocks of each exact size, and blocks of
// a few hundred KB come in as many sizes as batch shapes, so the caches filled with sizes that
// did not come back.
#pragma once

#include <cstddef>

namespace ctrax::block_cache {

inline constexpr std::size_t kMaxBlock = std::size_t{64} << 10;
inline constexpr std::size_t kMaxPerSize = 64;
inline constexpr std::size_t kMaxHeld = std::size_t{64} << 20;

// A 64-byte aligned block of `bytes` bytes (rounded up to a multiple of 64), or nullptr when
// memory is out.
void* acquire(std::size_t bytes);
// Gives back a block acquire(bytes) returned.
void release(void* block, std::size_t bytes);
// Bytes this thread holds for reuse (tests).
std::size_t held();

// The large blocks: bytes in use, bytes idle (mapped, not in use), and the most ever in use at
// once — each block counted in whole pages.
struct LargeBlocks {
  std::size_t live, idle, high_water;
};
LargeBlocks large_blocks();
// Returns the arenas nothing is cut from to the system, and the pages of the free runs in the
// others (runtime.hpp's release_cached_memory).
void release_idle_large_blocks();

// The same for the small objects every tensor also needs — its handle's shared state and its
// memory's reference count (tensor.cpp, through std::allocate_shared): a token of decoding frees
// a few hundred of them in bursts, more than glibc's per-thread cache keeps of one size (7), so
// most frees took its slow path. Sizes up to kMaxSmall bytes, kept in classes of 16 bytes, at
// most kMaxPerSmall blocks of a class per thread; alignment that of operator new.
inline constexpr std::size_t kMaxSmall = 256;
inline constexpr std::size_t kMaxPerSmall = 4096;
void* acquire_small(std::size_t bytes);
void release_small(void* block, std::size_t bytes);

}  // namespace ctrax::block_cache

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
// Bounds: blocks up to kMaxBlock bytes (larger ones go straight to the system: training's big
// activations reuse warm pages through glibc already, runtime.hpp), at most kMaxPerSize blocks of
// one size and kMaxHeld bytes per thread. A thread's blocks are returned to the system when it ends.
// Under AddressSanitizer nothing is kept, so a use after free is still caught.
#pragma once

#include <cstddef>

namespace ctrax::block_cache {

inline constexpr std::size_t kMaxBlock = std::size_t{1} << 20;
inline constexpr std::size_t kMaxPerSize = 64;
inline constexpr std::size_t kMaxHeld = std::size_t{64} << 20;

// A 64-byte aligned block of `bytes` bytes (a multiple of 64), or nullptr when memory is out.
void* acquire(std::size_t bytes);
// Gives back a block acquire(bytes) returned.
void release(void* block, std::size_t bytes);
// Bytes this thread holds for reuse (tests).
std::size_t held();

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

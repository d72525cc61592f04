#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <vector>
#include <thread>

#include "core/engine/block_cache.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;

#if !defined(__SANITIZE_ADDRESS__)   // under ASan the cache keeps nothing, by design

TEST_CASE("a freed block comes back for the next request of its size, 64-byte aligned") {
  // Counted from after each acquire: the tests before this one may have left blocks of either size.
  void* a = block_cache::acquire(1024);
  REQUIRE(a != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(a) % 64 == 0);
  const std::size_t before = block_cache::held();
  block_cache::release(a, 1024);
  CHECK(block_cache::held() == before + 1024);
  void* b = block_cache::acquire(2048);   // another size: not that block
  CHECK(b != a);
  const std::size_t with_b = block_cache::held();
  CHECK(block_cache::acquire(1024) == a);
  CHECK(block_cache::held() == with_b - 1024);
  block_cache::release(a, 1024);
  block_cache::release(b, 2048);
}

TEST_CASE("blocks above kMaxBlock go to the arenas, and past kMaxPerSize of one size back to the system") {
  const std::size_t before = block_cache::held();
  void* big = block_cache::acquire(block_cache::kMaxBlock + 64);
  block_cache::release(big, block_cache::kMaxBlock + 64);
  CHECK(block_cache::held() == before);   // not this thread's cache
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < block_cache::kMaxPerSize + 5; ++i) blocks.push_back(block_cache::acquire(192));
  for (void* p : blocks) block_cache::release(p, 192);
  CHECK(block_cache::held() <= before + block_cache::kMaxPerSize * 192);
}

TEST_CASE("a size not a multiple of 64 is kept as its multiple of 64") {
  void* a = block_cache::acquire(100);
  block_cache::release(a, 100);
  void* other = block_cache::acquire(192);   // the next multiple up is another list
  CHECK(other != a);
  CHECK(block_cache::acquire(128) == a);
  block_cache::release(a, 128);
  block_cache::release(other, 192);
}

TEST_CASE("small blocks (a tensor's shared objects) come back for any request of their 16-byte class") {
  void* a = block_cache::acquire_small(40);          // class 33–48 bytes
  block_cache::release_small(a, 40);
  void* b = block_cache::acquire_small(20);          // another class: not that block
  CHECK(b != a);
  CHECK(block_cache::acquire_small(48) == a);        // the same class
  block_cache::release_small(a, 48);
  block_cache::release_small(b, 20);
  void* big = block_cache::acquire_small(block_cache::kMaxSmall + 1);   // not kept: straight to the system
  block_cache::release_small(big, block_cache::kMaxSmall + 1);
  void* again = block_cache::acquire_small(block_cache::kMaxSmall + 1);
  CHECK(again != nullptr);
  block_cache::release_small(again, block_cache::kMaxSmall + 1);
}

TEST_CASE("each thread keeps its own blocks; a tensor freed on another thread is fine") {
  Tensor t = Tensor::zeros({16, 16});        // 1,024 bytes from this thread
  std::size_t other_held = 0;
  std::thread([&] {
    t = Tensor();                             // freed there: kept by that thread, freed when it ends
    other_held = block_cache::held();
  }).join();
  CHECK(other_held == 1024);
  const Tensor u = Tensor::ones({16, 16});    // this thread allocates anew and works as ever
  CHECK(u.to_doubles()[255] == 1.0);
}

// The large blocks' tests start from no arena: every large block freed, the idle arenas unmapped.
void start_without_arenas() {
  block_cache::release_idle_large_blocks();
  const block_cache::LargeBlocks start = block_cache::large_blocks();
  REQUIRE_MESSAGE(start.live == 0, "a large block from an earlier test is still in use");
  REQUIRE(start.idle == 0);
}

TEST_CASE("large blocks are cut from an arena in turn; a freed one merges with the free space beside it") {
  start_without_arenas();
  const std::size_t mb = std::size_t{1} << 20;
  char* a = static_cast<char*>(block_cache::acquire(3 * mb));
  REQUIRE(a != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(a) % 4096 == 0);
  a[0] = 1;
  a[3 * mb - 1] = 1;   // all of it is there
  CHECK(block_cache::large_blocks().live == 3 * mb);
  CHECK(block_cache::large_blocks().idle == 61 * mb);   // one 64 MB arena
  char* b = static_cast<char*>(block_cache::acquire(2 * mb));
  char* c = static_cast<char*>(block_cache::acquire(mb + 64));   // counted in whole pages
  CHECK(b == a + 3 * mb);
  CHECK(c == b + 2 * mb);
  CHECK(block_cache::large_blocks().live == 6 * mb + 4096);
  // b's 2 MB, between a and c, is the smallest free run that holds 1.5 MB (the arena's tail is longer).
  block_cache::release(b, 2 * mb);
  void* d = block_cache::acquire(3 * mb / 2);
  CHECK(d == b);
  block_cache::release(d, 3 * mb / 2);
  // Freed, a merges with the run b left: 5 MB from a, where the tail alone would not reach.
  block_cache::release(a, 3 * mb);
  CHECK(block_cache::acquire(5 * mb) == a);
  block_cache::release(a, 5 * mb);
  block_cache::release(c, mb + 64);
  CHECK(block_cache::large_blocks().live == 0);
  CHECK(block_cache::large_blocks().idle == 64 * mb);   // the arena is whole again: one free run
  CHECK(block_cache::acquire(64 * mb) == a);
  block_cache::release(a, 64 * mb);
  CHECK(block_cache::large_blocks().high_water >= 64 * mb);
}

TEST_CASE("a request no free run holds first gives the arenas nothing is cut from back; runs stay in their arena") {
  start_without_arenas();
  const std::size_t mb = std::size_t{1} << 20;
  // Two arenas, each 60 MB in use and 4 MB free; freed, each is one 64 MB run even where the
  // system mapped them side by side.
  void* x = block_cache::acquire(60 * mb);
  void* y = block_cache::acquire(60 * mb);
  block_cache::release(x, 60 * mb);
  block_cache::release(y, 60 * mb);
  CHECK(block_cache::large_blocks().idle == 128 * mb);
  // 100 MB: no run holds it (a run across the two arenas would), so both go back and one arena of
  // 100 MB (a multiple of 4 MB) is mapped.
  void* big = block_cache::acquire(100 * mb);
  REQUIRE(big != nullptr);
  CHECK(block_cache::large_blocks().idle == 0);
  CHECK(block_cache::large_blocks().live == 100 * mb);
  block_cache::release(big, 100 * mb);
}

TEST_CASE("release_idle_large_blocks gives back idle arenas and the pages of free runs in arenas in use") {
  start_without_arenas();
  const std::size_t mb = std::size_t{1} << 20;
  void* kept = block_cache::acquire(2 * mb);   // keeps its arena
  char* b = static_cast<char*>(block_cache::acquire(2 * mb));
  std::fill(b, b + 2 * mb, char{7});
  block_cache::release(b, 2 * mb);
  void* other = block_cache::acquire(100 * mb);   // an arena of its own
  block_cache::release(other, 100 * mb);
  CHECK(block_cache::large_blocks().idle == 162 * mb);
  block_cache::release_idle_large_blocks();
  CHECK(block_cache::large_blocks().idle == 62 * mb);   // the arena in use stays mapped ...
  char* again = static_cast<char*>(block_cache::acquire(2 * mb));
  CHECK(again == b);
  // ... its free pages given back: they read as zeros
  CHECK(std::count(again, again + 2 * mb, char{0}) == static_cast<std::ptrdiff_t>(2 * mb));
  block_cache::release(again, 2 * mb);
  block_cache::release(kept, 2 * mb);
  block_cache::release_idle_large_blocks();
  CHECK(block_cache::large_blocks().idle == 0);
}

TEST_CASE("the arenas under 3,000 random requests and frees: no blocks in use overlap, none is written by another") {
  start_without_arenas();
  std::mt19937_64 rng(81);
  struct Live {
    char* p;
    std::size_t bytes;
    char tag;
  };
  std::vector<Live> live;
  std::map<char*, std::size_t> by_address;   // the blocks in use, to find overlaps
  const auto check_tags = [](const Live& b) {
    CHECK(b.p[0] == b.tag);
    CHECK(b.p[b.bytes / 2] == b.tag);
    CHECK(b.p[b.bytes - 1] == b.tag);
  };
  const auto release_at = [&](std::size_t i) {
    check_tags(live[i]);
    block_cache::release(live[i].p, live[i].bytes);
    by_address.erase(live[i].p);
    live[i] = live.back();
    live.pop_back();
  };
  for (int op = 0; op < 3000; ++op) {
    if (live.empty() || rng() % 100 < 55) {
      // Mostly a step's sizes (64 KB to 8 MB), now and then one past an arena (65 to 100 MB).
      const std::size_t bytes = rng() % 100 == 0 ? (65 + rng() % 36) << 20
                                                 : block_cache::kMaxBlock + 1 + rng() % (std::size_t{8} << 20);
      char* p = static_cast<char*>(block_cache::acquire(bytes));
      REQUIRE(p != nullptr);
      const auto after = by_address.lower_bound(p);
      if (after != by_address.end()) CHECK(p + bytes <= after->first);
      if (after != by_address.begin()) CHECK(std::prev(after)->first + std::prev(after)->second <= p);
      by_address.emplace(p, bytes);
      const char tag = static_cast<char>(1 + op % 120);
      p[0] = p[bytes / 2] = p[bytes - 1] = tag;
      live.push_back({p, bytes, tag});
    } else {
      release_at(rng() % live.size());
    }
  }
  while (!live.empty()) release_at(live.size() - 1);
  CHECK(block_cache::large_blocks().live == 0);
  block_cache::release_idle_large_blocks();
  CHECK(block_cache::large_blocks().idle == 0);   // every arena whole again, and given back
}

TEST_CASE("the arenas serve threads at once: each block to one request") {
  const std::size_t mb = std::size_t{1} << 20;
  std::vector<std::thread> threads;
  std::vector<std::vector<void*>> got(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&got, t, mb] {
      auto& mine = got[static_cast<std::size_t>(t)];
      for (int i = 0; i < 50; ++i) {
        void* p = block_cache::acquire(2 * mb);
        static_cast<char*>(p)[i] = static_cast<char>(t);
        mine.push_back(p);
        if (i % 2 == 1) {
          block_cache::release(mine.back(), 2 * mb);
          mine.pop_back();
        }
      }
    });
  for (auto& th : threads) th.join();
  std::set<void*> distinct;
  std::size_t held = 0;
  for (const auto& g : got) {
    held += g.size();
    distinct.insert(g.begin(), g.end());
  }
  CHECK(distinct.size() == held);   // no block handed out twice
  for (const auto& g : got)
    for (void* p : g) block_cache::release(p, 2 * mb);
}

#endif

TEST_CASE("tensors made from reused blocks hold their own values") {
  for (int round = 0; round < 3; ++round) {
    const Tensor a = Tensor::full({8, 32}, 1.0 + round), b = Tensor::zeros({8, 32});
    CHECK(a.to_doubles()[0] == 1.0 + round);
    CHECK(b.to_doubles()[255] == 0.0);
  }
}

#include <doctest/doctest.h>

#include <cstdint>
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

TEST_CASE("blocks above kMaxBlock go to the large pool, and past kMaxPerSize of one size back to the system") {
  const std::size_t before = block_cache::held();
  void* big = block_cache::acquire(block_cache::kMaxBlock + 64);
  block_cache::release(big, block_cache::kMaxBlock + 64);
  CHECK(block_cache::held() == before);   // not this thread's cache
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < block_cache::kMaxPerSize + 5; ++i) blocks.push_back(block_cache::acquire(192));
  for (void* p : blocks) block_cache::release(p, 192);
  CHECK(block_cache::held() <= before + block_cache::kMaxPerSize * 192);
}

TEST_CASE("sizes past the indexed range (a map) and sizes not a multiple of 64 are kept by their exact size") {
  for (const std::size_t bytes : {std::size_t{128} << 10, std::size_t{100}}) {
    CAPTURE(bytes);
    void* a = block_cache::acquire(bytes);
    block_cache::release(a, bytes);
    void* other = block_cache::acquire(bytes + 64);   // the next size up is another list
    CHECK(other != a);
    CHECK(block_cache::acquire(bytes) == a);
    block_cache::release(a, bytes);
    block_cache::release(other, bytes + 64);
  }
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

TEST_CASE("the large pool gives a freed block to the next request of its class, and stays within its high water") {
  block_cache::release_idle_large_blocks();
  const block_cache::LargeBlocks start = block_cache::large_blocks();
  const std::size_t mb = std::size_t{1} << 20;
  // 3 MB and 64 bytes less are one class (sixteenths of 2 MB: 128 KB steps); 4 MB is another.
  void* a = block_cache::acquire(3 * mb);
  REQUIRE(a != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(a) % 64 == 0);
  static_cast<char*>(a)[3 * mb - 1] = 1;   // all of it is there
  CHECK(block_cache::large_blocks().live == start.live + 3 * mb);
  block_cache::release(a, 3 * mb);
  CHECK(block_cache::large_blocks().idle == 3 * mb);
  CHECK(block_cache::acquire(3 * mb - 64) == a);
  // A request up to 4 times smaller takes an idle block too (a shorter batch, a longer one's block).
  void* b = block_cache::acquire(4 * mb);
  block_cache::release(b, 4 * mb);
  CHECK(block_cache::acquire(2 * mb) == b);
  block_cache::release(b, 2 * mb);
  block_cache::release(a, 3 * mb - 64);
  // Nothing in use: the pool holds at most its high water, idle; a request no idle block fits
  // first unmaps the oldest, so the pool never passes its high water.
  const block_cache::LargeBlocks idle = block_cache::large_blocks();
  CHECK(idle.live == start.live);
  CHECK(idle.idle <= idle.high_water);
  void* big = block_cache::acquire(idle.high_water + mb);   // more than any idle block
  const block_cache::LargeBlocks with_big = block_cache::large_blocks();
  CHECK(with_big.idle + with_big.live <= with_big.high_water);
  CHECK(with_big.idle < idle.idle);   // blocks went back to the system to make room
  block_cache::release(big, idle.high_water + mb);
  block_cache::release_idle_large_blocks();
  CHECK(block_cache::large_blocks().idle == 0);
}

TEST_CASE("the large pool serves threads at once: each block to one request") {
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

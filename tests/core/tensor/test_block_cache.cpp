#include <doctest/doctest.h>

#include <cstdint>
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

TEST_CASE("blocks above kMaxBlock, and past kMaxPerSize of one size, go back to the system") {
  const std::size_t before = block_cache::held();
  void* big = block_cache::acquire(block_cache::kMaxBlock + 64);
  block_cache::release(big, block_cache::kMaxBlock + 64);
  CHECK(block_cache::held() == before);
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

#endif

TEST_CASE("tensors made from reused blocks hold their own values") {
  for (int round = 0; round < 3; ++round) {
    const Tensor a = Tensor::full({8, 32}, 1.0 + round), b = Tensor::zeros({8, 32});
    CHECK(a.to_doubles()[0] == 1.0 + round);
    CHECK(b.to_doubles()[255] == 0.0);
  }
}

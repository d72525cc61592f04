#include <doctest/doctest.h>

#include <atomic>
#include <cfloat>
#include <cstdlib>
#include <string>
#include <stdexcept>
#include <vector>

#include "core/tensor/ops.hpp"
#include "core/tensor/runtime.hpp"
#include "core/engine/block_cache.hpp"
#include "core/engine/parallel.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using ctrax::testing::expect_close;

namespace {

// Restores the thread count a test changed.
struct Threads {
  int before = num_threads();
  explicit Threads(int n) { set_num_threads(n); }
  ~Threads() { set_num_threads(before); }
};

// Which threads ran a parallel_team's body, and with what team size.
std::vector<int> team_members(int& team_size) {
  std::vector<std::atomic<int>> calls(kMaxThreads);
  std::atomic<int> size{0};
  parallel_team([&](int t, int n) {
    calls[static_cast<std::size_t>(t)].fetch_add(1);
    size.store(n);
  });
  team_size = size.load();
  std::vector<int> out;
  for (int t = 0; t < team_size; ++t) out.push_back(calls[static_cast<std::size_t>(t)].load());
  return out;
}

}  // namespace

TEST_CASE("parallel_team runs the body once on each thread, inside one region or not") {
  for (int threads : {1, 2, 3}) {
    CAPTURE(threads);
    Threads set(threads);
    int size = 0;
    const std::vector<int> members = team_members(size);
    CHECK(members == std::vector<int>(static_cast<std::size_t>(threads), 1));
    CHECK(size == threads);
    in_one_region([&] {
      for (int repeat = 0; repeat < 100; ++repeat) {   // many jobs through one team
        int inner = 0;
        const std::vector<int> inner_members = team_members(inner);
        CHECK(inner_members == std::vector<int>(static_cast<std::size_t>(threads), 1));
        CHECK(inner == threads);
      }
    });
  }
}

TEST_CASE("TeamPhases: no thread passes a meeting before all arrive, meeting after meeting; abandoned, none waits") {
  for (int threads : {2, 3}) {
    CAPTURE(threads);
    Threads set(threads);
    in_one_region([&] {
      TeamPhases phases(threads);
      std::vector<std::atomic<int>> written(static_cast<std::size_t>(threads));
      std::atomic<int> wrong{0};
      parallel_team([&](int t, int n) {
        for (int round = 1; round <= 200; ++round) {
          written[static_cast<std::size_t>(t)].store(round, std::memory_order_relaxed);
          phases.arrive_and_wait(t);
          for (int u = 0; u < n; ++u)   // every thread's write of this round is seen
            if (written[static_cast<std::size_t>(u)].load(std::memory_order_relaxed) < round) wrong.fetch_add(1);
          phases.arrive_and_wait(t);   // nobody writes the next round before all have read
        }
      });
      CHECK(wrong.load() == 0);
      // A thread that gives up: the others' waits return false instead of waiting for it.
      TeamPhases abandoned(threads);
      std::atomic<int> returned_false{0};
      parallel_team([&](int t, int) {
        if (t == 0) {
          abandoned.abandon();
          return;
        }
        if (!abandoned.arrive_and_wait(t)) returned_false.fetch_add(1);
      });
      CHECK(returned_false.load() == threads - 1);
    });
  }
}

TEST_CASE("parallel_chunks covers [0, n) exactly once, inside one region or not") {
  Threads set(2);
  for (std::int64_t n : {1, 2, 7, 1000}) {
    CAPTURE(n);
    const auto cover = [n] {
      std::vector<int> seen(static_cast<std::size_t>(n), 0);
      parallel_chunks(n, true, [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) ++seen[static_cast<std::size_t>(i)];
      });
      return seen;
    };
    CHECK(cover() == std::vector<int>(static_cast<std::size_t>(n), 1));
    std::vector<int> inside;
    in_one_region([&] { inside = cover(); });
    CHECK(inside == std::vector<int>(static_cast<std::size_t>(n), 1));
  }
}

TEST_CASE("kernels read and write subnormals as zero, and leave the thread's floating-point flags as they were") {
  // 1e-20 · 1e-20 = 1e-40 is below FLT_MIN ≈ 1.2e-38: a subnormal in IEEE arithmetic, 0 in ctrax's
  // kernels (flush_denormals.hpp) — whether the product runs on one thread, on a team, or in one region.
  volatile float tiny = 1e-20f;
  REQUIRE(tiny * tiny > 0.0f);   // this thread computes IEEE before and after
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    Threads set(threads);
    const Tensor a = Tensor::full({4096}, 1e-20), b = Tensor::full({4096}, 1e-20);
    const auto all_zero = [](const Tensor& t) {
      for (std::int64_t i = 0; i < t.numel(); ++i)
        if (t.data<float>()[i] != 0.0f) return false;
      return true;
    };
    CHECK(all_zero(a * b));
    Tensor inside;
    in_one_region([&] { inside = a * b; });
    CHECK(all_zero(inside));
    // A subnormal input is read as 0: FLT_MIN / 4 + 1 is exactly 1, and FLT_MIN / 4 · 2 is 0.
    const Tensor sub = Tensor::full({4096}, FLT_MIN / 4);
    CHECK(all_zero(sub * 2.0));
    CHECK(tiny * tiny > 0.0f);
  }
#ifdef CTRAX_HAS_MXCSR
  const unsigned before = _mm_getcsr();
  (void)(Tensor::full({4096}, 1.0) * 2.0);
  CHECK(_mm_getcsr() == before);
#endif
}

TEST_CASE("a team nested in a team's body runs on its own thread alone") {
  Threads set(2);
  const auto nested_sizes = [] {
    std::vector<std::atomic<int>> sizes(2);
    parallel_team([&](int t, int) {
      parallel_team([&](int inner_t, int inner_n) {
        CHECK(inner_t == 0);
        sizes[static_cast<std::size_t>(t)].store(inner_n);
      });
    });
    return std::vector<int>{sizes[0].load(), sizes[1].load()};
  };
  CHECK(nested_sizes() == std::vector<int>{1, 1});
  std::vector<int> inside;
  in_one_region([&] {
    inside = nested_sizes();
    in_one_region([&] { CHECK(nested_sizes() == std::vector<int>{1, 1}); });   // nested region: inline
  });
  CHECK(inside == std::vector<int>{1, 1});
}

TEST_CASE("an exception in one region's work or in a body reaches the caller, and the team closes") {
  Threads set(2);
  CHECK_THROWS_WITH_AS(in_one_region([] { throw std::runtime_error("work failed"); }), "work failed",
                       std::runtime_error);
  for (int thrower : {0, 1}) {   // the calling thread's share, then a waiting thread's
    CAPTURE(thrower);
    CHECK_THROWS_WITH_AS(in_one_region([&] {
                           parallel_team([&](int t, int) {
                             if (t == thrower) throw std::invalid_argument("body failed");
                           });
                         }),
                         "body failed", std::invalid_argument);
    int size = 0;   // the threads are free again: a new team gets them all
    CHECK(team_members(size) == std::vector<int>{1, 1});
  }
}

TEST_CASE("products and attention inside one region equal those outside it, bit for bit") {
  for (int threads : {2, 3}) {
    CAPTURE(threads);
    Threads set(threads);
    const auto randn = [](const Shape& shape, std::uint64_t seed) {   // float32: the decoding paths
      return testing::randn(shape, seed).to(DType::float32);
    };
    const Tensor x1 = randn({1, 300}, 1), x4 = randn({4, 300}, 2), w = randn({300, 257}, 3), b = randn({257}, 4);
    const Tensor big = randn({300, 300}, 5);
    const Tensor q = randn({4, 3, 64}, 6), k = randn({4, 40, 64}, 7), v = randn({4, 40, 64}, 8);
    const auto compute = [&] {
      return std::vector<Tensor>{linear(x1, w, b), matmul(x4, w), matmul(big, w), matmul(x1, w, false, false),
                                 layer_norm(big, randn({300}, 9), randn({300}, 10)),
                                 attention(q, k, v, Tensor())};
    };
    const std::vector<Tensor> outside = compute();
    std::vector<Tensor> inside;
    in_one_region([&] { inside = compute(); });
    REQUIRE(inside.size() == outside.size());
    for (std::size_t i = 0; i < inside.size(); ++i) {
      CAPTURE(i);
      expect_close(inside[i], outside[i], 0.0);
    }
  }
}

TEST_CASE("CTRAX_NUM_THREADS: a count in decimal digits, or refused naming the variable") {
  const char* before = std::getenv("CTRAX_NUM_THREADS");
  const std::string saved = before ? before : "";
  ::setenv("CTRAX_NUM_THREADS", "3", 1);
  CHECK(ctrax::threads_from_environment() == 3);
  ::setenv("CTRAX_NUM_THREADS", "007", 1);
  CHECK(ctrax::threads_from_environment() == 7);
  for (const char* bad : {"abc", "-1", "0x4", "1e3", "0", "2000", " 2"}) {
    ::setenv("CTRAX_NUM_THREADS", bad, 1);
    CHECK_THROWS_WITH_AS(ctrax::threads_from_environment(),
                         doctest::Contains("CTRAX_NUM_THREADS: expected a whole number from 1 to 1024"), std::invalid_argument);
  }
  ::unsetenv("CTRAX_NUM_THREADS");
  CHECK(ctrax::threads_from_environment() == 0);
  if (before) ::setenv("CTRAX_NUM_THREADS", saved.c_str(), 1);
}

#if !defined(__SANITIZE_ADDRESS__)   // under ASan no block is kept
TEST_CASE("release_cached_memory gives the idle large blocks back; a tensor made after is whole") {
  { const Tensor big = Tensor::zeros({1 << 20}); }   // 4 MB: cut from an arena, then idle there
  CHECK(block_cache::large_blocks().idle >= std::size_t{4} << 20);
  release_cached_memory();
  CHECK(block_cache::large_blocks().idle == 0);
  const Tensor again = Tensor::full({1 << 20}, 2.0);
  CHECK(again.to_doubles()[(1 << 20) - 1] == 2.0);
}
#endif

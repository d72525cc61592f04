#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>

#include "core/engine/parallel.hpp"
#include "core/tensor/internal/meta_bytes.hpp"
#include "core/tensor/internal/tensor_bytes.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;

TEST_CASE("literal tensors take their dtype from the literal") {
  CHECK(tensor({1.f, 2.f}, {2}).dtype() == DType::float32);
  CHECK(tensor({1.0, 2.0}, {2}).dtype() == DType::float64);
  CHECK(tensor({1, 2}, {2}).dtype() == DType::int32);
  CHECK(tensor({true, false}, {2}).dtype() == DType::bool_);
}

TEST_CASE("shape, rank, dim and numel") {
  const Tensor t = Tensor::zeros({2, 3, 4});
  CHECK(t.rank() == 3);
  CHECK(t.dim(-1) == 4);
  CHECK(t.numel() == 24);
  CHECK(t.signature() == "f32[2,3,4]");
  CHECK(Tensor::scalar(5).numel() == 1);
  CHECK(Tensor::scalar(5).item() == 5);
}

TEST_CASE("factories fill as promised") {
  expect_tensor(Tensor::full({2}, 7), {2}, {7, 7});
  expect_tensor(Tensor::ones({3}, DType::int32), {3}, {1, 1, 1});
  expect_tensor(Tensor::arange(4), {4}, {0, 1, 2, 3});
  CHECK(Tensor::arange(4).dtype() == DType::int32);
}

TEST_CASE("copies share memory; clone does not") {
  Tensor a = tensor({1.f, 2.f}, {2});
  Tensor alias = a;
  Tensor deep = a.clone();
  a.data<float>()[0] = 9;
  CHECK(alias.to_doubles()[0] == 9);
  CHECK(deep.to_doubles()[0] == 1);
}

TEST_CASE("data<T> with the wrong type throws") {
  Tensor a = tensor({1.f}, {1});
  CHECK_THROWS_WITH_AS(a.data<double>(), "data<float64>() on a float32 tensor", std::invalid_argument);
}

TEST_CASE("from_doubles checks the element count") {
  CHECK_THROWS_AS(Tensor::from_doubles({1, 2, 3}, {2, 2}), std::invalid_argument);
}

TEST_CASE("to converts dtype") {
  expect_tensor(tensor({1.7f, -2.2f}, {2}).to(DType::int32), {2}, {1, -2});
  CHECK(tensor({1, 2}, {2}).to(DType::float64).dtype() == DType::float64);
}

TEST_CASE("meta tensors have a shape but no data") {
  Tensor m = Tensor::meta({2, 3});
  CHECK(m.is_meta());
  CHECK(m.signature() == "f32[2,3]?");
  CHECK_THROWS_AS(m.data<float>(), std::logic_error);
}

TEST_CASE("MetaBytes counts what a run on meta tensors would have allocated, in its innermost scope") {
  ctrax::internal::MetaBytes outer;
  const Tensor a = Tensor::meta({2, 3});                      // 24 bytes
  {
    ctrax::internal::MetaBytes inner;
    const Tensor b = a + a;                                   // an op's meta result: 24 more, the inner's
    (void)Tensor::meta({4}, DType::float64);                  // 32
    CHECK(inner.bytes() == 56);
    CHECK(inner.largest_bytes() == 32);                       // and the largest, by shape and dtype
    CHECK(inner.largest().signature() == "f64[4]?");
  }
  (void)Tensor::zeros({1000});                                // real tensors are not counted
  CHECK(outer.bytes() == 24);
  CHECK(outer.largest().signature() == "f32[2,3]?");
}

TEST_CASE("TensorPeak measures the most tensor memory held at once, and live_tensor_bytes what is held now") {
  const std::int64_t before = ctrax::internal::live_tensor_bytes();
  Tensor kept = Tensor::zeros({1000});                         // 4,000 bytes, held in 4,032 (64-byte blocks)
  CHECK(ctrax::internal::live_tensor_bytes() - before == 4032);
  const ctrax::internal::TensorPeak peak;
  CHECK(peak.above_start() == 0);
  {
    const Tensor a = Tensor::zeros({1 << 16});                 // 262,144 bytes
    const Tensor b = a + a;                                    // and again: 524,288 at once
  }
  (void)Tensor::zeros({1 << 16});                              // one of them, after both went
  CHECK(peak.above_start() == 524288);
  const Tensor view = reshape(kept, {10, 100});                // a view holds no memory of its own
  CHECK(ctrax::internal::live_tensor_bytes() - before == 4032);
  kept = Tensor();                                             // and keeps its storage held
  CHECK(ctrax::internal::live_tensor_bytes() - before == 4032);
  (void)Tensor::meta({1 << 20});                               // nor does a meta tensor
  CHECK(ctrax::internal::live_tensor_bytes() - before == 4032);
}

TEST_CASE("a cgroup's memory limit reads as bytes, or as none") {
  CHECK(ctrax::internal::cgroup_limit_bytes("8589934592") == 8589934592.0);
  CHECK(ctrax::internal::cgroup_limit_bytes("8589934592\n") == 8589934592.0);
  CHECK(ctrax::internal::cgroup_limit_bytes("9223372036854771712") > 9e18);   // v1's "no limit": never the lower
  CHECK(ctrax::internal::cgroup_limit_bytes("max") == 0);                      // v2's "no limit"
  CHECK(ctrax::internal::cgroup_limit_bytes("") == 0);
  CHECK(ctrax::internal::cgroup_limit_bytes("12abc") == 0);
  CHECK(ctrax::internal::cgroup_limit_bytes("-1") == 0);
  CHECK(ctrax::internal::machine_memory_bytes() > 0);
}

TEST_CASE("printing shows values and signature") {
  CHECK(tensor({1, 2, 3, 4}, {2, 2}).to_string() == "Tensor([[1, 2],\n        [3, 4]], i32[2,2])");
  CHECK(tensor({true, false}, {2}).to_string() == "Tensor([true, false], bool[2])");
  CHECK(Tensor::arange(10).to_string(4) == "Tensor([0, 1, ..., 8, 9], i32[10])");
}

TEST_CASE("broadcast_shapes follows NumPy") {
  CHECK(broadcast_shapes({2, 3, 4}, {4}) == Shape{2, 3, 4});
  CHECK(broadcast_shapes({2, 1, 1, 5}, {1, 5, 5}) == Shape{2, 1, 5, 5});
  CHECK_THROWS_WITH_AS(broadcast_shapes({2, 3}, {4}),
                       "shapes (2, 3) and (4,) cannot be broadcast together", std::invalid_argument);
}

TEST_CASE("an impossible shape is a clear error, never an overflow or a bare bad_alloc") {
  CHECK_THROWS_WITH_AS(Tensor::empty({-258, 32}), "negative extent in shape (-258, 32)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(Tensor::empty({std::int64_t{1} << 62, 4}),
                       "a float32 (4611686018427387904, 4) tensor is too large: its size overflows 64 bits",
                       std::length_error);
  CHECK_THROWS_WITH_AS(Tensor::meta({std::int64_t{1} << 40, std::int64_t{1} << 40}),
                       doctest::Contains("too large"), std::length_error);
#if !defined(__SANITIZE_ADDRESS__)   // ASan aborts on a failed allocation unless told otherwise
  CHECK_THROWS_WITH_AS(Tensor::empty({std::int64_t{1} << 50}),
                       "out of memory: cannot allocate 4.5e+06 GB for a float32 (1125899906842624,) tensor",
                       std::bad_alloc);
#endif
}

TEST_CASE("set_num_threads refuses more threads than OpenMP can make (100,000 crashed it)") {
  const int before = num_threads();
  CHECK_THROWS_WITH_AS(set_num_threads(100000), "set_num_threads(100000): at most 1024 threads",
                       std::invalid_argument);
  CHECK(num_threads() == before);
}

TEST_CASE("parallel_chunks covers [0, n) once: one chunk when not worth it, one per thread when it is") {
  const int before = num_threads();
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    for (std::int64_t n : {0, 1, 2, 7, 1000}) {
      for (bool worth_it : {false, true}) {
        CAPTURE(threads);
        CAPTURE(n);
        CAPTURE(worth_it);
        std::vector<int> hits(static_cast<std::size_t>(n), 0);
        std::atomic<int> calls{0};
        parallel_chunks(n, worth_it, [&](std::int64_t i0, std::int64_t i1) {
          ++calls;
          for (std::int64_t i = i0; i < i1; ++i) ++hits[static_cast<std::size_t>(i)];
        });
        CHECK(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
        const int expected = n == 0 ? 0 : (worth_it && threads > 1 && n >= 2 ? threads : 1);
        CHECK(calls == expected);
      }
    }
  }
  set_num_threads(before);
}

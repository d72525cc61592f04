#include <doctest/doctest.h>

#include "core/dist/communicator.hpp"
#include "core/dist/gradient_buckets.hpp"
#include "core/tensor/autodiff.hpp"
#include "tests/core/dist/copies.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::dist;

TEST_CASE("one process: all_reduce and broadcast leave every tensor as it was") {
  auto comm = single_process();
  CHECK(comm->size() == 1);
  CHECK(comm->rank() == 0);
  CHECK(comm->describe() == "1 process");
  std::vector<Tensor> ts = {tensor({1.f, 2.f}, {2}), tensor({3.0}, {1})};
  comm->all_reduce(ts, Reduce::mean);
  comm->broadcast(ts, 0);
  comm->barrier();
  expect_tensor(ts[0], {2}, {1, 2});
  expect_tensor(ts[1], {1}, {3});
}

TEST_CASE("all_reduce packs tensors into buckets by dtype and size, and unpacks every element in place") {
  Copies three(3);
  std::vector<Tensor> ts = {tensor({1.f, 2.f, 3.f}, {3}), tensor({4.f}, {1}), tensor({5.0, 6.0}, {2}),
                            tensor({7, 8}, {2}), tensor({9.f, 10.f}, {1, 2})};
  three.all_reduce(ts, Reduce::sum, /*bucket_bytes=*/16);
  expect_tensor(ts[0], {3}, {3, 6, 9});
  expect_tensor(ts[1], {1}, {12});
  expect_tensor(ts[2], {2}, {15, 18});
  expect_tensor(ts[3], {2}, {21, 24});
  expect_tensor(ts[4], {1, 2}, {27, 30});
  // 16 bytes: f32 (3 + 1 elements) one bucket, f64 one, i32 one, the last f32 one.
  CHECK(three.calls == 4);
  Copies two(2);
  std::vector<Tensor> big = {Tensor::full({100}, 1.5)};   // larger than a bucket: a bucket of its own
  two.all_reduce(big, Reduce::mean, 16);
  CHECK(two.calls == 1);
  expect_tensor(big[0], {100}, std::vector<double>(100, 1.5));
}

TEST_CASE("all_reduce and broadcast refuse what they cannot reduce, naming it") {
  auto comm = single_process();
  std::vector<Tensor> ints = {tensor({1, 2}, {2})};
  CHECK_THROWS_WITH_AS(comm->all_reduce(ints, Reduce::mean), doctest::Contains("the mean of an int32 tensor (i32[2])"),
                       std::invalid_argument);
  std::vector<Tensor> meta = {Tensor::meta({2})};
  CHECK_THROWS_WITH_AS(comm->all_reduce(meta), doctest::Contains("a tensor without memory (f32[2]?)"), std::invalid_argument);
  std::vector<Tensor> masks = {tensor({true}, {1})};
  CHECK_THROWS_WITH_AS(comm->all_reduce(masks), doctest::Contains("bool tensors cannot be reduced"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(comm->broadcast(ints, 1), "broadcast: root 1 is not a rank of 1 processes", std::invalid_argument);
}

TEST_CASE("without mpirun, make_communicator is the single process") {
  CHECK(make_communicator()->size() == 1);
}

TEST_CASE("gradient buckets: full buckets start during the backward pass, last layers first; the sums equal all_reduce's") {
  // Three weights of 2, 3 and 4 floats, buckets of 20 bytes: w2 alone (16), then w1 + w0 (12 + 8).
  Tensor w0 = tensor({1.f, 2.f}, {2}).requires_grad_(), w1 = tensor({3.f, 4.f, 5.f}, {3}).requires_grad_(),
         w2 = tensor({6.f, 7.f, 8.f, 9.f}, {4}).requires_grad_();
  const std::vector<Tensor> weights{w0, w1, w2};
  // A chain, w0 first and w2 last: the backward pass completes w2's gradient first and w0's last.
  const Tensor loss = sum(w2 * sum(w1 * sum(w0 * w0)));
  Copies two(2);
  GradientBuckets buckets(two, weights, /*bucket_bytes=*/20);
  CHECK(buckets.n_buckets() == 2);
  std::vector<std::size_t> order;
  std::vector<int> started_when;
  const auto plain = grad(loss, weights, {.retain_graph = true});
  grad(loss, weights, {.on_ready = [&](std::size_t i, const Tensor& g) {
                         order.push_back(i);
                         buckets.add(i, g, 0.5);
                         started_when.push_back(two.started);
                       }});
  CHECK(order == std::vector<std::size_t>{2, 1, 0});
  CHECK(started_when == std::vector<int>{1, 1, 2});   // w2's bucket went before w1's gradient existed
  const auto summed = buckets.finish();
  CHECK(two.in_flight == 0);
  for (std::size_t i = 0; i < 3; ++i) expect_close(summed[i], plain[i], 1e-6);   // 2 × 0.5 × g
  // all_reduce of the same scaled gradients gives the same numbers.
  std::vector<Tensor> reduced;
  for (const Tensor& g : plain) reduced.push_back(g * 0.5);
  two.all_reduce(reduced, Reduce::sum);
  for (std::size_t i = 0; i < 3; ++i) CHECK(summed[i].to_doubles() == reduced[i].to_doubles());
}

TEST_CASE("gradient buckets refuse a gradient twice, a wrong shape, and a finish with one missing") {
  Copies one(1);
  const std::vector<Tensor> weights{Tensor::zeros({2}), Tensor::zeros({3})};
  GradientBuckets buckets(one, weights);
  buckets.add(0, Tensor::ones({2}), 1.0);
  CHECK_THROWS_WITH_AS(buckets.add(0, Tensor::ones({2}), 1.0), "GradientBuckets::add: gradient 0 of 2 given twice",
                       std::logic_error);
  CHECK_THROWS_WITH_AS(buckets.add(1, Tensor::ones({4}), 1.0),
                       "GradientBuckets::add: gradient 1 is f32[4], its weight f32[3]", std::invalid_argument);
  CHECK_THROWS_WITH_AS(buckets.finish(), "GradientBuckets::finish: gradient 1 (f32[3]) was never added",
                       std::logic_error);
}

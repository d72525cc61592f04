#include <doctest/doctest.h>

#include <cmath>

#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using V = std::vector<Tensor>;

TEST_CASE("sum over axes, with and without keepdims") {
  const Tensor x = tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  expect_tensor(sum(x), {}, {21});
  expect_tensor(sum(x, {0}), {3}, {5, 7, 9});
  expect_tensor(sum(x, {-1}), {2}, {6, 15});
  expect_tensor(sum(x, {1}, true), {2, 1}, {6, 15});
  expect_tensor(sum(x, {0, 1}, true), {1, 1}, {21});
}

TEST_CASE("mean, max, logsumexp, argmax on literal values") {
  const Tensor x = tensor({1.0, 5.0, 3.0, 4.0, 2.0, 6.0}, {2, 3});
  expect_tensor(mean(x, {1}), {2}, {3, 4});
  expect_tensor(max(x, {1}), {2}, {5, 6});
  expect_tensor(max(x, {0}), {3}, {4, 5, 6});
  expect_tensor(argmax(x, 1), {2}, {1, 2});
  // An empty axis has no maximum, and no index of one (0 would read as a position).
  CHECK_THROWS_WITH_AS(argmax(Tensor::zeros({0, 3}), 0), "argmax: axis 0 of f32[0,3] is empty: it has no maximum",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(max(Tensor::zeros({0, 3}), {0}), "max: axis 0 of f32[0,3] is empty: it has no maximum",
                       std::invalid_argument);
  CHECK(argmax(Tensor::zeros({3, 0}), 0).shape() == Shape{0});   // nothing to index, nothing refused
  const double l0 = std::log(std::exp(1.0) + std::exp(5.0) + std::exp(3.0));
  expect_tensor(logsumexp(x, {1}), {2}, {l0, std::log(std::exp(4.0) + std::exp(2.0) + std::exp(6.0))}, 1e-12);
}

TEST_CASE("logsumexp does not overflow") {
  expect_tensor(logsumexp(tensor({1000.f, 1000.f}, {2})), {}, {1000 + std::log(2.0)}, 1e-3);
}

TEST_CASE("gradients of reductions") {
  const Tensor x = randn({2, 3, 4}, 7);
  expect_gradients([](const V& v) { return sum(v[0], {1}); }, {x});
  expect_gradients([](const V& v) { return sum(v[0], {0, 2}, true); }, {x});
  expect_gradients([](const V& v) { return mean(v[0], {-1}); }, {x});
  expect_gradients([](const V& v) { return max(v[0], {1}); }, {x});
  expect_gradients([](const V& v) { return max(v[0]); }, {x});
  expect_gradients([](const V& v) { return min(v[0], {1}); }, {x});
  expect_gradients([](const V& v) { return min(v[0], {0, 2}, true); }, {x});
  expect_gradients([](const V& v) { return logsumexp(v[0], {2}); }, {x});
  expect_gradients([](const V& v) { return logsumexp(v[0], {0, 1}, true); }, {x});
}

TEST_CASE("max splits the gradient between ties") {
  Tensor x = tensor({3.0, 3.0, 1.0}, {3}).requires_grad_();
  expect_tensor(grad(max(x), {x})[0], {3}, {0.5, 0.5, 0});
}

TEST_CASE("min on literal values, its gradient at the minimum and split between ties") {
  const Tensor m = tensor({4.0, -1.0, 2.0, 0.5, 3.0, 0.5}, {2, 3});
  expect_tensor(min(m), {}, {-1});
  expect_tensor(min(m, {1}), {2}, {-1, 0.5});
  expect_tensor(min(m, {0}, true), {1, 3}, {0.5, -1, 0.5});
  Tensor x = tensor({1.0, 3.0, 1.0}, {3}).requires_grad_();
  expect_tensor(grad(min(x), {x})[0], {3}, {0.5, 0, 0.5});
}

// Tests for core/train/optimizer: global-norm clipping and the statistics every optimizer shares
// (through SGD, the optimizer with no math of its own).
#include <doctest/doctest.h>

#include <cmath>

#include "core/train/sgd.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::train;
using ctrax::testing::expect_tensor;

TEST_CASE("clipping scales every gradient by clip / global norm when the norm reaches it") {
  // ‖g‖ over both weights = √(3² + 4²) = 5; clipped to 1 → g · 0.2.
  Tensor a = tensor({0.0}, {1}), b = tensor({0.0}, {1});
  auto opt = SGD({.learning_rate = 1.0, .clip_grad_norm = 1.0});
  opt->init({a, b});
  const auto stats = opt->update(1, 1.0, {a, b}, {tensor({3.0}, {1}), tensor({4.0}, {1})});
  CHECK(stats.gradients_l2 == doctest::Approx(5.0));
  expect_tensor(a, {1}, {-0.6}, 1e-12);
  expect_tensor(b, {1}, {-0.8}, 1e-12);
}

TEST_CASE("gradients below the clip norm are untouched") {
  Tensor a = tensor({0.0, 0.0}, {2});
  auto opt = SGD({.learning_rate = 1.0, .clip_grad_norm = 10.0});
  opt->update(1, 1.0, {a}, {tensor({3.0, 4.0}, {2})});
  expect_tensor(a, {2}, {-3.0, -4.0}, 1e-12);
}

TEST_CASE("weights_l2 is the global norm of the weights before the update") {
  Tensor a = tensor({3.0}, {1}), b = tensor({4.0}, {1});
  auto opt = SGD();
  const auto stats = opt->update(1, 0.1, {a, b}, {tensor({1.0}, {1}), tensor({1.0}, {1})});
  CHECK(stats.weights_l2 == doctest::Approx(5.0));
}

TEST_CASE("update rejects a gradient of the wrong shape, naming both") {
  Tensor a = tensor({0.0, 0.0}, {2});
  auto opt = SGD();
  CHECK_THROWS_WITH_AS(opt->update(1, 0.1, {a}, {tensor({1.0}, {1})}),
                       "SGD.update: weight 0 is f64[2] but its gradient is f64[1]",
                       std::invalid_argument);
}

TEST_CASE("update rejects step 0: steps count from 1") {
  Tensor a = tensor({0.0}, {1});
  CHECK_THROWS_AS(SGD()->update(0, 0.1, {a}, {tensor({1.0}, {1})}), std::invalid_argument);
}

TEST_CASE("clip_grad_norm must be positive") {
  CHECK_THROWS_AS(SGD({.clip_grad_norm = 0.0}), std::invalid_argument);
}

TEST_CASE("a NaN gradient is refused before any weight changes") {
  Tensor a = tensor({1.0}, {1}), b = tensor({2.0}, {1});
  auto opt = SGD();
  CHECK_THROWS_AS(opt->update(1, 0.1, {a, b}, {tensor({1.0}, {1}), tensor({std::nan("")}, {1})}),
                  std::domain_error);
  expect_tensor(a, {1}, {1.0}, 0);
  expect_tensor(b, {1}, {2.0}, 0);
}

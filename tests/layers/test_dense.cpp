#include <doctest/doctest.h>

#include <cmath>

#include "layers/dense.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("Dense computes x·W + b over all leading axes") {
  auto d = Dense(2);
  d->init(ShapeDtype{{2, 1, 3}});
  d->set_all_weights({tensor({1.f, 0.f, 0.f, 1.f, 1.f, 1.f}, {3, 2}), v({10, 20})});
  expect_tensor((*d)(tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 1, 3})), {2, 1, 2}, {14, 25, 20, 31});
}

TEST_CASE("Dense initialises as Trax: Glorot-uniform kernel, tiny normal bias") {
  auto d = Dense(300);
  d->init(ShapeDtype{{1, 200}}, Rng(3));
  const auto w = d->weights()[0].to_doubles();
  const double limit = std::sqrt(6.0 / 500);
  double max_abs = 0, sum_sq = 0;
  for (double x : w) {
    max_abs = std::max(max_abs, std::abs(x));
    sum_sq += x * x;
  }
  CHECK(max_abs <= limit);
  CHECK(max_abs > 0.99 * limit);
  CHECK(std::abs(std::sqrt(sum_sq / w.size()) - limit / std::sqrt(3.0)) < 0.01 * limit);  // U(-a, a): rms a/√3
  for (double b : d->weights()[1].to_doubles()) CHECK(std::abs(b) < 1e-5);
}

TEST_CASE("Dense without bias has one weight") {
  auto d = Dense(4, {.use_bias = false});
  d->init(ShapeDtype{{1, 3}});
  CHECK(d->weights().size() == 1);
}

TEST_CASE("Dense passes the gradient checker for inputs and weights") {
  auto d = Dense(3);
  d->init(ShapeDtype{{2, 4}, DType::float64});
  expect_layer_gradients(d, {randn({2, 4}, 1)});
}

TEST_CASE("a shared Dense inside a model passes the gradient checker") {
  auto shared = Dense(3);
  auto model = Serial(shared, Fn("Tanh", [](const Tensor& x) { return tanh(x); }), shared);
  model->init(ShapeDtype{{2, 3}, DType::float64});
  expect_layer_gradients(model, {randn({2, 3}, 2)});
}

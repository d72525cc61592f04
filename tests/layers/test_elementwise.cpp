#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "core/layer/combinators.hpp"
#include "layers/elementwise.hpp"
#include "layers/weights_layer.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("Negate, StopGradient, ToFloat and ThresholdToBinary on literal values") {
  const Tensor x = v({-1.5, 0.5, 0.75});
  expect_tensor(init_and_run(Negate(), {x})[0], {3}, {1.5, -0.5, -0.75});
  expect_tensor(init_and_run(StopGradient(), {x})[0], {3}, {-1.5, 0.5, 0.75});
  const Tensor ids = tensor({3, 0, 7}, {3});
  const Tensor f = init_and_run(ToFloat(), {ids})[0];
  CHECK(f.dtype() == DType::float32);
  expect_tensor(f, {3}, {3, 0, 7});
  const Tensor bits = init_and_run(ThresholdToBinary(), {x})[0];
  CHECK(bits.dtype() == DType::int32);
  expect_tensor(bits, {3}, {0, 0, 1});
  expect_tensor(init_and_run(ThresholdToBinary(0.6), {x})[0], {3}, {0, 0, 1});
  expect_tensor(init_and_run(ThresholdToBinary(-2), {x})[0], {3}, {1, 1, 1});
  CHECK(Negate()->to_string() == "Negate");
  CHECK(ThresholdToBinary()->to_string() == "ThresholdToBinary");
}

TEST_CASE("Negate passes the gradient checker; StopGradient passes none") {
  auto negate = Negate();
  negate->init(ShapeDtype{{2, 3}, DType::float64});
  expect_layer_gradients(negate, {randn({2, 3})});
  auto stop = StopGradient();
  Tensor x = randn({2, 3}).requires_grad_();
  stop->init(ShapeDtype{{2, 3}, DType::float64});
  const Tensor y = (*stop)(Stack{x})[0] * 2.0 + x;   // only the second term reaches x
  expect_tensor(grad(sum(y), {x})[0], {2, 3}, {1, 1, 1, 1, 1, 1});
}

TEST_CASE("Weights and RandomUniform push a tensor without taking one") {
  auto w = Weights(constant(0.5), {2, 3});
  CHECK(w->n_in() == 0);
  CHECK(w->to_string() == "Weights_(2, 3)_in0");   // Trax prints a layer of no inputs so too
  CHECK(Weights(constant(1), {4})->to_string() == "Weights_(4,)_in0");
  w->init(Signature{});
  expect_tensor((*w)(Stack{})[0], {2, 3}, {0.5, 0.5, 0.5, 0.5, 0.5, 0.5});
  // In a Serial it pushes its tensor onto the stack: a learned bias for the Add below it.
  auto both = Serial(Weights(constant(2), {1}), Add());
  expect_tensor(init_and_run(both, {v({3})})[0], {1}, {5});
  CHECK(both->all_weights().size() == 1);
  auto r = RandomUniform(-1, 1, {1000});
  r->init(Signature{}, Rng(3));
  const auto a = (*r)(Stack{})[0].to_doubles();
  double lo = 1, hi = -1, mean = 0;
  for (double x : a) lo = std::min(lo, x), hi = std::max(hi, x), mean += x / 1000;
  CHECK(lo >= -1);
  CHECK(hi < 1);
  CHECK(std::abs(mean) < 0.1);
  r->set_rng(Rng(4));
  CHECK((*r)(Stack{})[0].to_doubles() != a);   // another key, another draw
  CHECK_THROWS_WITH_AS(RandomUniform(1, 1), doctest::Contains("must be a finite number below max_val"), std::invalid_argument);
  CHECK_THROWS_AS(RandomUniform(0, INFINITY), std::invalid_argument);   // every draw would be inf or NaN
  CHECK_THROWS_AS(RandomUniform(-INFINITY, 0), std::invalid_argument);
}

TEST_CASE("ThresholdToBinary refuses a threshold that is not a finite number, naming where it was made") {
  // x > NaN is false for every x: a NaN threshold would say 0 of every input, in silence.
  CHECK_THROWS_WITH_AS(ThresholdToBinary(std::nan("")), doctest::Contains("): threshold must be a finite number, got nan"),
                       std::invalid_argument);
  try {
    ThresholdToBinary(INFINITY);
    FAIL("an infinite threshold was accepted");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).starts_with("ThresholdToBinary (created at tests/layers/test_elementwise.cpp:"));
  }
}

// BatchNorm and FilterResponseNorm (LayerNorm has test_layer_norm.cpp).
#include <doctest/doctest.h>

#include <cmath>

#include "layers/batch_norm.hpp"
#include "layers/filter_response_norm.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("BatchNorm in training: the batch's statistics, and the running ones move by 1 − momentum") {
  auto bn = BatchNorm();
  const Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, {4, 1, 1, 1});
  const Tensor y = init_and_run(bn, {x})[0];
  const double mu = 2.5, var = 7.5 - 6.25, r = 1 / std::sqrt(var + 1e-5);   // E[x²] − E[x]² = 1.25
  expect_tensor(y, {4, 1, 1, 1}, {(1 - mu) * r, (2 - mu) * r, (3 - mu) * r, (4 - mu) * r}, 1e-12);
  REQUIRE(bn->state().size() == 3);
  expect_tensor(bn->state()[0], {1, 1, 1, 1}, {0.001 * mu}, 1e-15);
  expect_tensor(bn->state()[1], {1, 1, 1, 1}, {0.999 + 0.001 * var}, 1e-15);
  CHECK(bn->state()[2].item() == 1);
  // Evaluation normalises by the running statistics.
  bn->set_mode(Mode::eval);
  const double rm = 0.001 * mu, rv = 0.999 + 0.001 * var, s = 1 / std::sqrt(rv + 1e-5);
  expect_tensor((*bn)(Stack{x})[0], {4, 1, 1, 1}, {(1 - rm) * s, (2 - rm) * s, (3 - rm) * s, (4 - rm) * s}, 1e-12);
  CHECK(bn->state()[2].item() == 1);   // eval leaves the statistics alone
}

TEST_CASE("BatchNorm's weights: one β and γ per kept axis; center and scale drop them") {
  auto bn = BatchNorm();
  bn->init(ShapeDtype{{2, 3, 3, 4}});
  REQUIRE(bn->weights().size() == 2);
  CHECK(bn->weights()[0].shape() == Shape{4});
  CHECK(bn->state()[0].shape() == Shape{1, 1, 1, 4});
  auto dense_bn = BatchNorm({.axis = {0}, .center = false});
  dense_bn->init(ShapeDtype{{5, 3}});
  REQUIRE(dense_bn->weights().size() == 1);
  CHECK(dense_bn->weights()[0].shape() == Shape{3});
  CHECK(BatchNorm()->to_string() == "BatchNorm");
  CHECK_THROWS_WITH_AS(BatchNorm({.momentum = 2}), doctest::Contains("momentum must be in [0, 1]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(BatchNorm()->init(ShapeDtype{{5, 3}}), doctest::Contains("BatchNorm axis"), LayerError);
}

TEST_CASE("BatchNorm passes the gradient checker in training, through the batch statistics") {
  // (Eval mode runs without the tape, as every layer does: there is no gradient to check.)
  for (const std::vector<int>& axis : {std::vector<int>{0, 1, 2}, std::vector<int>{0}}) {
    auto bn = BatchNorm({.axis = axis});
    bn->init(ShapeDtype{{3, 2, 2, 3}, DType::float64});
    expect_layer_gradients(bn, {randn({3, 2, 2, 3}, 31)});
  }
}

TEST_CASE("BatchNorm's fused path (every axis but the last) equals its formula op by op") {
  // Axes {0, 1, 2} run batch_norm; the same axes listed as {2, 1, 0} … are the same set, so to see
  // the formula we normalise a transposed copy over its leading axes the other way: axis {1, 2, 3}
  // of (C, B, H, W) runs op by op.
  const Tensor x = randn({3, 4, 4, 2}, 33);
  auto fused = BatchNorm();
  const Tensor y = init_and_run(fused, {x})[0];
  auto formula = BatchNorm({.axis = {1, 2, 3}});
  const Tensor xt = transpose(x, {3, 0, 1, 2});
  const Tensor yt = init_and_run(formula, {xt})[0];
  expect_close(y, transpose(yt, {1, 2, 3, 0}), 1e-12);
  expect_close(reshape(fused->state()[0], {2}), reshape(formula->state()[0], {2}), 1e-14);
  expect_close(reshape(fused->state()[1], {2}), reshape(formula->state()[1], {2}), 1e-14);
}

TEST_CASE("FilterResponseNorm: x / √(mean over the image of x² + ε), per image and channel") {
  auto frn = FilterResponseNorm();
  const Tensor x = tensor({3.0, 4.0}, {1, 2, 1, 1});
  const double r = 1 / std::sqrt(12.5 + 1e-6);
  expect_tensor(init_and_run(frn, {x})[0], {1, 2, 1, 1}, {3 * r, 4 * r}, 1e-12);
  CHECK(frn->weights().size() == 2);
  auto learnt = FilterResponseNorm({.learn_epsilon = true});
  learnt->init(ShapeDtype{{2, 3, 3, 2}, DType::float64});
  REQUIRE(learnt->weights().size() == 3);
  expect_layer_gradients(learnt, {randn({2, 3, 3, 2}, 32)});
  frn->init(ShapeDtype{{2, 3, 3, 2}, DType::float64});
  expect_layer_gradients(frn, {randn({2, 3, 3, 2}, 33)});
}

TEST_CASE("the norms' ε must be a finite number > 0: an infinite one would scale every output to 0") {
  CHECK_THROWS_WITH_AS(BatchNorm({.epsilon = INFINITY}), doctest::Contains("epsilon must be a finite number > 0, got inf"),
                       std::invalid_argument);
  CHECK_THROWS_AS(BatchNorm({.epsilon = std::nan("")}), std::invalid_argument);
  CHECK_THROWS_AS(FilterResponseNorm({.init_epsilon = INFINITY}), std::invalid_argument);
  CHECK_THROWS_AS(FilterResponseNorm({.init_learnt_epsilon = std::nan("")}), std::invalid_argument);
}

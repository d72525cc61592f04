#include <doctest/doctest.h>

#include "core/train/momentum.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::train;
using ctrax::testing::expect_tensor;

TEST_CASE("Momentum (Nesterov): v = 0.9 v + g, w -= lr (0.9 v + g)") {
  // step 1: v = 1,   u = 0.9 + 1 = 1.9,      w = 1 − 0.19 = 0.81
  // step 2: v = 1.9, u = 1.71 + 1 = 2.71,    w = 0.81 − 0.271 = 0.539
  Tensor w = tensor({1.0}, {1});
  auto opt = Momentum({.learning_rate = 0.1, .weight_decay_rate = 0.0});
  opt->update(1, 0.1, {w}, {tensor({1.0}, {1})});
  expect_tensor(w, {1}, {0.81}, 1e-12);
  opt->update(2, 0.1, {w}, {tensor({1.0}, {1})});
  expect_tensor(w, {1}, {0.539}, 1e-12);
  expect_tensor(opt->slots()[0][0].value, {1}, {1.9}, 1e-12);
  CHECK(opt->slots()[0][0].name == "velocity");
}

TEST_CASE("Momentum (classical): w -= lr v") {
  Tensor w = tensor({1.0}, {1});
  auto opt = Momentum({.learning_rate = 0.1, .weight_decay_rate = 0.0, .nesterov = false});
  opt->update(1, 0.1, {w}, {tensor({1.0}, {1})});
  expect_tensor(w, {1}, {0.9}, 1e-12);
  opt->update(2, 0.1, {w}, {tensor({1.0}, {1})});
  expect_tensor(w, {1}, {0.71}, 1e-12);
}

TEST_CASE("Momentum weight decay shrinks w by (1 - rate), not scaled by lr") {
  // classical, wd 0.1: w = 0.9 · 1 − 0.1 · 1 = 0.8
  Tensor w = tensor({1.0}, {1});
  Momentum({.weight_decay_rate = 0.1, .nesterov = false})->update(1, 0.1, {w}, {tensor({1.0}, {1})});
  expect_tensor(w, {1}, {0.8}, 1e-12);
}

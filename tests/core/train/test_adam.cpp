#include <doctest/doctest.h>

#include "core/train/adam.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::train;
using ctrax::testing::expect_tensor;

TEST_CASE("Adam's first step is lr * g / (|g| + eps): bias correction counted from step 1") {
  // m = 0.2, v = 0.004; m̂ = 0.2 / 0.1 = 2, v̂ = 0.004 / 0.001 = 4; w = 1 − 0.1 · 2 / (2 + 1e-5)
  Tensor w = tensor({1.0}, {1});
  auto opt = Adam({.learning_rate = 0.1, .weight_decay_rate = 0.0});
  opt->update(1, 0.1, {w}, {tensor({2.0}, {1})});
  expect_tensor(w, {1}, {0.9000004999975}, 1e-13);
  expect_tensor(opt->slots()[0][0].value, {1}, {0.2}, 1e-13);
  expect_tensor(opt->slots()[0][1].value, {1}, {0.004}, 1e-13);
  CHECK(opt->slots()[0][0].name == "m");
  CHECK(opt->slots()[0][1].name == "v");
}

TEST_CASE("Adam's second step") {
  // m = 0.9 · 0.2 − 0.1 = 0.08, v = 0.999 · 0.004 + 0.001 = 0.004996
  // w = 0.9000004999975 − 0.1 · (0.08 / 0.19) / (√(0.004996 / 0.001999) + 1e-5)
  Tensor w = tensor({1.0}, {1});
  auto opt = Adam({.learning_rate = 0.1, .weight_decay_rate = 0.0});
  opt->update(1, 0.1, {w}, {tensor({2.0}, {1})});
  opt->update(2, 0.1, {w}, {tensor({-1.0}, {1})});
  expect_tensor(w, {1}, {0.8733669645020137}, 1e-13);
  expect_tensor(opt->slots()[0][0].value, {1}, {0.08}, 1e-13);
  expect_tensor(opt->slots()[0][1].value, {1}, {0.004996}, 1e-13);
}

TEST_CASE("Adam weight decay: Trax's (1 - wd) w, or AdamW's (1 - lr wd) w") {
  Tensor trax_w = tensor({1.0}, {1}), adamw_w = tensor({1.0}, {1});
  Adam({.weight_decay_rate = 0.1})->update(1, 0.1, {trax_w}, {tensor({2.0}, {1})});
  Adam({.weight_decay_rate = 0.1, .weight_decay = WeightDecay::adamw})
      ->update(1, 0.1, {adamw_w}, {tensor({2.0}, {1})});
  expect_tensor(trax_w, {1}, {0.9 - 0.0999995000025}, 1e-13);
  expect_tensor(adamw_w, {1}, {0.99 - 0.0999995000025}, 1e-13);
}

TEST_CASE("Adam's defaults are Trax's") {
  const AdamConfig c;
  CHECK(c.learning_rate == 1e-4);
  CHECK(c.b1 == 0.9);
  CHECK(c.b2 == 0.999);
  CHECK(c.eps == 1e-5);
  CHECK(c.weight_decay_rate == 1e-5);
  CHECK(Adam()->learning_rate() == 1e-4);
}

#include <doctest/doctest.h>

#include <cmath>

#include "core/train/rms_prop.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::train;
using ctrax::testing::expect_tensor;

TEST_CASE("RMSProp: s = 0.9 s + 0.1 g², w -= lr g / (√s + ε), s starting at one") {
  // step 1, g = 2: s = 0.9 · 1 + 0.1 · 4 = 1.3,     w = 1 − 0.1 · 2 / √1.3
  // step 2, g = 2: s = 0.9 · 1.3 + 0.4 = 1.57,      w −= 0.1 · 2 / √1.57
  Tensor w = tensor({1.0}, {1});
  auto opt = RMSProp({.learning_rate = 0.1, .eps = 0.0});
  opt->update(1, 0.1, {w}, {tensor({2.0}, {1})});
  expect_tensor(opt->slots()[0][0].value, {1}, {1.3}, 1e-12);
  expect_tensor(w, {1}, {1 - 0.2 / std::sqrt(1.3)}, 1e-12);
  opt->update(2, 0.1, {w}, {tensor({2.0}, {1})});
  expect_tensor(opt->slots()[0][0].value, {1}, {1.57}, 1e-12);
  expect_tensor(w, {1}, {1 - 0.2 / std::sqrt(1.3) - 0.2 / std::sqrt(1.57)}, 1e-12);
  CHECK(opt->slots()[0][0].name == "avg_sq_grad");
}

TEST_CASE("RMSProp: ε keeps a weight whose mean square reached zero from dividing by it") {
  // γ = 0: s = g² exactly; g = 0 then gives s = 0 and a step of 0 / (0 + ε) = 0, not NaN.
  Tensor w = tensor({1.0, 1.0}, {2});
  auto opt = RMSProp({.gamma = 0.0, .eps = 1e-8});
  opt->update(1, 0.5, {w}, {tensor({0.0, 3.0}, {2})});
  expect_tensor(w, {2}, {1.0, 1 - 0.5 * 3 / (3 + 1e-8)}, 1e-12);
}

TEST_CASE("RMSProp refuses a decay outside [0, 1) and a negative ε") {
  CHECK_THROWS_WITH_AS(RMSProp({.gamma = 1.0}), "RMSProp: gamma must be in [0, 1), got 1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RMSProp({.eps = -1e-8}), "RMSProp: eps must be finite and >= 0, got -1e-08",
                       std::invalid_argument);
}

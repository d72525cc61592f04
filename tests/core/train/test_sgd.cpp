#include <doctest/doctest.h>

#include "core/train/sgd.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::train;
using ctrax::testing::expect_tensor;

TEST_CASE("SGD: w - lr * g, no slots") {
  Tensor w = tensor({1.0, -2.0}, {2});
  auto opt = SGD({.learning_rate = 0.1});
  opt->init({w});
  CHECK(opt->slots()[0].empty());
  opt->update(1, 0.1, {w}, {tensor({0.5, 1.0}, {2})});
  expect_tensor(w, {2}, {0.95, -2.1}, 1e-12);
}

TEST_CASE("SGD updates float32 weights in place") {
  Tensor w = tensor({1.f, 2.f}, {2});
  Tensor alias = w;
  SGD()->update(1, 0.5, {w}, {tensor({2.f, 2.f}, {2})});
  expect_tensor(alias, {2}, {0.0, 1.0});
}

#include <doctest/doctest.h>

#include "layers/shift_right.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("ShiftRight inserts zeros at the front of axis 1 and drops the end") {
  const Tensor tokens = tensor({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  expect_tensor(init_and_run(ShiftRight(), {tokens})[0], {2, 4}, {0, 1, 2, 3, 0, 5, 6, 7});
  expect_tensor(init_and_run(ShiftRight({.n_positions = 2}), {tokens})[0], {2, 4}, {0, 0, 1, 2, 0, 0, 5, 6});
  expect_tensor(init_and_run(ShiftRight({.n_positions = 9}), {tokens})[0], {2, 4}, {0, 0, 0, 0, 0, 0, 0, 0});
  CHECK(init_and_run(ShiftRight(), {tokens})[0].dtype() == DType::int32);
  CHECK(ShiftRight()->to_string() == "ShiftRight(1)");
}

TEST_CASE("ShiftRight is the identity in predict mode, active in eval") {
  const Tensor tokens = tensor({1, 2}, {1, 2});
  expect_tensor(init_and_run(ShiftRight({.mode = Mode::predict}), {tokens})[0], {1, 2}, {1, 2});
  expect_tensor(init_and_run(ShiftRight({.mode = Mode::eval}), {tokens})[0], {1, 2}, {0, 1});
}

TEST_CASE("ShiftRight passes the gradient checker on float inputs") {
  auto s = ShiftRight();
  s->init(ShapeDtype{{2, 3, 2}, DType::float64});
  expect_layer_gradients(s, {randn({2, 3, 2})});
}

#include <doctest/doctest.h>

#include "layers/elementwise.hpp"
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

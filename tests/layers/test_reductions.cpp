#include <doctest/doctest.h>

#include <cmath>

#include "layers/reductions.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("Mean, Sum and Max reduce the chosen axis; Sum defaults to all elements") {
  const Tensor x = tensor({1.f, 2.f, 3.f, 4.f, 5.f, 9.f}, {2, 3});
  expect_tensor(init_and_run(Mean(), {x})[0], {2}, {2, 6});
  expect_tensor(init_and_run(Mean(0), {x})[0], {3}, {2.5, 3.5, 6});
  expect_tensor(init_and_run(Mean(1, true), {x})[0], {2, 1}, {2, 6});
  expect_tensor(init_and_run(Sum(), {x})[0], {}, {24});
  expect_tensor(init_and_run(Sum(0), {x})[0], {3}, {5, 7, 12});
  expect_tensor(init_and_run(Max(), {x})[0], {2}, {3, 9});
  expect_tensor(init_and_run(ArgMax(), {x})[0], {2}, {2, 2});
}

TEST_CASE("Min reduces like Max; LogSumExp keeps the axis, as Trax's") {
  const Tensor x = tensor({1.f, 2.f, 3.f, 4.f, 5.f, 9.f}, {2, 3});
  expect_tensor(init_and_run(Min(), {x})[0], {2}, {1, 4});
  expect_tensor(init_and_run(Min(0, true), {x})[0], {1, 3}, {1, 2, 3});
  expect_tensor(init_and_run(LogSumExp(), {x})[0], {2, 1},
                {std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)),
                 std::log(std::exp(4.0) + std::exp(5.0) + std::exp(9.0))}, 1e-6);
  expect_tensor(init_and_run(LogSumExp(0), {x})[0], {1, 3},
                {std::log(std::exp(1.0) + std::exp(4.0)), std::log(std::exp(2.0) + std::exp(5.0)),
                 std::log(std::exp(3.0) + std::exp(9.0))}, 1e-6);
}

TEST_CASE("Flatten keeps the leading axes and joins the rest") {
  auto f = Flatten(2);
  CHECK(f->to_string() == "Flatten_keep2");
  CHECK(f->init(ShapeDtype{{2, 3, 5, 7}})[0].shape == Shape{2, 3, 35});
  CHECK_THROWS_WITH_AS(f->init(ShapeDtype{{2, 3}}),
                       doctest::Contains("must exceed the number of axes to keep"), LayerError);
}

TEST_CASE("Mean, Sum and Max pass the gradient checker") {
  for (const LayerPtr& f : {Mean(1), Sum(), Sum(-1), Max(0), Min(1), LogSumExp(), LogSumExp(0), Flatten()}) {
    CAPTURE(f->name());
    f->init(ShapeDtype{{2, 3, 4}, DType::float64});
    expect_layer_gradients(f, {randn({2, 3, 4})});
  }
}

#include <doctest/doctest.h>

#include "layers/layer_norm.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("LayerNorm normalises the last axis with epsilon 1e-6, scale 1 and bias 0") {
  auto ln = LayerNorm();
  // mean 2.5, biased variance 1.25: (x − 2.5)/sqrt(1.25 + 1e-6)
  const double s = 1.0 / std::sqrt(1.25 + 1e-6);
  expect_tensor(init_and_run(ln, {tensor({1.f, 2.f, 3.f, 4.f}, {1, 4})})[0], {1, 4},
                {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s}, 1e-5);
  CHECK(ln->weight_names() == std::vector<std::string>{"scale", "bias"});
  expect_tensor(ln->weights()[0], {4}, {1, 1, 1, 1});
  expect_tensor(ln->weights()[1], {4}, {0, 0, 0, 0});
}

TEST_CASE("LayerNorm applies its scale and bias") {
  auto ln = LayerNorm();
  ln->init(ShapeDtype{{1, 2}});
  ln->set_all_weights({v({2, 3}), v({10, 20})});
  expect_tensor((*ln)(tensor({0.f, 2.f}, {1, 2})), {1, 2}, {10 - 2 * (1 / std::sqrt(1 + 1e-6)), 20 + 3 / std::sqrt(1 + 1e-6)}, 1e-5);
}

TEST_CASE("LayerNorm passes the gradient checker") {
  auto ln = LayerNorm();
  ln->init(ShapeDtype{{2, 3, 5}, DType::float64});
  ln->set_all_weights({randn({5}, 3), randn({5}, 4)});
  expect_layer_gradients(ln, {randn({2, 3, 5})});
}

TEST_CASE("LayerNorm rejects integer input with its name in the error") {
  CHECK_THROWS_WITH_AS(LayerNorm()->init(ShapeDtype{{2, 3}, DType::int32}),
                       doctest::Contains("LayerNorm needs floating inputs"), LayerError);
}

TEST_CASE("LayerNorm({.center = false}): x / √(mean x² + ε), Trax's center=False (the bias kept, not added)") {
  auto ln = LayerNorm({.center = false});
  const Tensor x = tensor({3.0, 4.0}, {1, 2});
  const double r = 1 / std::sqrt(12.5 + 1e-6);
  expect_tensor(init_and_run(ln, {x})[0], {1, 2}, {3 * r, 4 * r}, 1e-12);
  REQUIRE(ln->weights().size() == 2);   // scale and bias, as Trax creates them
  ln->set_all_weights({tensor({2.0, 2.0}, {2}), tensor({5.0, 5.0}, {2})});
  expect_tensor((*ln)(Stack{x})[0], {1, 2}, {6 * r, 8 * r}, 1e-12);   // the bias is not added
  auto eps = LayerNorm({.epsilon = 1e-3});
  expect_tensor(init_and_run(eps, {tensor({1.0, 3.0}, {1, 2})})[0], {1, 2}, {-1 / std::sqrt(1 + 1e-3), 1 / std::sqrt(1 + 1e-3)}, 1e-12);
  auto g = LayerNorm({.center = false});
  g->init(ShapeDtype{{2, 5}, DType::float64});
  expect_layer_gradients(g, {randn({2, 5})});
  CHECK_THROWS_WITH_AS(LayerNorm({.epsilon = 0}), doctest::Contains("epsilon must be a finite number > 0"), std::invalid_argument);
  CHECK_THROWS_AS(LayerNorm({.epsilon = INFINITY}), std::invalid_argument);   // every output would be 0
}

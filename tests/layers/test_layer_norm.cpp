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

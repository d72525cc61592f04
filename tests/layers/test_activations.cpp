#include <doctest/doctest.h>

#include <cmath>

#include "layers/activations.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("activation layers compute Trax's formulas on literal values") {
  const Tensor x = v({-1, 0.5, 2});
  expect_tensor(init_and_run(Relu(), {x})[0], {3}, {0, 0.5, 2});
  expect_tensor(init_and_run(Sigmoid(), {x})[0], {3},
                {1 / (1 + std::exp(1.0)), 1 / (1 + std::exp(-0.5)), 1 / (1 + std::exp(-2.0))});
  expect_tensor(init_and_run(Tanh(), {x})[0], {3}, {std::tanh(-1.0), std::tanh(0.5), std::tanh(2.0)});
  auto gelu = [](double t) { return 0.5 * t * (1 + std::erf(t / std::sqrt(2.0))); };
  expect_tensor(init_and_run(Gelu(), {x})[0], {3}, {gelu(-1), gelu(0.5), gelu(2)});
  auto fast = [](double t) {
    return 0.5 * t * (1 + std::tanh(0.7978845608 * t * (1 + 0.044715 * t * t)));
  };
  expect_tensor(init_and_run(FastGelu(), {x})[0], {3}, {fast(-1), fast(0.5), fast(2)}, 1e-6);
}

TEST_CASE("Softmax and LogSoftmax work along the chosen axis") {
  const Tensor x = tensor({0.f, std::log(3.f), 1.f, 1.f}, {2, 2});
  expect_tensor(init_and_run(Softmax(), {x})[0], {2, 2}, {0.25, 0.75, 0.5, 0.5});
  expect_tensor(init_and_run(LogSoftmax(), {x})[0], {2, 2},
                {std::log(0.25), std::log(0.75), std::log(0.5), std::log(0.5)}, 1e-6);
  const double e = std::exp(1.0 - std::log(3.0));
  expect_tensor(init_and_run(Softmax(0), {x})[0], {2, 2},
                {1 / (1 + std::exp(1.0)), 1 / (1 + e), std::exp(1.0) / (1 + std::exp(1.0)), e / (1 + e)}, 1e-6);
}

TEST_CASE("activations print bare, without a Serial wrapper") {
  CHECK(Relu()->to_string() == "Relu");
  CHECK(FastGelu()->to_string() == "FastGelu");
  CHECK(LogSoftmax()->to_string() == "LogSoftmax");
}

TEST_CASE("every activation passes the gradient checker") {
  for (const LayerPtr& f : {Relu(), Gelu(), FastGelu(), Sigmoid(), Tanh(), Softmax(), LogSoftmax()}) {
    CAPTURE(f->name());
    f->init(ShapeDtype{{2, 5}, DType::float64});
    expect_layer_gradients(f, {randn({2, 5})});
  }
}

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

TEST_CASE("Trax's other activations on literal values, each side of its kinks") {
  const Tensor x = v({-2, -0.5, 0, 0.5, 2});
  expect_tensor(init_and_run(ParametricRelu(), {x})[0], {5}, {0, 0, 0, 0.5, 2});
  expect_tensor(init_and_run(ParametricRelu(3), {x})[0], {5}, {0, 0, 0, 1.5, 6});
  expect_tensor(init_and_run(LeakyRelu(), {x})[0], {5}, {-0.02, -0.005, 0, 0.5, 2});
  expect_tensor(init_and_run(LeakyRelu(0.5), {x})[0], {5}, {-1, -0.25, 0, 0.5, 2});
  expect_tensor(init_and_run(Elu(), {x})[0], {5}, {std::expm1(-2.0), std::expm1(-0.5), 0, 0.5, 2}, 1e-6);
  expect_tensor(init_and_run(Elu(2), {x})[0], {5}, {2 * std::expm1(-2.0), 2 * std::expm1(-0.5), 0, 0.5, 2}, 1e-6);
  const double a = 1.6732632423543772, l = 1.0507009873554805;
  expect_tensor(init_and_run(Selu(), {x})[0], {5},
                {l * a * std::expm1(-2.0), l * a * std::expm1(-0.5), 0, l * 0.5, l * 2}, 1e-6);
  expect_tensor(init_and_run(HardSigmoid(), {x})[0], {5}, {0, 0.5, 1, 1, 1});   // Trax's max(0, min(1, 1 + x))
  expect_tensor(init_and_run(HardTanh(), {x})[0], {5}, {-1, -0.5, 0, 0.5, 1});
  expect_tensor(init_and_run(Softplus(), {x})[0], {5},
                {std::log1p(std::exp(-2.0)), std::log1p(std::exp(-0.5)), std::log(2.0), std::log1p(std::exp(0.5)),
                 std::log1p(std::exp(2.0))}, 1e-6);
  expect_tensor(init_and_run(Exp(), {x})[0], {5}, {std::exp(-2.0), std::exp(-0.5), 1, std::exp(0.5), std::exp(2.0)}, 1e-6);
  expect_tensor(init_and_run(Log(), {v({1, std::exp(2.0)})})[0], {2}, {0, 2}, 1e-6);
}

TEST_CASE("Elu and Selu stay finite, values and gradients, where eˣ overflows") {
  Tensor x = tensor({-100.0, 800.0}, {2}).requires_grad_();
  for (const LayerPtr& f : {Elu(), Selu()}) {
    CAPTURE(f->name());
    f->init(ShapeDtype{{2}, DType::float64});
    const Tensor y = (*f)(Stack{x})[0];
    for (const double value : y.to_doubles()) CHECK(std::isfinite(value));
    for (const double d : grad(sum(y), {x})[0].to_doubles()) CHECK(std::isfinite(d));
  }
}

TEST_CASE("an activation's setting must be a finite number: a NaN or an infinity is refused by name") {
  // LeakyRelu(NaN) made every negative input NaN; Selu's λ = inf every output ±inf or NaN.
  CHECK_THROWS_WITH_AS(LeakyRelu(std::nan("")), doctest::Contains("): a must be a finite number, got nan"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ParametricRelu(INFINITY), doctest::Contains("): a must be a finite number, got inf"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Elu(-INFINITY), doctest::Contains("): a must be a finite number, got -inf"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(Selu(1.6, std::nan("")), doctest::Contains("): lmbda must be a finite number, got nan"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Selu(std::nan(""), 1.05), doctest::Contains("Selu (created at tests/layers/test_activations.cpp:"),
                       std::invalid_argument);
  CHECK_NOTHROW(LeakyRelu(-2.5));   // any finite slope is Trax's to allow
}

TEST_CASE("ThresholdedLinearUnit: max(x, τ) with τ one trainable scalar, 0 at first") {
  auto tlu = ThresholdedLinearUnit();
  const Tensor x = v({-1, 0.25, 2});
  expect_tensor(init_and_run(tlu, {x})[0], {3}, {0, 0.25, 2});
  REQUIRE(tlu->weights().size() == 1);
  CHECK(tlu->weights()[0].shape() == Shape{});
  tlu->set_all_weights({Tensor::scalar(0.5, x.dtype())});
  expect_tensor((*tlu)(Stack{x})[0], {3}, {0.5, 0.5, 2});
  CHECK_THROWS_WITH_AS(ThresholdedLinearUnit()->init(ShapeDtype{{3}, DType::int32}),
                       doctest::Contains("ThresholdedLinearUnit needs a floating input"), LayerError);
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
  CHECK(LeakyRelu(0.2)->to_string() == "LeakyRelu");
  CHECK(ThresholdedLinearUnit()->to_string() == "ThresholdedLinearUnit");
}

TEST_CASE("every activation passes the gradient checker") {
  for (const LayerPtr& f : {Relu(), Gelu(), FastGelu(), Sigmoid(), Tanh(), Softmax(), LogSoftmax(), ParametricRelu(2),
                             LeakyRelu(0.1), Elu(1.5), Selu(), HardSigmoid(), HardTanh(), Softplus(), Exp(),
                             ThresholdedLinearUnit()}) {
    CAPTURE(f->name());
    f->init(ShapeDtype{{2, 5}, DType::float64});
    expect_layer_gradients(f, {randn({2, 5})});
  }
  auto log = Log();   // on positive inputs
  log->init(ShapeDtype{{2, 5}, DType::float64});
  expect_layer_gradients(log, {exp(randn({2, 5}))});
}

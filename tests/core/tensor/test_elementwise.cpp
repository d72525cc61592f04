#include <doctest/doctest.h>

#include <cmath>

#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using V = std::vector<Tensor>;

TEST_CASE("binary ops on literal values") {
  const Tensor a = tensor({1.f, 2.f, 3.f}, {3}), b = tensor({4.f, 5.f, 6.f}, {3});
  expect_tensor(a + b, {3}, {5, 7, 9});
  expect_tensor(a - b, {3}, {-3, -3, -3});
  expect_tensor(a * b, {3}, {4, 10, 18});
  expect_tensor(b / a, {3}, {4, 2.5, 2});
  expect_tensor(pow(a, 2.0), {3}, {1, 4, 9});
  expect_tensor(pow(a, b), {3}, {1, 32, 729}, 1e-3);
  expect_tensor(maximum(a, tensor({2.f}, {1})), {3}, {2, 2, 3});
  expect_tensor(minimum(a, tensor({2.f}, {1})), {3}, {1, 2, 2});
  expect_tensor(2.0 - a, {3}, {1, 0, -1});
}

TEST_CASE("broadcasting: a bias over rows, a column over columns") {
  const Tensor x = tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  expect_tensor(x + tensor({10.f, 20.f, 30.f}, {3}), {2, 3}, {11, 22, 33, 14, 25, 36});
  expect_tensor(x * tensor({1.f, 10.f}, {2, 1}), {2, 3}, {1, 2, 3, 40, 50, 60});
  expect_tensor(tensor({1.f, 2.f}, {2, 1}) + tensor({10.f, 20.f, 30.f}, {1, 3}), {2, 3},
                {11, 21, 31, 12, 22, 32});
}

TEST_CASE("binary ops reject mismatched shapes and dtypes") {
  CHECK_THROWS_WITH_AS(Tensor::zeros({2, 3}) + Tensor::zeros({2}),
                       "add: shapes (2, 3) and (2,) cannot be broadcast together",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Tensor::zeros({2}) + Tensor::zeros({2}, DType::float64),
                       "add: dtypes differ: f32[2] and f64[2]", std::invalid_argument);
}

TEST_CASE("unary ops on literal values") {
  const Tensor x = tensor({-1.0, 0.0, 2.0}, {3});
  expect_tensor(neg(x), {3}, {1, 0, -2});
  expect_tensor(exp(x), {3}, {std::exp(-1.0), 1, std::exp(2.0)}, 1e-12);
  expect_tensor(relu(x), {3}, {0, 0, 2});
  expect_tensor(sigmoid(x), {3}, {1 / (1 + std::exp(1.0)), 0.5, 1 / (1 + std::exp(-2.0))}, 1e-12);
  expect_tensor(tanh(x), {3}, {std::tanh(-1.0), 0, std::tanh(2.0)}, 1e-12);
  expect_tensor(gelu(x), {3}, {-0.15865525393145707, 0, 1.9544997361036416}, 1e-12);
  expect_tensor(gelu_tanh(x), {3}, {-0.15880800939172324, 0, 1.9545976940877772}, 1e-12);
  expect_tensor(log(tensor({1.0, std::exp(1.0)}, {2})), {2}, {0, 1}, 1e-12);
  expect_tensor(sqrt(tensor({4.0, 9.0}, {2})), {2}, {2, 3});
  expect_tensor(abs(x), {3}, {1, 0, 2});
  expect_tensor(expm1(x), {3}, {std::expm1(-1.0), 0, std::expm1(2.0)}, 1e-15);
  expect_tensor(softplus(x), {3}, {std::log(1 + std::exp(-1.0)), std::log(2.0), std::log(1 + std::exp(2.0))}, 1e-15);
}

TEST_CASE("expm1 is exact near 0 and softplus does not overflow") {
  // eˣ − 1 by exp loses everything below float64's epsilon; expm1 keeps x.
  CHECK(expm1(tensor({1e-20}, {1})).to_doubles()[0] == 1e-20);
  CHECK((exp(tensor({1e-20}, {1})) - 1.0).to_doubles()[0] == 0.0);
  expect_tensor(softplus(tensor({1000.f, -1000.f, 30.f}, {3})), {3}, {1000, 0, 30}, 1e-6);
  expect_tensor(softplus(tensor({-800.0}, {1})), {1}, {std::exp(-800.0)}, 1e-300);
  for (const double v : softplus(tensor({1000.f, -1000.f}, {2})).to_doubles()) CHECK(std::isfinite(v));
}

TEST_CASE("comparisons give bool tensors") {
  const Tensor a = tensor({1, 2, 3}, {3}), b = tensor({2}, {1});
  expect_tensor(equal(a, b), {3}, {0, 1, 0});
  expect_tensor(less(a, b), {3}, {1, 0, 0});
  expect_tensor(greater(a, b), {3}, {0, 0, 1});
  expect_tensor(not_equal(a, b), {3}, {1, 0, 1});
  CHECK(equal(a, b).dtype() == DType::bool_);
  expect_tensor(logical_not(equal(a, b)), {3}, {1, 0, 1});
}

TEST_CASE("logical_and broadcasts two masks, as PyTorch's padding_mask & nopeak_mask") {
  const Tensor padding = greater(tensor({5, 7, 0, 3, 0, 0}, {2, 1, 3}), tensor({0}, {1}));   // (B 2, 1, L 3)
  const Tensor causal = greater(tensor({1, 0, 0, 1, 1, 0, 1, 1, 1}, {1, 3, 3}), tensor({0}, {1}));
  expect_tensor(logical_and(padding, causal), {2, 3, 3},
                {1, 0, 0, 1, 1, 0, 1, 1, 0,     // row 0: key 2 is padding
                 1, 0, 0, 1, 0, 0, 1, 0, 0});   // row 1: keys 1 and 2 are padding
  CHECK_THROWS_WITH_AS(logical_and(padding, tensor({1}, {1})), doctest::Contains("needs two bool tensors"),
                       std::invalid_argument);
}

TEST_CASE("gradients of binary ops, with broadcasting") {
  const Tensor x = randn({2, 3}, 1), y = randn({2, 3}, 2), b = randn({3}, 3), c = randn({2, 1}, 4);
  expect_gradients([](const V& v) { return v[0] + v[1]; }, {x, b});
  expect_gradients([](const V& v) { return v[0] - v[1]; }, {x, c});
  expect_gradients([](const V& v) { return v[0] * v[1]; }, {x, b});
  expect_gradients([](const V& v) { return v[0] / v[1]; }, {x, c});
  expect_gradients([](const V& v) { return v[0] / v[1]; }, {x, y});
  expect_gradients([](const V& v) { return maximum(v[0], v[1]); }, {x, y});
  expect_gradients([](const V& v) { return minimum(v[0], v[1]); }, {x, y});
  expect_gradients([](const V& v) { return minimum(v[0], v[1]); }, {x, b});
  expect_gradients([](const V& v) { return pow(exp(v[0]), v[1]); }, {x, b});
  expect_gradients([](const V& v) { return v[0] * 3.0 - 1.0 / v[0]; }, {x});
}

TEST_CASE("gradients of unary ops") {
  const Tensor x = randn({3, 4}, 5);
  expect_gradients([](const V& v) { return neg(v[0]); }, {x});
  expect_gradients([](const V& v) { return exp(v[0]); }, {x});
  expect_gradients([](const V& v) { return log(exp(v[0]) + 1.0); }, {x});
  expect_gradients([](const V& v) { return sqrt(v[0] * v[0] + 1.0); }, {x});
  expect_gradients([](const V& v) { return pow(v[0] * v[0] + 1.0, 1.5); }, {x});
  expect_gradients([](const V& v) { return tanh(v[0]); }, {x});
  expect_gradients([](const V& v) { return sigmoid(v[0]); }, {x});
  expect_gradients([](const V& v) { return relu(v[0]); }, {x});
  expect_gradients([](const V& v) { return gelu(v[0]); }, {x});
  expect_gradients([](const V& v) { return gelu_tanh(v[0]); }, {x});
  expect_gradients([](const V& v) { return abs(v[0]); }, {x});
  expect_gradients([](const V& v) { return expm1(v[0]); }, {x});
  expect_gradients([](const V& v) { return softplus(v[0] * 10.0); }, {x});
}

TEST_CASE("stop_gradient blocks the gradient") {
  Tensor x = tensor({2.0}, {1}).requires_grad_();
  expect_tensor(grad(sum(x * stop_gradient(x)), {x})[0], {1}, {2});
}

TEST_CASE("ops on meta tensors compute shapes only") {
  const Tensor m = Tensor::meta({2, 3});
  const Tensor r = exp(m) + Tensor::zeros({3});
  CHECK(r.is_meta());
  CHECK(r.shape() == Shape{2, 3});
}

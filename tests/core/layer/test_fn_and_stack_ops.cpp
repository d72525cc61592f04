#include <doctest/doctest.h>

#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("Fn: n_in from the function's arity, n_out given") {
  CHECK(Fn("Zero", []() { return Tensor::zeros({1}); })->n_in() == 0);
  CHECK(Fn("Neg", [](const Tensor& x) { return -x; })->n_in() == 1);
  CHECK(Fn("Sub", [](const Tensor& a, const Tensor& b) { return a - b; })->n_in() == 2);
  auto halves = Fn("Halves", [](const Tensor& x) { return split(x, 2); }, 2);
  CHECK(halves->n_out() == 2);
  auto out = init_and_run(halves, {v({1, 2, 3, 4})});
  expect_tensor(out[1], {2}, {3, 4});
}

TEST_CASE("Fn returning one Tensor cannot promise two outputs") {
  CHECK_THROWS_AS(Fn("Neg", [](const Tensor& x) { return -x; }, 2), std::invalid_argument);
}

TEST_CASE("Fn is differentiable through its ops") {
  auto f = Fn("Cube", [](const Tensor& x) { return x * x * x; });
  f->init(ShapeDtype{{3}, DType::float64});
  expect_gradients([f](const Stack& x) { return (*f)(x); }, {randn({3})});
}

TEST_CASE("Dup, Drop, Swap") {
  auto d = init_and_run(Dup(), {v({1}), v({9})});
  REQUIRE(d.size() == 3);
  expect_tensor(d[1], {1}, {1});
  auto dr = init_and_run(Drop(), {v({1}), v({9})});
  REQUIRE(dr.size() == 1);
  expect_tensor(dr[0], {1}, {9});
  auto s = init_and_run(Swap(), {v({1}), v({2})});
  expect_tensor(s[0], {1}, {2});
  expect_tensor(s[1], {1}, {1});
}

TEST_CASE("Add, Multiply, SubtractTop") {
  expect_tensor(init_and_run(Add(), {v({1}), v({2})})[0], {1}, {3});
  expect_tensor(init_and_run(Multiply(), {v({3}), v({2})})[0], {1}, {6});
  expect_tensor(init_and_run(SubtractTop(), {v({1}), v({5})})[0], {1}, {4});   // x1 - x0
}

TEST_CASE("Concatenate and Split") {
  auto c = Concatenate(3);
  CHECK(c->n_in() == 3);
  expect_tensor(init_and_run(c, {v({1}), v({2, 3}), v({4})})[0], {4}, {1, 2, 3, 4});
  auto c0 = init_and_run(Concatenate(2, 0), {tensor({1.f, 2.f}, {1, 2}), tensor({3.f, 4.f}, {1, 2})});
  expect_tensor(c0[0], {2, 2}, {1, 2, 3, 4});
  auto s = init_and_run(Split(2), {v({1, 2, 3, 4})});
  REQUIRE(s.size() == 2);
  expect_tensor(s[0], {2}, {1, 2});
}

TEST_CASE("Serial(Dup(), Parallel(Dense-like Fn, Fn), Add()) builds, runs and differentiates") {
  const Tensor W = randn({3, 3}, 4);
  auto model = Serial(Dup(), Parallel(Fn("DenseLike", [W](const Tensor& x) { return matmul(x, W); }),
                                      Fn("Tanh", [](const Tensor& x) { return tanh(x); })),
                      Add());
  CHECK(model->n_in() == 1);
  CHECK(model->n_out() == 1);
  model->init(ShapeDtype{{2, 3}, DType::float64});
  const Tensor x = randn({2, 3}, 5);
  expect_close((*model)(x), matmul(x, W) + tanh(x), 1e-12);
  expect_gradients([model](const Stack& s) { return (*model)(s); }, {x});
}

TEST_CASE("SerialWithSideOutputs puts each layer's side output under the stack it works on") {
  // F(a, b) = (a + b, 10·b): one main and one side output.
  const auto f = [] { return Fn("F", [](TensorArg a, TensorArg b) { return Stack{a + b, b * 10.0}; }, 2); };
  auto layer = SerialWithSideOutputs({f(), f()});
  // (1, 2, 3) → F → (3, 20, 3) → side output down → (3, 3, 20) → F → (6, 30, 20) → (6, 20, 30)
  const Stack out = init_and_run(layer, {v({1}), v({2}), v({3})});
  CHECK(layer->n_in() == 3);
  CHECK(layer->n_out() == 3);
  REQUIRE(out.size() == 3);
  expect_tensor(out[0], {1}, {6});
  expect_tensor(out[1], {1}, {20});
  expect_tensor(out[2], {1}, {30});
}

TEST_CASE("Gate: g·m + (1 − g)·c on (memory, gate, candidate)") {
  auto gate = Gate();
  const Stack out = init_and_run(gate, {v({1, 2}), v({0.25, 1}), v({5, 6})});
  CHECK(gate->n_in() == 3);
  expect_tensor(out[0], {2}, {0.25 * 1 + 0.75 * 5, 2});
  gate->init(Signature{ShapeDtype{{2, 3}, DType::float64}, ShapeDtype{{2, 3}, DType::float64},
                       ShapeDtype{{2, 3}, DType::float64}});
  expect_layer_gradients(gate, {randn({2, 3}, 1), randn({2, 3}, 2), randn({2, 3}, 3)});
}

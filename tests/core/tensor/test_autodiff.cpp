#include <doctest/doctest.h>

#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;

TEST_CASE("grad of a simple expression") {
  Tensor w = tensor({1.0, 2.0, 3.0}, {3}).requires_grad_();
  auto g = grad(sum(w * w), {w});
  expect_tensor(g[0], {3}, {2, 4, 6});
}

TEST_CASE("a tensor used twice gets the sum of both gradients") {
  Tensor x = tensor({3.0}, {1}).requires_grad_();
  Tensor y = sum(x * 2.0 + x * 5.0);   // dy/dx = 7
  expect_tensor(grad(y, {x})[0], {1}, {7});
}

TEST_CASE("a diamond graph accumulates through both paths") {
  Tensor x = tensor({2.0}, {1}).requires_grad_();
  Tensor a = exp(x), b = a * a;          // y = a + a² with a = e^x: dy/dx = a + 2a²
  Tensor y = sum(a + b);
  const double e2 = std::exp(2.0);
  expect_tensor(grad(y, {x})[0], {1}, {e2 + 2 * e2 * e2}, 1e-9);
}

TEST_CASE("an input the value does not depend on gets zeros") {
  Tensor x = tensor({1.0}, {1}).requires_grad_();
  Tensor z = tensor({1.0, 2.0}, {2}).requires_grad_();
  expect_tensor(grad(sum(x * 3.0), {x, z})[1], {2}, {0, 0});
}

TEST_CASE("grad hands each gradient over as soon as it is complete, unused inputs last with zeros") {
  // y = (x0·x1)·x2 + x2: x2's uses are processed first, then x1's and x0's (one product); z unused.
  Tensor x0 = tensor({2.0}, {1}).requires_grad_(), x1 = tensor({3.0}, {1}).requires_grad_(),
         x2 = tensor({5.0}, {1}).requires_grad_(), z = tensor({1.0, 1.0}, {2}).requires_grad_();
  const Tensor p = x0 * x1, y = sum(p * x2 + x2);
  std::vector<std::size_t> order;
  std::vector<double> values(5, -1);
  const auto g = grad(y, {x0, x1, x2, z, x0}, {.on_ready = [&](std::size_t i, const Tensor& gi) {
                                                 order.push_back(i);
                                                 values[i] = gi.to_doubles()[0];
                                               }});
  REQUIRE(order.size() == 5);
  CHECK(order[0] == 2);                       // dy/dx2 = x0·x1 + 1 = 7, complete before the product's
  CHECK(order.back() == 3);                   // z: never reached, handed over at the end
  CHECK(values == std::vector<double>{15, 10, 7, 0, 15});   // dy/dx0 = x1·x2, dy/dx1 = x0·x2; x0 twice
  for (std::size_t i = 0; i < 5; ++i) CHECK(g[i].to_doubles()[0] == values[i]);
}

TEST_CASE("NoGrad records nothing") {
  Tensor x = tensor({1.0}, {1}).requires_grad_();
  Tensor y;
  CHECK(grad_enabled());
  {
    NoGrad no_grad;
    CHECK_FALSE(grad_enabled());
    {
      NoGrad nested;
    }
    CHECK_FALSE(grad_enabled());   // an inner scope restores what it found
    y = x * 2.0;
  }
  CHECK(grad_enabled());
  CHECK_FALSE(y.requires_grad());
  CHECK_THROWS_AS(grad(sum(y), {x}), std::invalid_argument);
}

TEST_CASE("the tape is freed after grad unless retained") {
  Tensor x = tensor({1.0}, {1}).requires_grad_();
  Tensor y = sum(exp(x));
  grad(y, {x});
  CHECK_THROWS_AS(grad(y, {x}), std::logic_error);

  Tensor y2 = sum(exp(x));
  auto g1 = grad(y2, {x}, {.retain_graph = true});
  auto g2 = grad(y2, {x});
  expect_close(g1[0], g2[0]);
}

TEST_CASE("grad of a non-scalar needs a seed") {
  Tensor x = tensor({1.0, 2.0}, {2}).requires_grad_();
  CHECK_THROWS_AS(grad(x * 3.0, {x}), std::invalid_argument);
  expect_tensor(grad(x * 3.0, {x}, {.seed = tensor({1.0, 10.0}, {2})})[0], {2}, {3, 30});
}

TEST_CASE("gradient with respect to an intermediate value") {
  Tensor x = tensor({1.0, 2.0}, {2}).requires_grad_();
  Tensor h = x * 3.0;
  auto g = grad(sum(h * h), {h, x});
  expect_tensor(g[0], {2}, {6, 12});
  expect_tensor(g[1], {2}, {18, 36});
}

TEST_CASE("value_and_grad differentiates tensors that did not require grad") {
  const Tensor x = tensor({1.0, 2.0}, {2});
  auto [value, grads] = value_and_grad([](const std::vector<Tensor>& a) { return sum(a[0] * a[0]); }, {x});
  CHECK(value.item() == 5);
  expect_tensor(grads[0], {2}, {2, 4});
  CHECK_FALSE(x.requires_grad());
}

TEST_CASE("integer tensors cannot require a gradient") {
  Tensor ids = tensor({1, 2}, {2});
  CHECK_THROWS_AS(ids.requires_grad_(), std::invalid_argument);
}

TEST_CASE("the gradient checker catches a wrong gradient") {
  // sigmoid's derivative is not tanh's: a function that computes sigmoid but whose values are
  // compared against a finite difference of something else must fail. We fake it by checking a
  // function whose backward is deliberately wrong: stop_gradient hides half of x·x.
  auto wrong = [](const std::vector<Tensor>& x) { return sum(x[0] * stop_gradient(x[0])); };
  const auto r = check_gradients(StackFn([&](const std::vector<Tensor>& x) { return std::vector<Tensor>{wrong(x)}; }),
                                 {randn({3})});
  CHECK_FALSE(r.ok);
  CHECK(r.max_relative_error > 0.1);
}

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

TEST_CASE("an input changed in place after its op ran is refused by grad, not differentiated at its new values") {
  // y = Σ w·w·x: the product w·w keeps w for its backward pass (2w·g). Overwriting w before grad
  // would give 2·w_new·x in silence; PyTorch refuses it ("modified by an inplace operation").
  Tensor w = tensor({1.0, 1.0}, {2}).requires_grad_();
  const Tensor x = tensor({1.0, 2.0}, {2});
  const Tensor y = sum(w * w * x);
  const std::uint64_t before = w.version();
  w.copy_from(tensor({5.0, 5.0}, {2}));   // as an optimizer's update between the pass and grad
  CHECK(w.version() == before + 1);
  CHECK_THROWS_WITH_AS(grad(y, {w}),
                       "grad: an input of mul (f64[2], f64[2]) was changed in place after the op used it (an "
                       "optimizer's update, copy_from, a write through data<T>()), so its gradient would be computed "
                       "from the new values: differentiate before changing it, or give the op a clone()",
                       std::logic_error);
  // A pass run after the change differentiates as usual; so does a tensor changed before its ops ran.
  expect_tensor(grad(sum(w * w * x), {w})[0], {2}, {10, 20});
  // Writes through data<T>() count when said so (changed_in_place), as the optimizers do; an
  // input that needs no gradient of its own counts too (the op kept it: w's gradient is x).
  Tensor input = x.clone();
  const Tensor u = sum(w * input), z = sum(w * x);
  input.data<double>()[0] = 7;
  input.changed_in_place();
  CHECK_THROWS_AS(grad(u, {w}), std::logic_error);
  expect_tensor(grad(z, {w})[0], {2}, {1, 2});   // x, which z's op kept, is unchanged
}

TEST_CASE("a change in place through another handle of the same memory is a change of the tensor") {
  // The count lives with the memory, not the handle: a view written to (reshape_view, detach) changes
  // what the op kept just as well.
  Tensor w = tensor({1.0, 1.0}, {2}).requires_grad_();
  const Tensor x = tensor({1.0, 2.0}, {2});
  Tensor flat = reshape_view(w, {1, 2}), alias = w.detach();
  const Tensor y = sum(w * w * x), z = sum(w * x);
  CHECK(flat.version() == w.version());
  flat.copy_from(tensor({5.0, 5.0}, {1, 2}));
  CHECK(w.version() == alias.version());
  CHECK_THROWS_AS(grad(y, {w}), std::logic_error);
  alias.data<double>()[1] = 3;
  alias.changed_in_place();
  CHECK_THROWS_AS(grad(z, {w}), std::logic_error);
  // A copy is memory of its own: changing it changes nothing the tape kept.
  const Tensor u = sum(w * x);
  Tensor copy = w.clone();
  copy.copy_from(x);
  expect_tensor(grad(u, {w})[0], {2}, {1, 2});
  CHECK(Tensor::meta({2}).version() == 0);
}

TEST_CASE("a diamond graph accumulates through both paths") {
  Tensor x = tensor({2.0}, {1}).requires_grad_();
  Tensor a = exp(x), b = a * a;          // y = a + a² with a = e^x: dy/dx = a + 2a²
  Tensor y = sum(a + b);
  const double e2 = std::exp(2.0);
  expect_tensor(grad(y, {x})[0], {1}, {e2 + 2 * e2 * e2}, 1e-9);
}

namespace {
constexpr OpDef kTwiceInto{"twice_into", profile::Family::elementwise};
// 2x, whose backward adds its share 2g into the gradient so far when grad offers it (autodiff.hpp),
// and says whether it was offered.
Tensor twice_into(const Tensor& x, bool& offered) {
  return record(kTwiceInto, x * 2.0, {x}, [&offered](const Tensor& g, std::span<const Tensor> into) {
    offered = into[0].defined();
    if (!offered) return std::vector<Tensor>{g * 2.0};
    Tensor sum_so_far = into[0];
    double* s = sum_so_far.data<double>();
    const double* pg = g.data<double>();
    for (std::int64_t i = 0; i < g.numel(); ++i) s[i] += 2 * pg[i];
    return std::vector<Tensor>{sum_so_far};
  });
}
}  // namespace

TEST_CASE("an op adds its share into the gradient so far when grad alone holds it") {
  // y = Σ (2x + 3x): the product's gradient (3) reaches x first and is grad's alone; twice_into adds 2.
  Tensor x = tensor({1.0, -2.0}, {2}).requires_grad_();
  bool offered = false;
  Tensor y = sum(twice_into(x, offered) + x * 3.0);
  expect_tensor(grad(y, {x})[0], {2}, {5, 5});
  CHECK(offered);
  // The first use to send a gradient has nothing to add into.
  bool first = true;
  Tensor z = tensor({1.0, 2.0}, {2}).requires_grad_();
  expect_tensor(grad(sum(twice_into(z, first)), {z})[0], {2}, {2, 2});
  CHECK_FALSE(first);
}

TEST_CASE("a gradient another tensor's gradient shares is never added into") {
  // y = Σ (2x + (x + u)): add hands one tensor to x and u alike; twice_into, later, must not add
  // into x's gradient in place — u's would change with it.
  Tensor x = tensor({1.0, 2.0}, {2}).requires_grad_(), u = tensor({3.0, 4.0}, {2}).requires_grad_();
  bool offered = true;
  Tensor y = sum(twice_into(x, offered) + (x + u));
  const auto g = grad(y, {x, u});
  CHECK_FALSE(offered);
  expect_tensor(g[0], {2}, {3, 3});
  expect_tensor(g[1], {2}, {1, 1});
  // Nor the seed, which the caller holds.
  Tensor a = tensor({1.0, 2.0}, {2}).requires_grad_();
  bool seed_offered = true;
  const Tensor seed = tensor({1.0, 1.0}, {2});
  grad(twice_into(a, seed_offered) + a, {a}, {.seed = seed});
  CHECK_FALSE(seed_offered);
  expect_tensor(seed, {2}, {1, 1});
}

TEST_CASE("a layer's input read by three linears and a residual's LayerNorm gets the sum of its uses' gradients") {
  // The Q, K, V projections add dx into x's gradient (BLAS's beta = 1), LayerNorm its dx into the
  // shortcut's: the same sums as matmul + add, which add nothing in place.
  for (DType dtype : {DType::float64, DType::float32}) {
    const auto r = [&](const Shape& shape, std::uint64_t seed) { return randn(shape, seed).to(dtype); };
    const Tensor x = r({3, 70, 16}, 31), scale = r({16}, 32), shift = r({16}, 33);
    std::vector<Tensor> ws, bs;
    for (int i = 0; i < 3; ++i) {
      ws.push_back(r({16, 16}, 40 + i).requires_grad_());
      bs.push_back(r({16}, 50 + i).requires_grad_());
    }
    const Tensor c = r({3, 70, 16}, 34), c2 = r({3, 70, 16}, 35);
    // x + (h·w0 + b0) with h = LayerNorm(x), and h's two other projections: h's gradient starts
    // as one projection's dx, the others add theirs into it; the shortcut's reaches x first.
    const auto loss = [&](const Tensor& xi, bool fused) {
      const Tensor h = layer_norm(xi, scale, shift);
      const auto project = [&](int i) { return fused ? linear(h, ws[i], bs[i]) : matmul(h, ws[i]) + bs[i]; };
      return sum((xi + project(0)) * c2) + sum(project(1) * c) + sum(project(2) * c);
    };
    Tensor xa = x.clone().requires_grad_(), xb = x.clone().requires_grad_();
    const auto ga = grad(loss(xa, true), {xa, ws[0], bs[2]}), gb = grad(loss(xb, false), {xb, ws[0], bs[2]});
    const double tol = dtype == DType::float64 ? 1e-12 : 1e-4;
    for (std::size_t i = 0; i < ga.size(); ++i) expect_close(ga[i], gb[i], tol);
  }
  expect_gradients(
      [](const std::vector<Tensor>& v) {
        const Tensor h = layer_norm(v[0], v[1], v[2]);
        return v[0] + h + linear(h, v[3], v[4]) + linear(h, v[5], v[6]);
      },
      {randn({2, 3, 4}, 60), randn({4}, 61), randn({4}, 62), randn({4, 4}, 63), randn({4}, 64), randn({4, 4}, 65),
       randn({4}, 66)});
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

#include <doctest/doctest.h>

#include "layers/activations.hpp"
#include "layers/dense.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("Cache runs its layer once, then replays the stored outputs") {
  int calls = 0;
  auto counted = Fn("Counted", [&calls](const Tensor& x) { ++calls; return x * 2.0; });
  auto c = Cache(counted);
  c->init(ShapeDtype{{1}});   // shape inference runs f on meta tensors, but caches nothing
  calls = 0;
  expect_tensor((*c)(v({1})), {1}, {2});
  expect_tensor((*c)(v({5})), {1}, {2});   // same outputs, whatever the input
  CHECK(calls == 1);
  c->init(ShapeDtype{{1}});                // re-initialising empties the cache
  calls = 0;
  expect_tensor((*c)(v({5})), {1}, {10});
  CHECK(calls == 1);
}

TEST_CASE("Cache is transparent in weight names: its layer is named as if in Cache's place") {
  auto plain = Serial(Relu(), Dense(2));
  auto wrapped = Serial(Relu(), Cache(Dense(2)));
  plain->init(ShapeDtype{{1, 3}});
  wrapped->init(ShapeDtype{{1, 3}});
  REQUIRE(wrapped->named_weights().size() == 2);
  CHECK(wrapped->named_weights()[0].first == "Serial/Dense_2[1]/w");
  CHECK(wrapped->named_weights()[0].first == plain->named_weights()[0].first);
  CHECK(wrapped->named_weights()[1].first == plain->named_weights()[1].first);
}

TEST_CASE("Scan runs a cell along an axis, threading the carry (a running sum)") {
  // cell: (x_t, carry) -> (carry + x_t, carry + x_t)
  auto cell = Fn("Cell", [](const Tensor& x, const Tensor& c) { return Stack{c + x, c + x}; }, 2);
  auto scan = Scan(cell, /*axis=*/0, /*n_carry=*/1);
  CHECK(scan->n_in() == 2);
  CHECK(scan->n_out() == 2);
  auto out = init_and_run(scan, {tensor({1.f, 10.f, 2.f, 20.f, 3.f, 30.f}, {3, 2}), v({0, 100})});
  REQUIRE(out.size() == 2);
  expect_tensor(out[0], {3, 2}, {1, 110, 3, 130, 6, 160});
  expect_tensor(out[1], {2}, {6, 160});
}

TEST_CASE("Scan with no carry maps over the axis") {
  auto scan = Scan(Fn("Double", [](const Tensor& x) { return x * 2.0; }), 1, 0);
  expect_tensor(init_and_run(scan, {tensor({1.f, 2.f, 3.f, 4.f}, {2, 2})})[0], {2, 2}, {2, 4, 6, 8});
}

TEST_CASE("Scan in predict mode continues from the stored carry") {
  auto cell = Fn("Cell", [](const Tensor& x, const Tensor& c) { return Stack{c + x, c + x}; }, 2);
  auto scan = Scan(cell, 0, 1, Mode::predict);
  scan->init({ShapeDtype{{2, 1}}, ShapeDtype{{1}}});
  auto first = (*scan)(Stack{tensor({1.f, 2.f}, {2, 1}), v({0})});
  expect_tensor(first[1], {1}, {3});
  auto second = (*scan)(Stack{tensor({4.f, 5.f}, {2, 1}), v({0})});   // carry 3 is kept
  expect_tensor(second[0], {2, 1}, {7, 12});
}

TEST_CASE("Scan is differentiable") {
  auto cell = Fn("Cell", [](const Tensor& x, const Tensor& c) { return Stack{tanh(c * x), c * x + x}; }, 2);
  auto scan = Scan(cell, 0, 1);
  scan->init({ShapeDtype{{3, 2}, DType::float64}, ShapeDtype{{2}, DType::float64}});
  expect_gradients([scan](const Stack& s) { return (*scan)(s); }, {randn({3, 2}, 1), randn({2}, 2)});
}

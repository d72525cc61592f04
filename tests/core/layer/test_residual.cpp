#include <doctest/doctest.h>

#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;


TEST_CASE("Residual(F) computes x + F(x)") {
  auto r = Residual(Times(3));
  CHECK(r->n_in() == 1);
  CHECK(r->n_out() == 1);
  expect_tensor(init_and_run(r, {v({2})})[0], {1}, {8});
}

TEST_CASE("several layers are composed first") {
  expect_tensor(init_and_run(Residual(Times(2), Times(5)), {v({1})})[0], {1}, {11});
}

TEST_CASE("Residual around a 2-in/2-out body passes the extra output through") {
  // Like attention on (x, mask): the body returns (F(x, mask), mask).
  auto body = Fn("MaskedTimes", [](const Tensor& x, const Tensor& m) { return Stack{x * m, m}; }, 2);
  auto r = Residual(body);
  CHECK(r->n_in() == 2);
  CHECK(r->n_out() == 2);
  auto out = init_and_run(r, {v({2, 3}), v({10, 0}), v({7})});
  REQUIRE(out.size() == 3);
  expect_tensor(out[0], {2}, {22, 3});   // x + x·mask
  expect_tensor(out[1], {2}, {10, 0});   // the mask, passed through by the body
  expect_tensor(out[2], {1}, {7});       // deeper items untouched
}

TEST_CASE("a shortcut replaces the identity") {
  auto r = ResidualWithShortcut(Times(3), Times(-1));
  expect_tensor(init_and_run(r, {v({2})})[0], {1}, {4});   // -x + 3x
}

TEST_CASE("Residual is Serial(Branch(None, F), Add) as in Trax") {
  auto r = Residual(Times(3));
  CHECK(r->name() == "Serial");
  REQUIRE(r->sublayers().size() == 2);
  CHECK(r->sublayers()[0]->name() == "Branch");
  CHECK(r->sublayers()[1]->name() == "Add");
}

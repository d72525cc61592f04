#include <doctest/doctest.h>

#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

namespace {
LayerPtr Sum3() {
  return Fn("Sum3", [](const Tensor& a, const Tensor& b, const Tensor& c) { return a + b + c; });
}
LayerPtr Pair() {  // 2 → 2: (a, b) -> (a - b, a * b)
  return Fn("Pair", [](const Tensor& a, const Tensor& b) { return Stack{a - b, a * b}; }, 2);
}
}  // namespace

TEST_CASE("Select: n_in defaults to max index + 1") {
  CHECK(Select({0, 0})->n_in() == 1);
  CHECK(Select({0, 0})->n_out() == 2);
  CHECK(Select({1, 0})->n_in() == 2);
  CHECK(Select({2})->n_in() == 3);
  CHECK(Select({0}, 3)->n_in() == 3);
}

TEST_CASE("Select copies, reorders and drops; deeper items are untouched") {
  auto out = init_and_run(Select({2, 0, 0}), {v({1}), v({2}), v({3}), v({4})});
  REQUIRE(out.size() == 4);
  expect_tensor(out[0], {1}, {3});
  expect_tensor(out[1], {1}, {1});
  expect_tensor(out[2], {1}, {1});
  expect_tensor(out[3], {1}, {4});
  auto kept = init_and_run(Select({0}, 3), {v({1}), v({2}), v({3})});
  REQUIRE(kept.size() == 1);
  expect_tensor(kept[0], {1}, {1});
}

TEST_CASE("Select rejects an index outside n_in") {
  CHECK_THROWS_AS(Select({3}, 2), std::invalid_argument);
}

TEST_CASE("Parallel gives each sublayer its span; arities add up") {
  auto p = Parallel(Times(2), Sum3(), Pair());
  CHECK(p->n_in() == 6);
  CHECK(p->n_out() == 4);
  auto out = init_and_run(p, {v({1}), v({2}), v({3}), v({4}), v({10}), v({5}), v({99})});
  REQUIRE(out.size() == 5);
  expect_tensor(out[0], {1}, {2});      // Times(1)
  expect_tensor(out[1], {1}, {9});      // 2 + 3 + 4
  expect_tensor(out[2], {1}, {5});      // 10 - 5
  expect_tensor(out[3], {1}, {50});     // 10 * 5
  expect_tensor(out[4], {1}, {99});     // passed through
}

TEST_CASE("Parallel: None is identity, a list is a Serial") {
  auto p = Parallel(nullptr, LayerList{Times(2), Times(3)});
  auto out = init_and_run(p, {v({1}), v({1})});
  expect_tensor(out[0], {1}, {1});
  expect_tensor(out[1], {1}, {6});
}

TEST_CASE("Parallel needs two sublayers that take inputs") {
  CHECK_THROWS_AS(Parallel(Times(2)), std::invalid_argument);
  CHECK_THROWS_AS(Parallel(Times(2), Fn("Const", []() { return Tensor::zeros({1}); })),
                  std::invalid_argument);
}

TEST_CASE("Branch(F[1→1], G[3→1], H[2→2]) on (a, b, c) yields F(a), G(a,b,c), H(a,b)") {
  auto b = Branch(Times(10), Sum3(), Pair());
  CHECK(b->n_in() == 3);
  CHECK(b->n_out() == 4);
  auto out = init_and_run(b, {v({1}), v({2}), v({3})});
  REQUIRE(out.size() == 4);
  expect_tensor(out[0], {1}, {10});
  expect_tensor(out[1], {1}, {6});
  expect_tensor(out[2], {1}, {-1});
  expect_tensor(out[3], {1}, {2});
}

TEST_CASE("Branch with None keeps a copy of the input") {
  auto out = init_and_run(Branch(nullptr, Times(3)), {v({2})});
  REQUIRE(out.size() == 2);
  expect_tensor(out[0], {1}, {2});
  expect_tensor(out[1], {1}, {6});
}

TEST_CASE("Branch of one layer is that layer") {
  auto t = Times(2);
  CHECK(Branch(t) == t);
}

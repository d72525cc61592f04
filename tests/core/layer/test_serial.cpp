#include <doctest/doctest.h>

#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

namespace {
LayerPtr AddOne() { return Fn("AddOne", [](const Tensor& x) { return x + 1.0; }); }
}  // namespace

TEST_CASE("running-max rule: n_in is the deepest reach, n_out what is left") {
  CHECK(Serial(Dup(), Add())->n_in() == 1);           // 1→2, 2→1
  CHECK(Serial(Dup(), Add())->n_out() == 1);
  CHECK(Serial(Add(), Add())->n_in() == 3);           // (a, b, c) -> a + b + c
  CHECK(Serial(Add(), Add())->n_out() == 1);
  CHECK(Serial(Drop(), Drop())->n_in() == 2);
  CHECK(Serial(Drop(), Drop())->n_out() == 0);
  CHECK(Serial(Dup(), Dup())->n_out() == 3);
  CHECK(Serial(Select({0, 1, 1}), Add())->n_in() == 2);
  CHECK(Serial(Select({0, 1, 1}), Add())->n_out() == 2);
}

TEST_CASE("an empty Serial and Serial(None) are the identity") {
  CHECK(Serial()->n_in() == 1);
  CHECK(Serial()->n_out() == 1);
  CHECK(Serial(nullptr)->sublayers().empty());
  expect_tensor(init_and_run(Serial(), {v({1, 2})})[0], {2}, {1, 2});
}

TEST_CASE("applies sublayers in order on the stack") {
  auto out = init_and_run(Serial(Add(), Add()), {v({1}), v({10}), v({100})});
  REQUIRE(out.size() == 1);
  expect_tensor(out[0], {1}, {111});
}

TEST_CASE("extra stack items pass through untouched, after the outputs") {
  auto model = Serial(AddOne(), AddOne());
  auto out = init_and_run(model, {v({1}), v({7}), v({8})});
  REQUIRE(out.size() == 3);
  expect_tensor(out[0], {1}, {3});
  expect_tensor(out[1], {1}, {7});
  expect_tensor(out[2], {1}, {8});
}

TEST_CASE("lists are flattened; a nested Serial stays one sublayer") {
  auto inner = Serial(AddOne(), AddOne());
  auto model = Serial(AddOne(), LayerList{AddOne(), AddOne()}, inner);
  CHECK(model->sublayers().size() == 4);
  CHECK(model->sublayers()[3] == inner);
  expect_tensor(init_and_run(model, {v({0})})[0], {1}, {5});
}

TEST_CASE("braced lists are Trax's nested lists: flattened in place, {} and nullptr the identity branch") {
  const auto one = AddOne(), two = AddOne(), three = AddOne();
  auto model = Serial(one, {two, {three}});                // Trax: Serial(one, [two, [three]])
  REQUIRE(model->sublayers().size() == 3);
  CHECK(model->sublayers()[2] == three);
  expect_tensor(init_and_run(model, {v({0})})[0], {1}, {3});
  auto branch = Branch({}, {AddOne(), AddOne()});          // Trax: Branch([], [AddOne(), AddOne()])
  const Stack out = init_and_run(branch, {v({1})});
  expect_tensor(out[0], {1}, {1});
  expect_tensor(out[1], {1}, {3});
  expect_tensor(init_and_run(Parallel({AddOne()}, {}), {v({1}), v({5})})[1], {1}, {5});
  expect_tensor(init_and_run(Residual({AddOne(), AddOne()}), {v({1})})[0], {1}, {4});   // 1 + (1 + 2)
}

TEST_CASE("None inside a list is an error") {
  CHECK_THROWS_AS(Serial(AddOne(), LayerList{nullptr}), std::invalid_argument);
}

TEST_CASE("fewer inputs than n_in is an error in Trax's words") {
  auto model = Serial(Add(), Add());
  model->init({ShapeDtype{{1}}, ShapeDtype{{1}}, ShapeDtype{{1}}});
  CHECK_THROWS_WITH_AS((*model)(Stack{v({1}), v({2})}),
                       doctest::Contains("number of inputs (2) to Serial.forward less than n_in (3)"),
                       LayerError);
}

TEST_CASE("a Serial is a LayerPtr") {
  LayerPtr p = Serial(Dup(), Add());
  CHECK(p->name() == "Serial");
}

TEST_CASE("Serial, Branch, Parallel, Residual record the caller's line, or the site passed last") {
  const auto site = std::source_location::current();
  CHECK(Serial(AddOne(), AddOne(), site)->created_at().line() == site.line());
  CHECK(Branch(AddOne(), AddOne(), site)->created_at().line() == site.line());
  CHECK(Parallel(AddOne(), AddOne(), site)->created_at().line() == site.line());
  CHECK(Residual(AddOne(), site)->created_at().line() == site.line());
  const LayerPtr here = Serial(AddOne()); const auto line = std::source_location::current().line();
  CHECK(here->created_at().line() == line);
  CHECK(Serial(site)->n_in() == 1);   // no layers: the identity, created at `site`
}

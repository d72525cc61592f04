#include <doctest/doctest.h>

#include "core/train/adafactor.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::train;
using ctrax::testing::expect_tensor;

TEST_CASE("Adafactor on a matrix keeps row and column means of g^2") {
  // w = g = [[1, 2], [3, 4]]. Step 1: ρ = 0, so v_row = row means of g² = [2.5, 12.5],
  // v_col = column means = [5, 10]; y = g · (v_row / 7.5)^-½ · v_col^-½ (rms(y) = √0.96 < 1:
  // no clipping); w = (1 − 1e-5) w − 0.05 · rms(w) · y, rms(w) = √7.5.
  Tensor w = tensor({1.0, 2.0, 3.0, 4.0}, {2, 2});
  const Tensor g = tensor({1.0, 2.0, 3.0, 4.0}, {2, 2});
  auto opt = Adafactor();
  opt->update(1, 0.05, {w}, {g});
  REQUIRE(opt->slots()[0].size() == 2);
  CHECK(opt->slots()[0][0].name == "v_row");
  expect_tensor(opt->slots()[0][0].value, {2}, {2.5, 12.5}, 1e-12);
  expect_tensor(opt->slots()[0][1].value, {2}, {5.0, 10.0}, 1e-12);
  expect_tensor(w, {2, 2}, {0.8939239828220179, 1.84998, 2.857667505292423, 3.8657959213500126},
                1e-12);
  // Step 2, same gradient: ρ = 1 − 2^-0.8 mixes equal averages, so the slots stay put.
  opt->update(2, 0.05, {w}, {g});
  expect_tensor(w, {2, 2}, {0.7926749185752384, 1.7067863423588219, 2.7218110476776984,
                            3.737697509141945}, 1e-12);
}

TEST_CASE("Adafactor on a vector keeps a full second moment") {
  // Step 1: v = g² = 1, y = g; w = (1 − 1e-5) w − 0.05 · rms(w) · g, rms([3, 4]) = √12.5.
  Tensor w = tensor({3.0, 4.0}, {2});
  auto opt = Adafactor();
  opt->update(1, 0.05, {w}, {tensor({1.0, -1.0}, {2})});
  REQUIRE(opt->slots()[0].size() == 1);
  CHECK(opt->slots()[0][0].name == "v");
  expect_tensor(w, {2}, {2.8231933047033633, 4.176736695296637}, 1e-12);
}

TEST_CASE("Adafactor update clipping divides y by rms(y) / threshold") {
  // y = ±1 (rms 1); threshold 0.5 halves it.
  Tensor w = tensor({3.0, 4.0}, {2});
  Adafactor({.clipping_threshold = 0.5, .weight_decay_rate = 0.0})
      ->update(1, 0.05, {w}, {tensor({1.0, -1.0}, {2})});
  const double s = 0.05 * std::sqrt(12.5) / 2;
  expect_tensor(w, {2}, {3.0 - s, 4.0 + s}, 1e-12);
}

TEST_CASE("Adafactor with momentum adds slot m and factored=false keeps full v for matrices") {
  Tensor w = tensor({1.0, 2.0, 3.0, 4.0}, {2, 2});
  auto opt = Adafactor({.factored = false, .do_momentum = true, .beta1 = 0.9});
  opt->init({w});
  REQUIRE(opt->slots()[0].size() == 2);
  CHECK(opt->slots()[0][0].name == "v");
  CHECK(opt->slots()[0][0].value.shape() == Shape{2, 2});
  CHECK(opt->slots()[0][1].name == "m");
  // Step 1: y = sign(g) elementwise (v = g²), u = 0.05 · rms(w) · y; m = 0.1 u.
  opt->update(1, 0.05, {w}, {tensor({1.0, 1.0, 1.0, 1.0}, {2, 2})});
  const double u = 0.05 * std::sqrt(7.5);
  expect_tensor(opt->slots()[0][1].value, {2, 2}, {0.1 * u, 0.1 * u, 0.1 * u, 0.1 * u}, 1e-12);
}

TEST_CASE("Adafactor weight decay fades out over weight_decay_n_steps") {
  // Zero gradient → y = 0: only decay moves w. Step 5 of 10: wd = 0.1 · 0.5.
  Tensor w = tensor({1.0}, {1});
  Adafactor({.weight_decay_rate = 0.1, .weight_decay_n_steps = 10})
      ->update(5, 0.05, {w}, {tensor({0.0}, {1})});
  expect_tensor(w, {1}, {0.95}, 1e-12);
}

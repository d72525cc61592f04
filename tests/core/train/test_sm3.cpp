#include <doctest/doctest.h>

#include <cmath>

#include "core/tensor/random.hpp"
#include "core/train/sm3.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::train;
using ctrax::testing::expect_tensor;

TEST_CASE("SM3 on a vector is Adagrad with momentum: v += g², m = 0.9 m + 0.1 g / √v, w -= lr m") {
  // step 1, g = (3, 4): v = (9, 16), g / √v = (1, 1), m = (0.1, 0.1), w = (0.99, 1.99)
  // step 2, g = (0, 4): v = (9, 32), g / √v = (0, 4 / √32), m = (0.09, 0.09 + 0.4 / √32)
  Tensor w = tensor({1.0, 2.0}, {2});
  auto opt = SM3({.learning_rate = 0.1});
  opt->update(1, 0.1, {w}, {tensor({3.0, 4.0}, {2})});
  expect_tensor(w, {2}, {0.99, 1.99}, 1e-12);
  opt->update(2, 0.1, {w}, {tensor({0.0, 4.0}, {2})});
  expect_tensor(opt->slots()[0][1].value, {2}, {9.0, 32.0}, 1e-12);
  expect_tensor(opt->slots()[0][0].value, {2}, {0.09, 0.09 + 0.4 / std::sqrt(32.0)}, 1e-12);
  expect_tensor(w, {2}, {0.981, 1.99 - 0.1 * (0.09 + 0.4 / std::sqrt(32.0))}, 1e-12);
  CHECK(opt->slots()[0][0].name == "m");
  CHECK(opt->slots()[0][1].name == "v0");
}

TEST_CASE("SM3 on a matrix keeps one accumulator per row and per column, read as their minimum") {
  // μ = 0 and lr = 1: the step is g / √a. Step 1 from zero accumulators: a = g², each step 1.
  // Rows keep their largest a, (4, 16); columns theirs, (9, 16).
  Tensor w = Tensor::zeros({2, 2}, DType::float64);
  auto opt = SM3({.learning_rate = 1.0, .momentum = 0.0});
  opt->update(1, 1.0, {w}, {tensor({1.0, 2.0, 3.0, 4.0}, {2, 2})});
  expect_tensor(w, {2, 2}, {-1.0, -1.0, -1.0, -1.0}, 1e-12);
  CHECK(opt->slots()[0][1].name == "v0");
  CHECK(opt->slots()[0][2].name == "v1");
  expect_tensor(opt->slots()[0][1].value, {2}, {4.0, 16.0}, 1e-12);
  expect_tensor(opt->slots()[0][2].value, {2}, {9.0, 16.0}, 1e-12);
  // Step 2, g = 1: a = min(row, column) + 1 = (min(4, 9), min(4, 16); min(16, 9), min(16, 16)) + 1 = (5, 5; 10, 17).
  opt->update(2, 1.0, {w}, {tensor({1.0, 1.0, 1.0, 1.0}, {2, 2})});
  expect_tensor(w, {2, 2}, {-1 - 1 / std::sqrt(5.0), -1 - 1 / std::sqrt(5.0), -1 - 1 / std::sqrt(10.0),
                            -1 - 1 / std::sqrt(17.0)}, 1e-12);
  expect_tensor(opt->slots()[0][1].value, {2}, {5.0, 17.0}, 1e-12);
  expect_tensor(opt->slots()[0][2].value, {2}, {10.0, 17.0}, 1e-12);
}

TEST_CASE("SM3 on a rank-4 kernel: its steps never exceed Adagrad's, whose accumulator it bounds") {
  // μ = 0, lr = 1: SM3's step is |g| / √a with a ≥ Adagrad's Σ g² for every weight (the paper's
  // Claim 2), so |Δw| ≤ |g| / √(Σ g²), over three steps of random gradients on a (2, 3, 4, 5) kernel.
  const Shape shape{2, 3, 4, 5};
  Tensor w = Tensor::zeros(shape, DType::float64);
  auto opt = SM3({.learning_rate = 1.0, .momentum = 0.0});
  std::vector<double> adagrad(static_cast<std::size_t>(w.numel()), 0.0);
  bool some_smaller = false;
  for (int s = 1; s <= 3; ++s) {
    const Tensor g = Rng(static_cast<std::uint64_t>(s)).normal(shape, 0.0, 1.0, DType::float64);
    const std::vector<double> before = w.to_doubles(), gs = g.to_doubles();
    opt->update(s, 1.0, {w}, {g});
    const std::vector<double> after = w.to_doubles();
    for (std::size_t i = 0; i < adagrad.size(); ++i) {
      adagrad[i] += gs[i] * gs[i];
      const double step = std::abs(after[i] - before[i]), bound = std::abs(gs[i]) / std::sqrt(adagrad[i]);
      CHECK(step <= bound * (1 + 1e-12));
      some_smaller = some_smaller || step < bound * (1 - 1e-6);
    }
  }
  CHECK(some_smaller);   // the bound is not met everywhere with equality: the sketch is coarser
  REQUIRE(opt->slots()[0].size() == 5);   // m, then one accumulator per axis
  for (std::size_t k = 0; k < 4; ++k) CHECK(opt->slots()[0][k + 1].value.shape() == Shape{shape[k]});
}

TEST_CASE("SM3 on a scalar keeps its own accumulator (Trax's fails: it gives a rank-0 weight none)") {
  Tensor w = tensor({1.0}, {});
  auto opt = SM3({.learning_rate = 0.5, .momentum = 0.0});
  opt->update(1, 0.5, {w}, {tensor({2.0}, {})});
  expect_tensor(w, {}, {0.5}, 1e-12);   // 1 − 0.5 · 2 / √4
  expect_tensor(opt->slots()[0][1].value, {}, {4.0}, 1e-12);
}

TEST_CASE("SM3 refuses a momentum outside [0, 1)") {
  CHECK_THROWS_WITH_AS(SM3({.momentum = 1.0}), "SM3: momentum must be in [0, 1), got 1", std::invalid_argument);
}

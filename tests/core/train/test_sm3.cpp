#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/tensor/random.hpp"
#include "core/tensor/runtime.hpp"
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

TEST_CASE("SM3 on a (3, 5, 21) kernel is its rule written out weight by weight") {
  // Rows of 21: two whole groups of 8 columns and 5 more, each path of the update's loops.
  const Shape shape{3, 5, 21};
  const std::int64_t n = 3 * 5 * 21;
  Tensor w = Tensor::zeros(shape, DType::float64);
  auto opt = SM3({.learning_rate = 1.0, .momentum = 0.0});
  std::vector<double> want(static_cast<std::size_t>(n), 0.0), v0(3, 0.0), v1(5, 0.0), v2(21, 0.0);
  for (int s = 1; s <= 3; ++s) {
    const Tensor g = Rng(static_cast<std::uint64_t>(10 + s)).normal(shape, 0.0, 1.0, DType::float64);
    const std::vector<double> gs = g.to_doubles();
    std::vector<double> n0(3, 0.0), n1(5, 0.0), n2(21, 0.0);
    for (std::int64_t i = 0; i < n; ++i) {
      const auto a0 = static_cast<std::size_t>(i / 105), a1 = static_cast<std::size_t>(i / 21 % 5),
                 a2 = static_cast<std::size_t>(i % 21);
      const auto u = static_cast<std::size_t>(i);
      const double a = std::min(std::min(v0[a0], v1[a1]), v2[a2]) + gs[u] * gs[u];
      want[u] -= a > 0 ? gs[u] / std::sqrt(a) : 0.0;
      n0[a0] = std::max(n0[a0], a);
      n1[a1] = std::max(n1[a1], a);
      n2[a2] = std::max(n2[a2], a);
    }
    v0 = n0;
    v1 = n1;
    v2 = n2;
    opt->update(s, 1.0, {w}, {g});
    expect_tensor(w, shape, want, 1e-12);
    expect_tensor(opt->slots()[0][1].value, {3}, v0, 1e-12);
    expect_tensor(opt->slots()[0][2].value, {5}, v1, 1e-12);
    expect_tensor(opt->slots()[0][3].value, {21}, v2, 1e-12);
  }
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

TEST_CASE("SM3 on a rank-3 tensor equals the paper's rule written out weight by weight, on one core and two") {
  // Reference: for each weight, a = min_k v_k[i_k] + g², then every v_k[j] = max of a over i_k = j.
  // (8, 64, 80): 40,960 weights, enough for the update to split its rows between threads.
  const Shape shape{8, 64, 80};
  const std::int64_t A = shape[0], B = shape[1], C = shape[2];
  const int team = num_threads();
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    set_num_threads(threads);
    Tensor w = Tensor::zeros(shape, DType::float64);
    auto opt = SM3({.learning_rate = 0.1, .momentum = 0.9});
    std::vector<double> rw(static_cast<std::size_t>(A * B * C), 0.0), rm(rw.size(), 0.0);
    std::vector<double> v0(static_cast<std::size_t>(A), 0.0), v1(static_cast<std::size_t>(B), 0.0),
        v2(static_cast<std::size_t>(C), 0.0);
    for (int s = 1; s <= 3; ++s) {
      const Tensor g = Rng(static_cast<std::uint64_t>(10 + s)).normal(shape, 0.0, 1.0, DType::float64);
      const std::vector<double> gs = g.to_doubles();
      opt->update(s, 0.1, {w}, {g});
      std::vector<double> n0(v0.size(), 0.0), n1(v1.size(), 0.0), n2(v2.size(), 0.0);
      for (std::int64_t a = 0; a < A; ++a)
        for (std::int64_t b = 0; b < B; ++b)
          for (std::int64_t c = 0; c < C; ++c) {
            const auto i = static_cast<std::size_t>((a * B + b) * C + c);
            const auto ia = static_cast<std::size_t>(a), ib = static_cast<std::size_t>(b),
                       ic = static_cast<std::size_t>(c);
            const double acc = std::min({v0[ia], v1[ib], v2[ic]}) + gs[i] * gs[i];
            rm[i] = 0.9 * rm[i] + 0.1 * gs[i] / std::sqrt(acc);
            rw[i] -= 0.1 * rm[i];
            n0[ia] = std::max(n0[ia], acc);
            n1[ib] = std::max(n1[ib], acc);
            n2[ic] = std::max(n2[ic], acc);
          }
      v0 = n0, v1 = n1, v2 = n2;
    }
    expect_tensor(w, shape, rw, 1e-12);
    expect_tensor(opt->slots()[0][1].value, {A}, v0, 1e-12);
    expect_tensor(opt->slots()[0][2].value, {B}, v1, 1e-12);
    expect_tensor(opt->slots()[0][3].value, {C}, v2, 1e-12);
  }
  set_num_threads(team);
}

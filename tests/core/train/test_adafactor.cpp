#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/tensor/random.hpp"
#include "core/tensor/runtime.hpp"
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

namespace {

// The header's rule written out weight by weight, for a (P, R, C) weight (factored) or a vector
// (C = n, P = R = 1, full v), over steps 1 … gs.size().
std::vector<double> adafactor_by_hand(const AdafactorConfig& c, std::vector<double> w, std::int64_t P,
                                      std::int64_t R, std::int64_t C, const std::vector<std::vector<double>>& gs) {
  const bool factored = c.factored && R > 1;
  std::vector<double> v_row(static_cast<std::size_t>(P * R), 0.0), v_col(static_cast<std::size_t>(P * C), 0.0),
      v(w.size(), 0.0), m(w.size(), 0.0), y(w.size());
  for (std::size_t s = 0; s < gs.size(); ++s) {
    const std::vector<double>& g = gs[s];
    const double rho = 1.0 - std::pow(static_cast<double>(s + 1), -c.decay_rate);
    const auto at = [&](std::int64_t p, std::int64_t r, std::int64_t col) {
      return static_cast<std::size_t>((p * R + r) * C + col);
    };
    for (std::int64_t p = 0; p < P; ++p) {
      for (std::int64_t r = 0; r < R; ++r) {
        double mean = 0;
        for (std::int64_t col = 0; col < C; ++col) mean += (g[at(p, r, col)] * g[at(p, r, col)] + c.epsilon1) / C;
        v_row[static_cast<std::size_t>(p * R + r)] = rho * v_row[static_cast<std::size_t>(p * R + r)] + (1 - rho) * mean;
      }
      for (std::int64_t col = 0; col < C; ++col) {
        double mean = 0;
        for (std::int64_t r = 0; r < R; ++r) mean += (g[at(p, r, col)] * g[at(p, r, col)] + c.epsilon1) / R;
        v_col[static_cast<std::size_t>(p * C + col)] = rho * v_col[static_cast<std::size_t>(p * C + col)] + (1 - rho) * mean;
      }
      double row_mean = 0;
      for (std::int64_t r = 0; r < R; ++r) row_mean += v_row[static_cast<std::size_t>(p * R + r)] / R;
      for (std::int64_t r = 0; r < R; ++r)
        for (std::int64_t col = 0; col < C; ++col) {
          const std::size_t i = at(p, r, col);
          if (factored) {
            y[i] = g[i] / std::sqrt(v_row[static_cast<std::size_t>(p * R + r)] *
                                    v_col[static_cast<std::size_t>(p * C + col)] / row_mean);
          } else {
            v[i] = rho * v[i] + (1 - rho) * (g[i] * g[i] + c.epsilon1);
            y[i] = g[i] / std::sqrt(v[i]);
          }
        }
    }
    double y2 = 0, w2 = 0;
    for (std::size_t i = 0; i < w.size(); ++i) y2 += y[i] * y[i], w2 += w[i] * w[i];
    const double n = static_cast<double>(w.size());
    const double clip = c.do_clipping ? std::max(1.0, std::sqrt(y2 / n) / c.clipping_threshold) : 1.0;
    const double scale = c.learning_rate * std::max(std::sqrt(w2 / n), c.epsilon2);
    for (std::size_t i = 0; i < w.size(); ++i) {
      double u = scale * y[i] / clip;
      if (c.do_momentum) u = m[i] = c.beta1 * m[i] + (1 - c.beta1) * u;
      w[i] = (1 - c.weight_decay_rate) * w[i] - u;
    }
  }
  return w;
}

}  // namespace

TEST_CASE("Adafactor on big weights equals its rule written out, and has the same bits on one core and two") {
  // A (3, 128, 131) kernel (50,304 weights: its rows, its columns and the clipping's sum cut among
  // the threads, a cut falling inside a row) and a vector of 40,000 with momentum; three steps each,
  // float64 against the rule by hand, float32 compared bit for bit between one thread and two.
  struct Case {
    Shape shape;
    AdafactorConfig config;
  };
  const std::vector<Case> cases{{{3, 128, 131}, {.clipping_threshold = 0.5}},
                                {{40000}, {.do_momentum = true, .beta1 = 0.9}}};
  const int team = num_threads();
  for (const Case& k : cases) {
    const std::int64_t n = numel(k.shape);
    const std::int64_t P = k.shape.size() == 3 ? k.shape[0] : 1, R = k.shape.size() == 3 ? k.shape[1] : 1;
    std::vector<Tensor> gs;
    std::vector<std::vector<double>> g_values;
    for (std::uint64_t s = 0; s < 3; ++s) {
      gs.push_back(Rng(20 + s).normal(k.shape, 0.0, 1.0, DType::float64));
      g_values.push_back(gs.back().to_doubles());
    }
    const Tensor w0 = Rng(7).normal(k.shape, 0.0, 1.0, DType::float64);
    const std::vector<double> expected = adafactor_by_hand(k.config, w0.to_doubles(), P, R, n / (P * R), g_values);
    std::vector<Tensor> float_results;
    for (const int threads : {1, 2}) {
      CAPTURE(threads);
      set_num_threads(threads);
      Tensor w = w0.clone(), w32 = w0.to(DType::float32);
      auto opt = Adafactor(k.config), opt32 = Adafactor(k.config);
      for (std::int64_t s = 0; s < 3; ++s) {
        opt->update(s + 1, k.config.learning_rate, {w}, {gs[static_cast<std::size_t>(s)]});
        opt32->update(s + 1, k.config.learning_rate, {w32}, {gs[static_cast<std::size_t>(s)].to(DType::float32)});
      }
      expect_tensor(w, k.shape, expected, 1e-12);
      float_results.push_back(w32);
    }
    const std::vector<double> one = float_results[0].to_doubles(), two = float_results[1].to_doubles();
    CHECK(std::equal(one.begin(), one.end(), two.begin()));
  }
  set_num_threads(team);
}

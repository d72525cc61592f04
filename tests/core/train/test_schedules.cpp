#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "core/train/schedules.hpp"

using namespace ctrax::train;
using doctest::Approx;

TEST_CASE("constant") { CHECK(constant(0.3)(1) == 0.3); CHECK(constant(0.3)(1000) == 0.3); }

TEST_CASE("warmup ramps on the line from (0, 0) to (n + 1, v), then holds v") {
  auto s = warmup(4, 1.0);
  CHECK(s(1) == Approx(0.2));
  CHECK(s(4) == Approx(0.8));
  CHECK(s(5) == Approx(1.0));
  CHECK(s(500) == Approx(1.0));
}

TEST_CASE("warmup_and_rsqrt_decay: ramp, then v * sqrt(n + 1) / sqrt(step)") {
  auto s = warmup_and_rsqrt_decay(3, 1.0);
  CHECK(s(3) == Approx(0.75));
  CHECK(s(4) == Approx(1.0));
  CHECK(s(16) == Approx(0.5));
}

TEST_CASE("noam: the paper's d^-1/2 min(step^-1/2, step warmup^-3/2), peaking at warmup") {
  auto s = noam(256, 4000);
  const auto formula = [](double step) {
    return std::pow(256.0, -0.5) * std::min(std::pow(step, -0.5), step * std::pow(4000.0, -1.5));
  };
  for (std::int64_t step : {1, 100, 3999, 4000, 4001, 20000, 100000})
    CHECK(s(step) == Approx(formula(static_cast<double>(step))).epsilon(1e-12));
  CHECK(s(4000) == Approx(1.0 / std::sqrt(256.0 * 4000.0)));   // the peak, 0.000988
  CHECK(s(3999) < s(4000));
  CHECK(s(4001) < s(4000));
  CHECK(s(100) == Approx(100 * s(1)));                          // linear on the way up
  CHECK(noam(256, 4000, 2.0)(4000) == Approx(2 * s(4000)));
  CHECK(noam(64, 0)(16) == Approx(1.0 / (8.0 * 4.0)));          // no warm-up: d^-1/2 step^-1/2
  CHECK_THROWS_AS(noam(0, 10), std::invalid_argument);
}

TEST_CASE("warmup_and_cosine_decay: ramp, then half a cosine down to ~0 at step N, then flat") {
  auto s = warmup_and_cosine_decay(3, 6, 2.0);                 // cosine over (step - 3) / 4
  CHECK(s(1) == Approx(0.5));
  CHECK(s(3) == Approx(1.5));
  CHECK(s(4) == Approx(1 + std::cos(std::numbers::pi / 4)));   // 1.707
  CHECK(s(5) == Approx(1.0));                                  // halfway
  CHECK(s(6) == Approx(1 + std::cos(3 * std::numbers::pi / 4)));  // 0.293 at the last step
  CHECK(s(100) == s(6));                                       // never back up
  CHECK_THROWS_WITH_AS(warmup_and_cosine_decay(10, 10, 1.0), doctest::Contains("must exceed"),
                       std::invalid_argument);
}

TEST_CASE("multifactor default: constant * linear_warmup * rsqrt_decay") {
  auto s = multifactor();  // constant 0.1, warmup 400
  CHECK(s(100) == Approx(0.1 * 0.25 / 20.0));
  CHECK(s(400) == Approx(0.1 / 20.0));
  CHECK(s(1600) == Approx(0.1 / 40.0));
}

TEST_CASE("multifactor's other factors") {
  CHECK(multifactor({.factors = "constant * decay_every", .constant = 1.0, .steps_per_decay = 10})(25) ==
        Approx(0.25));
  CHECK(multifactor({.factors = "cosine_decay", .warmup_steps = 10, .steps_per_cycle = 20})(20) ==
        Approx(0.5));
  CHECK(multifactor({.factors = "rsqrt_normalized_decay", .warmup_steps = 100})(400) == Approx(0.5));
  auto two = multifactor({.factors = "two_constants", .second_constant_step = 10});
  CHECK(two(9) == Approx(0.1));
  CHECK(two(10) == Approx(0.01));
  CHECK(multifactor({.factors = "constant", .constant = 1e-9, .minimum = 1e-6})(1) == 1e-6);
}

TEST_CASE("multifactor rejects an unknown factor when made") {
  CHECK_THROWS_WITH_AS(multifactor({.factors = "constant * warmpu"}),
                       doctest::Contains("unknown factor 'warmpu'"), std::invalid_argument);
}

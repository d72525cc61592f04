#include "core/train/schedules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace ctrax::train {

Schedule constant(double value) {
  return [value](std::int64_t) { return value; };
}

namespace {

// Trax's _BodyAndTail ramp: from (0, 0) to (n + 1, v) for steps 1..n.
double ramp(std::int64_t step, std::int64_t n_warmup_steps, double max_value) {
  return static_cast<double>(step) / static_cast<double>(n_warmup_steps + 1) * max_value;
}

void check_warmup(std::int64_t n) {
  if (n < 0) throw std::invalid_argument(fmt::format("n_warmup_steps must be >= 0, got {}", n));
}

}  // namespace

Schedule warmup(std::int64_t n_warmup_steps, double max_value) {
  check_warmup(n_warmup_steps);
  return [=](std::int64_t step) {
    return step <= n_warmup_steps ? ramp(step, n_warmup_steps, max_value) : max_value;
  };
}

Schedule warmup_and_rsqrt_decay(std::int64_t n_warmup_steps, double max_value) {
  check_warmup(n_warmup_steps);
  return [=](std::int64_t step) {
    if (step <= n_warmup_steps) return ramp(step, n_warmup_steps, max_value);
    return max_value * std::sqrt(static_cast<double>(n_warmup_steps + 1)) /
           std::sqrt(static_cast<double>(step));
  };
}

Schedule noam(std::int64_t d_model, std::int64_t n_warmup_steps, double factor) {
  check_warmup(n_warmup_steps);
  if (d_model < 1 || !(factor > 0))
    throw std::invalid_argument(fmt::format("noam: d_model ({}) and factor ({}) must be positive", d_model, factor));
  const double scale = factor / std::sqrt(static_cast<double>(d_model));
  const double ramp = std::pow(static_cast<double>(n_warmup_steps), -1.5);
  return [=](std::int64_t step) {
    const double s = static_cast<double>(std::max<std::int64_t>(step, 1));
    return scale * std::min(1.0 / std::sqrt(s), s * ramp);
  };
}

Schedule warmup_and_cosine_decay(std::int64_t n_warmup_steps, std::int64_t n_steps, double max_value) {
  check_warmup(n_warmup_steps);
  if (n_steps <= n_warmup_steps)
    throw std::invalid_argument(fmt::format("warmup_and_cosine_decay: n_steps ({}) must exceed n_warmup_steps ({})",
                                            n_steps, n_warmup_steps));
  return [=](std::int64_t step) {
    if (step <= n_warmup_steps) return ramp(step, n_warmup_steps, max_value);
    const double progress = static_cast<double>(std::min(step, n_steps) - n_warmup_steps) /
                            static_cast<double>(n_steps - n_warmup_steps + 1);
    return max_value * 0.5 * (1 + std::cos(std::numbers::pi * progress));
  };
}

Schedule multifactor(const MultifactorConfig& c) {
  static const std::vector<std::string> known = {
      "constant",    "linear_warmup", "rsqrt_decay",  "rsqrt_normalized_decay",
      "decay_every", "cosine_decay",  "two_constants"};
  std::vector<std::string> factors;
  std::stringstream in(c.factors);
  for (std::string f; std::getline(in, f, '*');) {
    const auto b = f.find_first_not_of(" \t"), e = f.find_last_not_of(" \t");
    f = b == std::string::npos ? "" : f.substr(b, e - b + 1);
    if (std::find(known.begin(), known.end(), f) == known.end())
      throw std::invalid_argument(fmt::format("multifactor: unknown factor '{}' in \"{}\" (known: {})",
                                              f, c.factors, fmt::join(known, ", ")));
    factors.push_back(f);
  }
  if (c.warmup_steps <= 0 || c.steps_per_decay <= 0 || c.steps_per_cycle <= 0)
    throw std::invalid_argument("multifactor: warmup_steps, steps_per_decay and steps_per_cycle "
                                "must be > 0");
  return [c, factors](std::int64_t step_number) {
    const double step = static_cast<double>(step_number);
    const double warm = static_cast<double>(c.warmup_steps);
    double r = 1.0;
    for (const std::string& f : factors) {
      if (f == "constant") {
        r *= c.constant;
      } else if (f == "linear_warmup") {
        r *= std::min(1.0, step / warm);
      } else if (f == "rsqrt_decay") {
        r /= std::sqrt(std::max(step, warm));
      } else if (f == "rsqrt_normalized_decay") {
        r *= std::sqrt(warm) / std::sqrt(std::max(step, warm));
      } else if (f == "decay_every") {
        r *= std::pow(c.decay_factor, static_cast<double>(step_number / c.steps_per_decay));
      } else if (f == "cosine_decay") {
        const double progress = std::max(0.0, (step - warm) / static_cast<double>(c.steps_per_cycle));
        r *= 0.5 * (1.0 + std::cos(std::numbers::pi * std::fmod(progress, 1.0)));
      } else {  // two_constants
        r *= step_number < c.second_constant_step ? c.constant : c.second_constant;
      }
    }
    return std::max(r, c.minimum);
  };
}

}  // namespace ctrax::train

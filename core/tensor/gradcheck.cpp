#include "core/tensor/gradcheck.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/tensor/ops.hpp"

namespace ctrax {

namespace {
constexpr double kDenominatorFloor = 1e-2;
}  // namespace

GradCheckResult check_gradients(const StackFn& f, const std::vector<Tensor>& inputs,
                                double tolerance, double epsilon) {
  // Private float64 copies: the numeric pass writes into them.
  std::vector<Tensor> xs;
  for (const Tensor& x : inputs)
    xs.push_back(is_floating(x.dtype()) ? x.to(DType::float64).clone().requires_grad_() : x);

  std::vector<Tensor> projections;
  auto objective = [&](const std::vector<Tensor>& args) {
    const auto outs = f(args);
    Tensor total = Tensor::scalar(0.0, DType::float64);
    for (std::size_t k = 0; k < outs.size(); ++k) {
      if (!is_floating(outs[k].dtype())) continue;
      if (projections.size() <= k) projections.resize(k + 1);
      if (!projections[k].defined())
        projections[k] = Rng(0xC0FFEE).fold_in(k).normal(outs[k].shape(), 0, 1, DType::float64);
      total = total + sum(outs[k].to(DType::float64) * projections[k]);
    }
    return total;
  };

  GradCheckResult r;
  const Tensor value = objective(xs);
  std::vector<Tensor> float_xs;
  for (const Tensor& x : xs)
    if (is_floating(x.dtype())) float_xs.push_back(x);
  if (!value.requires_grad()) {
    r.report = "the function's outputs do not depend on any floating input";
    return r;
  }
  const auto analytic = grad(value, float_xs);

  NoGrad no_grad;
  std::size_t fi = 0;
  r.ok = true;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (!is_floating(xs[i].dtype())) {
      r.relative_errors.push_back(0);
      continue;
    }
    double* p = xs[i].data<double>();
    const double* g = analytic[fi++].data<double>();
    double diff = 0, norm_g = 0, norm_n = 0;
    for (std::int64_t j = 0, n = xs[i].numel(); j < n; ++j) {
      const double saved = p[j];
      p[j] = saved + epsilon;
      const double plus = objective(xs).item();
      p[j] = saved - epsilon;
      const double minus = objective(xs).item();
      p[j] = saved;
      const double numeric = (plus - minus) / (2 * epsilon);
      diff += (g[j] - numeric) * (g[j] - numeric);
      norm_g += g[j] * g[j];
      norm_n += numeric * numeric;
    }
    // Floored so that a gradient that is exactly zero (e.g. attention's key bias: softmax ignores a
    // constant added to every score) is judged by its absolute error, not by rounding noise.
    const double denom = std::max(std::sqrt(norm_g) + std::sqrt(norm_n), kDenominatorFloor);
    const double err = std::sqrt(diff) / denom;
    r.relative_errors.push_back(err);
    r.max_relative_error = std::max(r.max_relative_error, err);
    if (err >= tolerance) r.ok = false;
    r.report += fmt::format("input {} {}: relative error {:.3g} (|g| {:.3g}, |g - numeric| {:.3g})\n", i,
                            inputs[i].signature(), err, std::sqrt(norm_g), std::sqrt(diff));
  }
  return r;
}

}  // namespace ctrax

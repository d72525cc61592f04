// ctrax/core/tensor/gradcheck.hpp — THE finite-difference gradient checker (one for everything).
//
// For a function f of some tensors, the check builds the scalar
//     L(x) = Σ_k  Σ  f(x)_k ⊙ r_k          (r_k fixed random projections, one per output)
// so that one scalar exercises every element of every output, then compares, for every floating
// input x and every element j,
//     analytic   g_j = ∂L/∂x_j                       (the tape: grad())
//     numeric    ĝ_j = (L(x + εe_j) − L(x − εe_j)) / 2ε    (central differences)
// and reports the relative error ‖g − ĝ‖ / max(‖g‖ + ‖ĝ‖, 0.01) of each input (the floor makes
// a gradient that is exactly zero — attention's key bias — pass on its absolute error, ~1e-10). Everything runs in
// float64 (inputs are converted), where ε = 1e-6 leaves a truncation error ~ε² and a rounding
// error ~1e-16/ε, both far below the 1e-6 tolerance. Integer and bool inputs are passed through
// unchanged and not differentiated.
//
//   auto r = check_gradients([](const Stack& x) { return Stack{softmax(x[0])}; },
//                            {Rng(1).normal({3, 4})});
//   CHECK(r.ok);   // r.report names the worst input and its error
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/tensor/tensor.hpp"

namespace ctrax {

struct GradCheckResult {
  bool ok = false;
  double max_relative_error = 0;       // over the checked inputs
  std::vector<double> relative_errors; // one per input (0 for non-float inputs)
  std::string report;
};

using StackFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

GradCheckResult check_gradients(const StackFn& f, const std::vector<Tensor>& inputs,
                                double tolerance = 1e-6, double epsilon = 1e-6);

}  // namespace ctrax

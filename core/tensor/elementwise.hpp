// ctrax/core/tensor/elementwise.hpp — elementwise ops with NumPy broadcasting.
//
// Binary ops broadcast their operands (shape.hpp); both must have the same dtype. The gradient of
// a broadcast operand is the output gradient summed back over the broadcast axes (sum_to), so
// x + b with x (B, L, d) and a bias b (d) gives db = Σ_{B,L} g.
//
//   op             forward               d/dx (times the incoming gradient g)
//   add, sub       a ± b                 g, ±g
//   mul            a · b                 g·b, g·a
//   div            a / b                 g/b, −g·a/b²
//   pow(a, p)      a^p                   g·p·a^(p−1)            (p a number)
//   pow(a, b)      a^b                   g·b·a^(b−1), g·a^b·ln a
//   maximum        max(a, b)             g where a ≥ b, g where b > a
//   minimum        min(a, b)             g where a ≤ b, g where b < a
//   neg, exp, log, sqrt, tanh, sigmoid   −g, g·y, g/x, g/(2y), g(1−y²), g·y(1−y)
//   abs            |x|                   g·sign(x)              (0 at x = 0, as JAX's)
//   expm1          eˣ − 1                g·(y + 1)              (exact near 0, where exp(x) − 1 is not)
//   softplus       log(1 + eˣ)           g·sigmoid(x)           (as max(x, 0) + log1p(e^−|x|): no overflow)
//   relu           max(x, 0)             g where x > 0
//   gelu           x·Φ(x)                g·(Φ(x) + x·φ(x))              (exact, erf)
//   gelu_tanh      ½x(1 + tanh(√(2/π)(x + 0.044715x³)))   its derivative  (Trax's FastGelu)
// Comparisons return bool tensors and are not differentiable.
#pragma once

#include "core/tensor/tensor.hpp"

namespace ctrax {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double p);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor softplus(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);
Tensor gelu_tanh(const Tensor& x);

// The gradient is blocked: y = x forward, dy/dx = 0 (Trax's StopGradient).
Tensor stop_gradient(const Tensor& x);

Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& mask);
Tensor logical_and(const Tensor& a, const Tensor& b);   // broadcasting, as PyTorch's mask & mask

// Sums g over the axes along which a tensor of `shape` was broadcast to g's shape.
Tensor sum_to(const Tensor& g, const Shape& shape);

// Operators. A plain number becomes a scalar tensor of the other operand's dtype.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

}  // namespace ctrax

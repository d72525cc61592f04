#include "core/tensor/elementwise.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "core/tensor/autodiff.hpp"
#include "core/tensor/profile.hpp"
#include "core/tensor/broadcast.hpp"
#include "core/tensor/indexing.hpp"
#include "core/tensor/dispatch.hpp"
#include "core/tensor/reduce.hpp"
#include "core/tensor/shape_ops.hpp"

namespace ctrax {

namespace {

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    throw std::invalid_argument(fmt::format("{}: dtypes differ: {} and {}", op, a.signature(),
                                            b.signature()));
}

// Forward of a float binary op: out = f(a, b) elementwise with broadcasting.
template <class F>
Tensor binary_forward(const char* op, const Tensor& a, const Tensor& b, F f) {
  profile::Scope profile_scope(profile::Family::elementwise);
  check_same_dtype(op, a, b);
  Shape shape;
  try {
    shape = broadcast_shapes(a.shape(), b.shape());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(op) + ": " + e.what());
  }
  if (a.is_meta() || b.is_meta()) return Tensor::meta(shape, a.dtype());
  Tensor out = Tensor::empty(shape, a.dtype());
  dispatch_float(a.dtype(), [&]<class T>(T) {
    broadcast_loop(a.data<T>(), a.shape(), b.data<T>(), b.shape(), out.data<T>(), shape,
                   [&](T x, T y) { return static_cast<T>(f(x, y)); });
  }, op);
  return out;
}

// A float unary op whose gradient is elementwise: dx = df(x, y, g).
template <class F, class DF>
Tensor unary(const char* op, const Tensor& x, F f, DF df) {
  profile::Scope profile_scope(profile::Family::elementwise);
  if (x.is_meta()) {
    dispatch_float(x.dtype(), [](auto) {}, op);
    return Tensor::meta(x.shape(), x.dtype());
  }
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_float(x.dtype(), [&]<class T>(T) {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const std::int64_t n = x.numel();
#pragma omp parallel for schedule(static) if (n >= kParallelElements)
    for (std::int64_t i = 0; i < n; ++i) py[i] = static_cast<T>(f(px[i]));
  }, op);
  const Tensor y_saved = y.detach();
  return record(op, y, {x}, [x, y_saved, df](const Tensor& g) -> std::vector<Tensor> {
    profile::Scope profile_scope(profile::Family::elementwise);
    Tensor dx = Tensor::empty(x.shape(), x.dtype());
    dispatch_float(x.dtype(), [&]<class T>(T) {
      const T* px = x.data<T>();
      const T* py = y_saved.data<T>();
      const T* pg = g.data<T>();
      T* pd = dx.data<T>();
      const std::int64_t n = x.numel();
#pragma omp parallel for schedule(static) if (n >= kParallelElements)
      for (std::int64_t i = 0; i < n; ++i) pd[i] = static_cast<T>(df(px[i], py[i], pg[i]));
    });
    return {dx};
  });
}

template <class F>
Tensor compare(const char* op, const Tensor& a, const Tensor& b, F f) {
  profile::Scope profile_scope(profile::Family::elementwise);
  check_same_dtype(op, a, b);
  const Shape shape = broadcast_shapes(a.shape(), b.shape());
  if (a.is_meta() || b.is_meta()) return Tensor::meta(shape, DType::bool_);
  Tensor out = Tensor::empty(shape, DType::bool_);
  dispatch_all(a.dtype(), [&]<class T>(T) {
    broadcast_loop(a.data<T>(), a.shape(), b.data<T>(), b.shape(), out.data<std::uint8_t>(),
                   shape, [&](T x, T y) { return static_cast<std::uint8_t>(f(x, y)); });
  });
  return out;
}

Tensor scalar_like(double v, const Tensor& t) { return Tensor::scalar(v, t.dtype()); }

constexpr double kSqrt2OverPi = 0.7978845608028654;  // √(2/π)
constexpr double kGeluCubic = 0.044715;

}  // namespace

Tensor sum_to(const Tensor& g, const Shape& shape) {
  profile::Scope profile_scope(profile::Family::elementwise);
  if (g.shape() == shape) return g;
  const int lead = g.rank() - static_cast<int>(shape.size());
  Axes axes;
  for (int i = 0; i < g.rank(); ++i)
    if (i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)) axes.push_back(i);
  return reshape(sum(g, axes, /*keepdims=*/true), shape);
}

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward("add", a, b, [](auto x, auto y) { return x + y; });
  return record("add", out, {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
    profile::Scope profile_scope(profile::Family::elementwise);
    return std::vector<Tensor>{sum_to(g, sa), sum_to(g, sb)};
  });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward("sub", a, b, [](auto x, auto y) { return x - y; });
  return record("sub", out, {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
    profile::Scope profile_scope(profile::Family::elementwise);
    return std::vector<Tensor>{sum_to(g, sa), sum_to(neg(g), sb)};
  });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward("mul", a, b, [](auto x, auto y) { return x * y; });
  return record("mul", out, {a, b}, [a, b](const Tensor& g) {
    profile::Scope profile_scope(profile::Family::elementwise);
    return std::vector<Tensor>{a.requires_grad() ? sum_to(mul(g, b), a.shape()) : Tensor(),
                               b.requires_grad() ? sum_to(mul(g, a), b.shape()) : Tensor()};
  });
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward("div", a, b, [](auto x, auto y) { return x / y; });
  return record("div", out, {a, b}, [a, b](const Tensor& g) {
    profile::Scope profile_scope(profile::Family::elementwise);
    return std::vector<Tensor>{
        a.requires_grad() ? sum_to(div(g, b), a.shape()) : Tensor(),
        b.requires_grad() ? sum_to(neg(div(mul(g, a), mul(b, b))), b.shape()) : Tensor()};
  });
}

Tensor pow(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward("pow", a, b, [](auto x, auto y) { return std::pow(x, y); });
  const Tensor y = out.detach();
  return record("pow", out, {a, b}, [a, b, y](const Tensor& g) {
    profile::Scope profile_scope(profile::Family::elementwise);
    return std::vector<Tensor>{
        a.requires_grad() ? sum_to(mul(g, mul(b, pow(a, sub(b, scalar_like(1, b))))), a.shape())
                          : Tensor(),
        b.requires_grad() ? sum_to(mul(g, mul(y, log(a))), b.shape()) : Tensor()};
  });
}

Tensor pow(const Tensor& a, double p) {
  return unary(
      "pow", a, [p](auto x) { return std::pow(x, p); },
      [p](auto x, auto, auto g) { return g * p * std::pow(x, p - 1); });
}

Tensor maximum(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward("maximum", a, b, [](auto x, auto y) { return x >= y ? x : y; });
  return record("maximum", out, {a, b}, [a, b](const Tensor& g) {
    profile::Scope profile_scope(profile::Family::elementwise);
    const Tensor zero = Tensor::zeros({}, g.dtype());
    const Tensor a_wins = expand(logical_not(less(a, b)), g.shape());
    return std::vector<Tensor>{sum_to(where(a_wins, g, zero), a.shape()),
                               sum_to(where(a_wins, zero, g), b.shape())};
  });
}

Tensor neg(const Tensor& x) {
  return unary("neg", x, [](auto v) { return -v; }, [](auto, auto, auto g) { return -g; });
}
Tensor exp(const Tensor& x) {
  return unary("exp", x, [](auto v) { return std::exp(v); },
               [](auto, auto y, auto g) { return g * y; });
}
Tensor log(const Tensor& x) {
  return unary("log", x, [](auto v) { return std::log(v); },
               [](auto v, auto, auto g) { return g / v; });
}
Tensor sqrt(const Tensor& x) {
  return unary("sqrt", x, [](auto v) { return std::sqrt(v); },
               [](auto, auto y, auto g) { return g / (2 * y); });
}
Tensor tanh(const Tensor& x) {
  return unary("tanh", x, [](auto v) { return std::tanh(v); },
               [](auto, auto y, auto g) { return g * (1 - y * y); });
}
Tensor sigmoid(const Tensor& x) {
  return unary("sigmoid", x, [](auto v) { return 1 / (1 + std::exp(-v)); },
               [](auto, auto y, auto g) { return g * y * (1 - y); });
}
Tensor relu(const Tensor& x) {
  return unary("relu", x, [](auto v) { return v > 0 ? v : decltype(v)(0); },
               [](auto v, auto, auto g) { return v > 0 ? g : decltype(g)(0); });
}
Tensor gelu(const Tensor& x) {
  return unary(
      "gelu", x, [](auto v) { return 0.5 * v * (1 + std::erf(v / std::numbers::sqrt2)); },
      [](auto v, auto, auto g) {
        const double cdf = 0.5 * (1 + std::erf(v / std::numbers::sqrt2));
        const double pdf = std::exp(-0.5 * v * v) / std::sqrt(2 * std::numbers::pi);
        return g * (cdf + v * pdf);
      });
}
Tensor gelu_tanh(const Tensor& x) {
  return unary(
      "gelu_tanh", x,
      [](auto v) { return 0.5 * v * (1 + std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v))); },
      [](auto v, auto, auto g) {
        const double t = std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v));
        const double du = kSqrt2OverPi * (1 + 3 * kGeluCubic * v * v);
        return g * (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * du);
      });
}

Tensor stop_gradient(const Tensor& x) { return x.detach(); }

Tensor equal(const Tensor& a, const Tensor& b) {
  return compare("equal", a, b, [](auto x, auto y) { return x == y; });
}
Tensor not_equal(const Tensor& a, const Tensor& b) {
  return compare("not_equal", a, b, [](auto x, auto y) { return x != y; });
}
Tensor less(const Tensor& a, const Tensor& b) {
  return compare("less", a, b, [](auto x, auto y) { return x < y; });
}
Tensor greater(const Tensor& a, const Tensor& b) {
  return compare("greater", a, b, [](auto x, auto y) { return x > y; });
}
Tensor logical_not(const Tensor& m) {
  if (m.dtype() != DType::bool_)
    throw std::invalid_argument("logical_not needs a bool tensor, got " + m.signature());
  if (m.is_meta()) return Tensor::meta(m.shape(), DType::bool_);
  Tensor out = Tensor::empty(m.shape(), DType::bool_);
  for (std::int64_t i = 0, n = m.numel(); i < n; ++i)
    out.data<std::uint8_t>()[i] = !m.data<std::uint8_t>()[i];
  return out;
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, double b) { return add(a, scalar_like(b, a)); }
Tensor operator-(const Tensor& a, double b) { return sub(a, scalar_like(b, a)); }
Tensor operator*(const Tensor& a, double b) { return mul(a, scalar_like(b, a)); }
Tensor operator/(const Tensor& a, double b) { return div(a, scalar_like(b, a)); }
Tensor operator+(double a, const Tensor& b) { return add(scalar_like(a, b), b); }
Tensor operator-(double a, const Tensor& b) { return sub(scalar_like(a, b), b); }
Tensor operator*(double a, const Tensor& b) { return mul(scalar_like(a, b), b); }
Tensor operator/(double a, const Tensor& b) { return div(scalar_like(a, b), b); }

}  // namespace ctrax

#include "core/tensor/elementwise.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "core/engine/broadcast.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/indexing.hpp"
#include "core/tensor/op.hpp"
#include "core/tensor/reduce.hpp"
#include "core/tensor/shape_ops.hpp"

namespace ctrax {

namespace {

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    throw std::invalid_argument(fmt::format("{}: dtypes differ: {} and {}", op, a.signature(),
                                            b.signature()));
}

// The broadcast shape of a and b, with the op's name in the error.
Shape broadcast_for(const char* op, const Tensor& a, const Tensor& b) {
  check_same_dtype(op, a, b);
  try {
    return broadcast_shapes(a.shape(), b.shape());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(op) + ": " + e.what());
  }
}

// The forward of a float binary op: out = f(a, b) elementwise with broadcasting (the caller
// records the gradient: record() passes meta results through).
template <class F>
Tensor binary(const OpDef& op, const Tensor& a, const Tensor& b, F f) {
  const Shape shape = broadcast_for(op.name, a, b);
  return define_op(op, {a, b}, shape, a.dtype(), [&] {
    Tensor out = Tensor::empty(shape, a.dtype());
    dispatch_float(a.dtype(), [&]<class T>(T) {
      broadcast_loop(a.data<T>(), a.shape(), b.data<T>(), b.shape(), out.data<T>(), shape,
                     [&](T x, T y) { return static_cast<T>(f(x, y)); });
    });
    return out;
  });
}

// A float unary op whose gradient is elementwise: dx = df(x, y, g).
template <class F, class DF>
Tensor unary(const OpDef& op, const Tensor& x, F f, DF df) {
  return define_op(op, {x}, x.shape(), x.dtype(), [&] {
    Tensor y = Tensor::empty(x.shape(), x.dtype());
    dispatch_float(x.dtype(), [&]<class T>(T) {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      const std::int64_t n = x.numel();
      parallel_chunks(n, n >= kParallelElements, [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) py[i] = static_cast<T>(f(px[i]));
      });
    });
    const Tensor y_saved = y.detach();
    return record(op, y, {x}, [x, y_saved, df](const Tensor& g) -> std::vector<Tensor> {
      Tensor dx = Tensor::empty(x.shape(), x.dtype());
      dispatch_float(x.dtype(), [&]<class T>(T) {
        const T* px = x.data<T>();
        const T* py = y_saved.data<T>();
        const T* pg = g.data<T>();
        T* pd = dx.data<T>();
        const std::int64_t n = x.numel();
        parallel_chunks(n, n >= kParallelElements, [&](std::int64_t i0, std::int64_t i1) {
          for (std::int64_t i = i0; i < i1; ++i) pd[i] = static_cast<T>(df(px[i], py[i], pg[i]));
        });
      });
      return {dx};
    });
  });
}

template <class F>
Tensor compare(const OpDef& op, const Tensor& a, const Tensor& b, F f) {
  const Shape shape = broadcast_for(op.name, a, b);
  return define_op(op, {a, b}, shape, DType::bool_, [&] {
    Tensor out = Tensor::empty(shape, DType::bool_);
    dispatch_all(a.dtype(), [&]<class T>(T) {
      broadcast_loop(a.data<T>(), a.shape(), b.data<T>(), b.shape(), out.data<std::uint8_t>(),
                     shape, [&](T x, T y) { return static_cast<std::uint8_t>(f(x, y)); });
    });
    return out;
  });
}

constexpr OpDef kAdd{"add", profile::Family::elementwise};
constexpr OpDef kSub{"sub", profile::Family::elementwise};
constexpr OpDef kMul{"mul", profile::Family::elementwise};
constexpr OpDef kDiv{"div", profile::Family::elementwise};
constexpr OpDef kPow{"pow", profile::Family::elementwise};
constexpr OpDef kMaximum{"maximum", profile::Family::elementwise};
constexpr OpDef kMinimum{"minimum", profile::Family::elementwise};
constexpr OpDef kNeg{"neg", profile::Family::elementwise};
constexpr OpDef kAbs{"abs", profile::Family::elementwise};
constexpr OpDef kExpm1{"expm1", profile::Family::elementwise};
constexpr OpDef kSoftplus{"softplus", profile::Family::elementwise};
constexpr OpDef kExp{"exp", profile::Family::elementwise};
constexpr OpDef kLog{"log", profile::Family::elementwise};
constexpr OpDef kSqrt{"sqrt", profile::Family::elementwise};
constexpr OpDef kTanh{"tanh", profile::Family::elementwise};
constexpr OpDef kSigmoid{"sigmoid", profile::Family::elementwise};
constexpr OpDef kRelu{"relu", profile::Family::elementwise};
constexpr OpDef kGelu{"gelu", profile::Family::elementwise};
constexpr OpDef kGeluTanh{"gelu_tanh", profile::Family::elementwise};
constexpr OpDef kEqual{"equal", profile::Family::elementwise, Accepts::any};
constexpr OpDef kNotEqual{"not_equal", profile::Family::elementwise, Accepts::any};
constexpr OpDef kLess{"less", profile::Family::elementwise, Accepts::any};
constexpr OpDef kGreater{"greater", profile::Family::elementwise, Accepts::any};
constexpr OpDef kLogicalNot{"logical_not", profile::Family::elementwise, Accepts::any};
constexpr OpDef kLogicalAnd{"logical_and", profile::Family::elementwise, Accepts::any};

Tensor scalar_like(double v, const Tensor& t) { return Tensor::scalar(v, t.dtype()); }

constexpr double kSqrt2OverPi = 0.7978845608028654;  // √(2/π)
constexpr double kGeluCubic = 0.044715;

}  // namespace

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const int lead = g.rank() - static_cast<int>(shape.size());
  Axes axes;
  for (int i = 0; i < g.rank(); ++i)
    if (i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)) axes.push_back(i);
  return reshape(sum(g, axes, /*keepdims=*/true), shape);
}

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = binary(kAdd, a, b, [](auto x, auto y) { return x + y; });
  return record(kAdd, out, {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, sa), sum_to(g, sb)};
  });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary(kSub, a, b, [](auto x, auto y) { return x - y; });
  return record(kSub, out, {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, sa), sum_to(neg(g), sb)};
  });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary(kMul, a, b, [](auto x, auto y) { return x * y; });
  return record(kMul, out, {a, b}, [a, b](const Tensor& g) {
    return std::vector<Tensor>{a.requires_grad() ? sum_to(mul(g, b), a.shape()) : Tensor(),
                               b.requires_grad() ? sum_to(mul(g, a), b.shape()) : Tensor()};
  });
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary(kDiv, a, b, [](auto x, auto y) { return x / y; });
  return record(kDiv, out, {a, b}, [a, b](const Tensor& g) {
    return std::vector<Tensor>{
        a.requires_grad() ? sum_to(div(g, b), a.shape()) : Tensor(),
        b.requires_grad() ? sum_to(neg(div(mul(g, a), mul(b, b))), b.shape()) : Tensor()};
  });
}

Tensor pow(const Tensor& a, const Tensor& b) {
  Tensor out = binary(kPow, a, b, [](auto x, auto y) { return std::pow(x, y); });
  return record(kPow, out, {a, b}, [a, b, y = out.detach()](const Tensor& g) {
    return std::vector<Tensor>{
        a.requires_grad() ? sum_to(mul(g, mul(b, pow(a, sub(b, scalar_like(1, b))))), a.shape())
                          : Tensor(),
        b.requires_grad() ? sum_to(mul(g, mul(y, log(a))), b.shape()) : Tensor()};
  });
}

Tensor pow(const Tensor& a, double p) {
  return unary(
      kPow, a, [p](auto x) { return std::pow(x, p); },
      [p](auto x, auto, auto g) { return g * p * std::pow(x, p - 1); });
}

Tensor maximum(const Tensor& a, const Tensor& b) {
  Tensor out = binary(kMaximum, a, b, [](auto x, auto y) { return x >= y ? x : y; });
  return record(kMaximum, out, {a, b}, [a, b](const Tensor& g) {
    const Tensor zero = Tensor::zeros({}, g.dtype());
    const Tensor a_wins = expand(logical_not(less(a, b)), g.shape());
    return std::vector<Tensor>{sum_to(where(a_wins, g, zero), a.shape()),
                               sum_to(where(a_wins, zero, g), b.shape())};
  });
}

Tensor minimum(const Tensor& a, const Tensor& b) {
  Tensor out = binary(kMinimum, a, b, [](auto x, auto y) { return x <= y ? x : y; });
  return record(kMinimum, out, {a, b}, [a, b](const Tensor& g) {
    const Tensor zero = Tensor::zeros({}, g.dtype());
    const Tensor a_wins = expand(logical_not(greater(a, b)), g.shape());
    return std::vector<Tensor>{sum_to(where(a_wins, g, zero), a.shape()),
                               sum_to(where(a_wins, zero, g), b.shape())};
  });
}

Tensor neg(const Tensor& x) {
  return unary(kNeg, x, [](auto v) { return -v; }, [](auto, auto, auto g) { return -g; });
}
Tensor exp(const Tensor& x) {
  return unary(kExp, x, [](auto v) { return std::exp(v); },
               [](auto, auto y, auto g) { return g * y; });
}
Tensor log(const Tensor& x) {
  return unary(kLog, x, [](auto v) { return std::log(v); },
               [](auto v, auto, auto g) { return g / v; });
}
Tensor sqrt(const Tensor& x) {
  return unary(kSqrt, x, [](auto v) { return std::sqrt(v); },
               [](auto, auto y, auto g) { return g / (2 * y); });
}
Tensor tanh(const Tensor& x) {
  return unary(kTanh, x, [](auto v) { return std::tanh(v); },
               [](auto, auto y, auto g) { return g * (1 - y * y); });
}
Tensor sigmoid(const Tensor& x) {
  return unary(kSigmoid, x, [](auto v) { return 1 / (1 + std::exp(-v)); },
               [](auto, auto y, auto g) { return g * y * (1 - y); });
}
Tensor abs(const Tensor& x) {
  return unary(kAbs, x, [](auto v) { return std::abs(v); },
               [](auto v, auto, auto g) { return v > 0 ? g : v < 0 ? -g : decltype(g)(0); });
}
Tensor expm1(const Tensor& x) {
  return unary(kExpm1, x, [](auto v) { return std::expm1(v); },
               [](auto, auto y, auto g) { return g * (y + 1); });
}
Tensor softplus(const Tensor& x) {
  return unary(
      kSoftplus, x, [](auto v) { return std::max(v, decltype(v)(0)) + std::log1p(std::exp(-std::abs(v))); },
      [](auto v, auto, auto g) { return g / (1 + std::exp(-v)); });
}
Tensor relu(const Tensor& x) {
  return unary(kRelu, x, [](auto v) { return v > 0 ? v : decltype(v)(0); },
               [](auto v, auto, auto g) { return v > 0 ? g : decltype(g)(0); });
}
Tensor gelu(const Tensor& x) {
  return unary(
      kGelu, x, [](auto v) { return 0.5 * v * (1 + std::erf(v / std::numbers::sqrt2)); },
      [](auto v, auto, auto g) {
        const double cdf = 0.5 * (1 + std::erf(v / std::numbers::sqrt2));
        const double pdf = std::exp(-0.5 * v * v) / std::sqrt(2 * std::numbers::pi);
        return g * (cdf + v * pdf);
      });
}
Tensor gelu_tanh(const Tensor& x) {
  return unary(
      kGeluTanh, x,
      [](auto v) { return 0.5 * v * (1 + std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v))); },
      [](auto v, auto, auto g) {
        const double t = std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v));
        const double du = kSqrt2OverPi * (1 + 3 * kGeluCubic * v * v);
        return g * (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * du);
      });
}

Tensor stop_gradient(const Tensor& x) { return x.detach(); }

Tensor equal(const Tensor& a, const Tensor& b) {
  return compare(kEqual, a, b, [](auto x, auto y) { return x == y; });
}
Tensor not_equal(const Tensor& a, const Tensor& b) {
  return compare(kNotEqual, a, b, [](auto x, auto y) { return x != y; });
}
Tensor less(const Tensor& a, const Tensor& b) {
  return compare(kLess, a, b, [](auto x, auto y) { return x < y; });
}
Tensor greater(const Tensor& a, const Tensor& b) {
  return compare(kGreater, a, b, [](auto x, auto y) { return x > y; });
}
Tensor logical_and(const Tensor& a, const Tensor& b) {
  if (a.dtype() != DType::bool_ || b.dtype() != DType::bool_)
    throw std::invalid_argument("logical_and needs two bool tensors, got " + a.signature() + " and " + b.signature());
  return compare(kLogicalAnd, a, b, [](auto x, auto y) { return x && y; });
}
Tensor logical_not(const Tensor& m) {
  if (m.dtype() != DType::bool_)
    throw std::invalid_argument("logical_not needs a bool tensor, got " + m.signature());
  return define_op(kLogicalNot, {m}, m.shape(), DType::bool_, [&] {
    Tensor out = Tensor::empty(m.shape(), DType::bool_);
    for (std::int64_t i = 0, n = m.numel(); i < n; ++i)
      out.data<std::uint8_t>()[i] = !m.data<std::uint8_t>()[i];
    return out;
  });
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

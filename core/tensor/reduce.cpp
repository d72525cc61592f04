#include "core/tensor/reduce.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/engine/axis_view.hpp"
#include "core/engine/broadcast.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/elementwise.hpp"
#include "core/tensor/op.hpp"
#include "core/tensor/shape_ops.hpp"

namespace ctrax {

namespace {

Shape keep_shape(const Shape& s, int axis) {
  Shape out = s;
  out[axis] = 1;
  return out;
}

Axes normalize_axes(const Axes& axes, int rank) {
  Axes out;
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int a : axes) out.push_back(normalize_axis(a, rank));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    throw std::invalid_argument("reduction axes repeat an axis");
  return out;
}

Shape drop_axes(const Shape& s, const Axes& axes) {
  Shape out;
  for (int i = 0; i < static_cast<int>(s.size()); ++i)
    if (!std::binary_search(axes.begin(), axes.end(), i)) out.push_back(s[i]);
  return out;
}

constexpr OpDef kSum{"sum", profile::Family::reduce, Accepts::numeric};
constexpr OpDef kMax{"max", profile::Family::reduce, Accepts::numeric};
constexpr OpDef kArgmax{"argmax", profile::Family::reduce, Accepts::numeric};

// Σ over one axis, keeping it with extent 1.
Tensor sum_axis(const Tensor& x, int axis) {
  const Shape shape = keep_shape(x.shape(), axis);
  return define_op(kSum, {x}, shape, x.dtype(), [&] {
    Tensor out = Tensor::zeros(shape, x.dtype());
    const AxisView v(x.shape(), axis);
    dispatch_numeric(x.dtype(), [&]<class T>(T) {
      const T* px = x.data<T>();
      T* po = out.data<T>();
      for (std::int64_t o = 0; o < v.outer; ++o) {
        T* row = po + o * v.inner;
        if (v.inner == 1) {
          double acc = 0;  // long sums in double: float32 loses digits after ~1e4 terms
          for (std::int64_t k = 0; k < v.n; ++k) acc += px[o * v.n + k];
          row[0] = static_cast<T>(acc);
          continue;
        }
        // Each column summed alone, in k order: cut by columns between the threads (a Dense's bias
        // gradient: 4,096 rows of 1,024), the same bits on any team.
        const T* block = px + o * v.n * v.inner;
        const std::int64_t n = v.n, inner = v.inner;
        parallel_chunks(inner, n * inner >= kParallelElements && inner >= 64, [&](std::int64_t i0, std::int64_t i1) {
          for (std::int64_t k = 0; k < n; ++k) {
            const T* src = block + k * inner;
            for (std::int64_t i = i0; i < i1; ++i) row[i] += src[i];
          }
        });
      }
    });
    return record(kSum, out, {x}, [xs = x.shape()](const Tensor& g) {
      return std::vector<Tensor>{expand(g, xs)};
    });
  });
}

// max over one axis, keeping it; the gradient goes to the maxima, split equally between ties.
Tensor max_axis(const Tensor& x, int axis) {
  const Shape shape = keep_shape(x.shape(), axis);
  if (x.shape()[axis] == 0)
    throw std::invalid_argument(fmt::format("max: axis {} of {} is empty: it has no maximum", axis, x.signature()));
  return define_op(kMax, {x}, shape, x.dtype(), [&] {
    Tensor out = Tensor::empty(shape, x.dtype());
    const AxisView v(x.shape(), axis);
    dispatch_numeric(x.dtype(), [&]<class T>(T) {
      const T* px = x.data<T>();
      T* po = out.data<T>();
      for (std::int64_t o = 0; o < v.outer; ++o)
        for (std::int64_t i = 0; i < v.inner; ++i) {
          T m = px[o * v.n * v.inner + i];
          for (std::int64_t k = 1; k < v.n; ++k) m = std::max(m, px[(o * v.n + k) * v.inner + i]);
          po[o * v.inner + i] = m;
        }
    });
    const Tensor y = out.detach();
    return record(kMax, out, {x}, [x, y, axis](const Tensor& g) {
      Tensor dx = Tensor::zeros(x.shape(), x.dtype());
      const AxisView v(x.shape(), axis);
      dispatch_float(x.dtype(), [&]<class T>(T) {
        const T* px = x.data<T>();
        const T* py = y.data<T>();
        const T* pg = g.data<T>();
        T* pd = dx.data<T>();
        for (std::int64_t o = 0; o < v.outer; ++o)
          for (std::int64_t i = 0; i < v.inner; ++i) {
            const T m = py[o * v.inner + i];
            int ties = 0;
            for (std::int64_t k = 0; k < v.n; ++k) ties += px[(o * v.n + k) * v.inner + i] == m;
            const T share = pg[o * v.inner + i] / static_cast<T>(ties);
            for (std::int64_t k = 0; k < v.n; ++k)
              if (px[(o * v.n + k) * v.inner + i] == m) pd[(o * v.n + k) * v.inner + i] = share;
          }
      });
      return std::vector<Tensor>{dx};
    });
  });
}

template <class OneAxis>
Tensor reduce(const Tensor& x, const Axes& axes, bool keepdims, OneAxis one_axis) {
  const Axes ax = normalize_axes(axes, x.rank());
  Tensor r = x;
  for (int a : ax) r = one_axis(r, a);
  return keepdims ? r : reshape(r, drop_axes(x.shape(), ax));
}

}  // namespace

Tensor sum(const Tensor& x, const Axes& axes, bool keepdims) {
  return reduce(x, axes, keepdims, sum_axis);
}

Tensor max(const Tensor& x, const Axes& axes, bool keepdims) {
  return reduce(x, axes, keepdims, max_axis);
}

// min x = −max(−x): the gradient goes to the minimum, shared equally between ties, as max's.
Tensor min(const Tensor& x, const Axes& axes, bool keepdims) { return neg(max(neg(x), axes, keepdims)); }

Tensor mean(const Tensor& x, const Axes& axes, bool keepdims) {
  std::int64_t count = 1;
  for (int a : normalize_axes(axes, x.rank())) count *= x.shape()[a];
  return sum(x, axes, keepdims) * (1.0 / static_cast<double>(count));
}

Tensor logsumexp(const Tensor& x, const Axes& axes, bool keepdims) {
  Tensor m;
  {
    NoGrad no_grad;  // m only shifts the exponent; it cancels in the gradient
    m = max(x, axes, /*keepdims=*/true);
    if (!m.is_meta())
      dispatch_float(m.dtype(), [&]<class T>(T) {
        T* p = m.data<T>();
        for (std::int64_t i = 0, n = m.numel(); i < n; ++i)
          if (!std::isfinite(p[i])) p[i] = 0;
      }, "logsumexp");
  }
  Tensor r = log(sum(exp(x - m), axes, /*keepdims=*/true)) + m;
  return keepdims ? r : reshape(r, drop_axes(x.shape(), normalize_axes(axes, x.rank())));
}

Tensor argmax(const Tensor& x, int axis) {
  const int a = normalize_axis(axis, x.rank());
  Shape shape = x.shape();
  if (shape[static_cast<std::size_t>(a)] == 0)   // as max: an index into nothing would read as position 0
    throw std::invalid_argument(fmt::format("argmax: axis {} of {} is empty: it has no maximum", a, x.signature()));
  shape.erase(shape.begin() + a);
  return define_op(kArgmax, {x}, shape, DType::int32, [&] {
    Tensor out = Tensor::empty(shape, DType::int32);
    const AxisView v(x.shape(), a);
    dispatch_numeric(x.dtype(), [&]<class T>(T) {
      const T* px = x.data<T>();
      std::int32_t* po = out.data<std::int32_t>();
      for (std::int64_t o = 0; o < v.outer; ++o)
        for (std::int64_t i = 0; i < v.inner; ++i) {
          std::int64_t best = 0;
          for (std::int64_t k = 1; k < v.n; ++k)
            if (px[(o * v.n + k) * v.inner + i] > px[(o * v.n + best) * v.inner + i]) best = k;
          po[o * v.inner + i] = static_cast<std::int32_t>(best);
        }
    });
    return out;
  });
}

}  // namespace ctrax

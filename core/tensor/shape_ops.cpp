#include "core/tensor/shape_ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "core/engine/axis_view.hpp"
#include "core/engine/broadcast.hpp"
#include "core/tensor/elementwise.hpp"
#include "core/tensor/op.hpp"
#include "core/engine/parallel.hpp"

namespace ctrax {

namespace {

std::size_t bytes_of(const Tensor& t) { return itemsize(t.dtype()); }

// Copies x's block [start, stop) along `axis` into dst (whose extent on that axis is dst_n),
// beginning at dst_offset on that axis. Used by slice, concatenate and their gradients.
void copy_block(const Tensor& src, std::int64_t src_start, std::int64_t len, Tensor& dst,
                std::int64_t dst_start, int axis) {
  const AxisView vs(src.shape(), axis), vd(dst.shape(), axis);
  const std::size_t row = static_cast<std::size_t>(len * vs.inner) * bytes_of(src);
  const auto* ps = static_cast<const std::byte*>(src.raw_data());
  auto* pd = static_cast<std::byte*>(dst.raw_data());
  for (std::int64_t o = 0; o < vs.outer; ++o)
    std::memcpy(pd + vd.at(o, dst_start, 0) * bytes_of(dst), ps + vs.at(o, src_start, 0) * bytes_of(src),
                row);
}

constexpr OpDef kReshape{"reshape", profile::Family::shape, Accepts::any};
constexpr OpDef kTranspose{"transpose", profile::Family::shape, Accepts::any};
constexpr OpDef kSlice{"slice", profile::Family::shape, Accepts::any};
constexpr OpDef kConcatenate{"concatenate", profile::Family::shape, Accepts::any};
constexpr OpDef kFlip{"flip", profile::Family::shape, Accepts::any};
constexpr OpDef kExpand{"expand", profile::Family::shape, Accepts::any};
constexpr OpDef kWriteSlice{"write_slice", profile::Family::shape, Accepts::any};

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  Shape s = shape;
  const auto unknown = std::count(s.begin(), s.end(), -1);
  if (unknown > 1) throw std::invalid_argument("reshape: more than one -1 in " + to_string(shape));
  if (unknown == 1) {
    std::int64_t known = 1;
    for (auto d : s)
      if (d != -1) known *= d;
    auto it = std::find(s.begin(), s.end(), -1);
    *it = known == 0 ? 0 : x.numel() / known;
  }
  if (numel(s) != x.numel())
    throw std::invalid_argument(fmt::format("reshape: cannot reshape {} into shape {}",
                                            x.signature(), to_string(shape)));
  return define_op(kReshape, {x}, s, x.dtype(), [&] {
      if (s == x.shape() && !x.requires_grad()) return x;
      return record(kReshape, reshape_view(x, s), {x}, [xs = x.shape()](const Tensor& g) {
        return std::vector<Tensor>{reshape(g, xs)};
      });
  });
}

Tensor transpose(const Tensor& x, const std::vector<int>& perm) {
  const int r = x.rank();
  if (static_cast<int>(perm.size()) != r)
    throw std::invalid_argument(fmt::format("transpose: permutation of {} axes for {}",
                                            perm.size(), x.signature()));
  std::vector<int> p(r), seen(r, 0);
  for (int i = 0; i < r; ++i) {
    p[i] = normalize_axis(perm[i], r);
    if (seen[p[i]]++) throw std::invalid_argument("transpose: permutation repeats an axis");
  }
  Shape shape(r);
  for (int i = 0; i < r; ++i) shape[i] = x.shape()[p[i]];
  // Axes of length 1 may move freely: when the others keep their order, the elements do too and
  // the transpose is a reshape (a view, no copy) — splitting one decoded position into heads,
  // (B, 1, H, d_head) → (B, H, 1, d_head), is one.
  int last = -1;
  bool in_order = true;
  for (int i = 0; i < r && in_order; ++i)
    if (shape[i] != 1) {
      in_order = p[i] > last;
      last = p[i];
    }
  if (in_order) return reshape(x, shape);
  return define_op(kTranspose, {x}, shape, x.dtype(), [&] {
    Tensor out = Tensor::empty(shape, x.dtype());
    const auto in_strides = contiguous_strides(x.shape());
    std::vector<std::int64_t> st(r);  // input stride for each output axis
    for (int i = 0; i < r; ++i) st[i] = in_strides[p[i]];
    dispatch_all(x.dtype(), [&]<class T>(T) {
      const T* px = x.data<T>();
      T* po = out.data<T>();
      const std::int64_t n = out.numel();
      if (r == 0 || n == 0) {
        if (n) po[0] = px[0];
        return;
      }
      const std::int64_t inner = shape[r - 1], si = st[r - 1], rows = n / inner;
      // The output's rows split over threads (attention's head splits and merges are large); each
      // thread finds its first row's input offset from the row's index, then steps like an odometer.
      parallel_chunks(rows, n >= kParallelElements, [&](std::int64_t r0, std::int64_t r1) {
        std::vector<std::int64_t> idx(r, 0);
        std::int64_t off = 0;
        std::int64_t rest = r0;
        for (int d = r - 2; d >= 0; --d) {
          idx[d] = rest % shape[d];
          rest /= shape[d];
          off += idx[d] * st[d];
        }
        for (std::int64_t row = r0; row < r1; ++row) {
          T* o = po + row * inner;
          for (std::int64_t i = 0; i < inner; ++i) o[i] = px[off + i * si];
          for (int d = r - 2; d >= 0; --d) {
            if (++idx[d] < shape[d]) {
              off += st[d];
              break;
            }
            off -= st[d] * (shape[d] - 1);
            idx[d] = 0;
          }
        }
      });
    });
    std::vector<int> inverse(r);
    for (int i = 0; i < r; ++i) inverse[p[i]] = i;
    return record(kTranspose, out, {x}, [inverse](const Tensor& g) {
      return std::vector<Tensor>{transpose(g, inverse)};
    });
  });
}

Tensor swapaxes(const Tensor& x, int a, int b) {
  std::vector<int> perm(x.rank());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[normalize_axis(a, x.rank())], perm[normalize_axis(b, x.rank())]);
  return transpose(x, perm);
}

Tensor slice(const Tensor& x, int axis, std::int64_t start, std::int64_t stop) {
  const int a = normalize_axis(axis, x.rank());
  const std::int64_t n = x.shape()[a];
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  if (start < 0 || stop > n || start > stop)
    throw std::invalid_argument(fmt::format("slice [{}:{}] out of range for axis {} of {}",
                                            start, stop, axis, x.signature()));
  Shape shape = x.shape();
  shape[a] = stop - start;
  return define_op(kSlice, {x}, shape, x.dtype(), [&] {
      Tensor out = Tensor::empty(shape, x.dtype());
      copy_block(x, start, stop - start, out, 0, a);
      return record(kSlice, out, {x}, [xs = x.shape(), a, start](const Tensor& g) {
        Tensor dx = Tensor::zeros(xs, g.dtype());
        copy_block(g, 0, g.shape()[a], dx, start, a);
        return std::vector<Tensor>{dx};
      });
  });
}

Tensor concatenate(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw std::invalid_argument("concatenate: no tensors");
  const int a = normalize_axis(axis, xs[0].rank());
  Shape shape = xs[0].shape();
  shape[a] = 0;
  for (const Tensor& x : xs) {
    Shape s = x.shape();
    if (x.rank() == xs[0].rank()) s[a] = 0;
    if (s != shape || x.dtype() != xs[0].dtype())
      throw std::invalid_argument(fmt::format(
          "concatenate along axis {}: {} does not match the others {}", axis, x.signature(),
          xs[0].signature()));
  }
  for (const Tensor& x : xs) shape[a] += x.shape()[a];
  return define_op(kConcatenate, xs, shape, xs[0].dtype(), [&] {
    Tensor out = Tensor::empty(shape, xs[0].dtype());
    std::vector<std::int64_t> starts;
    std::int64_t at = 0;
    for (const Tensor& x : xs) {
      starts.push_back(at);
      copy_block(x, 0, x.shape()[a], out, at, a);
      at += x.shape()[a];
    }
    return record(kConcatenate, out, xs, [xs, starts, a](const Tensor& g) {
      std::vector<Tensor> grads;
      for (std::size_t i = 0; i < xs.size(); ++i)
        grads.push_back(xs[i].requires_grad()
                            ? slice(g, a, starts[i], starts[i] + xs[i].shape()[a])
                            : Tensor());
      return grads;
    });
  });
}

Tensor flip(const Tensor& x, int axis) {
  const int a = normalize_axis(axis, x.rank());
  return define_op(kFlip, {x}, x.shape(), x.dtype(), [&] {
    Tensor out = Tensor::empty(x.shape(), x.dtype());
    const std::int64_t n = x.shape()[a];
    for (std::int64_t i = 0; i < n; ++i) copy_block(x, i, 1, out, n - 1 - i, a);
    return record(kFlip, out, {x}, [a](const Tensor& g) { return std::vector<Tensor>{flip(g, a)}; });
  });
}

std::vector<Tensor> split(const Tensor& x, int n_parts, int axis) {
  const int a = normalize_axis(axis, x.rank());
  const std::int64_t n = x.shape()[a];
  if (n_parts <= 0 || n % n_parts != 0)
    throw std::invalid_argument(fmt::format("split: axis {} of {} (extent {}) does not divide "
                                            "into {} equal parts",
                                            axis, x.signature(), n, n_parts));
  std::vector<Tensor> parts;
  const std::int64_t len = n / n_parts;
  for (int i = 0; i < n_parts; ++i) parts.push_back(slice(x, a, i * len, (i + 1) * len));
  return parts;
}

Tensor expand(const Tensor& x, const Shape& shape) {
  const Shape s = broadcast_shapes(x.shape(), shape);
  if (s != shape)
    throw std::invalid_argument(fmt::format("expand: cannot broadcast {} to {}", x.signature(),
                                            to_string(shape)));
  if (x.shape() == shape) return x;
  return define_op(kExpand, {x}, shape, x.dtype(), [&] {
      Tensor out = Tensor::empty(shape, x.dtype());
      dispatch_all(x.dtype(), [&]<class T>(T) {
        broadcast_loop(x.data<T>(), x.shape(), x.data<T>(), x.shape(), out.data<T>(), shape,
                       [](T v, T) { return v; });
      });
      return record(kExpand, out, {x}, [xs = x.shape()](const Tensor& g) {
        return std::vector<Tensor>{sum_to(g, xs)};
      });
  });
}

Tensor expand_dims(const Tensor& x, int axis) {
  Shape s = x.shape();
  s.insert(s.begin() + normalize_axis(axis, x.rank() + 1), 1);
  return reshape(x, s);
}

Tensor squeeze(const Tensor& x, int axis) {
  const int a = normalize_axis(axis, x.rank());
  if (x.shape()[a] != 1)
    throw std::invalid_argument(fmt::format("squeeze: axis {} of {} has extent {}, not 1", axis,
                                            x.signature(), x.shape()[a]));
  Shape s = x.shape();
  s.erase(s.begin() + a);
  return reshape(x, s);
}

void write_slice(Tensor& buf, const Tensor& x, int axis, std::int64_t start) {
  check_forward_only("write_slice", {buf, x});
  const int a = normalize_axis(axis, buf.rank());
  Shape expected = buf.shape();
  if (x.rank() == buf.rank()) expected[a] = x.shape()[a];
  if (x.shape() != expected || x.dtype() != buf.dtype() || start < 0 ||
      start + x.shape()[a] > buf.shape()[a])
    throw std::invalid_argument(fmt::format("write_slice: cannot write {} into {} at {} on axis {}",
                                            x.signature(), buf.signature(), start, axis));
  define_op(kWriteSlice, {buf, x}, {}, buf.dtype(), [&] {
    buf.changed_in_place();
    copy_block(x, 0, x.shape()[a], buf, start, a);
    return buf;
  });
}

Tensor stack(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw std::invalid_argument("stack: no tensors");
  for (std::size_t i = 1; i < xs.size(); ++i)
    if (xs[i].shape() != xs[0].shape() || xs[i].dtype() != xs[0].dtype())
      throw std::invalid_argument(fmt::format("stack: tensor {} is {}, tensor 0 {}: stacked tensors have one shape "
                                              "and dtype", i, xs[i].signature(), xs[0].signature()));
  std::vector<Tensor> parts;
  for (const Tensor& x : xs) parts.push_back(expand_dims(x, axis < 0 ? axis + x.rank() + 1 : axis));
  return concatenate(parts, axis < 0 ? axis + xs[0].rank() + 1 : axis);
}

}  // namespace ctrax

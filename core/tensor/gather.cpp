#include "core/tensor/gather.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/tensor/op.hpp"
#include "core/tensor/ops.hpp"

namespace ctrax {
namespace {

constexpr OpDef kTake{"take", profile::Family::indexing, Accepts::any};
constexpr OpDef kTakeAlong{"take_along_axis", profile::Family::indexing, Accepts::any};
constexpr OpDef kScatterAdd{"scatter_add", profile::Family::indexing, Accepts::numeric};
constexpr OpDef kDynamicSlice{"dynamic_slice", profile::Family::indexing, Accepts::any};
constexpr OpDef kDynamicUpdate{"dynamic_update_slice", profile::Family::indexing, Accepts::any};

// x seen as (outer, n, inner) around `axis`: every op here moves runs of `inner` elements.
struct AxisSplit {
  std::int64_t outer = 1, n = 1, inner = 1;
};

AxisSplit split_at(const Shape& s, int axis) {
  AxisSplit a;
  for (int d = 0; d < static_cast<int>(s.size()); ++d) {
    const std::int64_t e = s[static_cast<std::size_t>(d)];
    (d < axis ? a.outer : d == axis ? a.n : a.inner) *= e;
  }
  return a;
}

// Every index an int32 in [0, n), or an error naming the op, the position and the range.
void check_indices(const OpDef& op, const Tensor& indices, std::int64_t n, const std::string& what) {
  if (indices.dtype() != DType::int32)
    throw std::invalid_argument(fmt::format("{}: indices must be int32, got {}", op.name, indices.signature()));
  if (indices.is_meta()) return;
  const std::int32_t* p = indices.data<std::int32_t>();
  for (std::int64_t k = 0, m = indices.numel(); k < m; ++k)
    if (p[k] < 0 || p[k] >= n)
      throw std::out_of_range(fmt::format("{}: index {} at position {} of the indices is outside [0, {}) ({})", op.name,
                                          p[k], k, n, what));
}

// take's shape: x's with `axis` replaced by the indices' shape.
Shape taken_shape(const Shape& x, const Shape& indices, int axis) {
  Shape out(x.begin(), x.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), x.begin() + axis + 1, x.end());
  return out;
}

// dst (outer, m, inner) ← src (outer, n, inner) at rows idx[0 … m).
void gather_axis_rows(const Tensor& src, AxisSplit a, const std::int32_t* idx, std::int64_t m, Tensor& dst) {
  const std::size_t row = static_cast<std::size_t>(a.inner) * itemsize(src.dtype());
  const auto* s = static_cast<const std::byte*>(src.raw_data());
  auto* d = static_cast<std::byte*>(dst.raw_data());
  for (std::int64_t o = 0; o < a.outer; ++o)
    for (std::int64_t j = 0; j < m; ++j)
      std::memcpy(d + static_cast<std::size_t>(o * m + j) * row, s + static_cast<std::size_t>(o * a.n + idx[j]) * row, row);
}

// dst (outer, n, inner) += src (outer, m, inner) at rows idx[0 … m), in index order (so the sum's
// rounding is the same every run).
void scatter_axis_rows_add(Tensor& dst, AxisSplit a, const std::int32_t* idx, std::int64_t m, const Tensor& src) {
  dispatch_numeric(dst.dtype(), [&]<class T>(T) {
    T* d = dst.data<T>();
    const T* s = src.data<T>();
    for (std::int64_t o = 0; o < a.outer; ++o)
      for (std::int64_t j = 0; j < m; ++j) {
        T* to = d + (o * a.n + idx[j]) * a.inner;
        const T* from = s + (o * m + j) * a.inner;
        for (std::int64_t k = 0; k < a.inner; ++k) to[k] += from[k];
      }
  });
}

// The clamped start of each axis (lax.dynamic_slice's rule) for a block of `sizes` in `shape`.
std::vector<std::int64_t> clamped_starts(const OpDef& op, const Tensor& starts, const Shape& shape, const Shape& sizes) {
  const std::size_t rank = shape.size();
  if (starts.dtype() != DType::int32 || starts.shape() != Shape{static_cast<std::int64_t>(rank)})
    throw std::invalid_argument(fmt::format("{}: starts must be int32 of shape ({},), one per axis of {}, got {}", op.name,
                                            rank, to_string(shape), starts.signature()));
  std::vector<std::int64_t> out(rank, 0);
  if (starts.is_meta()) return out;
  for (std::size_t d = 0; d < rank; ++d)
    out[d] = std::clamp<std::int64_t>(starts.data<std::int32_t>()[d], 0, shape[d] - sizes[d]);
  return out;
}

void check_block(const OpDef& op, const Shape& shape, const Shape& sizes) {
  bool fits = sizes.size() == shape.size();
  for (std::size_t d = 0; fits && d < shape.size(); ++d) fits = sizes[d] >= 0 && sizes[d] <= shape[d];
  if (!fits)
    throw std::invalid_argument(fmt::format("{}: a block of {} does not fit in {} (one extent per axis, each at most the "
                                            "axis's)", op.name, to_string(sizes), to_string(shape)));
}

// Copies the block of `sizes` between a tensor of `shape` at `at` and a dense block: into the block
// (to_block) or out of it. Runs along the last axis are contiguous: one memcpy each.
void copy_block(const Tensor& big, const std::vector<std::int64_t>& at, const Shape& sizes, const Tensor& block,
                bool to_block) {
  const Shape& shape = big.shape();
  const std::size_t rank = shape.size(), item = itemsize(big.dtype());
  std::int64_t n_block = 1;
  for (auto e : sizes) n_block *= e;
  if (n_block == 0) return;
  if (rank == 0) {
    std::memcpy(to_block ? const_cast<void*>(block.raw_data()) : const_cast<void*>(big.raw_data()),
                to_block ? big.raw_data() : block.raw_data(), item);
    return;
  }
  const std::int64_t run = sizes.back(), runs = n_block / run;
  auto* b = static_cast<std::byte*>(const_cast<void*>(big.raw_data()));
  auto* k = static_cast<std::byte*>(const_cast<void*>(block.raw_data()));
  std::vector<std::int64_t> pos(rank, 0);   // position inside the block, last axis left at 0
  for (std::int64_t r = 0; r < runs; ++r) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < rank; ++d) offset = offset * shape[d] + at[d] + pos[d];
    std::byte* in_big = b + static_cast<std::size_t>(offset) * item;
    std::byte* in_block = k + static_cast<std::size_t>(r * run) * item;
    if (to_block) std::memcpy(in_block, in_big, static_cast<std::size_t>(run) * item);
    else std::memcpy(in_big, in_block, static_cast<std::size_t>(run) * item);
    for (int d = static_cast<int>(rank) - 2; d >= 0; --d) {   // next run: odometer over the leading axes
      if (++pos[static_cast<std::size_t>(d)] < sizes[static_cast<std::size_t>(d)]) break;
      pos[static_cast<std::size_t>(d)] = 0;
    }
  }
}

}  // namespace

Tensor take(const Tensor& x, const Tensor& indices, int axis) {
  if (x.rank() == 0) throw std::invalid_argument(fmt::format("take: x must have an axis to take along, got {}", x.signature()));
  axis = normalize_axis(axis, x.rank(), "take axis");
  const AxisSplit a = split_at(x.shape(), axis);
  check_indices(kTake, indices, a.n, fmt::format("the extent of axis {} of {}", axis, x.signature()));
  const Shape shape = taken_shape(x.shape(), indices.shape(), axis);
  return define_op(kTake, {x, indices}, shape, x.dtype(), [&] {
    Tensor out = Tensor::empty(shape, x.dtype());
    gather_axis_rows(x, a, indices.data<std::int32_t>(), indices.numel(), out);
    return record(kTake, out, {x}, [indices, axis, x_shape = x.shape()](const Tensor& g) {
      return std::vector<Tensor>{scatter_add(Tensor::zeros(x_shape, g.dtype()), indices, g, axis)};
    });
  });
}

Tensor scatter_add(const Tensor& x, const Tensor& indices, const Tensor& updates, int axis) {
  if (x.rank() == 0) throw std::invalid_argument(fmt::format("scatter_add: x must have an axis, got {}", x.signature()));
  axis = normalize_axis(axis, x.rank(), "scatter_add axis");
  const AxisSplit a = split_at(x.shape(), axis);
  check_indices(kScatterAdd, indices, a.n, fmt::format("the extent of axis {} of {}", axis, x.signature()));
  const Shape expected = taken_shape(x.shape(), indices.shape(), axis);
  if (updates.shape() != expected || updates.dtype() != x.dtype())
    throw std::invalid_argument(fmt::format("scatter_add: updates must be {} {} (take(x, indices, {})'s shape), got {}",
                                            to_string(x.dtype()), to_string(expected), axis, updates.signature()));
  return define_op(kScatterAdd, {x, indices, updates}, x.shape(), x.dtype(), [&] {
    Tensor out = x.clone();
    scatter_axis_rows_add(out, a, indices.data<std::int32_t>(), indices.numel(), updates);
    return record(kScatterAdd, out, {x, updates}, [indices, axis](const Tensor& g) {
      return std::vector<Tensor>{g, take(g, indices, axis)};
    });
  });
}

Tensor take_along_axis(const Tensor& x, const Tensor& indices, int axis) {
  if (x.rank() == 0) throw std::invalid_argument(fmt::format("take_along_axis: x must have an axis, got {}", x.signature()));
  axis = normalize_axis(axis, x.rank(), "take_along_axis axis");
  bool same = indices.rank() == x.rank();
  for (int d = 0; same && d < x.rank(); ++d) same = d == axis || indices.dim(d) == x.dim(d);
  if (!same)
    throw std::invalid_argument(fmt::format("take_along_axis: indices must have x's shape {} but along axis {}, got {}",
                                            to_string(x.shape()), axis, indices.signature()));
  const AxisSplit a = split_at(x.shape(), axis);
  check_indices(kTakeAlong, indices, a.n, fmt::format("the extent of axis {} of {}", axis, x.signature()));
  const std::int64_t m = indices.rank() > 0 ? indices.dim(axis) : 0;
  return define_op(kTakeAlong, {x, indices}, indices.shape(), x.dtype(), [&] {
    Tensor out = Tensor::empty(indices.shape(), x.dtype());
    const std::int32_t* idx = indices.data<std::int32_t>();
    dispatch_all(x.dtype(), [&]<class T>(T) {
      const T* s = x.data<T>();
      T* d = out.data<T>();
      for (std::int64_t o = 0; o < a.outer; ++o)
        for (std::int64_t j = 0; j < m; ++j)
          for (std::int64_t k = 0; k < a.inner; ++k) {
            const std::int64_t at = (o * m + j) * a.inner + k;
            d[at] = s[(o * a.n + idx[at]) * a.inner + k];
          }
    });
    return record(kTakeAlong, out, {x}, [indices, a, m, x_shape = x.shape()](const Tensor& g) {
      Tensor dx = Tensor::zeros(x_shape, g.dtype());
      const std::int32_t* idx = indices.data<std::int32_t>();
      dispatch_float(g.dtype(), [&]<class T>(T) {
        const T* pg = g.data<T>();
        T* pd = dx.data<T>();
        for (std::int64_t o = 0; o < a.outer; ++o)
          for (std::int64_t j = 0; j < m; ++j)
            for (std::int64_t k = 0; k < a.inner; ++k) {
              const std::int64_t at = (o * m + j) * a.inner + k;
              pd[(o * a.n + idx[at]) * a.inner + k] += pg[at];
            }
      });
      return std::vector<Tensor>{dx};
    });
  });
}

Tensor dynamic_slice(const Tensor& x, const Tensor& starts, const Shape& sizes) {
  check_block(kDynamicSlice, x.shape(), sizes);
  const std::vector<std::int64_t> at = clamped_starts(kDynamicSlice, starts, x.shape(), sizes);
  return define_op(kDynamicSlice, {x, starts}, sizes, x.dtype(), [&] {
    Tensor out = Tensor::empty(sizes, x.dtype());
    copy_block(x, at, sizes, out, true);
    return record(kDynamicSlice, out, {x}, [starts, x_shape = x.shape()](const Tensor& g) {
      return std::vector<Tensor>{dynamic_update_slice(Tensor::zeros(x_shape, g.dtype()), g, starts)};
    });
  });
}

Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const Tensor& starts) {
  if (update.dtype() != x.dtype())
    throw std::invalid_argument(fmt::format("dynamic_update_slice: the update must be {} as x, got {}",
                                            to_string(x.dtype()), update.signature()));
  check_block(kDynamicUpdate, x.shape(), update.shape());
  const std::vector<std::int64_t> at = clamped_starts(kDynamicUpdate, starts, x.shape(), update.shape());
  return define_op(kDynamicUpdate, {x, update, starts}, x.shape(), x.dtype(), [&] {
    Tensor out = x.clone();
    copy_block(out, at, update.shape(), update, false);
    return record(kDynamicUpdate, out, {x, update}, [starts, u_shape = update.shape()](const Tensor& g) {
      return std::vector<Tensor>{dynamic_update_slice(g, Tensor::zeros(u_shape, g.dtype()), starts),
                                 dynamic_slice(g, starts, u_shape)};
    });
  });
}

}  // namespace ctrax

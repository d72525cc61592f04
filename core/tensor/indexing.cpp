#include "core/tensor/indexing.hpp"

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <stdexcept>

#include "core/tensor/elementwise.hpp"
#include "core/tensor/op.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/shape_ops.hpp"

namespace ctrax {

namespace {
constexpr OpDef kWhere{"where", profile::Family::indexing, Accepts::any};
constexpr OpDef kEmbedding{"embedding", profile::Family::indexing};
constexpr OpDef kOneHot{"one_hot", profile::Family::indexing, Accepts::any};
}  // namespace

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  if (condition.dtype() != DType::bool_ || a.dtype() != b.dtype())
    throw std::invalid_argument(fmt::format("where(condition, a, b) needs a bool condition and "
                                            "a, b of one dtype, got {}, {}, {}",
                                            condition.signature(), a.signature(), b.signature()));
  const Shape shape = broadcast_shapes(broadcast_shapes(condition.shape(), a.shape()), b.shape());
  return define_op(kWhere, {condition, a, b}, shape, a.dtype(), [&] {
    const Tensor c = expand(condition, shape);
    const Tensor ea = expand(a.detach(), shape), eb = expand(b.detach(), shape);
    Tensor out = Tensor::empty(shape, a.dtype());
    dispatch_all(a.dtype(), [&]<class T>(T) {
      const std::uint8_t* pc = c.data<std::uint8_t>();
      const T *pa = ea.data<T>(), *pb = eb.data<T>();
      T* po = out.data<T>();
      for (std::int64_t i = 0, n = out.numel(); i < n; ++i) po[i] = pc[i] ? pa[i] : pb[i];
    });
    return record(kWhere, out, {a, b}, [c, a, b](const Tensor& g) {
      const Tensor zero = Tensor::zeros({}, g.dtype());
      return std::vector<Tensor>{a.requires_grad() ? sum_to(where(c, g, zero), a.shape()) : Tensor(),
                                 b.requires_grad() ? sum_to(where(c, zero, g), b.shape()) : Tensor()};
    });
  });
}

Tensor masked_fill(const Tensor& x, const Tensor& keep, double value) {
  return where(keep, x, Tensor::scalar(value, x.dtype()));
}

Tensor embedding(const Tensor& table, const Tensor& ids) {
  if (table.rank() != 2 || ids.dtype() != DType::int32)
    throw std::invalid_argument(fmt::format("embedding needs a (V, d) table and int32 ids, got {} "
                                            "and {}", table.signature(), ids.signature()));
  const std::int64_t V = table.dim(0), d = table.dim(1);
  Shape shape = ids.shape();
  shape.push_back(d);
  return define_op(kEmbedding, {table, ids}, shape, table.dtype(), [&] {
    const std::int32_t* pi = ids.data<std::int32_t>();
    for (std::int64_t i = 0, n = ids.numel(); i < n; ++i)
      if (pi[i] < 0 || pi[i] >= V)
        throw std::out_of_range(fmt::format("embedding: token id {} at position {} is outside the "
                                            "vocabulary [0, {})", pi[i], i, V));
    Tensor out = Tensor::empty(shape, table.dtype());
    const std::size_t row = static_cast<std::size_t>(d) * itemsize(table.dtype());
    const auto* src = static_cast<const std::byte*>(table.raw_data());
    auto* dst = static_cast<std::byte*>(out.raw_data());
    for (std::int64_t i = 0, n = ids.numel(); i < n; ++i)
      std::memcpy(dst + i * row, src + pi[i] * row, row);
    return record(kEmbedding, out, {table}, [ids, V, d](const Tensor& g) {
      Tensor dt = Tensor::zeros({V, d}, g.dtype());
      dispatch_float(g.dtype(), [&]<class T>(T) {
        const std::int32_t* pi = ids.data<std::int32_t>();
        const T* pg = g.data<T>();
        T* pd = dt.data<T>();
        for (std::int64_t i = 0, n = ids.numel(); i < n; ++i)
          for (std::int64_t j = 0; j < d; ++j) pd[pi[i] * d + j] += pg[i * d + j];
      });
      return std::vector<Tensor>{dt};
    });
  });
}

Tensor one_hot(const Tensor& ids, std::int64_t n, DType dtype) {
  if (ids.dtype() != DType::int32)
    throw std::invalid_argument("one_hot needs int32 ids, got " + ids.signature());
  Shape shape = ids.shape();
  shape.push_back(n);
  return define_op(kOneHot, {ids}, shape, dtype, [&] {
    const std::int32_t* pi = ids.data<std::int32_t>();
    for (std::int64_t i = 0, m = ids.numel(); i < m; ++i)
      if (pi[i] < 0 || pi[i] >= n)   // jax.nn.one_hot gives a row of zeros: a loss would skip the row in silence
        throw std::out_of_range(fmt::format("one_hot: id {} at position {} is outside [0, {})", pi[i], i, n));
    Tensor out = Tensor::zeros(shape, dtype);
    dispatch_all(dtype, [&]<class T>(T) {
      T* po = out.data<T>();
      for (std::int64_t i = 0, m = ids.numel(); i < m; ++i) po[i * n + pi[i]] = T(1);
    });
    return out;
  });
}

namespace {

// Checks from against x and returns the bytes of one row's slice.
std::size_t row_bytes(const Tensor& x, const std::vector<std::int64_t>& from, std::int64_t rows, const char* who) {
  if (!x.defined() || x.rank() < 1 || rows == 0 || x.dim(0) % rows != 0)
    throw std::invalid_argument(fmt::format("{}: {} rows do not divide the leading axis of {}", who, rows,
                                            x.defined() ? x.signature() : std::string("an undefined tensor")));
  for (const std::int64_t r : from)
    if (r < 0 || r >= rows)
      throw std::invalid_argument(fmt::format("{}: row {} is outside [0, {})", who, r, rows));
  return static_cast<std::size_t>(x.numel() / rows) * itemsize(x.dtype());
}

}  // namespace

Tensor gather_rows(const Tensor& x, const std::vector<std::int64_t>& from, std::int64_t rows) {
  check_forward_only("gather_rows", {x});
  const std::size_t slice = row_bytes(x, from, rows, "gather_rows");
  Shape shape = x.shape();
  shape[0] = shape[0] / rows * static_cast<std::int64_t>(from.size());
  Tensor out = Tensor::empty(shape, x.dtype());
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (std::size_t r = 0; r < from.size(); ++r)
    std::memcpy(dst + r * slice, src + static_cast<std::size_t>(from[r]) * slice, slice);
  return out;
}

void move_rows(Tensor& x, const std::vector<std::int64_t>& from, std::int64_t n) {
  check_forward_only("move_rows", {x});
  const auto rows = static_cast<std::int64_t>(from.size());
  const std::size_t slice = row_bytes(x, from, rows, "move_rows");
  if (x.rank() < 2 || n < 0 || n > x.dim(1))
    throw std::invalid_argument(fmt::format("move_rows: {} positions asked of {}", n, x.signature()));
  const std::int64_t heads = x.dim(0) / rows;
  const std::size_t head = slice / static_cast<std::size_t>(heads);             // one (max_len, …) slice
  const std::size_t used = head / static_cast<std::size_t>(x.dim(1)) * static_cast<std::size_t>(n);
  // A source row that is itself overwritten is saved first (once, however many rows copy it);
  // the others are read in place. Beam search's usual step (parents 0 0 1 2) saves rows 1 and 2.
  std::vector<std::size_t> changed;
  std::vector<std::int64_t> saved_at(from.size(), -1);   // a source's place in `saved`
  std::vector<std::size_t> saved;
  for (std::size_t r = 0; r < from.size(); ++r)
    if (from[r] != static_cast<std::int64_t>(r)) changed.push_back(r);
  if (changed.empty() || used == 0) return;
  x.changed_in_place();
  for (const std::size_t r : changed) {
    const auto src = static_cast<std::size_t>(from[r]);
    if (from[src] != static_cast<std::int64_t>(src) && saved_at[src] < 0) {   // src is overwritten
      saved_at[src] = static_cast<std::int64_t>(saved.size());
      saved.push_back(src);
    }
  }
  const std::size_t row_used = static_cast<std::size_t>(heads) * used;
  std::unique_ptr<char[]> copies(new char[saved.size() * row_used]);   // no zero fill: all written
  char* data = static_cast<char*>(x.raw_data());
  const auto n_heads = static_cast<std::size_t>(heads);
  // Both passes over (row, head) pairs split across threads: a step of 4 beams moves megabytes.
  const auto n_saved = static_cast<std::int64_t>(saved.size() * n_heads);
  parallel_chunks(n_saved, n_saved * static_cast<std::int64_t>(used) >= (1 << 18), [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) {
      const std::size_t s = static_cast<std::size_t>(i) / n_heads, h = static_cast<std::size_t>(i) % n_heads;
      std::memcpy(copies.get() + s * row_used + h * used, data + saved[s] * slice + h * head, used);
    }
  });
  const auto n_moved = static_cast<std::int64_t>(changed.size() * n_heads);
  parallel_chunks(n_moved, n_moved * static_cast<std::int64_t>(used) >= (1 << 18), [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) {
      const std::size_t r = changed[static_cast<std::size_t>(i) / n_heads], h = static_cast<std::size_t>(i) % n_heads;
      const auto src = static_cast<std::size_t>(from[r]);
      const char* source = saved_at[src] >= 0 ? copies.get() + static_cast<std::size_t>(saved_at[src]) * row_used + h * used
                                              : data + src * slice + h * head;
      std::memcpy(data + r * slice + h * head, source, used);
    }
  });
}

}  // namespace ctrax

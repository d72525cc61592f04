// ctrax/core/tensor/shape.hpp — shapes, axis normalisation and NumPy broadcasting.
//
// A Shape lists the extent of each axis, outermost first; storage is row-major, so the last axis
// is contiguous. A scalar has the empty shape {} and one element.
//
// Broadcasting (NumPy's rule): align shapes at the right; two extents are compatible when equal or
// when one of them is 1; the result takes the larger. (B, L, d) + (d) -> (B, L, d);
// (B, 1, 1, L) with (1, L, L) -> (B, 1, L, L).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ctrax {

using Shape = std::vector<std::int64_t>;

inline std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (const std::int64_t d : s) n *= d;
  return n;
}
std::string to_string(const Shape& s);          // "(2, 3)"; a scalar is "()"

// Row-major strides in elements: for (2, 3, 4) -> (12, 4, 1).
std::vector<std::int64_t> contiguous_strides(const Shape& s);

namespace detail {
[[noreturn]] void throw_axis_out_of_range(int axis, int rank, const char* what);
}

// Maps a possibly negative axis into [0, rank); throws std::invalid_argument naming `what`.
// Inline: ops call it a few times each, and Tensor::dim on every read of an extent.
inline int normalize_axis(int axis, int rank, const char* what = "axis") {
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) detail::throw_axis_out_of_range(axis, rank, what);
  return a;
}

// The broadcast result of two shapes; throws std::invalid_argument with both shapes on mismatch.
Shape broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace ctrax

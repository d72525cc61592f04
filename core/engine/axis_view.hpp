// ctrax/core/engine/axis_view.hpp — internal: a shape seen as (outer, n, inner) around one axis.
//
// Row-major storage makes element (o, k, i) sit at (o·n + k)·inner + i, so any reduction or
// normalisation along one axis is three nested loops over raw pointers.
#pragma once

#include <cstdint>

#include "core/tensor/shape.hpp"

namespace ctrax {

struct AxisView {
  std::int64_t outer = 1, n = 1, inner = 1;
  AxisView(const Shape& s, int axis) {
    for (int i = 0; i < axis; ++i) outer *= s[i];
    n = s[axis];
    for (std::size_t i = axis + 1; i < s.size(); ++i) inner *= s[i];
  }
  std::int64_t at(std::int64_t o, std::int64_t k, std::int64_t i) const {
    return (o * n + k) * inner + i;
  }
};

}  // namespace ctrax

// ctrax/core/layer/select.hpp — Select: copy, reorder or drop the top items of the stack.
//
// Select(indices, n_in) pops n_in items (x0, x1, ...) and pushes x[indices[0]], x[indices[1]], ...
// n_in defaults to max(indices) + 1; items among the top n_in that no index names are dropped;
// deeper items are untouched.
//   Select({0, 0})      (a, ...)       -> (a, a, ...)        n_in 1, n_out 2  (= Dup)
//   Select({1, 0})      (a, b, ...)    -> (b, a, ...)        n_in 2            (= Swap)
//   Select({2})         (a, b, c, ...) -> (c, ...)           n_in 3
//   Select({0}, 3)      (a, b, c, ...) -> (a, ...)           keeps only the top of three
// Printed as Select[0,1,1]_in2_out3.
#pragma once

#include <source_location>
#include <vector>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

LayerPtr Select(std::vector<int> indices, int n_in = -1,
                std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

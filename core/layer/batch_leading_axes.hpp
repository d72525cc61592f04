// ctrax/core/layer/batch_leading_axes.hpp — BatchLeadingAxes: a layer over any number of batch axes.
//
//   BatchLeadingAxes(F, n_last_axes_to_keep = k)      (..., d_1 … d_k) → (..., F's output axes)
//
// Every input's leading axes are joined into one batch axis (the last k kept), F runs on that,
// and its output's first axis is split back into the leading axes: a layer written for
// (B, H, W, C) then takes (B, T, H, W, C). Trax's, for layers of one output (n_out 1); every input
// must have the same leading axes.
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

LayerPtr BatchLeadingAxes(LayerPtr layer, int n_last_axes_to_keep = 1,
                          std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

// ctrax/layers/dense.hpp — Dense: the fully connected layer, y = x·W + b.
//
//   x (..., d_in)  ·  W (d_in, n_units)  +  b (n_units)   ->   y (..., n_units)
//
// All leading axes (batch B, length L, ...) fold into one GEMM. Initialisation as in Trax:
// W ~ Glorot-uniform, b ~ N(0, (1e-6)²), from the two halves of the layer's rng. Weights are
// named "w" and "b". Printed as Dense_{n_units}.
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

LayerPtr Dense(std::int64_t n_units, bool use_bias = true,
               std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

// ctrax/layers/dense.hpp — Dense: the fully connected layer, y = x·W + b.
//
//   x (..., d_in)  ·  W (d_in, n_units)  +  b (n_units)   ->   y (..., n_units)
//
// All leading axes (batch B, length L, ...) fold into one GEMM. Initialisation as in Trax:
// W ~ Glorot-uniform, b ~ N(0, (1e-6)²), from the two halves of the layer's rng. Weights are
// named "w" and "b". Printed as Dense_{n_units}.
//
// Trax's keyword arguments are the options, by name:
//   Dense(512)                          Dense(2, {.use_bias = false})
//   Dense(d, {.kernel_initializer = scaled_uniform(1.0)})
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"
#include "layers/initializers.hpp"

namespace ctrax::layers {

struct DenseOptions {
  Initializer kernel_initializer = glorot_uniform();
  Initializer bias_initializer = random_normal(1e-6);
  bool use_bias = true;
};

LayerPtr Dense(std::int64_t n_units, DenseOptions options = {},
               std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

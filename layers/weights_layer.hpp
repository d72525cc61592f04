// ctrax/layers/weights_layer.hpp — layers that take no input (trax/layers/core.py).
//
//   Weights(initializer, shape)          () → w        a learnable tensor as a layer's output,
//                                                      drawn by `initializer`; printed Weights_(2, 3)_in0
//   RandomUniform(min, max, shape)       () → x        fresh U(min, max) values from the layer's key
//                                                      (a new draw each step, as the Loop re-keys it)
// n_in 0, n_out 1: in a Serial they push one item onto the stack — Serial(Weights(init, {d}), Add())
// adds a learned vector. (Parallel and Branch refuse them, as Trax's Parallel does: each of its
// sublayers takes a span of the stack.)
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"
#include "layers/initializers.hpp"

namespace ctrax::layers {

LayerPtr Weights(Initializer initializer, Shape shape = {},
                 std::source_location created = std::source_location::current());
LayerPtr RandomUniform(double min_val = 0.0, double max_val = 1.0, Shape shape = {}, DType dtype = DType::float32,
                       std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

// ctrax/layers/elementwise.hpp — the elementwise layers of trax/layers/core.py that are not
// activations (those are in activations.hpp).
//
//   layer                          x → y                                       n_in 1 → n_out 1
//   Negate                         −x
//   StopGradient                   x; no gradient flows back through it
//   ToFloat                        x as float32 (token ids, masks: any dtype)
//   ThresholdToBinary(t = 0.5)     1 where x > t, else 0, as int32; not differentiable
//
// Each is an Fn over one op, printed by its Trax name.
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

LayerPtr Negate(std::source_location created = std::source_location::current());
LayerPtr StopGradient(std::source_location created = std::source_location::current());
LayerPtr ToFloat(std::source_location created = std::source_location::current());
LayerPtr ThresholdToBinary(double threshold = 0.5, std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

// ctrax/core/layer/bidirectional.hpp — Bidirectional: an RNN read both ways.
//
//   Bidirectional(forward_layer, backward_layer, axis = 1, merge_layer = Concatenate())
//     = Serial(Branch(forward_layer, Serial(flip, backward_layer, flip)), merge_layer)
//
// The backward layer reads the sequence reversed along the time axis and its outputs are reversed
// back, so position t of both outputs belongs to position t of the input; the merge (by default
// along the features) gives each position what came before it and what comes after. Trax's, but
// Trax copies forward_layer to make the backward one; a C++ layer cannot be copied, so the caller
// gives a second layer of the same kind (its own weights): Bidirectional(LSTM(64), LSTM(64)).
// The flip prints as Trax's `_FlipAlongTimeAxis`.
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

LayerPtr Bidirectional(LayerPtr forward_layer, LayerPtr backward_layer, int axis = 1, LayerPtr merge_layer = nullptr,
                       std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

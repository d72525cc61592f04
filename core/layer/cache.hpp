// ctrax/core/layer/cache.hpp — Cache: run a layer once, then replay its outputs.
//
// The first forward runs the sublayer and stores its outputs in the state; every later forward
// returns the stored outputs whatever its inputs. Transformer wraps its encoder in Cache in
// predict mode, so decoding one target token at a time encodes the source sentence only once.
// Re-initialising the model (or clearing state()) empties the cache. n_in/n_out are the
// sublayer's; printed as Cache[ layer ].
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

LayerPtr Cache(LayerPtr layer, std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

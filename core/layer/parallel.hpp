// ctrax/core/layer/parallel.hpp — Parallel: sublayers side by side on consecutive stack spans.
//
// Parallel(F[1→1], G[2→1]) on (a, b, c, ...) gives (F(a), G(b, c), ...): each sublayer takes the
// next n_in items, outputs are concatenated in order. n_in = Σ n_in, n_out = Σ n_out.
// None (or an empty list) is the identity, a list is a Serial. At least two sublayers are
// required, and none may take zero inputs (Trax's rules).
#pragma once

#include <source_location>

#include "core/layer/layer_arg.hpp"

namespace ctrax::layers {

LayerPtr make_parallel(const LayerArgs& layers,
                       std::source_location created = std::source_location::current());

CTRAX_VARIADIC_COMBINATOR(Parallel, make_parallel)

// The layer a Parallel/Branch argument stands for: None -> identity Serial(), a list -> Serial.
LayerPtr as_layer(const LayerArg& arg, std::source_location created);

}  // namespace ctrax::layers

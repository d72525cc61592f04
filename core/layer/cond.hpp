// ctrax/core/layer/cond.hpp — Cond: run one of two layers, chosen by a third.
//
//   Cond(cond, true_layer, false_layer = nullptr)
//       stack (x…, y…, rest): c = cond(x…), one boolean; then true_layer(y…) if c else false_layer(y…)
//
// x… are cond's n_in items, y… the branches' n_in items below them. n_in = cond.n_in + n_in of
// the branches, n_out = theirs. No false layer means the identity (Trax's Serial(), 1 → 1). Only
// the chosen branch runs — and so only it is recorded for the gradient and changes its state.
// Trax's (fastmath.cond). Initialising runs both branches on shapes alone, so both get weights.
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

LayerPtr Cond(LayerPtr cond, LayerPtr true_layer, LayerPtr false_layer = nullptr,
              std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

// ctrax/layers/dropout.hpp — Dropout: randomly zero activations while training.
//
//   x (any shape)  →  x ⊙ keep / (1 − rate),   keep ~ Bernoulli(1 − rate), same shape as x
//
// Dividing by (1 − rate) keeps every activation's expected value unchanged, so nothing needs
// rescaling at eval time ("inverted" dropout). `shared_axes` gives the mask extent 1 on those
// axes: one keep/drop decision broadcast along them (e.g. shared_axes {1} drops whole feature
// vectors for all L positions of a sequence at once).
//
// Active only in train mode with rate > 0; in eval and predict the layer is the identity. The
// mask comes from the layer's rng, which the training loop replaces every step, so each step
// draws a new mask — and the same seed replays the same masks. Printed `Dropout`.
//
// Trax's keywords are the options: Dropout({.rate = 0.1, .shared_axes = {1}, .mode = mode}).
//
// Trax also stores the rate as state; ctrax keeps it a constructor argument (checkpoints then
// hold only tensors that matter).
#pragma once

#include <source_location>
#include <vector>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

struct DropoutOptions {
  double rate = 0.0;
  std::vector<int> shared_axes = {};
  Mode mode = Mode::train;
};

LayerPtr Dropout(DropoutOptions options = {},
                 std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

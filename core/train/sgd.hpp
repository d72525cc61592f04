// ctrax/core/train/sgd.hpp — stochastic gradient descent (trax/optimizers/base.py SGD).
//
//     w ← w − lr · g
//
// No slots, no weight decay (as in Trax). The baseline every other optimizer improves on.
#pragma once

#include "core/train/optimizer.hpp"

namespace ctrax::train {

struct SGDConfig {
  double learning_rate = 0.01;            // Trax's base default
  std::optional<double> clip_grad_norm = std::nullopt;  // global-norm clipping; none by default
};

OptimizerPtr SGD(const SGDConfig& config = {});

}  // namespace ctrax::train

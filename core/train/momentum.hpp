// ctrax/core/train/momentum.hpp — momentum SGD, Nesterov by default (trax/optimizers/momentum.py).
//
// A velocity v accumulates past gradients, so steps along a consistent direction grow and
// oscillating components cancel:
//     v ← mass · v + g
//     w ← (1 − weight_decay_rate) · w − lr · u,   u = mass · v + g   (Nesterov: look ahead)
//                                                 u = v              (classical momentum)
// Slot: "velocity". Weight decay is not scaled by lr, as in Trax.
#pragma once

#include "core/train/optimizer.hpp"

namespace ctrax::train {

struct MomentumConfig {
  double learning_rate = 0.01;
  double mass = 0.9;                      // momentum coefficient μ
  double weight_decay_rate = 1e-5;        // w shrinks by this fraction every step
  bool nesterov = true;                   // Trax's default
  std::optional<double> clip_grad_norm = std::nullopt;  // global-norm clipping; none by default
};

OptimizerPtr Momentum(const MomentumConfig& config = {});

}  // namespace ctrax::train

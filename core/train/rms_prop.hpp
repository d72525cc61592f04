// ctrax/core/train/rms_prop.hpp — RMSProp (trax/optimizers/rms_prop.py; Hinton's lecture 6e).
//
// Each weight's step is divided by the root of a running mean of its squared gradients, so a
// weight whose gradients are large moves no faster than one whose gradients are small:
//     s ← γ · s + (1 − γ) · g²
//     w ← w − lr · g / (√s + ε)
// Slot: "avg_sq_grad" (s). It starts at ONE, as in Trax (PyTorch's RMSprop starts at zero): a
// small gradient's first steps are then about lr · g, where a zero start would make every weight's
// first step lr / √(1 − γ) ≈ 3.2 lr, whatever its gradient. No bias correction (Adam's answer to
// the zero start, adam.hpp) and no weight decay, as in Trax.
#pragma once

#include "core/train/optimizer.hpp"

namespace ctrax::train {

struct RMSPropConfig {
  double learning_rate = 0.001;
  double gamma = 0.9;                     // the running mean's decay γ
  double eps = 1e-8;                      // ε, added to √s
  std::optional<double> clip_grad_norm = std::nullopt;  // global-norm clipping; none by default
};

OptimizerPtr RMSProp(const RMSPropConfig& config = {});

}  // namespace ctrax::train

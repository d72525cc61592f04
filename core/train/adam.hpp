// ctrax/core/train/adam.hpp — Adam (Kingma & Ba 2015; trax/optimizers/adam.py).
//
// Two running averages per weight — m of the gradient, v of its square — give every weight its
// own step size: large where gradients are small and consistent, small where they are noisy.
//     m ← b1 · m + (1 − b1) · g                 slot "m"
//     v ← b2 · v + (1 − b2) · g²                slot "v"
//     m̂ = m / (1 − b1^t),  v̂ = v / (1 − b2^t)   bias correction: m and v start at 0, so early
//                                               averages are too small by exactly that factor
//     w ← keep · w − lr · m̂ / (√v̂ + eps)    with the weight decay in `keep`:
//         WeightDecay::trax   keep = 1 − wd        (Trax: not scaled by lr)
//         WeightDecay::adamw  keep = 1 − lr · wd   (Loshchilov & Hutter's AdamW, as PyTorch's
//                                                  AdamW: decay follows the lr schedule)
// Decay acts on the weight, never through the gradient, so it does not pass through m and v.
// t is the step, counted from 1 (Trax uses t = step + 1 with step starting at 1, i.e. its first
// correction is 1 − b1², not 1 − b1: ours is the paper's). Defaults are Trax's; note eps 1e-5
// (PyTorch uses 1e-8) and a small weight decay even by default.
#pragma once

#include "core/train/optimizer.hpp"

namespace ctrax::train {

enum class WeightDecay { trax, adamw };

struct AdamConfig {
  double learning_rate = 1e-4;
  double b1 = 0.9;                        // decay of the gradient average
  double b2 = 0.999;                      // decay of the squared-gradient average
  double eps = 1e-5;                      // added to √v̂ (Trax's value)
  double weight_decay_rate = 1e-5;        // 0 turns decay off
  WeightDecay weight_decay = WeightDecay::trax;
  std::optional<double> clip_grad_norm = std::nullopt;  // global-norm clipping; none by default
};

OptimizerPtr Adam(const AdamConfig& config = {});

}  // namespace ctrax::train

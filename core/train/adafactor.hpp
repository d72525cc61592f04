// ctrax/core/train/adafactor.hpp — Adafactor (Shazeer & Stern 2018; trax/optimizers/adafactor.py).
//
// Adam's second moment v costs one number per weight. For a matrix (R, C) Adafactor keeps only
// its row means and column means of g² — R + C numbers instead of R·C — and rebuilds v as their
// outer product divided by the overall mean (a rank-1 estimate):
//     slots "v_row" (R), "v_col" (C)         for weights of rank ≥ 2 (leading axes batch these)
//     v_row ← ρ · v_row + (1 − ρ) · mean_cols(g² + ε1)
//     v_col ← ρ · v_col + (1 − ρ) · mean_rows(g² + ε1)
//     y = g / √( v_row ⊗ v_col / mean(v_row) )
// Vectors (biases, LayerNorm) keep a full slot "v": v ← ρ v + (1 − ρ)(g² + ε1), y = g / √v.
// Then
//     ρ_t = 1 − t^(−decay_rate)                         grows towards 1: a longer memory later
//     y ← y / max(1, rms(y) / clipping_threshold)       update clipping
//     scale = lr · max(rms(w), ε2)                      steps relative to the weight's size
//     u = scale · y;  momentum (optional): m ← β1 m + (1 − β1) u, u = m      slot "m"
//     w ← (1 − wd_t) · w − u,   wd_t = wd, or wd · max(0, 1 − t / weight_decay_n_steps)
// t counts from 1, so ρ_1 = 0 and the first v is exactly g² + ε1 (Trax evaluates ρ at t + 1).
#pragma once

#include "core/train/optimizer.hpp"

namespace ctrax::train {

struct AdafactorConfig {
  double learning_rate = 0.05;
  bool factored = true;                     // row/column second moments for rank ≥ 2
  bool multiply_by_parameter_scale = true;  // step relative to rms(w)
  bool do_clipping = true;                  // update clipping at clipping_threshold
  bool do_momentum = false;                 // adds slot "m"
  double beta1 = 0.0;                       // momentum coefficient (with do_momentum)
  double decay_rate = 0.8;                  // exponent of ρ_t
  double clipping_threshold = 1.0;
  double weight_decay_rate = 1e-5;
  std::int64_t weight_decay_n_steps = 0;    // > 0: decay fades linearly to 0 over this many steps
  double epsilon1 = 1e-16;                  // added to g²
  double epsilon2 = 1e-3;                   // floor of rms(w)
  std::optional<double> clip_grad_norm = std::nullopt;  // global-norm clipping; none by default
};

OptimizerPtr Adafactor(const AdafactorConfig& config = {});

}  // namespace ctrax::train

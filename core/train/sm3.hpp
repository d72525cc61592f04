// ctrax/core/train/sm3.hpp — SM3 (trax/optimizers/sm3.py; Anil, Gupta, Koren & Singer 2019,
// "Memory-Efficient Adaptive Optimization").
//
// Adagrad divides each weight's step by the root of the SUM of its squared gradients so far — one
// accumulator per weight, as many numbers as the model has. SM3 keeps one accumulator per ROW and
// one per COLUMN of a matrix (per index of each axis of a rank-r tensor: d₁ + … + d_r numbers
// instead of d₁ · … · d_r), and reads each weight's accumulator as the smallest of its row's and
// its column's: an upper bound on what Adagrad would hold, so the step is never larger than
// Adagrad's. For a weight at index (i₁, …, i_r):
//     a  = min(v₁[i₁], …, v_r[i_r]) + g²
//     m ← μ · m + (1 − μ) · g / √a          (0 where a = 0)
//     w ← w − lr · m
//     v_k[j] ← max of a over every weight whose k-th index is j     (after the pass)
// Slots: "m", and "v0" … "v{r−1}" of shapes (d₁), …, (d_r). A vector (or a scalar) keeps its full
// accumulator, v0 ← v0 + g² — Adagrad itself. The step count is not used; no weight decay, as in
// Trax. Unlike Adam, the accumulators only grow, so the step shrinks as training goes on: SM3
// is usually run with a warm-up and a constant learning rate (the paper's BERT and Transformer
// runs).
#pragma once

#include "core/train/optimizer.hpp"

namespace ctrax::train {

struct SM3Config {
  double learning_rate = 0.01;
  double momentum = 0.9;                  // μ, in [0, 1)
  std::optional<double> clip_grad_norm = std::nullopt;  // global-norm clipping; none by default
};

OptimizerPtr SM3(const SM3Config& config = {});

}  // namespace ctrax::train

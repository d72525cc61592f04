// ctrax/layers/batch_norm.hpp — BatchNorm (Ioffe & Szegedy 2015), as trax/layers/normalization.py.
//
//   BatchNorm({.axis = {0, 1, 2}})     x (B, H, W, C) → same shape; one mean and variance per channel
//     train:        μ = mean(x) over `axis`, σ² = mean(x²) − μ² (Trax's fast variance); the
//                   gradient flows through μ and σ²; the running statistics move towards them:
//                   running = momentum · running + (1 − momentum) · batch   (momentum 0.999)
//     eval/predict: μ and σ² are the running statistics (state: not trained, but checkpointed)
//     y = γ · (x − μ) / √(σ² + ε) + β      γ ("gamma") starts at 1, β ("beta") at 0, ε = 1e-5
// β and γ have the shape of the axes not reduced (C for images); center = false drops β,
// scale = false drops γ. The running mean starts at 0 and the variance at 1, without bias
// correction (Trax counts the batches in its state but does not use the count).
// Training over every axis but the last (the default for images) runs as one fused op,
// batch_norm (core/tensor/nn_ops.hpp): two passes forward, two backward, instead of the dozen
// whole-tensor element-wise ops of the formula; other axes run the formula op by op.
// Statistics are of this process's rows: under MPI each process normalises by its own part of
// the batch, as Trax does on each device (no synchronisation).
#pragma once

#include <source_location>
#include <vector>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

struct BatchNormOptions {
  std::vector<int> axis = {0, 1, 2};
  double epsilon = 1e-5;
  bool center = true;
  bool scale = true;
  double momentum = 0.999;
  Mode mode = Mode::train;
};

LayerPtr BatchNorm(BatchNormOptions options = {}, std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

// ctrax/layers/layer_norm.hpp — LayerNorm: normalise each feature vector, then rescale.
//
//   x (..., d)  →  (x − μ) / √(σ² + ε) ⊙ scale + bias,   μ, σ² over the last axis (biased σ²)
//
// Every position's d_model vector gets mean 0 and variance 1 before the learned per-feature
// scale (init 1) and bias (init 0) — the `LayerNorm` that opens every pre-norm Transformer block
// and closes every Transformer stack. ε = 1e-6 as in Trax (PyTorch's default is 1e-5).
// Weights "scale" and "bias", each (d,). Fused forward and backward (nn_ops.hpp). Printed
// `LayerNorm`. Trax's keywords by name: LayerNorm({.center = false}) skips the mean (x / √(mean x² + ε)
// ⊙ scale, RMSNorm's formula) and, as Trax, keeps the bias weight but does not add it.
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

struct LayerNormOptions {
  bool center = true;
  double epsilon = 1e-6;
};

LayerPtr LayerNorm(LayerNormOptions options = {},
                   std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

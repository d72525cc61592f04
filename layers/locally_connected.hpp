// ctrax/layers/locally_connected.hpp — Trax's LocallyConnected1d (trax/layers/core.py): a 1-d
// convolution whose filters are NOT shared across positions.
//
// A Conv1d slides one kernel along the sequence; here every input position l has its own kernel
// w[l] (k, D, filters), so the layer can learn what each place in a fixed-length input means (a
// CNN's translation invariance given up for position-specific features). x (…, L, D) →
// (…, L_out, filters), stride 1:
//     z[l, i] = x[l] · w[l, i]            each position's k directions, one product per position
//     y[t]    = Σ_i z[t + o_i, i] + b[t]  direction i of input t + o_i lands on output t
// with, as Trax computes it (h = (k − 1)/2; k must be odd):
//     SAME   o_i = i − h, positions outside the sequence give 0                  L_out = L
//     WRAP   o_i = i − h, modulo L: the sequence is a ring                        L_out = L
//     VALID  o_i = (k − 1) − i (Trax's VALID reads its directions mirrored)        L_out = L − k + 1
// Weights w (L, k, D, filters), GlorotUniform over (D, filters); b (L_out, filters), N(0, 1e-6²).
// L is fixed at init: the weights belong to positions. Printed LocallyConnected1d_{filters}_{k}.
#pragma once

#include <source_location>
#include <string>

#include "core/layer/layer.hpp"
#include "layers/initializers.hpp"

namespace ctrax::layers {

enum class LocalPadding { valid, same, wrap };

struct LocallyConnected1dOptions {
  Initializer kernel_initializer = glorot_uniform();
  Initializer bias_initializer = random_normal(1e-6);
  bool use_bias = true;
  LocalPadding padding = LocalPadding::valid;
};

LayerPtr LocallyConnected1d(std::int64_t filters, std::int64_t kernel_size, LocallyConnected1dOptions options = {},
                            std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

// ctrax/models/mlp.hpp — Trax's MLP (trax/models/mlp.py), line for line.
//
//   MLP({.layer_widths = {128, 64}})
//     = Serial(Flatten(),                                  (B, 28, 28) → (B, 784)   [flatten]
//              Dense(128), Relu(), Dense(64))              each width a Dense, the activation between
//
// The last width is the output: for 10 classes end the widths with 10, e.g. {512, 512, 10}.
// out_activation = true puts the activation after the last Dense too; flatten = false leaves the
// input's shape alone. Outputs are raw logits, as every Trax model's since 1.3.7 (no LogSoftmax).
// Trax's `mode` is ignored there and absent here.
#pragma once

#include <functional>
#include <vector>

#include "core/layer/layer.hpp"

namespace ctrax::models {

struct MLPOptions {
  std::vector<std::int64_t> layer_widths = {128, 64};
  std::function<LayerPtr()> activation_fn = {};   // empty: Relu
  bool out_activation = false;
  bool flatten = true;
};

LayerPtr MLP(const MLPOptions& options = {});

}  // namespace ctrax::models

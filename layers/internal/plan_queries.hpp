// layers/internal/plan_queries.hpp — what the execution plan's rules ask of other layers' kinds.
//
// A rule (Layer::fuses_with, core/layer/plan.hpp) lives with the layer that leads a fused step and
// looks at its neighbours: BatchNorm asks whether the next layer is a Relu, Relu whether the next
// is a Dropout that drops (and whether the one before is a Dense with a bias), Dense whether a
// Relu and then (past Dropouts that pass through) a Dense follow it, CausalAttention whether its
// branches end in SplitIntoHeads (and begin with a Dense) and the next layer is a MergeHeads. Each
// neighbour's kind is private to its own file, so that file answers here. Not installed (an
// `internal/` folder): these are the plan's plumbing, not the layer API.
#pragma once

#include <optional>
#include <utility>

#include "core/layer/layer.hpp"
#include "core/tensor/tensor.hpp"

namespace ctrax::layers {

// Whether `layer` is a Relu() (activations.cpp).
bool is_relu(const Layer& layer);

// Whether `layer` is a Dropout that drops in its mode (train, rate > 0); and that Dropout's output
// on relu(x), from the same mask, in one pass each way (relu_dropout, core/tensor/dropout.hpp) —
// the feed-forward block's Dense → Relu → Dropout (dropout.cpp).
bool drops(const Layer& layer);
Tensor dropout_of_relu(const Layer& dropout_layer, const Tensor& x);
// The same on relu(linear(x, w, b)), the Dense before the Relu with it (linear_relu_dropout,
// core/tensor/matmul.hpp).
Tensor dropout_of_dense_relu(const Layer& dropout_layer, const Tensor& x, const Tensor& w, const Tensor& b);

// The weights (w, b) of an initialised Dense with a bias, whose forward is linear(x, w, b);
// nullopt for any other layer (dense.cpp).
std::optional<std::pair<Tensor, Tensor>> dense_weights(const Layer& layer);

// n_heads when `layer` is a SplitIntoHeads (MergeHeads) that folds the heads into the batch,
// else 0 (heads.cpp).
int heads_split_by(const Layer& layer);
int heads_merged_by(const Layer& layer);

}  // namespace ctrax::layers

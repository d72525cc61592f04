// ctrax/core/tensor/stack.hpp — a stack: the tuple of tensors that flows through a model.
//
// Index 0 is the top. Layers pop their inputs from it and push their outputs (core/layer/layer.hpp);
// data streams yield one per batch (core/data/batch_stream.hpp) — inputs, then targets, then
// weights — so a batch is a stack before any layer sees it.
#pragma once

#include <vector>

#include "core/tensor/tensor.hpp"

namespace ctrax {

using Stack = std::vector<Tensor>;

}  // namespace ctrax

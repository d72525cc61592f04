// ctrax/core/layer/summary.hpp — a table of every layer that owns weights, and the total.
//
//   layer (path in the tree)                       weights                    parameters
//   Serial/Embedding_256_512[1]                    table (256, 512)               131072
//   Serial/Serial[4]/Serial[0]/Branch[0]/...        w (512, 512), b (512)          262656
//   ...
//   total parameters: 19339520
//
// Paths are the names checkpoints and errors use; a shared layer (Transformer's one Embedding
// for source and target) appears once, at its first position. The last line is always
// `total parameters: N` (= model.n_params()).
#pragma once

#include <string>

#include "core/layer/layer.hpp"

namespace ctrax {

std::string summary(const Layer& model);

}  // namespace ctrax

// ctrax/core/tensor/dropout.hpp — inverted dropout, the op (layers/dropout.hpp is the layer).
//
//   keep ~ Bernoulli(1 − rate)            one draw per element of the mask
//   y = x · keep / (1 − rate)             so E[y] = x: eval mode needs no rescaling
//   dy/dx = keep / (1 − rate)             the same mask scales the gradient
//
// The mask has extent 1 on each axis in `shared_axes`: one decision broadcast along that axis
// (Trax's broadcast_dims, e.g. the same positions dropped in every feature). The mask comes from
// `rng` alone (random.hpp), so a step's masks replay exactly on resume.
#pragma once

#include <string_view>
#include <vector>

#include "core/tensor/random.hpp"
#include "core/tensor/tensor.hpp"

namespace ctrax {

// Throws std::invalid_argument, naming `who`, unless 0 <= rate < 1. Layers call it at construction
// (`who` their name and where they were created) so a bad rate is reported where the model is
// built, not at the first training step.
void check_dropout_rate(double rate, std::string_view who = "dropout");

// rate 0 returns x itself.
Tensor dropout(const Tensor& x, double rate, const Rng& rng, const std::vector<int>& shared_axes = {});

// dropout(relu(x), rate, rng, shared_axes) as one op — the execution plan's Relu + Dropout step
// (layers/dropout.hpp, core/layer/plan.hpp) — with the same mask and the same bits, in one pass
// over the activations each way instead of two:
//   y = max(x, 0) · keep / (1 − rate),      dy/dx = [x > 0] · keep / (1 − rate)
// With shared axes (the mask broadcasts) it is the two ops one after the other.
Tensor relu_dropout(const Tensor& x, double rate, const Rng& rng, const std::vector<int>& shared_axes = {});

}  // namespace ctrax

// ctrax/layers/filter_response_norm.hpp — FilterResponseNorm (Singh & Krishnan 2019), as Trax's.
//
//   FilterResponseNorm()     x (B, H, W, C) → same shape
//     ν² = mean(x²) over the spatial axes (all but the first and the last), per image and channel
//     y = γ · x / √(ν² + ε) + β          γ starts at 1, β at 0 (one per channel)
//   ε = init_epsilon, or with learn_epsilon init_epsilon + |ε_l|, ε_l a weight starting at
//   init_learnt_epsilon. No batch statistics, so no running state and no train/eval difference;
//   the paper follows it with a ThresholdedLinearUnit (activations.hpp). Trax's `mode` argument is
//   unused there and absent here.
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

struct FilterResponseNormOptions {
  bool learn_epsilon = false;
  double init_epsilon = 1e-6;
  double init_learnt_epsilon = 1e-4;
};

LayerPtr FilterResponseNorm(FilterResponseNormOptions options = {},
                            std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

// ctrax/layers/activations.hpp — elementwise nonlinearities as layers (trax/layers/activation_fns.py).
//
//   layer        y = f(x), elementwise, any shape                          n_in 1 → n_out 1
//   Relu         max(x, 0)                      (gradient 0 at x ≤ 0, as Trax's where(x <= 0, 0, x))
//   Gelu         ½x(1 + erf(x/√2))              the exact Gaussian-error linear unit
//   FastGelu     ½x(1 + tanh(0.7978845608·x·(1 + 0.044715·x²)))   the tanh approximation
//   Sigmoid      1 / (1 + e^(−x))
//   Tanh         tanh(x)
//   Softmax      e^(x_i − m) / Σ_j e^(x_j − m) along `axis` (m = max, for stability)
//   LogSoftmax   x − logsumexp(x) along `axis`
//
// Each is an Fn over one differentiable op, so it needs no gradient code of its own. They print
// bare (`Relu`), not wrapped in a Serial as Trax's shape-asserted versions are (google/trax#1695).
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

using std::source_location;

LayerPtr Relu(source_location created = source_location::current());
LayerPtr Gelu(source_location created = source_location::current());
LayerPtr FastGelu(source_location created = source_location::current());
LayerPtr Sigmoid(source_location created = source_location::current());
LayerPtr Tanh(source_location created = source_location::current());
LayerPtr Softmax(int axis = -1, source_location created = source_location::current());
LayerPtr LogSoftmax(int axis = -1, source_location created = source_location::current());

}  // namespace ctrax::layers

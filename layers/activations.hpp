// ctrax/layers/activations.hpp — elementwise nonlinearities as layers (trax/layers/activation_fns.py).
//
//   layer                 y = f(x), elementwise, any shape                  n_in 1 → n_out 1
//   Relu                  max(x, 0)              (gradient 0 at x ≤ 0, as Trax's where(x <= 0, 0, x))
//   ParametricRelu(a=1)   max(a·x, 0)            (Trax's: a is the slope of the positive side)
//   LeakyRelu(a=0.01)     x if x ≥ 0, else a·x
//   Elu(a=1)              x if x > 0, else a·(eˣ − 1)
//   Selu(α, λ)            λ·(x if x > 0, else α·(eˣ − 1))   α ≈ 1.6733, λ ≈ 1.0507 (Klambauer et al. 2017)
//   Gelu                  ½x(1 + erf(x/√2))      the exact Gaussian-error linear unit
//   FastGelu              ½x(1 + tanh(0.7978845608·x·(1 + 0.044715·x²)))   the tanh approximation
//   Sigmoid               1 / (1 + e^(−x))
//   Tanh                  tanh(x)
//   HardSigmoid           max(0, min(1, 1 + x))  as Trax computes it (its docstring says x, not 1 + x)
//   HardTanh              max(−1, min(1, x))
//   Softplus              log(1 + eˣ)            a smooth Relu; computed without overflow
//   Exp, Log              eˣ, log x
//   Softmax               e^(x_i − m) / Σ_j e^(x_j − m) along `axis` (m = max, for stability)
//   LogSoftmax            x − logsumexp(x) along `axis`
//   ThresholdedLinearUnit max(x, τ), τ one trainable scalar starting at 0 (Frerix et al. 2019, TLU)
//
// Each but the last is an Fn over differentiable ops, so it needs no gradient code of its own —
// Relu too, as a layer type of its own, so the execution plan can fuse it into the layer before
// it (core/layer/plan.hpp; the rule asks layers/internal/plan_queries.hpp's is_relu); it prints,
// counts and computes as the Fn did.
// Elu and Selu take eˣ − 1 of min(x, 0): the same values, and no e^x overflowing in the branch
// `where` does not take (its gradient would be 0·∞ = NaN there). They print bare (`Relu`), not
// wrapped in a Serial as Trax's shape-asserted versions are (google/trax#1695).
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
LayerPtr ParametricRelu(double a = 1.0, source_location created = source_location::current());
LayerPtr LeakyRelu(double a = 0.01, source_location created = source_location::current());
LayerPtr Elu(double a = 1.0, source_location created = source_location::current());
LayerPtr Selu(double alpha = 1.6732632423543772848170429916717,
              double lmbda = 1.0507009873554804934193349852946,
              source_location created = source_location::current());
LayerPtr HardSigmoid(source_location created = source_location::current());
LayerPtr HardTanh(source_location created = source_location::current());
LayerPtr Softplus(source_location created = source_location::current());
LayerPtr Exp(source_location created = source_location::current());
LayerPtr Log(source_location created = source_location::current());
LayerPtr ThresholdedLinearUnit(source_location created = source_location::current());
LayerPtr Softmax(int axis = -1, source_location created = source_location::current());
LayerPtr LogSoftmax(int axis = -1, source_location created = source_location::current());

}  // namespace ctrax::layers

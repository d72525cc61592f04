// ctrax/core/tensor/nn_ops.hpp — fused kernels for the operations that dominate memory traffic.
//
// Each is one pass over the data forward and one backward, instead of the 4-6 intermediate arrays
// the composition of elementwise ops would allocate. Tests check each against its composition.
//
// softmax(x)_i      = exp(x_i − m) / Σ_j exp(x_j − m),   m = max_j x_j      (along `axis`)
//   backward:  dx = y ⊙ (g − Σ_j g_j y_j)
// log_softmax(x)_i  = x_i − logsumexp(x)
//   backward:  dx = g − softmax(x) · Σ_j g_j
// layer_norm(x, scale, bias, ε) over the last axis (d features):
//   μ = mean(x), σ² = mean((x − μ)²)  (biased),  x̂ = (x − μ)/√(σ² + ε),  y = x̂ ⊙ scale + bias
//   backward:  dx = (1/√(σ²+ε)) · (ĝ − mean(ĝ) − x̂ · mean(ĝ ⊙ x̂)),  ĝ = g ⊙ scale
//              dscale = Σ_rows g ⊙ x̂,   dbias = Σ_rows g
// batch_norm(x, scale, bias, ε): training-mode batch normalisation, statistics per channel (the
//   last axis, C) over every other axis (NHWC images: batch, height, width; M values each):
//   μ = mean(x), σ² = mean(x²) − μ²  (biased, as Trax's BatchNorm),  x̂ = (x − μ)/√(σ² + ε),
//   y = x̂ ⊙ scale + bias; also returns the batch's μ and σ² (C), detached: the running statistics
//   BatchNorm keeps. Sums in double, cut into parts fixed by the size (the same bits on any team).
//   backward:  dx = (scale/√(σ²+ε)) · (g − mean(g) − x̂ · mean(g ⊙ x̂)),  means over the M values
//              dscale = Σ g ⊙ x̂,   dbias = Σ g
//   (μ and σ² depend on x: the gradient flows through them, which is what the −mean terms are.)
// cross_entropy_with_logits(z (..., C), t (...) int32, ε):
//   p = (1 − ε)·one_hot(t) + ε/C,   loss = −Σ_c p_c · log_softmax(z)_c      -> shape (...)
//   backward:  dz = g · (softmax(z) − p)
//   A target outside [0, C) is an error (not clipped).
#pragma once

#include "core/tensor/tensor.hpp"

namespace ctrax {

Tensor softmax(const Tensor& x, int axis = -1);
Tensor log_softmax(const Tensor& x, int axis = -1);
Tensor layer_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, double epsilon = 1e-6);
struct BatchNormStatistics {
  Tensor y, mean, var;   // mean, var: (C,), no gradient
};
// relu: y = max(x̂ ⊙ scale + bias, 0) in the same pass — BatchNorm followed by Relu in an execution
// plan (core/layer/plan.hpp); the same bits as relu(batch_norm(…).y), values and gradients.
BatchNormStatistics batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, double epsilon,
                               bool relu = false);
Tensor cross_entropy_with_logits(const Tensor& logits, const Tensor& targets,
                                 double label_smoothing = 0.0);

}  // namespace ctrax

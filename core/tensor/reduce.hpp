// ctrax/core/tensor/reduce.hpp — reductions over axes.
//
// `axes` lists the axes to reduce (negative counts from the end); an empty list reduces all of
// them. keepdims keeps each reduced axis with extent 1, so the result broadcasts against x.
//
//   sum        Σ x                   d/dx = 1 (the gradient is broadcast back)
//   mean       Σ x / n               d/dx = 1/n
//   max        max x                 d/dx = 1 at the maximum (shared equally between ties)
//   min        min x = −max(−x)      d/dx = 1 at the minimum (shared equally between ties)
//   logsumexp  log Σ exp x           d/dx = softmax(x); computed as m + log Σ exp(x − m) with
//                                    m = max x, so large inputs do not overflow
//   argmax     index of the max      int32, not differentiable; first index among ties
// max, min and argmax over an empty axis are errors (there is no maximum; an index would read as 0).
#pragma once

#include <vector>

#include "core/tensor/tensor.hpp"

namespace ctrax {

using Axes = std::vector<int>;

Tensor sum(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor mean(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor max(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor min(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor logsumexp(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor argmax(const Tensor& x, int axis = -1);

}  // namespace ctrax

// ctrax/core/tensor/shape_ops.hpp — ops that move elements without arithmetic.
//
// All are differentiable; each backward moves the gradient back to where the element came from:
//   reshape       (no copy: a view)      backward: reshape back
//   transpose     permutes the axes      backward: the inverse permutation
//   slice         x[start:stop] on axis  backward: the gradient placed into zeros
//   concatenate   along an axis          backward: slices of the gradient
//   split         into equal parts       each part is a slice
//   expand        broadcast to a shape   backward: sum_to the original shape
//   flip          reverses one axis      backward: flip the gradient back
// reshape accepts one -1 extent, inferred from the others. One op writes in place and is not
// differentiable: write_slice, how decoding state (a KV cache) takes new rows.
#pragma once

#include <vector>

#include "core/tensor/tensor.hpp"

namespace ctrax {

Tensor reshape(const Tensor& x, const Shape& shape);
Tensor transpose(const Tensor& x, const std::vector<int>& perm);
Tensor swapaxes(const Tensor& x, int a, int b);
Tensor slice(const Tensor& x, int axis, std::int64_t start, std::int64_t stop);
Tensor concatenate(const std::vector<Tensor>& xs, int axis = -1);
std::vector<Tensor> split(const Tensor& x, int n_parts, int axis = -1);
Tensor expand(const Tensor& x, const Shape& shape);
Tensor expand_dims(const Tensor& x, int axis);     // inserts an extent-1 axis
Tensor squeeze(const Tensor& x, int axis);         // removes an extent-1 axis
Tensor stack(const std::vector<Tensor>& xs, int axis = 0);
Tensor flip(const Tensor& x, int axis);            // x[..., n−1−i, ...] at i (jnp.flip)

// buf[..., start:start + n, ...] = x along `axis` (n = x's extent there; every other extent equal),
// in place. Never recorded: the target is state, not a value on the tape (an operand the tape
// follows is refused: check_forward_only, autodiff.hpp). A meta x or buf writes nothing (shape
// inference leaves state alone).
void write_slice(Tensor& buf, const Tensor& x, int axis, std::int64_t start);

}  // namespace ctrax

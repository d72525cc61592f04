// ctrax/core/tensor/gather.hpp — reading and writing at computed positions: gather, scatter-add,
// dynamic slices (jnp.take, jnp.take_along_axis, x.at[i].add(u), lax.dynamic_slice and
// lax.dynamic_update_slice, as Trax's layers call them inside Fn).
//
// The positions are int32 tensors: values the model computed, not numbers the program knew when
// it was written — the pointer a copy mechanism picks, the frame a sampled offset starts at, the
// target's log-probability in each row. Each op's gradient is the other's forward:
//
//   take(x, i, axis)          x (..., n, ...) at axis, i int32 of any shape (I) →
//                             (..., I, ...): out[..., j, ...] = x[..., i[j], ...].
//                             Gradient: g added back at the rows it came from (scatter_add), so a
//                             row taken twice gets both. embedding(table, ids) is take(table, ids, 0).
//   take_along_axis(x, i, axis)  i has x's shape but along `axis` (any length m) →
//                             out[..., j, ...] = x[..., i[..., j, ...], ...], each position its own
//                             index (numpy's take_along_axis: "the log-prob of each row's target").
//   scatter_add(x, i, u, axis)   x with u added at the rows i names: out[..., i[j], ...] +=
//                             u[..., j, ...]; u has take(x, i, axis)'s shape; repeated indices add up.
//                             Gradients: g for x, take(g, i, axis) for u.
//   dynamic_slice(x, starts, sizes)   the block of extent `sizes` from int32 `starts` (one per axis).
//                             As lax.dynamic_slice, a start is clamped into [0, dim − size], so the
//                             block always fits. Gradient: g placed in zeros at the (clamped) starts.
//   dynamic_update_slice(x, u, starts)  x with the block at (clamped) starts replaced by u.
//                             Gradients: g with that block zeroed for x, g's block for u.
//
// An index outside [0, n) is an error naming the op, the position and the range (jnp.take clips
// or fills by mode; a silent wrong answer is what this framework refuses). Negative indices are
// outside too: Python's "from the end" is not guessed.
#pragma once

#include <cstdint>

#include "core/tensor/tensor.hpp"

namespace ctrax {

Tensor take(const Tensor& x, const Tensor& indices, int axis = 0);
Tensor take_along_axis(const Tensor& x, const Tensor& indices, int axis);
Tensor scatter_add(const Tensor& x, const Tensor& indices, const Tensor& updates, int axis = 0);
Tensor dynamic_slice(const Tensor& x, const Tensor& starts, const Shape& sizes);
Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const Tensor& starts);

}  // namespace ctrax

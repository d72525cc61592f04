// ctrax/layers/rotary.hpp — rotary position embedding (RoPE, Su et al. 2021): positions as rotations.
//
// Sinusoids added to the embeddings tell each vector where it is; RoPE instead tells attention
// how far apart two positions are. Each head's query and key at position m are rotated, pair of
// features by pair of features, by the angle m·θ_i:
//
//   θ_i = 10000^(−2i/d)                     i = 0 … d/2 − 1  (the sinusoid's frequencies)
//   pair i = (x_i, x_{i+d/2})               Trax's "rotate_half" layout: first half, second half
//   rotate(x, m)_i       = x_i cos mθ_i − x_{i+d/2} sin mθ_i
//   rotate(x, m)_{i+d/2} = x_{i+d/2} cos mθ_i + x_i sin mθ_i
//
// A rotation keeps lengths and turns dot products into functions of the angle between:
//   rotate(q, m) · rotate(k, n)  depends on q, k and m − n only,
// so the attention score sees the offset, not the absolute positions, and no position table
// limits the length. d = 2 makes it visible: (1, 0) at position m becomes (cos m, sin m).
//
// As in Trax (trax/layers/research/rotary_positional_embedding.py, Rotate): x (…, L, d) with
// positions along axis −2. The `start` argument is the first position (0 except when decoding,
// where position counters move it along). The gradient is the inverse rotation; rotate is built
// from ops, so the tape derives it.
#pragma once

#include <cstdint>
#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

// x (…, L, d), d even → the same shape, position j of axis −2 rotated by (start + j)·θ.
Tensor rotate(const Tensor& x, std::int64_t start = 0);

struct RotateOptions {
  Mode mode = Mode::train;
};

// The layer (Trax's Rotate): rotate(x, 0) in train and eval; in predict mode it counts
// positions, so one token at a time is rotated by its place in the sequence.
LayerPtr Rotate(RotateOptions options = {},
                std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

// ctrax/layers/masks.hpp — which positions attention may look at.
//
// A mask is a bool tensor that broadcasts against the attention scores (B, n_heads, L_q, L_k):
// true = "may attend". Attention replaces masked scores by −1e9 before the softmax, so masked
// keys get weight e^(−1e9 − max) = 0 (Trax's constant; −inf would turn a fully masked row into
// NaN).
//
//   PaddingMask(pad=0)     tokens (B, L) int32            →  (B, 1, 1, L) bool, token ≠ pad
//                          axis 1 broadcasts over heads, axis 2 over query positions: no query
//                          attends to a padding key.
//   EncoderDecoderMask()   (vec_d (B, L_d, d), mask_e (B, 1, 1, L_e))
//                                                         →  (B, 1, L_d, L_e) bool
//                          the encoder's padding mask repeated for each decoder position (for
//                          the decoder's attention over the encoder's outputs). Trax returns
//                          the same values as a float 0/1 array; ctrax keeps them bool.
//   causal_mask(L)         (1, L, L) bool, lower triangular: query i sees keys 0…i
//                          (used inside CausalAttention; the future is invisible while training,
//                          just as it does not exist yet while decoding).
//   causal_mask(L_q, n)    (1, L_q, n): the L_q queries are the LAST L_q of n positions, so query
//                          i sees keys 0 … n − L_q + i (the KV cache's mask while decoding).
//
// Printed `PaddingMask(0)` and `EncoderDecoderMask_in2` as in Trax.
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

LayerPtr PaddingMask(int pad = 0, std::source_location created = std::source_location::current());
LayerPtr EncoderDecoderMask(std::source_location created = std::source_location::current());

Tensor causal_mask(std::int64_t L_q, std::int64_t n_keys = -1);

}  // namespace ctrax::layers

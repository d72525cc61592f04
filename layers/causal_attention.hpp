// ctrax/layers/causal_attention.hpp — self-attention that cannot see the future, and its KV cache.
//
// A language model predicts token i+1 from tokens 0…i, so position i may attend only to keys
// 0…i. The mask is lower-triangular (masks.hpp, causal_mask):
//
//        keys →  0 1 2 3
//   query 0     [1 0 0 0]
//   query 1     [1 1 0 0]        scores where the mask is 0 become −1e9 before the softmax
//   query 2     [1 1 1 0]
//   query 3     [1 1 1 1]
//
// CausalAttention(d_feature, n_heads, dropout, max_inference_length, mode), as Trax builds it:
//
//   Serial(
//     Branch([Dense, SplitIntoHeads], [Dense, SplitIntoHeads], [Dense, SplitIntoHeads]),  # q k v
//     DotProductCausalAttention(dropout, max_inference_length, mode),   # (B·H, L, d_head)
//     MergeHeads,                                                       # (B, L, d_model)
//     Dense(d_feature))
//
// x (B, L, d_model) → (B, L, d_model); 1 → 1 (no mask on the stack: causality is built in).
//
// PREDICT MODE: THE KV CACHE. When decoding, token t's keys and values never change once
// computed, so recomputing them for every new token would cost O(t²) per sequence. In predict
// mode DotProductCausalAttention keeps them in its state:
//
//   state = { K (B·H, max_inference_length, d_head), V (same), filled (int32 scalar) }
//
// A call with L_q new positions writes their k, v at rows filled … filled+L_q−1, attends the L_q
// queries over rows 0 … filled+L_q−1 only (query i sees rows ≤ filled + i, so a prompt may be fed
// in one chunk and stays causal), and advances `filled`. Work per token is O(position), not
// O(max_inference_length) as in Trax, which attends over the whole zero-initialised buffer under
// a mask. Writing past the buffer is an error naming max_inference_length. The models size the
// buffer to their max_len (Trax leaves it at 2048 whatever max_len is). Re-initialising the
// model empties the cache.
#pragma once

#include <source_location>
#include <vector>

#include "core/layer/layer.hpp"
#include "layers/attention_options.hpp"

namespace ctrax::layers {

// linear_bias_slopes: ALiBi's per-head slopes (alibi_slopes(n_heads)); empty: none. Queries count
// their positions from the KV cache's fill, so decoding sees the same penalties as training.
LayerPtr DotProductCausalAttention(double dropout = 0.0, std::int64_t max_inference_length = 2048,
                                   Mode mode = Mode::train, std::vector<double> linear_bias_slopes = {},
                                   std::source_location created = std::source_location::current());
// Trax's keyword arguments, by name:
//   CausalAttention(d_model, {.n_heads = 8, .dropout = 0.1, .max_inference_length = 512, .mode = mode})
// rotary: queries and keys pass through Rotate after SplitIntoHeads (rotary.hpp), so the KV cache
// holds rotated keys and each new query is rotated by its own position.
// linear_bias: ALiBi, −m_h·(i − j) on each head's scores (core/tensor/attention.hpp).
LayerPtr CausalAttention(std::int64_t d_feature, AttentionOptions options = {},
                         std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

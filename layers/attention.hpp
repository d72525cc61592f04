// ctrax/layers/attention.hpp — scaled dot-product attention and multi-head self-attention.
//
// ONE HEAD (Vaswani et al. 2017, eq. 1). Each query position asks "which keys look like me?"
// and takes the matching mixture of values:
//
//   scores = Q Kᵀ / √d_head                 Q (…, L_q, d_head), K (…, L_k, d_head) → (…, L_q, L_k)
//   scores = where(mask, scores, −1e9)      mask broadcasts to (…, L_q, L_k); true = may attend
//   probs  = softmax(scores, axis = −1)     each query's weights over the keys sum to 1
//   probs  = dropout(probs)                 train mode only: drops whole query→key links
//   out    = probs · V                      V (…, L_k, d_v) → (…, L_q, d_v)
//
// Dividing by √d_head keeps the scores' variance near 1 when q and k have unit-variance
// entries, so the softmax does not saturate as d_head grows.
//
// MANY HEADS. n_heads attentions run side by side on d_head = d_model / n_heads slices
// (heads.hpp), each free to attend to something different; their outputs are concatenated back
// to d_model and mixed by a final Dense. Same cost as one full-width head.
//
// THE LAYERS (Trax's, same names, arities and defaults):
//   DotProductAttention(dropout, mode)    (q, k, v, mask) → out              4 → 1
//       the math above on already-split heads.
//   PureAttention(n_heads, dropout, mode) (q, k, v, mask) → (out, mask)      4 → 2
//       q, k, v (B, L, d_model): split into heads (B, H, L, d_head), attend, merge.
//   AttentionQKV(d_feature, n_heads, dropout, mode, cache_KV_in_predict)
//       = Serial(Parallel(Dense_q, Dense_k, Dense_v), PureAttention, Dense)  4 → 2
//       the learned projections around PureAttention. The decoder's attention over the encoder
//       uses it with cache_KV_in_predict: in predict mode the K and V Dense layers are wrapped in
//       Cache, so the encoder's keys and values are computed once per sentence, not per token.
//   Attention(d_feature, n_heads, dropout, mode)
//       = Serial(Select({0,0,0}), AttentionQKV)     (x, mask) → (y, mask)    2 → 2
//       self-attention: queries, keys and values all come from x. The encoder's attention.
//   ConfigurableAttention(q_layer, k_layer, v_layer, final_layer, qkv_attention_layer, n_heads)
//       = Serial(Branch([q_layer, SplitIntoHeads], [k_layer, SplitIntoHeads],
//                       [v_layer, SplitIntoHeads]), qkv_attention_layer, MergeHeads, final_layer)
//       attention with every part given: CausalAttention is this with Dense layers and
//       DotProductCausalAttention (causal_attention.hpp). Inputs (B, L, d) for each projection.
//
// Masking uses −1e9, not −inf, as Trax does: a row with every key masked then gets a uniform
// softmax instead of NaN. The causal (decoder) variant is in causal_attention.hpp.
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"
#include "core/tensor/attention.hpp"
#include "layers/attention_options.hpp"

namespace ctrax::layers {

// The attention math on split heads. `mask` may be an empty Tensor() for "attend everywhere".
// `dropout` applies to probs when mode == train; `rng` draws its mask.
// `bias` adds ALiBi's linear distance penalty (core/tensor/attention.hpp).
Tensor dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                             double dropout, Mode mode, const Rng& rng, const LinearBias& bias = {});

// The dropout keep mask the fused attention op takes (core/tensor/attention.hpp), drawn over the
// whole (…, L_q, L_k) probability tensor exactly as Dropout on the probabilities would; undefined
// outside train mode or at rate 0.
Tensor attention_dropout_keep(const Shape& scores, double dropout, Mode mode, const Rng& rng);

LayerPtr DotProductAttention(double dropout = 0.0, Mode mode = Mode::train,
                             std::source_location created = std::source_location::current());
// Trax's keyword arguments, by name (attention_options.hpp): Attention(d_model, {.n_heads = 8, .dropout = 0.1, .mode = mode}).
// rotary: each head's queries and keys are rotated by their positions (rotary.hpp) before the
// scores; queries count positions in predict mode, keys always start at 0 (PureAttention has no
// KV cache: in predict mode it serves cross-attention, whose keys are the whole encoding).
// linear_bias: ALiBi's per-head penalty −m_h·|i − j| on the scores (core/tensor/attention.hpp),
// for self-attention over a whole sequence (the encoder's): query i and key j share one axis.

LayerPtr PureAttention(AttentionOptions options = {},
                       std::source_location created = std::source_location::current());
LayerPtr AttentionQKV(std::int64_t d_feature, AttentionOptions options = {},
                      std::source_location created = std::source_location::current());
LayerPtr Attention(std::int64_t d_feature, AttentionOptions options = {},
                   std::source_location created = std::source_location::current());
LayerPtr ConfigurableAttention(LayerPtr q_layer, LayerPtr k_layer, LayerPtr v_layer, LayerPtr final_layer,
                               LayerPtr qkv_attention_layer, int n_heads = 1,
                               std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

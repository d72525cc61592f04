// ctrax/layers/attention_weights.hpp — read every attention's weights out of a whole model.
//
// The weights α of an attention are the softmax of its scores, one row per query:
//
//   α = softmax(mask(q kᵀ / √d_head) + bias)      (B, H, L_q, L_k), each row sums to 1
//
// They are what the docs' heatmaps draw: which earlier characters a language model's head reads,
// which English pieces a German piece attends to. The attention op never returns them (the fused
// op keeps them to itself, core/tensor/attention.hpp), and a model does not know it is being
// watched. So attention_weights runs the model once under a Trace that keeps the inputs of every
// attention layer, then calls each of those layers again on its own q and k with the identity
// matrix as the values:
//
//   out = α · I = α
//
// The numbers are the layer's own, computed by the same code with the same mask, rotation and
// linear bias, not a re-implementation that could drift from it.
//
// Which layers: DotProductCausalAttention (the decoder's self-attention; q, k, v arrive as
// (B·H, L, d_head)) and PureAttention (the encoder's self-attention and the decoder's
// cross-attention; (B, L, d_model) and a mask, heads split inside). Results come in execution
// order: for TransformerLM one per DecoderBlock; for Transformer the n_layers encoder blocks,
// then each decoder block's self-attention followed by its cross-attention.
//
// The model must be in eval mode: train mode would drop weights out, and predict mode would
// write the second call into the KV cache. Runs without recording gradients.
#pragma once

#include <string>
#include <vector>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

struct AttentionWeights {
  std::string layer;   // "DotProductCausalAttention" or "PureAttention"
  Tensor weights;      // (B, n_heads, L_q, L_k), float32 or the model's dtype
};

// n_heads: the heads of every attention in the model (the models use one count throughout).
std::vector<AttentionWeights> attention_weights(Layer& model, const Stack& inputs, int n_heads);

}  // namespace ctrax::layers

// ctrax/layers/attention_options.hpp — the one options struct of every multi-head attention layer.
//
// Trax's attention functions take keyword arguments; ctrax takes them by name in one struct:
//   Attention(d_model, {.n_heads = 8, .dropout = 0.1, .mode = mode})
//   AttentionQKV(d_model, {.n_heads = 8, .mode = mode, .cache_KV_in_predict = true})
//   CausalAttention(d_model, {.n_heads = 8, .max_inference_length = 512, .mode = mode, .rotary = true})
// Each layer reads what Trax's function of that name takes; the rest keep their defaults (a field a
// layer does not read, set to another value, is refused by that layer, naming the field).
#pragma once

#include <cstdint>

#include "core/layer/mode.hpp"

namespace ctrax::layers {

struct AttentionOptions {
  int n_heads = 1;
  double dropout = 0.0;                        // on the attention weights, in train mode
  std::int64_t max_inference_length = 2048;    // CausalAttention: its KV cache's length (predict mode)
  Mode mode = Mode::train;
  // AttentionQKV (Trax's cache_KV_in_predict): in predict mode the k and v projections are wrapped
  // in Cache, so the encoder's keys and values are computed once per sequence.
  bool cache_KV_in_predict = false;
  // Each head's queries and keys rotated by their positions (rotary.hpp) before the scores.
  bool rotary = false;
  // ALiBi's per-head penalty −m_h·|i − j| on the scores (core/tensor/attention.hpp).
  bool linear_bias = false;
};

// Throws std::invalid_argument naming `layer` and the field when `o` sets a field that layer does
// not read (max_inference_length: CausalAttention's alone; cache_KV_in_predict: AttentionQKV's).
void check_attention_options(const AttentionOptions& o, const char* layer, bool reads_max_inference_length,
                             bool reads_cache_KV_in_predict);

}  // namespace ctrax::layers

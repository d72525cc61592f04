// ctrax/layers/score_attention.hpp — attention as it was born, in RNN encoder–decoders: a decoder
// state s_t scores every encoder state h_i, and the softmax of the scores weighs a context vector.
//
//   ScoreAttention({.score = Score::general})      3 → 1 (or 2 with .return_weights)
//   inputs   s (B, Lq, d_s)   decoder states, one per target position (the queries)
//            h (B, Lk, d_h)   encoder states (keys and values at once)
//            mask             bool, (B, Lk) or PaddingMask's (B, 1, 1, Lk): true for real tokens
//   outputs  a (B, Lq, d_h)   the context vectors a_t = Σ_i α_ti h_i
//            α (B, Lq, Lk)    the attention weights, when asked for
//
//   e_ti = score(s_t, h_i);   α_t = softmax over i of e_t (padded keys get −1e9);   a_t = Σ_i α_ti h_i
//
// The five score functions of the attention notes (docs/02_attention_before_transformers.md;
// Luong et al. 2015's table):
//   dot         s_tᵀ h_i                       Luong         no weights; d_s = d_h
//   scaled_dot  s_tᵀ h_i / √d                  Vaswani       keeps the softmax out of saturation
//   general     s_tᵀ W_a h_i                   Luong         W_a (d_s, d_h)
//   additive    v_aᵀ tanh(W_b s_t + W_c h_i)   Bahdanau      "concat": W_b (d_s, n), W_c (d_h, n), v_a (n, 1)
//   location    α_t = softmax(W_a s_t)         Luong         W_a (d_s, max_len): the weights depend
//                                                            on s_t and the position alone, not on h
// (dot and scaled_dot need d_s = d_h; location needs Lk ≤ max_len.) Weights are Glorot-uniform.
//
// A row whose keys are all padding gets uniform weights, as ctrax's other attention does.
// Luong's output layer s̃_t = tanh(W_c[a_t; s_t] + b_c) is LuongOutput(n): Concatenate, Dense, Tanh.
#pragma once

#include <source_location>
#include <string>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

enum class Score { dot, scaled_dot, general, additive, location };

// "dot", "scaled_dot", "general", "additive", "location" (and back); unknown names are an error
// that lists the five.
std::string score_name(Score score);
Score parse_score(const std::string& name);

struct ScoreAttentionOptions {
  Score score = Score::dot;
  std::int64_t n_units = 0;     // additive: width of tanh's layer (0: d_h)
  std::int64_t max_len = 0;     // location: how many source positions W_a scores (required)
  bool return_weights = false;  // also output α
};

LayerPtr ScoreAttention(ScoreAttentionOptions options = {},
                        std::source_location created = std::source_location::current());

// s̃_t = tanh(W_c [a_t; s_t] + b_c): (a (..., d_h), s (..., d_s)) → (..., n_units).
LayerPtr LuongOutput(std::int64_t n_units, std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

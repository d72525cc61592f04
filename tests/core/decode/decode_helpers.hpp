// tests/core/decode/decode_helpers.hpp — models to decode with, and the eval-mode reference.
#pragma once

#include "core/layer/fn.hpp"
#include "core/tensor/ops.hpp"
#include "models/transformer.hpp"

namespace ctrax::testing {

// A "language model" that counts: after token t it predicts t + 1 (mod V) with logit 10.
inline LayerPtr counting_lm(std::int64_t V = 8) {
  auto lm = layers::Fn("Count", [V](const Tensor& tokens) {
    const Tensor current = one_hot(tokens, V);  // rotate by one: entry t + 1 (mod V) is set
    return concatenate({slice(current, -1, V - 1, V), slice(current, -1, 0, V - 1)}, -1) * 10.0;
  });
  lm->set_mode(Mode::predict);
  lm->init(ShapeDtype{{1, 1}, DType::int32});
  return lm;
}

inline models::TransformerConfig tiny(Mode mode) {
  return {.d_model = 8, .d_ff = 12, .n_layers = 2, .n_encoder_layers = 1, .n_decoder_layers = 1,
          .n_heads = 2, .max_len = 32, .dropout = 0.1, .mode = mode};
}

// An eval-mode model and a predict-mode one with the same weights.
struct ModelPair {
  LayerPtr eval, predict;
};
inline ModelPair lm_pair(std::int64_t V = 11, std::uint64_t seed = 3) {
  ModelPair p{models::TransformerLM(V, tiny(Mode::eval)), models::TransformerLM(V, tiny(Mode::predict))};
  p.eval->init(ShapeDtype{{2, 4}, DType::int32}, Rng(seed));
  p.predict->init(ShapeDtype{{1, 1}, DType::int32});
  p.predict->set_all_weights(p.eval->all_weights());
  return p;
}

// An eval-mode Transformer (encoder-decoder) and a predict-mode one with the same weights, for
// (2, 6) sources.
inline ModelPair transformer_pair(std::int64_t V = 11, std::uint64_t seed = 4) {
  ModelPair p{models::Transformer(V, std::nullopt, tiny(Mode::eval)),
           models::Transformer(V, std::nullopt, tiny(Mode::predict))};
  p.eval->init({ShapeDtype{{2, 6}, DType::int32}, ShapeDtype{{2, 4}, DType::int32}}, Rng(seed));
  p.predict->init({ShapeDtype{{2, 6}, DType::int32}, ShapeDtype{{2, 1}, DType::int32}});
  p.predict->set_all_weights(p.eval->all_weights());
  return p;
}

// [prefix..., generated...] per row, as (B, L) int32: what an eval-mode TransformerLM is fed to
// check decoding. Its ShiftRight puts the start token (0) in front, so its logits at position i
// predict token i.
inline Tensor joined(const Tensor& prefix, const Tensor& generated) {
  if (!prefix.defined()) return generated;
  return concatenate({prefix, generated}, 1);
}

}  // namespace ctrax::testing

#include "layers/score_attention.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "core/layer/combinators.hpp"
#include "core/tensor/ops.hpp"
#include "layers/activations.hpp"
#include "layers/dense.hpp"
#include "layers/initializers.hpp"

namespace ctrax::layers {

namespace {

constexpr const char* kScoreNames[] = {"dot", "scaled_dot", "general", "additive", "location"};

class ScoreAttentionLayer final : public Layer {
 public:
  ScoreAttentionLayer(ScoreAttentionOptions options, std::source_location created)
      : Layer(fmt::format("ScoreAttention_{}", score_name(options.score)), 3, options.return_weights ? 2 : 1, created),
        o_(options) {}

 protected:
  void init_weights_and_state(const Signature& input) override {
    const Shape &s = input.at(0).shape, &h = input.at(1).shape;
    if (s.size() != 3 || h.size() != 3 || s[0] != h[0])
      throw std::invalid_argument(fmt::format(
          "{} expects decoder states (B, Lq, d_s) and encoder states (B, Lk, d_h), got {} and {}", name(),
          ctrax::to_string(s), ctrax::to_string(h)));
    const std::int64_t ds = s[2], dh = h[2];
    if ((o_.score == Score::dot || o_.score == Score::scaled_dot) && ds != dh)
      throw std::invalid_argument(fmt::format("{}: s_tᵀh_i needs d_s = d_h, got {} and {} (the general or additive "
                                              "score maps between widths)", name(), ds, dh));
    const DType dt = weight_dtype(input.at(0).dtype);
    const auto keys = rng().split(3);
    switch (o_.score) {
      case Score::dot:
      case Score::scaled_dot: break;
      case Score::general: add_weight("W_a", {ds, dh}, dt, glorot_uniform(), keys[0]); break;
      case Score::additive: {
        const std::int64_t n = o_.n_units > 0 ? o_.n_units : dh;
        add_weight("W_b", {ds, n}, dt, glorot_uniform(), keys[0]);
        add_weight("W_c", {dh, n}, dt, glorot_uniform(), keys[1]);
        add_weight("v_a", {n, 1}, dt, glorot_uniform(), keys[2]);
        break;
      }
      case Score::location:
        if (o_.max_len < 1)
          throw std::invalid_argument(fmt::format("{} needs .max_len, the number of source positions it scores", name()));
        add_weight("W_a", {ds, o_.max_len}, dt, glorot_uniform(), keys[0]);
        break;
    }
  }

  Stack forward(const Stack& inputs) override {
    const Tensor &s = inputs[0], &h = inputs[1], &mask = inputs[2];
    const std::int64_t B = s.dim(0), Lk = h.dim(1);
    if (mask.dtype() != DType::bool_ || mask.numel() != B * Lk)
      throw std::invalid_argument(fmt::format("{} expects a bool mask of the {} keys per row, (B, Lk) or (B, 1, 1, Lk), "
                                              "got {}", name(), Lk, mask.signature()));
    if (o_.score == Score::location && Lk > o_.max_len)
      throw std::invalid_argument(fmt::format("{}: {} source positions exceed the {} its W_a scores (max_len)", name(),
                                              Lk, o_.max_len));
    const Tensor e = masked_fill(scores(s, h), reshape(mask, {B, 1, Lk}), -1e9);
    const Tensor alpha = softmax(e, -1);
    const Tensor context = matmul(alpha, h);
    if (o_.return_weights) return {context, alpha};
    return {context};
  }

 private:
  // e (B, Lq, Lk): score(s_t, h_i) for every pair.
  Tensor scores(const Tensor& s, const Tensor& h) const {
    const auto& w = weights();
    switch (o_.score) {
      case Score::dot: return matmul(s, h, false, true);
      case Score::scaled_dot: return matmul(s, h, false, true) * (1.0 / std::sqrt(static_cast<double>(s.dim(2))));
      case Score::general: return matmul(matmul(s, w[0]), h, false, true);
      case Score::additive: {
        // W_b s_t + W_c h_i for every (t, i): (B, Lq, 1, n) + (B, 1, Lk, n), then v_aᵀ tanh(·).
        const Tensor t = tanh(expand_dims(matmul(s, w[0]), 2) + expand_dims(matmul(h, w[1]), 1));
        return squeeze(matmul(t, w[2]), -1);
      }
      case Score::location: return slice(matmul(s, w[0]), -1, 0, h.dim(1));
    }
    throw std::logic_error("ScoreAttention: unknown score");
  }

  ScoreAttentionOptions o_;
};

}  // namespace

std::string score_name(Score score) { return kScoreNames[static_cast<int>(score)]; }

Score parse_score(const std::string& name) {
  for (int i = 0; i < 5; ++i)
    if (name == kScoreNames[i]) return static_cast<Score>(i);
  throw std::invalid_argument(fmt::format("unknown attention score '{}' (dot, scaled_dot, general, additive, location)",
                                          name));
}

LayerPtr ScoreAttention(ScoreAttentionOptions options, std::source_location created) {
  if (options.n_units < 0 || options.max_len < 0)
    throw std::invalid_argument(fmt::format("ScoreAttention (created at {}): n_units and max_len must be >= 0",
                                            location_string(created)));
  return std::make_shared<ScoreAttentionLayer>(options, created);
}

LayerPtr LuongOutput(std::int64_t n_units, std::source_location created) {
  return at_caller(make_serial({LayerList{Concatenate(2, -1), Dense(n_units), Tanh()}}, "LuongOutput"), created);
}

}  // namespace ctrax::layers

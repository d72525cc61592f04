#include "layers/attention.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/layer/combinators.hpp"
#include "core/tensor/ops.hpp"
#include "layers/dense.hpp"
#include "layers/heads.hpp"
#include "layers/rotary.hpp"

namespace ctrax::layers {

Tensor attention_dropout_keep(const Shape& scores, double dropout, Mode mode, const Rng& rng) {
  check_dropout_rate(dropout);
  return mode == Mode::train && dropout > 0.0 ? rng.bernoulli(scores, 1.0 - dropout) : Tensor();
}

Tensor dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                             double dropout, Mode mode, const Rng& rng, const LinearBias& bias) {
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank() || q.dim(-1) != k.dim(-1) ||
      k.dim(-2) != v.dim(-2))
    throw std::invalid_argument(fmt::format(
        "attention expects q (…, L_q, d), k (…, L_k, d), v (…, L_k, d_v), got q {}, k {}, v {}",
        q.signature(), k.signature(), v.signature()));
  Shape scores(q.shape().begin(), q.shape().end() - 1);
  scores.push_back(k.dim(-2));
  return attention(q, k, v, mask, attention_dropout_keep(scores, dropout, mode, rng), dropout, bias);  // (…, L_q, d_v)
}

namespace {

class DotProductAttentionLayer final : public Layer {
 public:
  DotProductAttentionLayer(double dropout, std::source_location created)
      : Layer("DotProductAttention", 4, 1, created), dropout_(dropout) {}

 protected:
  Stack forward(const Stack& in) override {
    return {dot_product_attention(in[0], in[1], in[2], in[3], dropout_, mode(), rng())};
  }

 private:
  double dropout_;
};

class PureAttentionLayer final : public Layer {
 public:
  PureAttentionLayer(int n_heads, double dropout, bool rotary, bool linear_bias, std::source_location created)
      : Layer("PureAttention", 4, 2, created), n_heads_(n_heads), dropout_(dropout), rotary_(rotary) {
    if (linear_bias) bias_.slopes = alibi_slopes(n_heads);
    if (n_heads < 1)
      throw std::invalid_argument(fmt::format("n_heads must be >= 1, got {}", n_heads));
  }

 protected:
  void init_weights_and_state(const Signature&) override {
    if (rotary_ && mode() == Mode::predict) state() = {Tensor::scalar(0, DType::int32)};
  }

  Stack forward(const Stack& in) override {
    const Tensor &q = in[0], &k = in[1], &v = in[2], &mask = in[3];
    if (!rotary_) {   // the heads read where the projections put them: no split or merge copies
      for (const Tensor* x : {&q, &k, &v}) check_splittable(*x, n_heads_);
      const Tensor keep = attention_dropout_keep({q.dim(0), n_heads_, q.dim(1), k.dim(1)}, dropout_, mode(), rng());
      return {attention_heads(q, k, v, n_heads_, mask, keep, dropout_, bias_), mask};
    }
    // Rotary positions rotate each head's queries and keys: those heads are split by copies.
    std::int64_t q_start = 0;
    if (mode() == Mode::predict) {
      q_start = static_cast<std::int64_t>(state().at(0).item());
      state()[0] = Tensor::scalar(static_cast<double>(q_start + q.dim(1)), DType::int32);
    }
    const Tensor qh = rotate(split_heads(q, n_heads_), q_start), kh = rotate(split_heads(k, n_heads_), 0);
    Tensor out = dot_product_attention(qh, kh, split_heads(v, n_heads_), mask, dropout_, mode(), rng(), bias_);
    return {merge_heads(out), mask};  // (B, L_q, d_model), mask unchanged
  }

 private:
  int n_heads_;
  double dropout_;
  bool rotary_;
  LinearBias bias_;
};

}  // namespace

LayerPtr DotProductAttention(double dropout, Mode mode, std::source_location created) {
  return with_mode(std::make_shared<DotProductAttentionLayer>(dropout, created), mode);
}

LayerPtr PureAttention(AttentionOptions o, std::source_location created) {
  check_attention_options(o, "PureAttention", false, false);
  return with_mode(std::make_shared<PureAttentionLayer>(o.n_heads, o.dropout, o.rotary, o.linear_bias, created),
                   o.mode);
}

LayerPtr AttentionQKV(std::int64_t d_feature, AttentionOptions o, std::source_location created) {
  check_attention_options(o, "AttentionQKV", false, true);
  LayerPtr k_dense = Dense(d_feature), v_dense = Dense(d_feature);
  if (o.cache_KV_in_predict && o.mode == Mode::predict) {
    k_dense = Cache(k_dense);
    v_dense = Cache(v_dense);
  }
  o.cache_KV_in_predict = false;   // the projections' cache is above; PureAttention reads the rest
  return at_caller(Serial(Parallel(Dense(d_feature), k_dense, v_dense), PureAttention(o), Dense(d_feature)), created);
}

LayerPtr Attention(std::int64_t d_feature, AttentionOptions o, std::source_location created) {
  check_attention_options(o, "Attention", false, false);
  return at_caller(Serial(Select({0, 0, 0}, -1), AttentionQKV(d_feature, o)), created);
}

LayerPtr ConfigurableAttention(LayerPtr q_layer, LayerPtr k_layer, LayerPtr v_layer, LayerPtr final_layer,
                               LayerPtr qkv_attention_layer, int n_heads, std::source_location created) {
  if (!q_layer || !k_layer || !v_layer || !final_layer || !qkv_attention_layer)
    throw std::invalid_argument("ConfigurableAttention: give all five layers (q, k, v, final, qkv attention)");
  if (n_heads < 1) throw std::invalid_argument(fmt::format("ConfigurableAttention: n_heads must be >= 1, got {}", n_heads));
  return at_caller(Serial(Branch(Serial(std::move(q_layer), SplitIntoHeads(n_heads)),
                                 Serial(std::move(k_layer), SplitIntoHeads(n_heads)),
                                 Serial(std::move(v_layer), SplitIntoHeads(n_heads))),
                          std::move(qkv_attention_layer), MergeHeads(n_heads), std::move(final_layer)),
                   created);
}

}  // namespace ctrax::layers

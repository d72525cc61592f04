#include "layers/attention_weights.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/layer/trace.hpp"
#include "core/tensor/autodiff.hpp"
#include "core/tensor/shape_ops.hpp"

namespace ctrax::layers {

namespace {

// (n, L, H·L): H identity matrices side by side in every one of n rows of the batch.
Tensor identities(std::int64_t n, std::int64_t L, std::int64_t H, DType dtype) {
  std::vector<double> values(static_cast<std::size_t>(n * L * H * L), 0.0);
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t i = 0; i < L; ++i)
      for (std::int64_t h = 0; h < H; ++h) values[static_cast<std::size_t>(((b * L + i) * H + h) * L + i)] = 1.0;
  return Tensor::from_doubles(values, {n, L, H * L}, dtype);
}

const std::vector<std::string> kAttentions = {"DotProductCausalAttention", "PureAttention"};

// The first attention or dropout layer below `layer` (itself included) that is not in eval mode,
// or nullptr. (Combinators and weight layers carry no mode that matters.)
const Layer* not_in_eval_mode(const Layer& layer) {
  const bool watched = layer.name() == "Dropout" ||
                       std::find(kAttentions.begin(), kAttentions.end(), layer.name()) != kAttentions.end();
  if (watched && layer.mode() != Mode::eval) return &layer;
  for (const auto& sub : layer.sublayers())
    if (const Layer* l = sub ? not_in_eval_mode(*sub) : nullptr) return l;
  return nullptr;
}

}  // namespace

std::vector<AttentionWeights> attention_weights(Layer& model, const Stack& inputs, int n_heads) {
  if (const Layer* l = not_in_eval_mode(model))
    throw std::invalid_argument(fmt::format(
        "attention_weights needs a model in eval mode, got {} in {} mode (train would drop weights "
        "out, predict would write into the KV cache)", l->name(), to_string(l->mode())));
  if (n_heads < 1) throw std::invalid_argument(fmt::format("attention_weights: n_heads must be >= 1, got {}", n_heads));
  NoGrad no_grad;
  std::vector<Trace::Kept> kept;
  {
    Trace trace(kAttentions);
    model(inputs);
    kept = trace.kept();
  }
  std::vector<AttentionWeights> out;
  for (const auto& [layer, in] : kept) {
    const Tensor &q = in[0], &k = in[1];
    const std::int64_t L_q = q.dim(1), L_k = k.dim(1);
    if (layer->name() == "DotProductCausalAttention") {       // q, k: (B·H, L, d_head)
      if (q.dim(0) % n_heads != 0)
        throw std::invalid_argument(fmt::format(
            "attention_weights: {} has {} rows of batch × heads, not a multiple of n_heads {}",
            layer->name(), q.dim(0), n_heads));
      const Tensor alpha = (*layer)(Stack{q, k, identities(q.dim(0), L_k, 1, q.dtype())})[0];   // (B·H, L_q, L_k)
      out.push_back({layer->name(), reshape(alpha, {q.dim(0) / n_heads, n_heads, L_q, L_k})});
    } else {                                                   // q, k: (B, L, d_model); mask
      const Tensor alpha = (*layer)(Stack{q, k, identities(q.dim(0), L_k, n_heads, q.dtype()), in[3]})[0];
      // (B, L_q, H·L_k): head h's α is the h-th block of columns.
      out.push_back({layer->name(), transpose(reshape(alpha, {q.dim(0), L_q, n_heads, L_k}), {0, 2, 1, 3})});
    }
  }
  return out;
}

}  // namespace ctrax::layers

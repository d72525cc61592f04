#include "layers/dense.hpp"

#include <fmt/format.h>

#include "core/decode/internal/token_program.hpp"
#include "core/tensor/ops.hpp"
#include "layers/initializers.hpp"
#include "layers/internal/plan_queries.hpp"

namespace ctrax::layers {

namespace {

class DenseLayer final : public Layer {
 public:
  DenseLayer(std::int64_t n_units, DenseOptions options, std::source_location created)
      : Layer(fmt::format("Dense_{}", n_units), 1, 1, created),
        n_units_(n_units),
        options_(std::move(options)) {}

 protected:
  void init_weights_and_state(const Signature& input) override {
    const ShapeDtype& x = input.at(0);
    if (x.shape.empty())
      throw std::invalid_argument("Dense needs inputs of rank >= 1, got a scalar");
    const DType dt = weight_dtype(x.dtype);
    const auto keys = rng().split(2);
    add_weight("w", {x.shape.back(), n_units_}, dt, options_.kernel_initializer, keys[0]);
    if (options_.use_bias) add_weight("b", {n_units_}, dt, options_.bias_initializer, keys[1]);
  }

  Stack forward(const Stack& inputs) override {
    const Tensor& x = inputs[0];
    const Tensor& w = weights()[0];
    if (x.rank() < 1 || x.dim(-1) != w.dim(0))
      throw std::invalid_argument(fmt::format("Dense_{} expects inputs (..., {}), got {}",
                                              n_units_, w.dim(0), x.signature()));
    return {options_.use_bias ? linear(x, w, weights()[1]) : matmul(x, w)};
  }

  bool lower_token(decode::TokenProgramBuilder& b) override {
    return b.replace_top(1, [&](const auto& x) {
      return b.dense(x[0], weights().at(0), options_.use_bias ? weights().at(1) : Tensor());
    });
  }

  // The execution plan's rule (core/layer/plan.hpp), the feed-forward block's products:
  //   this, Relu, [Dropouts that pass through], Dense      (both Dense with a bias)
  // runs as linear_relu_linear (core/tensor/matmul.hpp) — the tree's linear, relu and linear, so the
  // same values and gradients; for a decoded token's one row, the two products and the ReLU in one
  // team job. A Dropout that drops (training) leaves the Relu to its own rule with that Dropout; one
  // that passes through (Layer::passes_through) is stepped over, whatever its mode: a model built
  // for decoding sets the mode of its Dropouts and leaves its Dense layers at the default.
  std::optional<FusedRun> fuses_with(const Layer* previous, std::span<const LayerPtr> after) const override {
    if (previous || !options_.use_bias || after.empty() || !is_relu(*after[0])) return std::nullopt;
    std::size_t i = 1;
    while (i < after.size() && after[i]->passes_through()) ++i;
    const auto* next = i < after.size() ? dynamic_cast<const DenseLayer*>(after[i].get()) : nullptr;
    if (next == nullptr || !next->options_.use_bias) return std::nullopt;
    return FusedRun{.n_after = static_cast<int>(i) + 1};
  }

  std::optional<Stack> forward_fused(const Stack& in, Layer*, std::span<const LayerPtr> after) override {
    const Layer& next = *after.back();
    const Tensor& x = in[0];
    const Tensor &w1 = weights().at(0), &w2 = next.weights().at(0);
    // Inputs the tree would refuse: decline, and the layers one by one give the tree's error.
    if (x.rank() < 1 || x.dim(-1) != w1.dim(0) || w2.dim(0) != w1.dim(1)) return std::nullopt;
    return Stack{linear_relu_linear(x, w1, weights().at(1), w2, next.weights().at(1))};
  }

 private:
  std::int64_t n_units_;
  DenseOptions options_;
};

}  // namespace

std::optional<std::pair<Tensor, Tensor>> dense_weights(const Layer& layer) {
  const auto* dense = dynamic_cast<const DenseLayer*>(&layer);
  if (dense == nullptr || !dense->initialized() || dense->weights().size() != 2) return std::nullopt;
  return std::pair{dense->weights()[0], dense->weights()[1]};
}

LayerPtr Dense(std::int64_t n_units, DenseOptions options, std::source_location created) {
  if (n_units < 1)
    throw std::invalid_argument(fmt::format("Dense (created at {}): n_units must be >= 1, got {}",
                                            location_string(created), n_units));
  return std::make_shared<DenseLayer>(n_units, std::move(options), created);
}

}  // namespace ctrax::layers

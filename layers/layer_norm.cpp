#include "layers/layer_norm.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/decode/internal/token_program.hpp"
#include "core/tensor/ops.hpp"
#include "layers/initializers.hpp"

namespace ctrax::layers {

namespace {

class LayerNormLayer final : public Layer {
 public:
  LayerNormLayer(LayerNormOptions o, std::source_location created)
      : Layer("LayerNorm", 1, 1, created), center_(o.center), epsilon_(o.epsilon) {
    if (!(o.epsilon > 0 && std::isfinite(o.epsilon)))   // an infinite one would scale every output to 0
      throw std::invalid_argument(fmt::format("LayerNorm: epsilon must be a finite number > 0, got {}", o.epsilon));
  }

 protected:
  void init_weights_and_state(const Signature& input) override {
    const ShapeDtype& x = input.at(0);
    if (x.shape.empty() || !is_floating(x.dtype))
      throw std::invalid_argument(
          fmt::format("LayerNorm needs floating inputs of rank >= 1, got {}", ctrax::to_string(input)));
    add_weight("scale", {x.shape.back()}, x.dtype, constant(1.0), rng());
    add_weight("bias", {x.shape.back()}, x.dtype, constant(0.0), rng());
  }

  Stack forward(const Stack& inputs) override {
    if (center_) return {layer_norm(inputs[0], weights()[0], weights()[1], epsilon_)};
    const Tensor& x = inputs[0];   // no centring: Trax's center=False (its bias is kept, unused)
    return {x / sqrt(mean(x * x, {-1}, true) + epsilon_) * weights()[0]};
  }

  bool lower_token(decode::TokenProgramBuilder& b) override {
    return center_ && b.replace_top(1, [&](const auto& x) {
      return b.layer_norm(x[0], weights().at(0), weights().at(1), epsilon_);
    });
  }

 private:
  bool center_;
  double epsilon_;
};

}  // namespace

LayerPtr LayerNorm(LayerNormOptions options, std::source_location created) {
  return std::make_shared<LayerNormLayer>(options, created);
}

}  // namespace ctrax::layers

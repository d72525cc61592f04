#include "layers/layer_norm.hpp"

#include <fmt/format.h>

#include "core/tensor/ops.hpp"
#include "layers/initializers.hpp"

namespace ctrax::layers {

namespace {

class LayerNormLayer final : public Layer {
 public:
  LayerNormLayer(double epsilon, std::source_location created)
      : Layer("LayerNorm", 1, 1, created), epsilon_(epsilon) {}

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
    return {layer_norm(inputs[0], weights()[0], weights()[1], epsilon_)};
  }

 private:
  double epsilon_;
};

}  // namespace

LayerPtr LayerNorm(double epsilon, std::source_location created) {
  return std::make_shared<LayerNormLayer>(epsilon, created);
}

}  // namespace ctrax::layers

#include "layers/filter_response_norm.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/tensor/ops.hpp"
#include "layers/initializers.hpp"

namespace ctrax::layers {

namespace {

class FilterResponseNormLayer final : public Layer {
 public:
  FilterResponseNormLayer(FilterResponseNormOptions o, std::source_location created)
      : Layer("FilterResponseNorm", 1, 1, created), o_(o) {
    if (!(o_.init_epsilon > 0 && std::isfinite(o_.init_epsilon)) ||
        !(o_.init_learnt_epsilon > 0 && std::isfinite(o_.init_learnt_epsilon)))
      throw std::invalid_argument("FilterResponseNorm: init_epsilon and init_learnt_epsilon must be finite numbers > 0");
  }

 protected:
  void init_weights_and_state(const Signature& input) override {
    const ShapeDtype& x = input.at(0);
    if (x.shape.size() < 3 || !is_floating(x.dtype))
      throw std::invalid_argument(fmt::format("FilterResponseNorm needs floating inputs (B, …, C) of rank >= 3, got {}",
                                              ctrax::to_string(input)));
    add_weight("gamma", {x.shape.back()}, x.dtype, constant(1.0), rng());
    add_weight("beta", {x.shape.back()}, x.dtype, constant(0.0), rng());
    if (o_.learn_epsilon) add_weight("epsilon", {1}, x.dtype, constant(o_.init_learnt_epsilon), rng());
  }

  Stack forward(const Stack& inputs) override {
    const Tensor& x = inputs[0];
    Axes spatial;
    for (int a = 1; a + 1 < x.rank(); ++a) spatial.push_back(a);
    const Tensor nu2 = mean(x * x, spatial, true);
    Tensor eps = Tensor::scalar(o_.init_epsilon, x.dtype());
    if (o_.learn_epsilon) eps = eps + abs(weights()[2]);
    return {weights()[0] * (x / sqrt(nu2 + eps)) + weights()[1]};
  }

 private:
  FilterResponseNormOptions o_;
};

}  // namespace

LayerPtr FilterResponseNorm(FilterResponseNormOptions options, std::source_location created) {
  return std::make_shared<FilterResponseNormLayer>(options, created);
}

}  // namespace ctrax::layers

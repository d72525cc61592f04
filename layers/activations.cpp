#include "layers/activations.hpp"

#include <fmt/format.h>

#include "core/decode/internal/token_program.hpp"
#include "core/layer/fn.hpp"
#include "core/layer/layer_error.hpp"
#include "core/tensor/ops.hpp"
#include "layers/initializers.hpp"
#include "layers/internal/plan_queries.hpp"

namespace ctrax::layers {

namespace {
class ReluLayer final : public Layer {
 public:
  explicit ReluLayer(source_location created) : Layer("Relu", 1, 1, created) {}

 protected:
  Stack forward(const Stack& inputs) override { return {relu(inputs[0])}; }

  bool lower_token(decode::TokenProgramBuilder& b) override {
    return b.replace_top(1, [&](const auto& x) { return b.relu(x[0]); });
  }

  // The execution plan's rules (core/layer/plan.hpp): Relu then a Dropout that drops, as one op
  // (relu_dropout) — and with the Dense before it (with a bias), as one op too (linear_relu_dropout,
  // core/tensor/matmul.hpp): the feed-forward block of every Transformer in training, Dense → Relu →
  // Dropout.
  std::optional<FusedRun> fuses_with(const Layer* previous, std::span<const LayerPtr> after) const override {
    if (after.empty() || !drops(*after[0])) return std::nullopt;
    if (previous && !dense_weights(*previous)) return std::nullopt;
    return FusedRun{.with_previous = previous != nullptr, .n_after = 1};
  }
  std::optional<Stack> forward_fused(const Stack& inputs, Layer* previous, std::span<const LayerPtr> after) override {
    if (!previous) return Stack{dropout_of_relu(*after[0], inputs[0])};
    const auto [w, b] = *dense_weights(*previous);
    const Tensor& x = inputs[0];
    // Inputs the Dense would refuse: decline, and the layers one by one give the tree's error.
    if (x.rank() < 1 || x.dim(-1) != w.dim(0)) return std::nullopt;
    return Stack{dropout_of_dense_relu(*after[0], x, w, b)};
  }
};
}  // namespace

LayerPtr Relu(source_location c) { return std::make_shared<ReluLayer>(c); }
bool is_relu(const Layer& layer) { return dynamic_cast<const ReluLayer*>(&layer) != nullptr; }
LayerPtr Gelu(source_location c) { return Fn("Gelu", [](TensorArg x) { return gelu(x); }, 1, c); }
LayerPtr FastGelu(source_location c) {
  return Fn("FastGelu", [](TensorArg x) { return gelu_tanh(x); }, 1, c);
}
LayerPtr Sigmoid(source_location c) {
  return Fn("Sigmoid", [](TensorArg x) { return sigmoid(x); }, 1, c);
}
LayerPtr Tanh(source_location c) { return Fn("Tanh", [](TensorArg x) { return tanh(x); }, 1, c); }
namespace {
Tensor number(double v, const Tensor& like) { return Tensor::scalar(v, like.dtype()); }
// a·(eˣ − 1) for x ≤ 0, x elsewhere (Elu's, and Selu's before its λ).
Tensor exponential_below_zero(const Tensor& x, double a) {
  return where(greater(x, number(0, x)), x, expm1(minimum(x, number(0, x))) * a);
}

// max(x, τ) with τ a trainable scalar of the input's dtype, starting at 0.
class ThresholdedLinearUnitLayer final : public Layer {
 public:
  explicit ThresholdedLinearUnitLayer(source_location created)
      : Layer("ThresholdedLinearUnit", 1, 1, created) {}

 protected:
  void init_weights_and_state(const Signature& input) override {
    if (!is_floating(input.at(0).dtype))
      throw std::invalid_argument(fmt::format("ThresholdedLinearUnit needs a floating input, got {}",
                                              ctrax::to_string(input)));
    add_weight("threshold", {}, input.at(0).dtype, constant(0.0), rng());
  }
  Stack forward(const Stack& inputs) override { return {maximum(inputs[0], weights()[0])}; }
};
}  // namespace

LayerPtr ParametricRelu(double a, source_location c) {
  check_finite_setting(a, "ParametricRelu", "a", c);
  return Fn("ParametricRelu", [a](TensorArg x) { return maximum(x * a, number(0, x)); }, 1, c);
}
LayerPtr LeakyRelu(double a, source_location c) {
  check_finite_setting(a, "LeakyRelu", "a", c);
  return Fn("LeakyRelu", [a](TensorArg x) { return where(less(x, number(0, x)), x * a, x); }, 1, c);
}
LayerPtr Elu(double a, source_location c) {
  check_finite_setting(a, "Elu", "a", c);
  return Fn("Elu", [a](TensorArg x) { return exponential_below_zero(x, a); }, 1, c);
}
LayerPtr Selu(double alpha, double lmbda, source_location c) {
  check_finite_setting(alpha, "Selu", "alpha", c);
  check_finite_setting(lmbda, "Selu", "lmbda", c);
  return Fn("Selu", [alpha, lmbda](TensorArg x) { return exponential_below_zero(x, alpha) * lmbda; }, 1, c);
}
LayerPtr HardSigmoid(source_location c) {
  return Fn("HardSigmoid", [](TensorArg x) { return maximum(number(0, x), minimum(number(1, x), x + 1.0)); }, 1, c);
}
LayerPtr HardTanh(source_location c) {
  return Fn("HardTanh", [](TensorArg x) { return maximum(number(-1, x), minimum(number(1, x), x)); }, 1, c);
}
LayerPtr Softplus(source_location c) { return Fn("Softplus", [](TensorArg x) { return softplus(x); }, 1, c); }
LayerPtr Exp(source_location c) { return Fn("Exp", [](TensorArg x) { return exp(x); }, 1, c); }
LayerPtr Log(source_location c) { return Fn("Log", [](TensorArg x) { return log(x); }, 1, c); }
LayerPtr ThresholdedLinearUnit(source_location c) { return std::make_shared<ThresholdedLinearUnitLayer>(c); }

LayerPtr Softmax(int axis, source_location c) {
  return Fn("Softmax", [axis](TensorArg x) { return softmax(x, axis); }, 1, c);
}
LayerPtr LogSoftmax(int axis, source_location c) {
  return Fn("LogSoftmax", [axis](TensorArg x) { return log_softmax(x, axis); }, 1, c);
}

}  // namespace ctrax::layers

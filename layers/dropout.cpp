#include "layers/dropout.hpp"

#include <fmt/format.h>

#include "core/layer/layer_error.hpp"
#include "core/tensor/dropout.hpp"
#include "core/tensor/matmul.hpp"
#include "layers/internal/plan_queries.hpp"

namespace ctrax::layers {

namespace {

class DropoutLayer final : public Layer {
 public:
  DropoutLayer(double rate, std::vector<int> shared_axes, std::source_location created)
      : Layer("Dropout", 1, 1, created), rate_(rate), shared_axes_(std::move(shared_axes)) {
    check_dropout_rate(rate, fmt::format("Dropout (created at {})", location_string(created)));
  }

 protected:
  Stack forward(const Stack& inputs) override {
    if (!drops()) return inputs;
    return {dropout(inputs[0], rate_, rng(), shared_axes_)};
  }

 public:
  bool drops() const { return mode() == Mode::train && rate_ != 0.0; }
  bool passes_through() const override { return !drops(); }
  Tensor of_relu(const Tensor& x) const { return relu_dropout(x, rate_, rng(), shared_axes_); }
  Tensor of_dense_relu(const Tensor& x, const Tensor& w, const Tensor& b) const {
    return linear_relu_dropout(x, w, b, rate_, rng(), shared_axes_);
  }

 private:
  double rate_;
  std::vector<int> shared_axes_;
};

}  // namespace

bool drops(const Layer& layer) {
  const auto* d = dynamic_cast<const DropoutLayer*>(&layer);
  return d != nullptr && d->drops();
}

Tensor dropout_of_relu(const Layer& dropout_layer, const Tensor& x) {
  return dynamic_cast<const DropoutLayer&>(dropout_layer).of_relu(x);
}
Tensor dropout_of_dense_relu(const Layer& dropout_layer, const Tensor& x, const Tensor& w, const Tensor& b) {
  return dynamic_cast<const DropoutLayer&>(dropout_layer).of_dense_relu(x, w, b);
}

LayerPtr Dropout(DropoutOptions options, std::source_location created) {
  return with_mode(std::make_shared<DropoutLayer>(options.rate, std::move(options.shared_axes), created),
                   options.mode);
}

}  // namespace ctrax::layers

#include "layers/elementwise.hpp"

#include "core/layer/fn.hpp"
#include "core/layer/layer_error.hpp"
#include "core/tensor/ops.hpp"

namespace ctrax::layers {

LayerPtr Negate(std::source_location c) { return Fn("Negate", [](TensorArg x) { return neg(x); }, 1, c); }

LayerPtr StopGradient(std::source_location c) {
  return Fn("StopGradient", [](TensorArg x) { return stop_gradient(x); }, 1, c);
}

LayerPtr ToFloat(std::source_location c) {
  return Fn("ToFloat", [](TensorArg x) { return x.to(DType::float32); }, 1, c);
}

LayerPtr ThresholdToBinary(double threshold, std::source_location c) {
  check_finite_setting(threshold, "ThresholdToBinary", "threshold", c);
  return Fn("ThresholdToBinary", [threshold](TensorArg x) {
    return greater(x, Tensor::scalar(threshold, x.dtype())).to(DType::int32);
  }, 1, c);
}

}  // namespace ctrax::layers

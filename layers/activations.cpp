#include "layers/activations.hpp"

#include "core/layer/fn.hpp"
#include "core/tensor/ops.hpp"

namespace ctrax::layers {

LayerPtr Relu(source_location c) { return Fn("Relu", [](TensorArg x) { return relu(x); }, 1, c); }
LayerPtr Gelu(source_location c) { return Fn("Gelu", [](TensorArg x) { return gelu(x); }, 1, c); }
LayerPtr FastGelu(source_location c) {
  return Fn("FastGelu", [](TensorArg x) { return gelu_tanh(x); }, 1, c);
}
LayerPtr Sigmoid(source_location c) {
  return Fn("Sigmoid", [](TensorArg x) { return sigmoid(x); }, 1, c);
}
LayerPtr Tanh(source_location c) { return Fn("Tanh", [](TensorArg x) { return tanh(x); }, 1, c); }
LayerPtr Softmax(int axis, source_location c) {
  return Fn("Softmax", [axis](TensorArg x) { return softmax(x, axis); }, 1, c);
}
LayerPtr LogSoftmax(int axis, source_location c) {
  return Fn("LogSoftmax", [axis](TensorArg x) { return log_softmax(x, axis); }, 1, c);
}

}  // namespace ctrax::layers

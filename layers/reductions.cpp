#include "layers/reductions.hpp"

#include <fmt/format.h>

#include "core/layer/fn.hpp"
#include "core/tensor/ops.hpp"

namespace ctrax::layers {

LayerPtr Mean(int axis, bool keepdims, source_location c) {
  return Fn("Mean", [=](TensorArg x) { return mean(x, {axis}, keepdims); }, 1, c);
}

LayerPtr Sum(std::optional<int> axis, bool keepdims, source_location c) {
  const Axes axes = axis ? Axes{*axis} : Axes{};
  return Fn("Sum", [=](TensorArg x) { return sum(x, axes, keepdims); }, 1, c);
}

LayerPtr Max(int axis, bool keepdims, source_location c) {
  return Fn("Max", [=](TensorArg x) { return max(x, {axis}, keepdims); }, 1, c);
}

LayerPtr Min(int axis, bool keepdims, source_location c) {
  return Fn("Min", [=](TensorArg x) { return min(x, {axis}, keepdims); }, 1, c);
}

LayerPtr LogSumExp(int axis, source_location c) {
  return Fn("LogSumExp", [=](TensorArg x) { return logsumexp(x, {axis}, /*keepdims=*/true); }, 1, c);
}

LayerPtr ArgMax(int axis, source_location c) {
  return Fn("ArgMax", [=](TensorArg x) { return argmax(x, axis); }, 1, c);
}

LayerPtr Flatten(int n_axes_to_keep, source_location c) {
  return Fn(fmt::format("Flatten_keep{}", n_axes_to_keep), [=](TensorArg x) {
    if (x.rank() <= n_axes_to_keep)
      throw std::invalid_argument(fmt::format(
          "input rank ({}) must exceed the number of axes to keep ({}) after flattening",
          x.rank(), n_axes_to_keep));
    Shape shape(x.shape().begin(), x.shape().begin() + n_axes_to_keep);
    shape.push_back(-1);
    return reshape(x, shape);
  }, 1, c);
}

}  // namespace ctrax::layers

#include "core/layer/bidirectional.hpp"

#include "core/layer/branch.hpp"
#include "core/layer/fn.hpp"
#include "core/layer/serial.hpp"
#include "core/layer/stack_ops.hpp"
#include "core/tensor/ops.hpp"

namespace ctrax::layers {

LayerPtr Bidirectional(LayerPtr forward_layer, LayerPtr backward_layer, int axis, LayerPtr merge_layer,
                       std::source_location created) {
  if (!forward_layer || !backward_layer)
    throw std::invalid_argument("Bidirectional: give a forward and a backward layer");
  if (forward_layer == backward_layer)
    throw std::invalid_argument(
        "Bidirectional: the backward layer must be a second layer (its own weights), not the forward one again");
  if (!merge_layer) merge_layer = Concatenate(2, -1, created);
  const auto flip_time = [axis, created] {
    return Fn("_FlipAlongTimeAxis", [axis](TensorArg x) { return flip(x, axis); }, 1, created);
  };
  return Serial(Branch(std::move(forward_layer), Serial(flip_time(), std::move(backward_layer), flip_time(), created),
                       created),
                std::move(merge_layer), created);
}

}  // namespace ctrax::layers

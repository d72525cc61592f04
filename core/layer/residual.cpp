#include "core/layer/residual.hpp"

#include "core/layer/branch.hpp"
#include "core/layer/serial.hpp"
#include "core/layer/stack_ops.hpp"

namespace ctrax::layers {

LayerPtr make_residual(const LayerArgs& layers, LayerPtr shortcut, std::source_location created) {
  const LayerList flat = flatten(layers, "Residual");
  const LayerPtr body = flat.size() == 1 ? flat[0] : Serial(flat, created);
  return Serial(Branch(shortcut, body, created), Add(created), created);
}

}  // namespace ctrax::layers

#include "core/layer/residual.hpp"

#include "core/layer/branch.hpp"
#include "core/layer/serial.hpp"
#include "core/layer/stack_ops.hpp"

namespace ctrax::layers {

LayerPtr make_residual(const LayerArgs& layers, LayerPtr shortcut, std::source_location created) {
  const LayerList flat = flatten(layers, "Residual");
  const LayerPtr body = flat.size() == 1 ? flat[0] : make_serial({flat}, "Serial", created);
  return make_serial({make_branch({shortcut, body}, created), Add(created)}, "Serial", created);
}

}  // namespace ctrax::layers

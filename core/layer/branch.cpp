#include "core/layer/branch.hpp"

#include "core/layer/parallel.hpp"
#include "core/layer/select.hpp"
#include "core/layer/serial.hpp"

namespace ctrax::layers {

LayerPtr make_branch(const LayerArgs& layers, std::source_location created) {
  if (layers.size() == 1) return as_layer(layers[0], created);
  std::vector<int> indices;
  LayerArgs branches;
  LayerList to_print;
  for (const LayerArg& a : layers) {
    const LayerPtr l = as_layer(a, created);
    for (int i = 0; i < l->n_in(); ++i) indices.push_back(i);
    branches.emplace_back(l);
    to_print.push_back(a.is_none() ? nullptr : l);
  }
  return make_serial({Select(indices, -1, created), make_parallel(branches, created)}, "Branch",
                     created, std::move(to_print));
}

}  // namespace ctrax::layers

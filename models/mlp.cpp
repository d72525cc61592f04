#include "models/mlp.hpp"

#include <fmt/format.h>

#include "layers/layers.hpp"

namespace ctrax::models {

using namespace ctrax::layers;

LayerPtr MLP(const MLPOptions& o) {
  if (o.layer_widths.empty()) throw std::invalid_argument("MLP: give at least one layer width");
  for (std::int64_t w : o.layer_widths)
    if (w < 1) throw std::invalid_argument(fmt::format("MLP: layer widths must be >= 1, got {}", w));
  const auto activation = [&] { return o.activation_fn ? o.activation_fn() : Relu(); };
  LayerList layers;
  for (std::int64_t width : o.layer_widths) {
    layers.push_back(Dense(width));
    layers.push_back(activation());
  }
  if (!o.out_activation) layers.pop_back();   // no activation after the last Dense
  return Serial(o.flatten ? LayerList{Flatten()} : LayerList{}, layers);
}

}  // namespace ctrax::models

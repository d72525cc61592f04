#include "models/conv_net.hpp"

#include <fmt/format.h>

#include "layers/layers.hpp"

namespace ctrax::models {

using namespace ctrax::layers;

LayerPtr ConvNet(const ConvNetOptions& o) {
  if (o.filters.empty()) throw std::invalid_argument("ConvNet: give at least one stage's filters");
  for (std::int64_t f : o.filters)
    if (f < 1) throw std::invalid_argument(fmt::format("ConvNet: filters must be >= 1, got {}", f));
  if (o.convs_per_stage < 1 || o.n_output_classes < 1)
    throw std::invalid_argument(fmt::format("ConvNet: convs_per_stage and n_output_classes must be >= 1, got {}, {}",
                                            o.convs_per_stage, o.n_output_classes));
  LayerList layers{ToFloat()};
  for (std::int64_t f : o.filters) {
    for (int i = 0; i < o.convs_per_stage; ++i) {
      layers.push_back(Conv(f, {3, 3}, {.padding = Padding::same}));
      layers.push_back(BatchNorm({.momentum = o.bn_momentum, .mode = o.mode}));
      layers.push_back(Relu());
    }
    layers.push_back(MaxPool({2, 2}));
  }
  return Serial(layers, Flatten(), Dropout({.rate = o.dropout, .mode = o.mode}), Dense(o.n_output_classes));
}

}  // namespace ctrax::models

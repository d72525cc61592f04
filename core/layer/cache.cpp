#include "core/layer/cache.hpp"

namespace ctrax::layers {

namespace {

class CacheLayer final : public Layer {
 public:
  CacheLayer(LayerPtr layer, std::source_location created)
      : Layer("Cache", layer->n_in(), layer->n_out(), created) {
    set_sublayers({std::move(layer)});
    set_transparent_in_weight_paths();
  }

 protected:
  Stack forward(const Stack& inputs) override {
    bool meta = false;
    for (const Tensor& x : inputs) meta = meta || x.is_meta();
    if (!meta && !state().empty()) return state();
    Stack outputs = call_sublayer(0, inputs);
    if (!meta) state() = outputs;
    return outputs;
  }
};

}  // namespace

LayerPtr Cache(LayerPtr layer, std::source_location created) {
  return std::make_shared<CacheLayer>(std::move(layer), created);
}

}  // namespace ctrax::layers

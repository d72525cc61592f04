#include "core/layer/cache.hpp"

namespace ctrax::layers {

namespace {

class CacheLayer final : public Layer {
 public:
  CacheLayer(LayerPtr layer, std::source_location created)
      : Layer("Cache", layer->n_in(), layer->n_out(), created) {
    set_sublayers({std::move(layer)});
  }

 protected:
  // A run on meta inputs (shape inference) leaves the state as it was: Layer::apply restores it.
  Stack forward(const Stack& inputs) override {
    if (!state().empty()) return state();
    state() = call_sublayer(0, inputs);
    return state();
  }

  bool transparent_in_weight_paths() const override { return true; }
};

}  // namespace

LayerPtr Cache(LayerPtr layer, std::source_location created) {
  return std::make_shared<CacheLayer>(std::move(layer), created);
}

}  // namespace ctrax::layers

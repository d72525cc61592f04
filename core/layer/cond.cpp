#include "core/layer/cond.hpp"

#include <fmt/format.h>

#include "core/layer/serial.hpp"

namespace ctrax::layers {

namespace {

class CondLayer final : public Layer {
 public:
  CondLayer(LayerPtr cond, LayerPtr true_layer, LayerPtr false_layer, std::source_location created)
      : Layer("Cond", cond->n_in() + true_layer->n_in(), true_layer->n_out(), created) {
    if (cond->n_out() != 1)
      throw std::invalid_argument(fmt::format("Cond: cond must have n_out 1, got {} ({} → {})",
                                              cond->display_name(), cond->n_in(), cond->n_out()));
    if (true_layer->n_in() != false_layer->n_in() || true_layer->n_out() != false_layer->n_out())
      throw std::invalid_argument(fmt::format(
          "Cond: the two branches must have the same n_in and n_out: true {} is {} → {}, false {} is {} → {}",
          true_layer->display_name(), true_layer->n_in(), true_layer->n_out(), false_layer->display_name(),
          false_layer->n_in(), false_layer->n_out()));
    set_sublayers({std::move(cond), std::move(true_layer), std::move(false_layer)});
  }

 protected:
  Stack forward(const Stack& inputs) override {
    const auto n_cond = static_cast<std::ptrdiff_t>(sublayers()[0]->n_in());
    const Tensor c = call_sublayer(0, Stack(inputs.begin(), inputs.begin() + n_cond))[0];
    const Stack rest(inputs.begin() + n_cond, inputs.end());
    if (c.is_meta()) {   // initialising: both branches get their weights; their outputs must agree
      const Stack t = call_sublayer(1, rest), f = call_sublayer(2, rest);
      if (signature_of(t) != signature_of(f))
        throw std::invalid_argument(fmt::format("Cond: the branches' outputs differ: true gives {}, false gives {}",
                                                ctrax::to_string(signature_of(t)), ctrax::to_string(signature_of(f))));
      return t;
    }
    if (c.numel() != 1)
      throw std::invalid_argument(fmt::format("Cond: cond must give one value, got {}", c.signature()));
    return call_sublayer(c.to(DType::float64).item() != 0 ? 1 : 2, rest);
  }
};

}  // namespace

LayerPtr Cond(LayerPtr cond, LayerPtr true_layer, LayerPtr false_layer, std::source_location created) {
  if (!cond || !true_layer) throw std::invalid_argument("Cond: cond and true_layer must be layers");
  if (!false_layer) false_layer = Serial();
  return std::make_shared<CondLayer>(std::move(cond), std::move(true_layer), std::move(false_layer), created);
}

}  // namespace ctrax::layers

#include "core/layer/serial.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ctrax::layers {

LayerList flatten(const LayerArgs& args, const char* combinator) {
  LayerList out;
  for (const LayerArg& a : args)
    for (const LayerPtr& l : a.layers()) {
      if (!l)
        throw std::invalid_argument(fmt::format(
            "{}: found a non-layer object (None) among its layers", combinator));
      out.push_back(l);
    }
  return out;
}

namespace {

class SerialLayer final : public Layer {
 public:
  SerialLayer(LayerList layers, std::string name, std::source_location created,
              std::optional<LayerList> to_print)
      : Layer(std::move(name), 1, 1, created) {
    if (to_print) set_sublayers_to_print(std::move(*to_print));
    int total = 0, deepest = 0;
    for (const auto& l : layers) {
      total += l->n_in();
      deepest = std::max(deepest, total);
      total -= l->n_out();
    }
    if (!layers.empty()) set_arity(deepest, deepest - total);
    set_sublayers(std::move(layers));
  }

 protected:
  Stack forward(const Stack& inputs) override {
    Stack stack = inputs;
    for (std::size_t i = 0; i < sublayers().size(); ++i) stack = call_sublayer(i, stack);
    return stack;
  }

  std::string short_of_inputs(int n_given) const override {
    int depth = n_given;   // the stack's depth as the layers run
    for (std::size_t i = 0; i < sublayers().size(); ++i) {
      const Layer& l = *sublayers()[i];
      if (depth < l.n_in())
        return fmt::format(": its layer [{}] {} (created at {}) takes {} inputs and finds {} on the stack", i,
                           l.display_name(), location_string(l.created_at()), l.n_in(), depth);
      depth += l.n_out() - l.n_in();
    }
    return "";
  }
};

}  // namespace

LayerPtr make_serial(const LayerArgs& layers, std::string name, std::source_location created,
                     std::optional<LayerList> sublayers_to_print) {
  const bool none_alone = layers.size() == 1 && layers[0].is_none();
  return std::make_shared<SerialLayer>(none_alone ? LayerList{} : flatten(layers, "Serial"),
                                       std::move(name), created, std::move(sublayers_to_print));
}

}  // namespace ctrax::layers

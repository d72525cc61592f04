#include "core/layer/serial.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "core/layer/internal/planned_step.hpp"
#include "core/layer/select.hpp"

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
  // Layer by layer, except where the execution plan (core/layer/plan.hpp) runs a layer and the
  // next as one step.
  Stack forward(const Stack& inputs) override {
    const auto& layers = sublayers();
    if (layers.empty()) return inputs;
    Stack stack;
    const Stack* current = &inputs;   // the first layer reads the inputs where they are
    for (std::size_t i = 0; i < layers.size(); ++i) {
      if (const std::optional<PlannedStep> step = planned_step(layers, i)) {
        Layer* previous = step->owner > i ? layers[i].get() : nullptr;
        const auto after = std::span<const LayerPtr>(layers).subspan(step->owner + 1, i + step->count - step->owner - 1);
        std::optional<Stack> fused;
        try {
          fused = layers[step->owner]->call_fused(previous, after, *current);
        } catch (LayerError& e) {
          e.mark_index(i);
          throw;
        }
        if (fused) {
          stack = std::move(*fused);
          current = &stack;
          i += step->count - 1;
          continue;
        }
      }
      stack = call_sublayer(i, *current);
      current = &stack;
    }
    return stack;
  }

  bool fuses_sublayers() const override { return true; }

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

LayerPtr SerialWithSideOutputs(const LayerList& layers, int n_side_outputs, std::source_location created) {
  int running_max = 0, running_total = 0;
  for (const auto& l : layers) {
    if (l->n_out() < n_side_outputs)
      throw std::invalid_argument(fmt::format("SerialWithSideOutputs (created at {}): {} has {} outputs, fewer than "
                                              "the {} side outputs", location_string(created), l->display_name(),
                                              l->n_out(), n_side_outputs));
    running_total += l->n_in();
    running_max = std::max(running_max, running_total);
    running_total -= l->n_out() - n_side_outputs;
  }
  int stack_size = running_max;
  LayerList serial;
  for (const auto& l : layers) {
    serial.push_back(l);
    stack_size += l->n_out() - l->n_in();
    std::vector<int> move_back;  // the main outputs, then the rest of the stack, then the side outputs
    for (int i = 0; i < l->n_out() - n_side_outputs; ++i) move_back.push_back(i);
    for (int i = 0; i < stack_size - l->n_out(); ++i) move_back.push_back(i + l->n_out());
    for (int i = 0; i < n_side_outputs; ++i) move_back.push_back(i + l->n_out() - n_side_outputs);
    serial.push_back(Select(move_back, -1, created));
  }
  return make_serial({serial}, "Serial", created);
}

}  // namespace ctrax::layers

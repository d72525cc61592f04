#include "core/layer/parallel.hpp"

#include <fmt/format.h>

#include "core/decode/internal/token_program.hpp"
#include "core/layer/internal/plumbing_kinds.hpp"
#include "core/layer/serial.hpp"

namespace ctrax::layers {

LayerPtr as_layer(const LayerArg& arg, std::source_location created) {
  if (arg.is_none()) return Serial(created);
  if (arg.is_list()) return Serial(arg.layers(), created);
  return arg.layers()[0];
}

namespace {

class ParallelLayer final : public Layer {
 public:
  ParallelLayer(LayerList layers, std::source_location created)
      : Layer("Parallel", 0, 0, created) {
    int n_in = 0, n_out = 0;
    for (const auto& l : layers) {
      if (l->n_in() == 0)
        throw std::invalid_argument(fmt::format(
            "Parallel: sublayer {} takes no inputs; Parallel gives each sublayer a span of the "
            "stack, so each must take at least one", l->display_name()));
      n_in += l->n_in();
      n_out += l->n_out();
    }
    set_arity(n_in, n_out);
    set_sublayers(std::move(layers));
  }

 protected:
  Stack forward(const Stack& inputs) override {
    Stack outputs;
    outputs.reserve(static_cast<std::size_t>(n_out()));
    std::size_t at = 0;
    for (std::size_t i = 0; i < sublayers().size(); ++i) {
      const auto n = static_cast<std::size_t>(sublayers()[i]->n_in());
      Stack out = call_sublayer(i, Stack(inputs.begin() + at, inputs.begin() + at + n));
      outputs.insert(outputs.end(), out.begin(), out.end());
      at += n;
    }
    return outputs;
  }

  // Each branch on its span: put on top of the stack, lowered, its outputs taken off again.
  bool lower_token(decode::TokenProgramBuilder& b) override {
    const std::vector<int> in = b.take(n_in());
    if (static_cast<int>(in.size()) != n_in()) return false;
    std::vector<int> out;
    std::size_t at = 0;
    for (const LayerPtr& layer : sublayers()) {
      const auto n = static_cast<std::size_t>(layer->n_in());
      b.put(std::vector<int>(in.begin() + static_cast<std::ptrdiff_t>(at), in.begin() + static_cast<std::ptrdiff_t>(at + n)));
      if (!layer->lower_token(b)) return false;
      const std::vector<int> o = b.take(layer->n_out());
      if (static_cast<int>(o.size()) != layer->n_out()) return false;
      out.insert(out.end(), o.begin(), o.end());
      at += n;
    }
    b.put(out);
    return true;
  }
};

}  // namespace

bool is_parallel(const Layer& layer) { return dynamic_cast<const ParallelLayer*>(&layer) != nullptr; }

LayerPtr make_parallel(const LayerArgs& layers, std::source_location created) {
  if (layers.size() < 2)
    throw std::invalid_argument(fmt::format(
        "Parallel needs at least two sublayers, got {} (a single layer needs no Parallel)",
        layers.size()));
  LayerList list;
  for (const auto& a : layers) list.push_back(as_layer(a, created));
  return std::make_shared<ParallelLayer>(std::move(list), created);
}

}  // namespace ctrax::layers

#include "core/layer/serial.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "core/layer/internal/planned_step.hpp"
#include "core/layer/internal/plumbing_kinds.hpp"
#include "core/layer/select.hpp"
#include "core/layer/trace.hpp"

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
    if (std::optional<Stack> out = select_then_parallel(inputs)) return std::move(*out);
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

  bool lower_token(decode::TokenProgramBuilder& b) override {
    for (const LayerPtr& layer : sublayers())
      if (!layer->lower_token(b)) return false;
    return true;
  }

  // The plan's step for a Select then a Parallel — how Branch is made (branch.cpp), and so every
  // Residual: the Select's picks go straight to the Parallel's branches, and a branch that is None
  // (an empty Serial, its input back) hands its input on without a call. The same tensors reach
  // the same layers in the same order, so values, gradients and state are the tree's; an error in
  // a branch gets the tree's path (its index, the Parallel, the Parallel's index here). The tree
  // runs instead while the plan is off, under a Trace, on meta tensors (shape inference, init), or
  // when the Select's or the Parallel's mode records where this Serial's does not (their apply
  // would turn recording off).
  std::optional<Stack> select_then_parallel(const Stack& inputs) {
    if (!runs_select_then_parallel() || Trace::active()) return std::nullopt;
    const Layer &select = *sublayers()[0], &parallel = *sublayers()[1];
    const auto records = [](const Layer& l) { return l.mode() == Mode::train; };
    if (!select.initialized() || !parallel.initialized() || records(select) != records(*this) ||
        records(parallel) != records(*this) ||
        std::any_of(inputs.begin(), inputs.end(), [](const Tensor& x) { return x.is_meta(); }))
      return std::nullopt;
    const std::vector<int>& picks = *select_indices(select);
    Stack out;
    out.reserve(static_cast<std::size_t>(n_out()));
    std::size_t at = 0;   // the branch's first pick
    const auto& branches = parallel.sublayers();
    for (std::size_t j = 0; j < branches.size(); ++j) {
      Layer& branch = *branches[j];
      const auto n = static_cast<std::size_t>(branch.n_in());
      if (is_none(branch)) {
        out.push_back(inputs[static_cast<std::size_t>(picks[at])]);
      } else {
        Stack slice;
        slice.reserve(n);
        for (std::size_t k = at; k < at + n; ++k) slice.push_back(inputs[static_cast<std::size_t>(picks[k])]);
        try {
          Stack branch_out = branch(slice);
          out.insert(out.end(), std::make_move_iterator(branch_out.begin()), std::make_move_iterator(branch_out.end()));
        } catch (LayerError& e) {
          e.mark_index(j);
          e.prepend(parallel.name());
          e.mark_index(1);
          throw;
        }
      }
      at += n;
    }
    out.insert(out.end(), inputs.begin() + select.n_in(), inputs.end());   // what the Select left below
    return out;
  }

 public:
  // The structure select_then_parallel takes (the plan's printer asks too).
  bool runs_select_then_parallel() const {
    const auto& layers = sublayers();
    return execution_plan() && layers.size() == 2 && select_indices(*layers[0]) && is_parallel(*layers[1]) &&
           layers[0]->n_out() == layers[1]->n_in();
  }

 private:
  // None in a Branch: an empty Serial, whose forward hands its one input back.
  static bool is_none(const Layer& layer) {
    return dynamic_cast<const SerialLayer*>(&layer) && layer.sublayers().empty() && layer.initialized() &&
           layer.n_in() == 1 && layer.n_out() == 1;
  }

 protected:

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

bool select_then_parallel_step(const Layer& layer) {
  const auto* serial = dynamic_cast<const SerialLayer*>(&layer);
  return serial && serial->runs_select_then_parallel();
}

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

#include "core/layer/scan.hpp"

#include <fmt/format.h>

#include "core/layer/layer_error.hpp"
#include "core/tensor/ops.hpp"

namespace ctrax::layers {

namespace {

class ScanLayer final : public Layer {
 public:
  ScanLayer(LayerPtr layer, int axis, int n_carry, Mode mode, std::source_location created)
      : Layer("Scan", layer->n_in(), layer->n_out(), created), axis_(axis), n_carry_(n_carry) {
    if (n_carry < 0 || n_carry > layer->n_in() || n_carry > layer->n_out() ||
        layer->n_in() == n_carry)
      throw std::invalid_argument(fmt::format(
          "Scan: n_carry {} does not fit layer {} (it needs at least one scanned input and "
          "n_carry <= n_in, n_out)", n_carry, layer->display_name()));
    set_sublayers({std::move(layer)});
    set_mode(mode);
  }

 protected:
  Stack forward(const Stack& inputs) override {
    const auto n_x = inputs.size() - static_cast<std::size_t>(n_carry_);
    Stack carry(inputs.begin() + static_cast<std::ptrdiff_t>(n_x), inputs.end());
    if (mode() == Mode::predict && !state().empty()) carry = state();
    bool meta = false;
    for (const Tensor& x : inputs) meta = meta || x.is_meta();
    if (!meta && sublayers()[0]->initialized()) {
      Stack xs(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(n_x));
      xs.insert(xs.end(), carry.begin(), carry.end());
      std::optional<Stack> all;
      try {
        all = sublayers()[0]->scan_all(xs, axis_);
      } catch (LayerError& e) {
        e.mark_index(0);
        throw;
      }
      if (all) {
        if (mode() == Mode::predict)
          state().assign(all->end() - static_cast<std::ptrdiff_t>(n_carry_), all->end());
        return *all;
      }
    }
    const std::int64_t length = inputs[0].dim(axis_);
    const std::size_t n_y = static_cast<std::size_t>(n_out() - n_carry_);
    std::vector<Stack> ys(n_y);
    const Rng base = rng();
    for (std::int64_t i = 0; i < length; ++i) {
      Stack step;
      for (std::size_t j = 0; j < n_x; ++j)
        step.push_back(squeeze(slice(inputs[j], axis_, i, i + 1), axis_));
      step.insert(step.end(), carry.begin(), carry.end());
      sublayers()[0]->set_rng(base.fold_in(static_cast<std::uint64_t>(i)));
      Stack out = call_sublayer(0, step);
      for (std::size_t j = 0; j < n_y; ++j) ys[j].push_back(out[j]);
      carry.assign(out.begin() + static_cast<std::ptrdiff_t>(n_y), out.end());
    }
    sublayers()[0]->set_rng(base);
    Stack outputs;
    for (auto& y : ys) {
      if (y.empty())
        throw std::invalid_argument(fmt::format("Scan over an empty axis {} of {}", axis_,
                                                inputs[0].signature()));
      outputs.push_back(stack(y, axis_));
    }
    if (mode() == Mode::predict) state() = carry;
    outputs.insert(outputs.end(), carry.begin(), carry.end());
    return outputs;
  }

 private:
  int axis_, n_carry_;
};

}  // namespace

LayerPtr Scan(LayerPtr layer, int axis, int n_carry, Mode mode, std::source_location created) {
  return std::make_shared<ScanLayer>(std::move(layer), axis, n_carry, mode, created);
}

}  // namespace ctrax::layers

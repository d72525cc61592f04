#include "core/layer/batch_leading_axes.hpp"

#include <fmt/format.h>

#include "core/tensor/ops.hpp"

namespace ctrax::layers {

namespace {

class BatchLeadingAxesLayer final : public Layer {
 public:
  BatchLeadingAxesLayer(LayerPtr layer, int keep, std::source_location created)
      : Layer("BatchLeadingAxes", layer->n_in(), layer->n_out(), created), keep_(keep) {
    if (layer->n_out() != 1)
      throw std::invalid_argument(fmt::format(
          "BatchLeadingAxes works for layers with n_out = 1, got {} (n_out {})", layer->display_name(), layer->n_out()));
    if (keep < 1) throw std::invalid_argument(fmt::format("BatchLeadingAxes: n_last_axes_to_keep must be >= 1, got {}", keep));
    set_sublayers({std::move(layer)});
  }

 protected:
  Stack forward(const Stack& inputs) override {
    const Shape& first = inputs[0].shape();
    if (inputs[0].rank() <= keep_)
      throw std::invalid_argument(fmt::format("BatchLeadingAxes keeps the last {} axes and batches the rest: "
                                              "its inputs need rank > {}, got {}", keep_, keep_, inputs[0].signature()));
    const Shape leading(first.begin(), first.end() - keep_);
    Stack batched;
    for (const Tensor& x : inputs) {
      if (x.rank() <= keep_ || Shape(x.shape().begin(), x.shape().end() - keep_) != leading)
        throw std::invalid_argument(fmt::format("BatchLeadingAxes: every input needs the leading axes of the "
                                                "first, {}; got {}", inputs[0].signature(), x.signature()));
      Shape s{-1};
      s.insert(s.end(), x.shape().end() - keep_, x.shape().end());
      batched.push_back(reshape(x, s));
    }
    const Tensor y = call_sublayer(0, batched)[0];
    Shape out = leading;
    out.insert(out.end(), y.shape().begin() + 1, y.shape().end());
    return {reshape(y, out)};
  }

 private:
  int keep_;
};

}  // namespace

LayerPtr BatchLeadingAxes(LayerPtr layer, int n_last_axes_to_keep, std::source_location created) {
  return std::make_shared<BatchLeadingAxesLayer>(std::move(layer), n_last_axes_to_keep, created);
}

}  // namespace ctrax::layers

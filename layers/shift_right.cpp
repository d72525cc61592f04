#include "layers/shift_right.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/tensor/ops.hpp"

namespace ctrax::layers {

namespace {

class ShiftRightLayer final : public Layer {
 public:
  ShiftRightLayer(int n_positions, std::source_location created)
      : Layer(fmt::format("ShiftRight({})", n_positions), 1, 1, created), n_(n_positions) {
    if (n_positions < 1)
      throw std::invalid_argument(
          fmt::format("ShiftRight needs n_positions >= 1, got {}", n_positions));
  }

 protected:
  Stack forward(const Stack& inputs) override {
    const Tensor& x = inputs[0];
    if (x.rank() < 2)
      throw std::invalid_argument(
          fmt::format("ShiftRight expects (B, L, ...) inputs, got {}", x.signature()));
    if (mode() == Mode::predict) return inputs;
    const std::int64_t L = x.dim(1);
    const std::int64_t n = std::min<std::int64_t>(n_, L);
    Shape pad_shape = x.shape();
    pad_shape[1] = n;
    return {concatenate({Tensor::zeros(pad_shape, x.dtype()), slice(x, 1, 0, L - n)}, 1)};
  }

  bool lower_token(decode::TokenProgramBuilder&) override { return mode() == Mode::predict; }   // its inputs

 private:
  int n_;
};

}  // namespace

LayerPtr ShiftRight(ShiftRightOptions options, std::source_location created) {
  return with_mode(std::make_shared<ShiftRightLayer>(options.n_positions, created), options.mode);
}

}  // namespace ctrax::layers

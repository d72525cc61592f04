#include "layers/rotary.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/tensor/ops.hpp"

namespace ctrax::layers {

namespace {

// cos and sin of (start + j)·θ_i, laid out (L, d) as [θ_0 … θ_{d/2−1}, θ_0 … θ_{d/2−1}].
std::pair<Tensor, Tensor> angles(std::int64_t L, std::int64_t d, std::int64_t start, DType dtype) {
  std::vector<double> c(static_cast<std::size_t>(L * d)), s(c.size());
  for (std::int64_t j = 0; j < L; ++j)
    for (std::int64_t i = 0; i < d / 2; ++i) {
      const double theta = std::exp(-2.0 * static_cast<double>(i) * std::log(10000.0) / static_cast<double>(d));
      const double a = static_cast<double>(start + j) * theta;
      for (std::int64_t half : {std::int64_t{0}, d / 2}) {
        c[static_cast<std::size_t>(j * d + i + half)] = std::cos(a);
        s[static_cast<std::size_t>(j * d + i + half)] = std::sin(a);
      }
    }
  return {Tensor::from_doubles(c, {L, d}, dtype), Tensor::from_doubles(s, {L, d}, dtype)};
}

}  // namespace

Tensor rotate(const Tensor& x, std::int64_t start) {
  if (x.rank() < 2 || x.dim(-1) % 2 != 0 || !is_floating(x.dtype()))
    throw std::invalid_argument(fmt::format(
        "rotate expects float (…, L, d) with an even d, got {}", x.signature()));
  const std::int64_t L = x.dim(-2), d = x.dim(-1);
  const auto [cos, sin] = angles(L, d, start, x.dtype());
  const Tensor rotated_half = concatenate({-slice(x, -1, d / 2, d), slice(x, -1, 0, d / 2)}, -1);
  return x * cos + rotated_half * sin;
}

namespace {

class RotateLayer final : public Layer {
 public:
  explicit RotateLayer(std::source_location created) : Layer("Rotate", 1, 1, created) {}

 protected:
  void init_weights_and_state(const Signature&) override {
    if (mode() == Mode::predict) state() = {Tensor::scalar(0, DType::int32)};
  }

  Stack forward(const Stack& inputs) override {
    const Tensor& x = inputs[0];
    if (mode() != Mode::predict) return {rotate(x, 0)};
    if (state().empty())
      throw std::logic_error("Rotate in predict mode has no position counter: initialise the model in predict mode");
    const auto start = static_cast<std::int64_t>(state()[0].item());
    state()[0] = Tensor::scalar(static_cast<double>(start + x.dim(-2)), DType::int32);
    return {rotate(x, start)};
  }
};

}  // namespace

LayerPtr Rotate(RotateOptions options, std::source_location created) {
  return with_mode(std::make_shared<RotateLayer>(created), options.mode);
}

}  // namespace ctrax::layers

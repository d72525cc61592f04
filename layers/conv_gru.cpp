#include "layers/conv_gru.hpp"

#include <fmt/format.h>

#include "core/layer/combinators.hpp"
#include "core/tensor/ops.hpp"
#include "layers/activations.hpp"
#include "layers/convolution.hpp"
#include "layers/dropout.hpp"

namespace ctrax::layers {

namespace {

LayerPtr AddSigmoidBias(double bias) {
  return Fn(fmt::format("AddSigmoidBias({})", bias), std::function<Tensor(TensorArg)>([bias](const Tensor& x) { return x + bias; }));
}

}  // namespace

LayerPtr GeneralGRUCell(const std::function<LayerPtr()>& candidate_transform, GeneralGRUCellOptions o,
                        std::source_location created) {
  if (!candidate_transform) throw std::invalid_argument("GeneralGRUCell: give the candidate transform (a function making a layer)");
  const auto gate = [&] { return o.gate_nonlinearity ? o.gate_nonlinearity() : Sigmoid(); };
  const auto candidate = [&] { return o.candidate_nonlinearity ? o.candidate_nonlinearity() : Tanh(); };
  const LayerPtr update_block = Serial(candidate_transform(), AddSigmoidBias(o.sigmoid_bias), gate());
  const LayerPtr reset_block = Serial(candidate_transform(), AddSigmoidBias(o.sigmoid_bias), gate());
  const LayerPtr candidate_block = Serial(Dup(), reset_block, Multiply(), candidate_transform(), candidate(),
                                          Dropout({.rate = o.dropout_rate_c, .mode = o.mode}));
  const LayerPtr memory = o.memory_transform ? o.memory_transform() : nullptr;
  return at_caller(Serial(Branch(memory, update_block, candidate_block), Gate()), created);
}

LayerPtr ConvGRUCell(std::int64_t n_units, std::array<std::int64_t, 2> kernel_size, Mode mode, std::source_location created) {
  if (n_units < 1) throw std::invalid_argument(fmt::format("ConvGRUCell: n_units must be >= 1, got {}", n_units));
  return at_caller(GeneralGRUCell([&] { return Conv(n_units, kernel_size, {.padding = Padding::same}); }, {.mode = mode}),
                   created);
}

}  // namespace ctrax::layers

#include "layers/sru.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/layer/combinators.hpp"
#include "core/tensor/ops.hpp"
#include "layers/activations.hpp"
#include "layers/dense.hpp"
#include "layers/rnn.hpp"

namespace ctrax::layers {

LayerPtr InnerSRUCell(std::source_location created) {
  return Fn("InnerSRUCell", std::function<Stack(TensorArg, TensorArg, TensorArg)>(
                                [](const Tensor& x_times_one_minus_f, const Tensor& f, const Tensor& state) {
                                  const Tensor c = f * state + x_times_one_minus_f;
                                  return Stack{c, c};
                                }),
            2, created);
}

LayerPtr SRU(std::int64_t n_units, LayerPtr activation, Mode mode, std::source_location created) {
  if (n_units < 1) throw std::invalid_argument(fmt::format("SRU: n_units must be >= 1, got {}", n_units));
  const auto gates = Fn("", std::function<Stack(TensorArg, TensorArg, TensorArg)>(
                                [](const Tensor& r, const Tensor& f, const Tensor& y) {
                                  return Stack{y * (1.0 - f), f, r};
                                }),
                        3);
  const auto final_gate = Fn("FinalSRUGate", std::function<Tensor(TensorArg, TensorArg, TensorArg)>(
                                                 [](const Tensor& c, const Tensor& r, const Tensor& x) {
                                                   if (x.shape() != c.shape())
                                                     throw std::invalid_argument(fmt::format(
                                                         "SRU's highway adds the input to the output: their depths must "
                                                         "match, got input {} and output {}",
                                                         x.signature(), c.signature()));
                                                   return c * r + x * (1.0 - r) * std::sqrt(3.0);
                                                 }));
  LayerList body{Branch(Dense(3 * n_units), nullptr),
                 Split(3),
                 Parallel(Sigmoid(), Sigmoid()),
                 gates,
                 Parallel(nullptr, nullptr, Branch(MakeZeroState(), nullptr)),
                 Scan(InnerSRUCell(), 1, 1, mode),
                 Select({0}, 2)};
  if (activation) body.push_back(std::move(activation));
  body.push_back(final_gate);
  return at_caller(make_serial({body}, fmt::format("SRU_{}", n_units), created, LayerList{}), created);
}

}  // namespace ctrax::layers

#include "layers/positional_encoding.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/decode/internal/token_program.hpp"
#include "core/tensor/dispatch.hpp"
#include "core/tensor/ops.hpp"
#include "layers/initializers.hpp"

namespace ctrax::layers {

Tensor sinusoidal_table(std::int64_t max_len, std::int64_t d, DType dtype) {
  if (d % 2 != 0)
    throw std::invalid_argument(
        fmt::format("PositionalEncoding needs an even feature depth d, got {}", d));
  Tensor pe = Tensor::zeros({max_len, d}, dtype);
  std::vector<double> omega(static_cast<std::size_t>(d / 2));
  for (std::int64_t i = 0; i < d / 2; ++i)
    omega[static_cast<std::size_t>(i)] =
        std::exp(-2.0 * static_cast<double>(i) * std::log(10000.0) / static_cast<double>(d));
  dispatch_float(dtype, [&]<class T>(T) {
    T* p = pe.data<T>();
    for (std::int64_t pos = 0; pos < max_len; ++pos)
      for (std::int64_t i = 0; i < d / 2; ++i) {
        const double angle = static_cast<double>(pos) * omega[static_cast<std::size_t>(i)];
        p[pos * d + 2 * i] = static_cast<T>(std::sin(angle));
        p[pos * d + 2 * i + 1] = static_cast<T>(std::cos(angle));
      }
  });
  return pe;
}

namespace {

// PositionalEncoding and PositionalEmbedding: a (max_len, d) table added to the activations,
// which differ only in the table's first value (sinusoids, or random like an Embedding's).
class PositionalEncodingLayer final : public Layer {
 public:
  PositionalEncodingLayer(std::string name, Initializer table, std::int64_t max_len, double dropout,
                          std::vector<int> broadcast_dims, std::source_location created)
      : Layer(std::move(name), 1, 1, created),
        table_(std::move(table)),
        max_len_(max_len),
        dropout_(dropout),
        broadcast_dims_(std::move(broadcast_dims)) {
    check_dropout_rate(dropout);
  }

 protected:
  void init_weights_and_state(const Signature& input) override {
    const ShapeDtype& x = input.at(0);
    if (x.shape.size() != 3)
      throw std::invalid_argument(fmt::format(
          "{} expects (B, L, d_feature) activations, got {}", name(), ctrax::to_string(input)));
    add_weight("pe", {max_len_, x.shape[2]}, weight_dtype(x.dtype), table_, rng());
    if (mode() == Mode::predict) state() = {Tensor::scalar(0, DType::int32)};
  }

  Stack forward(const Stack& inputs) override {
    const Tensor& x = inputs[0];
    const Tensor& pe = weights()[0];
    if (x.rank() != 3 || x.dim(2) != pe.dim(1))
      throw std::invalid_argument(fmt::format(
          "{} expects (B, L, {}) activations, got {}", name(), pe.dim(1), x.signature()));
    const std::int64_t L = x.dim(1);
    std::int64_t start = 0;
    if (mode() == Mode::predict) {
      if (state().empty())
        throw std::logic_error(name() + " in predict mode has no position counter: "
                               "initialise the model in predict mode");
      start = static_cast<std::int64_t>(state()[0].item());
    }
    if (start + L > max_len_)
      throw std::invalid_argument(fmt::format(
          "positions {}..{} exceed max_len {} of {}", start, start + L - 1, max_len_, name()));
    Tensor px = slice(pe, 0, start, start + L);  // (L, d)
    if (mode() == Mode::train && dropout_ > 0.0) px = dropout(px, dropout_, rng(), broadcast_dims_);
    if (mode() == Mode::predict)
      state()[0] = Tensor::scalar(static_cast<double>(start + L), DType::int32);
    return {x + px};
  }

  bool lower_token(decode::TokenProgramBuilder& b) override {
    return mode() == Mode::predict && b.replace_top(1, [&](const auto& x) {
      return b.add_position(x[0], weights().at(0), *this, 0);
    });
  }

 private:
  Initializer table_;
  std::int64_t max_len_;
  double dropout_;
  std::vector<int> broadcast_dims_;
};

}  // namespace

LayerPtr PositionalEncoding(std::int64_t max_len, PositionalEncodingOptions options,
                            std::source_location created) {
  Initializer sinusoids = [](const Shape& s, const Rng&, DType dt) { return sinusoidal_table(s[0], s[1], dt); };
  return with_mode(std::make_shared<PositionalEncodingLayer>("PositionalEncoding", std::move(sinusoids), max_len,
                                                             options.dropout,
                                                             std::move(options.dropout_broadcast_dims), created),
                   options.mode);
}

LayerPtr PositionalEmbedding(std::int64_t max_len, PositionalEncodingOptions options,
                             std::source_location created) {
  return with_mode(std::make_shared<PositionalEncodingLayer>("PositionalEmbedding", scaled_uniform(1.0), max_len,
                                                             options.dropout,
                                                             std::move(options.dropout_broadcast_dims), created),
                   options.mode);
}

}  // namespace ctrax::layers

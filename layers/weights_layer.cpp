#include "layers/weights_layer.hpp"

#include <fmt/format.h>

#include <cmath>

namespace ctrax::layers {

namespace {

// Python's tuple spelling: (), (3,), (2, 3) — Trax prints the name with it.
std::string python_tuple(const Shape& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

class WeightsLayer final : public Layer {
 public:
  WeightsLayer(Initializer initializer, Shape shape, std::source_location created)
      : Layer("Weights_" + python_tuple(shape), 0, 1, created), initializer_(std::move(initializer)),
        shape_(std::move(shape)) {}

 protected:
  void init_weights_and_state(const Signature&) override { add_weight("w", shape_, DType::float32, initializer_, rng()); }
  Stack forward(const Stack&) override { return {weights()[0]}; }

 private:
  Initializer initializer_;
  Shape shape_;
};

class RandomUniformLayer final : public Layer {
 public:
  RandomUniformLayer(double lo, double hi, Shape shape, DType dtype, std::source_location created)
      : Layer("RandomUniform", 0, 1, created), lo_(lo), hi_(hi), shape_(std::move(shape)), dtype_(dtype) {}

 protected:
  Stack forward(const Stack&) override { return {rng().uniform(shape_, lo_, hi_, dtype_)}; }

 private:
  double lo_, hi_;
  Shape shape_;
  DType dtype_;
};

}  // namespace

LayerPtr Weights(Initializer initializer, Shape shape, std::source_location created) {
  if (!initializer) throw std::invalid_argument("Weights: give an initializer");
  for (std::int64_t d : shape)
    if (d < 0) throw std::invalid_argument(fmt::format("Weights: extents must be >= 0, got {}", fmt::join(shape, ", ")));
  return std::make_shared<WeightsLayer>(std::move(initializer), std::move(shape), created);
}

LayerPtr RandomUniform(double min_val, double max_val, Shape shape, DType dtype, std::source_location created) {
  if (!(min_val < max_val) || !std::isfinite(min_val) || !std::isfinite(max_val))
    throw std::invalid_argument(
        fmt::format("RandomUniform: min_val ({}) must be a finite number below max_val ({}), also finite", min_val, max_val));
  if (!is_floating(dtype)) throw std::invalid_argument("RandomUniform: dtype must be float32 or float64");
  return std::make_shared<RandomUniformLayer>(min_val, max_val, std::move(shape), dtype, created);
}

}  // namespace ctrax::layers

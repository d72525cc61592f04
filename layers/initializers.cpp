#include "layers/initializers.hpp"

#include <cmath>
#include <stdexcept>

namespace ctrax::layers {

Initializer glorot_uniform() {
  return [](const Shape& shape, const Rng& rng, DType dtype) {
    if (shape.size() < 2) throw std::invalid_argument("glorot_uniform needs a kernel of rank >= 2");
    const double fan_in = static_cast<double>(shape[shape.size() - 2]);
    const double fan_out = static_cast<double>(shape.back());
    const double limit = std::sqrt(6.0 / (fan_in + fan_out));
    return rng.uniform(shape, -limit, limit, dtype);
  };
}

Initializer glorot_normal(int out_dim, int in_dim) {
  return [out_dim, in_dim](const Shape& shape, const Rng& rng, DType dtype) {
    const int rank = static_cast<int>(shape.size());
    const int o = out_dim < 0 ? out_dim + rank : out_dim, i = in_dim < 0 ? in_dim + rank : in_dim;
    if (rank < 2 || o < 0 || o >= rank || i < 0 || i >= rank)
      throw std::invalid_argument("glorot_normal: the in and out axes must be axes of the kernel");
    const double gain = 2.0 / static_cast<double>(shape[i] + shape[o]);
    return rng.normal(shape, 0.0, std::sqrt(gain), dtype);
  };
}

Initializer random_normal(double stddev) {
  return [stddev](const Shape& shape, const Rng& rng, DType dtype) {
    return rng.normal(shape, 0.0, stddev, dtype);
  };
}

Initializer scaled_uniform(double scale) {
  return [scale](const Shape& shape, const Rng& rng, DType dtype) {
    if (shape.empty()) throw std::invalid_argument("scaled_uniform needs a weight of rank >= 1");
    const double limit = std::sqrt(3.0 * scale / static_cast<double>(shape.back()));
    return rng.uniform(shape, -limit, limit, dtype);
  };
}

Initializer constant(double value) {
  return [value](const Shape& shape, const Rng&, DType dtype) {
    return Tensor::full(shape, value, dtype);
  };
}

DType weight_dtype(DType dt) { return is_floating(dt) ? dt : DType::float32; }

}  // namespace ctrax::layers

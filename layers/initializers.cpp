#include "layers/initializers.hpp"

#include <cmath>
#include <stdexcept>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

// Under reset_state() every weight is kept: no random numbers are drawn for values thrown away.

Tensor glorot_uniform(const Shape& shape, const Rng& rng, DType dtype) {
  if (shape.size() < 2) throw std::invalid_argument("glorot_uniform needs a kernel of rank >= 2");
  const double fan_in = static_cast<double>(shape[shape.size() - 2]);
  const double fan_out = static_cast<double>(shape.back());
  const double limit = std::sqrt(6.0 / (fan_in + fan_out));
  if (Layer::keeping_weights()) return Tensor::meta(shape, dtype);
  return rng.uniform(shape, -limit, limit, dtype);
}

Tensor random_normal(const Shape& shape, double stddev, const Rng& rng, DType dtype) {
  if (Layer::keeping_weights()) return Tensor::meta(shape, dtype);
  return rng.normal(shape, 0.0, stddev, dtype);
}

Tensor scaled_uniform(const Shape& shape, double scale, double fan, const Rng& rng, DType dtype) {
  const double limit = std::sqrt(3.0 * scale / fan);
  if (Layer::keeping_weights()) return Tensor::meta(shape, dtype);
  return rng.uniform(shape, -limit, limit, dtype);
}

DType weight_dtype(DType dt) { return is_floating(dt) ? dt : DType::float32; }

}  // namespace ctrax::layers

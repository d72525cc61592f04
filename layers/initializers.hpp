// ctrax/layers/initializers.hpp — Trax's weight initialisers (trax/layers/initializers.py).
//
// For a kernel of shape (fan_in, fan_out):
//   glorot_uniform     U(−√(6/(fan_in+fan_out)), +√(6/(fan_in+fan_out)))   Dense kernels
//   random_normal      N(0, stddev²)                                         Dense biases, 1e-6
//   scaled_uniform     U(−√(3·scale/fan), +√(3·scale/fan))                   Embedding: fan = d
// Weights take the floating dtype they are asked for (float32 normally; float64 in gradient
// checks).
#pragma once

#include "core/tensor/random.hpp"

namespace ctrax::layers {

Tensor glorot_uniform(const Shape& shape, const Rng& rng, DType dtype = DType::float32);
Tensor random_normal(const Shape& shape, double stddev, const Rng& rng,
                     DType dtype = DType::float32);
// U(−√(3·scale/fan), +√(3·scale/fan)): variance scale/fan. Embedding uses fan = d (its last axis,
// Trax's ScaledInitializer in mode 'fan_out').
Tensor scaled_uniform(const Shape& shape, double scale, double fan, const Rng& rng,
                      DType dtype = DType::float32);

// The float dtype weights should have for inputs of `dt`: the input's if it is floating, else
// float32 (token ids feed float32 embeddings).
DType weight_dtype(DType dt);

}  // namespace ctrax::layers

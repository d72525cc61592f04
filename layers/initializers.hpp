// ctrax/layers/initializers.hpp — Trax's weight initialisers (trax/layers/initializers.py).
//
// Each returns an Initializer, f(shape, rng, dtype) -> Tensor, which a layer hands to add_weight
// (core/layer/layer.hpp) with the weight's shape and its rng; the layer base calls it only when
// a value is needed (never under reset_state). For a kernel of shape (fan_in, fan_out):
//   glorot_uniform()       U(−√(6/(fan_in+fan_out)), +√(6/(fan_in+fan_out)))   Dense kernels
//   random_normal(σ)       N(0, σ²)                                             Dense biases, 1e-6
//   scaled_uniform(scale)  U(−√(3·scale/fan), +√(3·scale/fan)), fan = last axis Embedding tables
//                          (Trax's ScaledInitializer, mode 'fan_out', uniform)
//   glorot_normal(o, i)    N(0, 2/(fan_in + fan_out)), fan_in = shape[i], fan_out = shape[o]
//                          (negative: from the end)                             Conv kernels
//                          As Trax's _GetFans: a convolution kernel's area is NOT multiplied into
//                          the fans (Trax's receptive-field factor applies to 0-d shapes only).
//   constant(c)            every element c                                      LayerNorm: 1 and 0
// Weights take the floating dtype they are asked for (float32 normally; float64 in gradient
// checks).
#pragma once

#include "core/layer/layer.hpp"

namespace ctrax::layers {

Initializer glorot_uniform();
Initializer random_normal(double stddev);
Initializer scaled_uniform(double scale);
Initializer glorot_normal(int out_dim = -1, int in_dim = -2);
Initializer constant(double value);

// The float dtype weights should have for inputs of `dt`: the input's if it is floating, else
// float32 (token ids feed float32 embeddings).
DType weight_dtype(DType dt);

}  // namespace ctrax::layers

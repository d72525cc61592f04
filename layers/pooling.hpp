// ctrax/layers/pooling.hpp — pooling layers (trax/layers/pooling.py), NHWC.
//
//   MaxPool(pool_size = {2, 2}, {.strides, .padding})   (B, H, W, C) → (B, OH, OW, C)
//       the largest value of each window, per channel (the gradient goes to it)
//   SumPool(...)    the window's sum;   AvgPool(...)   the sum / (kh·kw)
// strides default to the pool size (windows side by side), padding to VALID, as Trax's. With
// SAME padding AvgPool divides by the whole window, padded zeros included (Trax's avg_pool).
// Printed MaxPool, SumPool, AvgPool; no weights. core/tensor/convolution.hpp has the ops.
#pragma once

#include <array>
#include <optional>
#include <source_location>

#include "core/layer/layer.hpp"
#include "core/tensor/convolution.hpp"

namespace ctrax::layers {

struct PoolOptions {
  std::optional<std::array<std::int64_t, 2>> strides = std::nullopt;   // none: the pool size
  Padding padding = Padding::valid;
};

LayerPtr MaxPool(std::array<std::int64_t, 2> pool_size = {2, 2}, PoolOptions options = {},
                 std::source_location created = std::source_location::current());
LayerPtr SumPool(std::array<std::int64_t, 2> pool_size = {2, 2}, PoolOptions options = {},
                 std::source_location created = std::source_location::current());
LayerPtr AvgPool(std::array<std::int64_t, 2> pool_size = {2, 2}, PoolOptions options = {},
                 std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

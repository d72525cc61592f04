// ctrax/layers/reductions.hpp — layers that reduce or reshape along axes (trax/layers/core.py).
//
//   layer                         x (shape)              →  y
//   Mean(axis=-1, keepdims)       (B, L, d), axis 1      →  (B, d)        average over the axis
//   Sum(axis=nullopt, keepdims)   any                    →  scalar        all elements (Trax's axis=None)
//   Sum(axis)                     (B, L, d), axis -1     →  (B, L)
//   Max(axis=-1, keepdims)        (B, L, d), axis -1     →  (B, L)        gradient to the argmax
//   Min(axis=-1, keepdims)        (B, L, d), axis -1     →  (B, L)        gradient to the argmin
//   LogSumExp(axis=-1)            (B, L, V), axis -1     →  (B, L, 1)     log Σ eˣ; Trax keeps the axis
//   ArgMax(axis=-1)               (B, L, V)              →  (B, L) int32  not differentiable
//   Flatten(n_axes_to_keep=1)     (B, 3, 5, 7)           →  (B, 105)      keeps the leading axes
//
// TransformerEncoder ends with Mean(axis=1): one d_model vector per sentence, the average over
// all L positions — padding positions included, exactly as in Trax.
#pragma once

#include <optional>
#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

using std::source_location;

LayerPtr Mean(int axis = -1, bool keepdims = false,
              source_location created = source_location::current());
LayerPtr Sum(std::optional<int> axis = std::nullopt, bool keepdims = false,
             source_location created = source_location::current());
LayerPtr Max(int axis = -1, bool keepdims = false,
             source_location created = source_location::current());
LayerPtr Min(int axis = -1, bool keepdims = false,
             source_location created = source_location::current());
LayerPtr LogSumExp(int axis = -1, source_location created = source_location::current());
LayerPtr ArgMax(int axis = -1, source_location created = source_location::current());
// Printed Flatten_keep{n}, as in Trax.
LayerPtr Flatten(int n_axes_to_keep = 1, source_location created = source_location::current());

}  // namespace ctrax::layers

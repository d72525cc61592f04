// ctrax/core/layer/stack_ops.hpp — the small stack-manipulating layers, each one line of Fn.
//
//   layer                       n_in → n_out   stack before → after (rest untouched)
//   Dup()                       1 → 2          (x)        → (x, x)
//   Drop()                      1 → 0          (x)        → ()
//   Swap()                      2 → 2          (a, b)     → (b, a)
//   Add()                       2 → 1          (a, b)     → (a + b)
//   Multiply()                  2 → 1          (a, b)     → (a · b)
//   SubtractTop()               2 → 1          (a, b)     → (b − a)     (the top is subtracted)
//   Gate()                      3 → 1          (m, g, c)  → (g·m + (1 − g)·c)   a highway gate
//   Concatenate(n, axis)        n → 1          (x1..xn)   → (concat along axis)
//   Split(n, axis)              1 → n          (x)        → n equal parts along axis
// Add and Multiply broadcast, like Trax's (jnp) versions.
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

using std::source_location;

LayerPtr Dup(source_location created = source_location::current());
LayerPtr Drop(source_location created = source_location::current());
LayerPtr Swap(source_location created = source_location::current());
LayerPtr Add(source_location created = source_location::current());
LayerPtr Multiply(source_location created = source_location::current());
LayerPtr SubtractTop(source_location created = source_location::current());
LayerPtr Gate(source_location created = source_location::current());
LayerPtr Concatenate(int n_items = 2, int axis = -1,
                     source_location created = source_location::current());
LayerPtr Split(int n_items = 2, int axis = -1,
               source_location created = source_location::current());

}  // namespace ctrax::layers

// ctrax/layers/shift_right.hpp — ShiftRight: make position i see only tokens before i.
//
//   tokens (B, L)  →  (B, L): n zeros (the pad/start id) inserted at the front of axis 1, the last
//                     n tokens dropped.          [a b c d]  →  [0 a b c]     (n = 1)
//
// A language model predicts token i from tokens < i. Feeding it the shifted sequence and scoring
// its output at i against the *unshifted* token i (the targets, which ride along below on the
// stack) teaches exactly that; with causal attention, no position ever sees its own target.
// In predict mode the layer is the identity: the decoder is fed the previous sample (the start
// id first) one position at a time, which is already "shifted". Printed `ShiftRight(n)`.
//
// Trax's keywords are the options: ShiftRight({.mode = Mode::predict}), ShiftRight({.n_positions = 2}).
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

struct ShiftRightOptions {
  int n_positions = 1;
  Mode mode = Mode::train;
};

LayerPtr ShiftRight(ShiftRightOptions options = {},
                    std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

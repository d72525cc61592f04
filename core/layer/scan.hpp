// ctrax/core/layer/scan.hpp — Scan: apply a layer along an axis, threading a carry (an RNN loop).
//
// Scan(F, axis, n_carry) with F taking (x..., carry...) and returning (y..., carry...):
//
//     carry = the last n_carry inputs
//     for i in 0 .. L-1:                 (L = extent of `axis` of the first input)
//         (y_i..., carry) = F(x[i]..., carry...)     x[i] = the slice at i, axis removed
//     outputs = (stack(y_i) along axis ..., carry...)
//
// F gets rng().fold_in(i) at step i. n_carry may be 0 (a map over the axis). In predict mode the
// final carry is kept in state and used as the initial carry of the next call, so a sequence can
// be fed in pieces. n_in/n_out are F's.
//
// The loop above is the definition. A layer that can run every position at once (the RNN cells of
// layers/rnn.hpp: one GEMM for all input projections, core/tensor/recurrence.hpp) says so through
// Layer::scan_all, and Scan then calls that instead — same outputs, same carry.
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

LayerPtr Scan(LayerPtr layer, int axis = 0, int n_carry = 1, Mode mode = Mode::train,
              std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

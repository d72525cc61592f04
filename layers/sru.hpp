// ctrax/layers/sru.hpp — the Simple Recurrent Unit (Lei et al. 2017, "Simple Recurrent Units for
// Highly Parallelizable Recurrence"), as trax/layers/rnn.py builds it.
//
// An LSTM's gates read h_{t−1}, so each step waits for the one before and every step is a matrix
// product. The SRU's gates read only x_t: all three come from ONE product over the whole sequence,
// and what is left of the recurrence is an element-wise running blend — cheap enough that the
// sequential part no longer matters:
//     r_t, f_t, y_t = split(x_t · W + b, 3)                    W: (d, 3n)   (one Dense(3n))
//     f_t = σ(f_t),  r_t = σ(r_t)                              forget and reset (highway) gates
//     c_t = f_t ⊙ c_{t−1} + (1 − f_t) ⊙ y_t                    c_0 = 0      (InnerSRUCell, Scan)
//     h_t = r_t ⊙ act(c_t) + (1 − r_t) ⊙ x_t · √3              the highway: x passes where r is low
// √3 is Trax's (the paper's scaling correction, keeping the output's variance near the input's
// when act is the identity). x (B, L, d) → (B, L, n); the highway adds x, so d must equal n.
//
//   SRU(n, act = none)  Serial(Branch(Dense(3n), []), Split(3), Parallel(Sigmoid, Sigmoid),
//                       Fn(r, f, y → y(1 − f), f, r), Parallel([], [], Branch(MakeZeroState, [])),
//                       Scan(InnerSRUCell, axis 1), Select([0], n_in 2), act, FinalSRUGate)
//                       printed SRU_n without its insides (Trax's sublayers_to_print=[])
//   InnerSRUCell        3 → 2: (y(1 − f)_t, f_t, c_{t−1}) → (c_t, c_t)
//   In predict mode Scan keeps c, so a sequence fed one position at a time gives what it gives whole.
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"
#include "core/layer/mode.hpp"

namespace ctrax::layers {

LayerPtr InnerSRUCell(std::source_location created = std::source_location::current());
// `activation` (1 → 1, e.g. Tanh()) on c_t; null: none, as Trax's default.
LayerPtr SRU(std::int64_t n_units, LayerPtr activation = nullptr, Mode mode = Mode::train,
             std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

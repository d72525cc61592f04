// ctrax/layers/conv_gru.hpp — the GRU with its products replaced by any transform, and the
// convolutional GRU of the Neural GPU (Kaiser & Sutskever 2015), as trax/layers/rnn.py builds them.
//
// A GRUCell (rnn.hpp) reads an input x_t and a state. These cells read the state alone, s (B, H,
// W, n) for the convolutional one, and compute the next state from it — a recurrence unrolled by
// repeating the cell (the Neural GPU applies one cell many times to a grid that holds the
// problem), each transform T a fresh layer with its own weights:
//     u   = σ(T_u(s) + 0.5)                     update gate (the bias starts the gate open)
//     r   = σ(T_r(s) + 0.5)                     reset gate
//     c   = dropout(tanh(T_c(r ⊙ s)), 0.1)     candidate (dropout on c only, as the paper found best)
//     s'  = u ⊙ s + (1 − u) ⊙ c                Gate(): keep u of the old state
//
//   GeneralGRUCell(T, {…})   Serial(Branch(memory_transform or [], [T, AddSigmoidBias(0.5), σ],
//                            [Dup, [T, AddSigmoidBias(0.5), σ], Multiply, T, tanh, Dropout(0.1)]), Gate)
//                            1 → 1; `T` is called once per transform (three layers, three weight sets)
//   ConvGRUCell(n, {kh, kw})  GeneralGRUCell with T = Conv(n, {kh, kw}, SAME): s (B, H, W, n) → same
//
// DIFFERENCE FROM TRAX: Trax names the bias layer 'AddSigmoidBias({sigmoid_bias})' (a string that
// was meant to be an f-string); ctrax prints the value, AddSigmoidBias(0.5). Trax's cells have no
// mode, so their dropout always trains; GeneralGRUCellOptions::mode sets it.
#pragma once

#include <array>
#include <functional>
#include <source_location>

#include "core/layer/layer.hpp"
#include "core/layer/mode.hpp"

namespace ctrax::layers {

struct GeneralGRUCellOptions {
  std::function<LayerPtr()> memory_transform = {};   // applied to s before the gate; none by default
  std::function<LayerPtr()> gate_nonlinearity = {};      // default Sigmoid (HardSigmoid is the alternative)
  std::function<LayerPtr()> candidate_nonlinearity = {};  // default Tanh (or HardTanh)
  double dropout_rate_c = 0.1;
  double sigmoid_bias = 0.5;
  Mode mode = Mode::train;
};

LayerPtr GeneralGRUCell(const std::function<LayerPtr()>& candidate_transform, GeneralGRUCellOptions options = {},
                        std::source_location created = std::source_location::current());
LayerPtr ConvGRUCell(std::int64_t n_units, std::array<std::int64_t, 2> kernel_size = {3, 3}, Mode mode = Mode::train,
                     std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

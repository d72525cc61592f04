// ctrax/layers/rnn.hpp — recurrent layers as Trax builds them (trax/layers/rnn.py): a cell that
// maps (x_t, state_{t−1}) → (y_t, state_t), and Scan to run it along the sequence.
//
// LSTMCell(n) — 2 → 2, the long short-term memory (Hochreiter & Schmidhuber 1997). The state is
// one tensor [c, h] of width 2n (Trax's layout). One Dense map of [x_t, h_{t−1}] gives four gates,
// in Trax's order i, j, f, o:
//     i, j, f, o = split([x_t, h_{t−1}] · W + b, 4)            W: (d + n, 4n)   b: (4n)
//     c_t = c_{t−1} ⊙ σ(f) + σ(i) ⊙ tanh(j)      forget some of the old memory, write some new
//     h_t = tanh(c_t) ⊙ σ(o)                      show some of it
//     returns (h_t, [c_t, h_t])
//   W ~ Glorot-uniform; b ~ N(0, 1e-6²), plus forget_bias (1.0) on f's quarter: σ(f) starts near
//   0.73, so the memory is kept by default (Gers et al. 2000; Jozefowicz et al. 2015).
//   DIFFERENCE FROM TRAX: Trax adds forget_bias to all four gates' biases. Then tanh(j) starts at
//   tanh(1) = 0.76 whatever the input, c climbs to ≈ 2 where tanh saturates (tanh'(2) = 0.07), and
//   each layer passes on ~1/50 of its input's signal and gradient: a stack of LSTMs behind an
//   attention, as in LSTMSeq2SeqAttn, does not learn (a 500-step copy task: 0% with Trax's bias,
//   96% with f's alone; docs/02_attention_before_transformers.md). TensorFlow, Keras and every
//   paper put it on f alone.
//
// GRUCell(n) — 2 → 2, the gated recurrent unit (Cho et al. 2014). The state s has width n:
//     u, r = split(σ([x_t, s_{t−1}] · W1 + b1), 2)             W1: (d + n, 2n)  update, reset
//     c    = tanh([x_t, r ⊙ s_{t−1}] · W2 + b2)                W2: (d + n, n)   candidate
//     s_t  = u ⊙ s_{t−1} + (1 − u) ⊙ c                          keep u of the old state
//     returns (s_t, s_t)
//   W1, W2 ~ U(−0.01, 0.01); b1, b2 ~ N(0, 1e-6²) (+ forget_bias 0.0 on b1), Trax's choices.
//
// MakeZeroState(m) — 1 → 1: x (B, L, d) → zeros (B, m·d), the initial state. Its width comes from
// the INPUT's depth, as in Trax; so LSTM(n) and GRU(n) need inputs of depth n (an Embedding or
// Dense of width n before them), and say so otherwise.
//
// LSTM(n) = Serial(Branch([], MakeZeroState(2)), Scan(LSTMCell(n), axis=1), Select([0], n_in=2))
// GRU(n)  = Serial(Branch([], MakeZeroState(1)), Scan(GRUCell(n),  axis=1), Select([0], n_in=2))
//   x (B, L, n) → hidden states (B, L, n); printed as LSTM_n / GRU_n without their insides (Trax's
//   sublayers_to_print=[]). In predict mode Scan keeps the last state, so feeding a sequence one
//   token at a time gives what feeding it whole gives. LSTMOptions{.return_state = true} keeps the
//   final state on the stack as a second output, {.initial_state = true} takes it from the stack.
//
// SPEED. Written as above, a step costs two small products and L steps cost 2L GEMM calls on
// (B × (d+n)) rows. But [x_t, h_{t−1}] · W = x_t · W_x + h_{t−1} · W_h, and the x part does not
// depend on earlier steps: the cells tell Scan (Layer::scan_all) that they can do all positions at
// once — x · W_x + b for the whole sequence as ONE GEMM, then core/tensor/recurrence.hpp's loop
// with only h_{t−1} · W_h per step and backpropagation through time as one tape node. Same numbers
// as the step-by-step loop (tested).
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"
#include "core/layer/mode.hpp"

namespace ctrax::layers {

LayerPtr LSTMCell(std::int64_t n_units, double forget_bias = 1.0,
                  std::source_location created = std::source_location::current());
LayerPtr GRUCell(std::int64_t n_units, double forget_bias = 0.0,
                 std::source_location created = std::source_location::current());
LayerPtr MakeZeroState(int depth_multiplier = 1, std::source_location created = std::source_location::current());

struct LSTMOptions {
  Mode mode = Mode::train;
  bool return_state = false;   // also output the final state [c, h]
  bool initial_state = false;  // take the initial state from the stack (x, state) instead of zeros
};
LayerPtr LSTM(std::int64_t n_units, LSTMOptions options = {},
              std::source_location created = std::source_location::current());
LayerPtr GRU(std::int64_t n_units, Mode mode = Mode::train,
             std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

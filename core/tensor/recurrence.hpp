// ctrax/core/tensor/recurrence.hpp — the LSTM and GRU recurrences over a whole sequence, as two ops.
//
// An RNN cell reads [x_t, h_{t−1}] through one weight matrix. Split that matrix by rows,
// W = [W_x; W_h], and the product splits too:
//
//     [x_t, h_{t−1}] · W + b  =  (x_t · W_x + b)  +  h_{t−1} · W_h
//                                 └ no recurrence ┘     └ needs step t−1 ┘
//
// The first part does not depend on earlier steps, so for all t at once it is ONE product
// (B·L × d) · (d × 4n) that keeps BLAS busy — the layers compute it with linear(). Only
// h_{t−1} · W_h must wait for the step before. These ops run that loop: per step one small GEMM
// (B × n) · (n × 4n) and the gate arithmetic, and they keep what the backward pass needs, so
// backpropagation through time is one tape node instead of ~10 ops × L steps. cuDNN and
// PyTorch's nn.LSTM cut the work the same way.
//
// LSTM, Trax's LSTMCell gate order (i input, j candidate, f forget, o output):
//     g = gx_t + h_{t−1} · W_h                        gx: (B, L, 4n)   W_h: (n, 4n)
//     i, j, f, o = split(g, 4)
//     c_t = c_{t−1} ⊙ σ(f) + σ(i) ⊙ tanh(j)
//     h_t = tanh(c_t) ⊙ σ(o)
//   lstm_recurrence(gx, state0, W_h) → S (B, L, 2n) with S[:, t] = [c_t, h_t] — Trax's state
//   layout, so the hidden states are S[..., n:] and the final state is S[:, L−1].
//
// GRU, Trax's GRUCell:
//     u, r = split(σ(gx_ur_t + s_{t−1} · W_ur), 2)     gx_ur: (B, L, 2n)   W_ur: (n, 2n)
//     c    = gx_c_t + (r ⊙ s_{t−1}) · W_c              gx_c:  (B, L, n)    W_c:  (n, n)
//     s_t  = u ⊙ s_{t−1} + (1 − u) ⊙ tanh(c)
//   gru_recurrence(gx_ur, gx_c, state0, W_ur, W_c) → S (B, L, n) with S[:, t] = s_t.
//
// Both are differentiable in every input (checked by finite differences against the same cells
// written step by step with ordinary ops, tests/core/tensor/test_recurrence.cpp).
#pragma once

#include "core/tensor/tensor.hpp"

namespace ctrax {

// gx (B, L, 4n), state0 (B, 2n) = [c_0, h_0], w_h (n, 4n) → (B, L, 2n).
Tensor lstm_recurrence(const Tensor& gx, const Tensor& state0, const Tensor& w_h);

// gx_ur (B, L, 2n), gx_c (B, L, n), state0 (B, n), w_ur (n, 2n), w_c (n, n) → (B, L, n).
Tensor gru_recurrence(const Tensor& gx_ur, const Tensor& gx_c, const Tensor& state0, const Tensor& w_ur,
                      const Tensor& w_c);

}  // namespace ctrax

// ctrax/core/tensor/matmul.hpp — matrix products through OpenBLAS sgemm/dgemm.
//
//   matmul(a, b)             a (..., M, K) · b (K, N)          -> (..., M, N)   one GEMM: the
//                                                                leading axes of a fold into M
//   matmul(a, b)             a (..., M, K) · b (..., K, N)     -> (..., M, N)   batched: equal
//                                                                leading axes, one GEMM each
//   transpose_a/transpose_b  use a's / b's last two axes swapped, without copying (the flag is
//                            passed to BLAS): attention's Q·Kᵀ is matmul(q, k, false, true).
//
// Gradients (C = A·B):  dA = dC·Bᵀ,  dB = Aᵀ·dC  — again GEMMs with transpose flags.
//
// Threads (gemm.hpp): OpenBLAS always runs single-threaded; one large product is cut into
// num_threads() blocks, one per OpenMP thread; a batch of small products (attention heads) runs
// one product per thread.
#pragma once

#include <vector>

#include "core/tensor/random.hpp"
#include "core/tensor/tensor.hpp"

namespace ctrax {

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false,
              bool transpose_b = false);

// A dense layer's affine map in one op:
//
//   linear(x, w, b) = x·w + b          x (..., K), w (K, N), b (N)  -> (..., N)
//
// equal to matmul(x, w) + b, faster: the product's sums get b as they are stored (our own kernel,
// where it takes the product: core/engine/gemm.hpp), or each output row starts as a copy of b and
// the GEMM adds x·w to it (BLAS's beta = 1) — the same bits. matmul then add would zero the output
// (BLAS's beta = 0 pass), write the product, then read it again to write the sum — two more passes
// over the (B·L, N) activations.
// Gradients: dx = g·wᵀ, dw = xᵀ·g (the leading axes folded into rows), db = Σ_rows g.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b);

// The feed-forward block's first half in training (Dense → Relu → Dropout, the execution plan's
// step, layers/activations.cpp) in one op:
//
//   linear_relu_dropout(x, w, b, rate, rng) = relu_dropout(linear(x, w, b), rate, rng)   (dropout.hpp)
//
// the same values (bit for bit: the same mask, the same expressions) and the same gradients. Where our
// own kernel takes the product (float32, large, AVX-512 or AVX2: core/engine/gemm.hpp's team_takes),
// the ReLU and the mask are applied to each stripe of rows as soon as it is made, while it is still in
// the core's cache; the pre-activation and the mask are never stored: a unit's gradient passes where
// y > 0 — where the ReLU passed and the mask kept it — scaled by 1/(1 − rate) (a dropped unit's is +0
// where the two ops give g · 0). Saved: the pass relu_dropout made over the (…, N) activation each
// way and two of its tensors. Elsewhere (and with shared axes, or rate 0) it is the two ops.
Tensor linear_relu_dropout(const Tensor& x, const Tensor& w, const Tensor& b, double rate, const Rng& rng,
                           const std::vector<int>& shared_axes = {});

// The same input through several dense maps: {linear(x, w_0, b_0), linear(x, w_1, b_1), …}, the
// same values. When x is ONE row and nothing is recorded for gradients (decoding's Q, K and V
// projections of a token), the products run as one team job instead of one each — every job's
// hand-over between the cores costs a fixed time, a sizeable share of a small product's
// (docs/11_performance.md measures it); otherwise each is its own linear.
std::vector<Tensor> linears(const Tensor& x, const std::vector<Tensor>& ws, const std::vector<Tensor>& bs);

// The feed-forward block's two products around its ReLU (Dense → Relu → Dense) in one op:
//
//   linear_relu_linear(x, w1, b1, w2, b2) = linear(relu(linear(x, w1, b1)), w2, b2)
//
// the same values and, recorded, the same gradients (it is those three ops). When x is ONE row and
// nothing is recorded (decoding a token), both products and the ReLU run as one team job: each
// core takes the ReLU on the part of the hidden row it made, the cores meet once, then each makes
// its part of the output from the whole hidden row — one job and one hand-over fewer than the
// three ops, and no pass of its own for the ReLU.
Tensor linear_relu_linear(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2);

}  // namespace ctrax

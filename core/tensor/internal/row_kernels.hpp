// core/tensor/internal/row_kernels.hpp — two ops' kernels on raw rows, for a decoded token's program.
//
// Not installed (an `internal/` folder). core/decode/internal/token_program.hpp runs a decoded
// token as one team job over raw rows; these are the ops' own loops, so its numbers are the ops'.
#pragma once

#include <cstdint>

#include "core/tensor/attention.hpp"

namespace ctrax {

// layer_norm's rows r0 … r1 − 1 of x (rows of d) into y, on this thread: the op's own loop, so the
// same bits. xhat and rstd, when not null, receive x̂ and 1/σ as the op keeps them for its backward.
template <class T>
void layer_norm_rows(const T* x, const T* scale, const T* bias, T* y, std::int64_t r0, std::int64_t r1, std::int64_t d,
                     double epsilon, T* xhat = nullptr, T* rstd = nullptr);

// One decoded position of B rows, its heads shared by a team the caller runs: heads h0 … h1 − 1 of
// each row of q (B rows of H·d, the heads side by side) over the first L_k positions of KV caches
// (B·H, max_len, d) and (B·H, max_len, d_v), into out (B rows of H·d_v) —
// attention_heads_over_prefix for L_q = 1 and no mask, each head of each row the bits that op
// gives it. P: room for B · H · L_k probabilities.
template <class T>
void attention_rows_heads(const T* q, const T* k_cache, const T* v_cache, std::int64_t B, std::int64_t H,
                          std::int64_t d, std::int64_t dv, std::int64_t max_len, std::int64_t L_k,
                          const LinearBias& bias, std::int64_t h0, std::int64_t h1, T* P, T* out);

}  // namespace ctrax

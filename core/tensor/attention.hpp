// ctrax/core/tensor/attention.hpp — scaled dot-product attention as ONE op (forward and backward).
//
//   out = D(softmax(mask(q kᵀ / √d))) v          q (…, L_q, d), k (…, L_k, d), v (…, L_k, d_v)
//
// where mask() puts −1e9 wherever `mask` (bool, broadcastable to (…, L_q, L_k)) is false, and
// D is dropout with the given keep mask: D(p) = p · keep / (1 − rate).
//
// WHY ONE OP. Written as separate ops (matmul, scale, masked_fill, softmax, dropout, matmul) each
// step reads and writes the whole (…, L_q, L_k) score tensor: at B 16, 4 heads, L 256 that is
// 16 MB per op and layer, a dozen times per training step (forward and backward) — memory
// traffic, not arithmetic, would set the speed. Here the work is split by (batch, head): each
// slice's L_q × L_k scores stay in the core's cache from the QKᵀ product through the softmax
// to the product with V, slices run in parallel (single-threaded BLAS inside, see runtime.hpp),
// and only the probabilities are kept for the backward pass. Within a slice, query rows go in
// blocks of 64 that multiply only by the keys their mask lets them see: a causal block b needs
// keys 0 … 64(b+1) − 1, so at L 256 the products do 10/16 of the square's work (forward and
// backward), and right-padded keys are skipped too — the results are the full products'.
// Consecutive blocks that see the same keys (all of them, without a causal mask) go through one
// product: BLAS runs one 256-row product faster than four 64-row ones.
//
// BACKWARD, per slice (P the probabilities, P̃ = D(P), S the scaled scores):
//   dV = P̃ᵀ dO        dP̃ = dO Vᵀ        dP = D(dP̃)
//   dS = P ⊙ (dP − rowsum(dP ⊙ P)) · (1/√d),  0 where masked
//   dQ = dS K         dK = dSᵀ Q
// The result equals the separate-ops path (tests compare them), and float64 inputs run the same
// kernel, so the shared finite-difference gradient check covers it.
// Under a bfloat16 scope (precision.hpp) its products — QKᵀ and P̃V forward, the four above
// backward — round their operands; the softmax and dropout stay float32.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor/tensor.hpp"

namespace ctrax {

// LINEAR BIAS (ALiBi, Press et al. 2022): relative positions with no table and no rotation. The
// score of query i and key j gets −m_h · |q_offset + i − j| before the softmax, a penalty growing
// linearly with the distance, with one slope m_h per head: steep heads look near, shallow heads
// far. Slice n of the (…, L_q, L_k) scores belongs to head n mod slopes.size() (heads are the
// innermost of the batch axes, as split_heads lays them out). The bias is a constant: the backward
// pass is unchanged. With a causal mask only j ≤ q_offset + i survive, so it is the paper's
// −m_h · (i − j); without one (an encoder), the symmetric |i − j|.
struct LinearBias {
  std::vector<double> slopes;    // one per head; empty: no bias
  std::int64_t q_offset = 0;     // the first query's position (decoding: the cache's fill)
};

// The paper's slopes for n_heads heads: 2^(−8h/n), h = 1 … n, when n is a power of two; else the
// n' = 2^⌊log₂ n⌋ slopes followed by every other one of the 2n' slopes, n − n' of them.
std::vector<double> alibi_slopes(int n_heads);

// keep: bool of shape (…, L_q, L_k) (the dropout keep mask) or undefined (no dropout).
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                 const Tensor& keep = Tensor(), double rate = 0.0, const LinearBias& bias = {});

// HEADS WHERE THE PROJECTIONS PUT THEM. q (B, L_q, H·d), k (B, L_k, H·d), v (B, L_k, H·d_v),
// as the Dense projections make them: head h is columns h·d … (h + 1)·d − 1 of every row. The
// result is (B, L_q, H·d_v) and equals
//   merge_heads(attention(split_heads(q, H), split_heads(k, H), split_heads(v, H), mask, keep, …))
// (layers/heads.hpp), but the products read and write each head's columns where they lie, at a
// row stride of H·d: the three splits and the merge — four copies of a (B, L, d_model) tensor
// forward and four backward — are not made. mask and keep are over the (B, H, L_q, L_k) scores,
// as for attention; the linear bias's slopes are one per head.
Tensor attention_heads(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, const Tensor& mask,
                       const Tensor& keep = Tensor(), double rate = 0.0, const LinearBias& bias = {});

// DECODING. Attention of q (…, L_q, d) over the first L_k positions of a KV cache's buffers
// k_cache (…, max_len, d) and v_cache (…, max_len, d_v), read in place: copying the filled
// prefix out of the cache each token cost as much as the attention itself at a few hundred
// tokens. mask broadcasts to (…, L_q, L_k). Forward only: no gradient is recorded (a cache is
// decoding state, never trained through), and an operand the tape follows is refused
// (check_forward_only, autodiff.hpp); no dropout (predict mode has none).
Tensor attention_over_prefix(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, std::int64_t L_k,
                             const Tensor& mask, const LinearBias& bias = {});
// The same with q where the projection put it, (B, L_q, H·d), and the heads folded into the
// caches' batch, (B·H, max_len, d): the result is (B, L_q, H·d_v), and equals
//   merge_heads(attention_over_prefix(split q, k_cache, v_cache, L_k, mask, bias))
// bit for bit, without the split of q or the merge (decoding's execution plan:
// layers/causal_attention.cpp). mask broadcasts to (B, H, L_q, L_k).
Tensor attention_heads_over_prefix(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, std::int64_t L_k,
                                   int n_heads, const Tensor& mask, const LinearBias& bias = {});
// x (B, L, H·d) into a KV cache's buffer (B·H, max_len, d) at positions start … start + L − 1, in
// place: the cache's write of split_heads(x) without the split's copy. Not differentiable.
void write_heads_to_cache(Tensor& cache, const Tensor& x, int n_heads, std::int64_t start);

}  // namespace ctrax

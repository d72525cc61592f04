// ctrax/layers/heads.hpp — splitting d_model into n_heads attention heads and merging them back.
//
// Multi-head attention runs n_heads small attentions side by side, each on its own d_head =
// d_model / n_heads slice of the features. Splitting is a reshape plus a transpose, so each
// head's (L, d_head) block is contiguous for the matrix products:
//
//   split_heads (B, L, d_model) → reshape (B, L, H, d_head) → transpose (B, H, L, d_head)
//   merge_heads (B, H, L, d_head) → transpose (B, L, H, d_head) → reshape (B, L, d_model)
//
// The layers follow Trax: SplitIntoHeads(n_heads) and MergeHeads(n_heads) by default fold heads
// into the batch, (B·H, L, d_head), which is what CausalAttention feeds its per-head attention;
// merged_batch_and_head = false keeps (B, H, L, d_head). d_model % n_heads != 0 is an error:
//   "Dimensionality of feature embedding (10) is not a multiple of the requested number of
//    attention heads (3)."  (Trax's words.)
#pragma once

#include <cstdint>
#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

// Throws Trax's error above unless n_heads ≥ 1 divides d_feature: the one check of it, made by
// split_heads, CausalAttention and the model registry (models/registry.hpp) before any layer.
void check_heads(std::int64_t d_feature, int n_heads);

// split_heads's check of its input: (B, L, d) with n_heads dividing d (attention_heads's callers
// make it too, so bad input reads the same whether or not the heads are split by a copy).
void check_splittable(const Tensor& x, int n_heads);
Tensor split_heads(const Tensor& x, int n_heads);  // (B, L, d) → (B, H, L, d/H)
Tensor merge_heads(const Tensor& x);               // (B, H, L, d_head) → (B, L, H·d_head)

LayerPtr SplitIntoHeads(int n_heads, bool merged_batch_and_head = true,
                        std::source_location created = std::source_location::current());
LayerPtr MergeHeads(int n_heads, bool merged_batch_and_head = true,
                    std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

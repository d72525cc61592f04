// ctrax/layers/embedding.hpp — Embedding: token ids to learned vectors.
//
//   ids (B, L) int32   →   table[ids]  (B, L, d_feature)        table: (vocab_size, d_feature)
//
// A lookup is the same as one_hot(ids, vocab_size) · table, but costs O(B·L·d) instead of
// O(B·L·vocab·d); its gradient adds each output row's gradient into the row of the table it came
// from (a scatter-add), so only the rows of tokens in the batch change.
//
// Initialisation as in Trax: table ~ U(−√(3/d), +√(3/d)) (variance 1/d). Weight "table"; printed
// Embedding_{vocab_size}_{d_feature}.
//
// DIFFERENCE FROM TRAX: an id outside [0, vocab_size) is an error naming the id and the
// vocabulary size. Trax's jnp.take(mode='clip') silently maps it to the first or last row, which
// hides tokenizer/vocabulary mismatches until the loss looks odd.
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"
#include "layers/initializers.hpp"

namespace ctrax::layers {

// Trax's kernel_initializer keyword, by name: Embedding(V, d, {.kernel_initializer = random_normal(0.02)}).
struct EmbeddingOptions {
  Initializer kernel_initializer = scaled_uniform(1.0);   // Trax's default: variance 1/d
};

LayerPtr Embedding(std::int64_t vocab_size, std::int64_t d_feature, EmbeddingOptions options = {},
                   std::source_location created = std::source_location::current());

// ScaleBy(√d) — x → x·√d, the paper's scaling of embeddings (Vaswani et al. 2017, §3.4). With
// Trax's table (variance 1/d) an embedded vector has norm ≈ 1; scaled, each element has variance 1,
// as large as what a layer's Glorot-initialised weights expect of their inputs. Printed
// ScaleBy(16) for d = 256. The models apply it when their config asks (scale_embeddings).
LayerPtr ScaleBy(double factor, std::source_location created = std::source_location::current());

}  // namespace ctrax::layers

// ctrax/layers/positional_encoding.hpp — PositionalEncoding: tell each position where it is.
//
// Attention is blind to order: permuting the L input vectors permutes the outputs the same way.
// The Transformer therefore adds to the vector at position `pos` a fixed pattern of sinusoids
// (Vaswani et al. 2017, §3.5), one frequency per pair of features:
//
//   pe[pos, 2i]   = sin(pos · ω_i)          ω_i = 10000^(−2i/d) = exp(−2i · ln(10000) / d)
//   pe[pos, 2i+1] = cos(pos · ω_i)          i = 0 … d/2 − 1   (interleaved; d must be even)
//
//   x (B, L, d)  →  x + pe[0:L]             pe: (max_len, d)
//
// Wavelengths run from 2π to 10000·2π, so low features change fast and high features encode the
// coarse position; pe[pos + k] is a rotation of pe[pos] for each frequency, which makes relative
// offsets easy for attention to read. As in Trax the table is stored as a *trainable* weight
// ("pe") initialised to these values, and sequences longer than max_len are an error.
//
// dropout > 0 (train mode only) drops parts of the encoding, never x: the mask is broadcast
// along `dropout_broadcast_dims` of pe[0:L] (L, d). The default (−2) is Trax's: the length axis,
// so a dropped feature of the encoding is dropped at every position ({−1} drops whole positions).
//
// PREDICT MODE. Decoding feeds one token (or a prompt chunk) per call, so the layer keeps a
// position counter in its state: a call with L positions adds pe[pos : pos+L] and advances pos
// by L. The counter is one int32 for the whole batch (Trax keeps one per row; rows always advance
// together here). Printed `PositionalEncoding`.
//
// Trax's keywords are the options: PositionalEncoding(max_len, {.mode = Mode::predict}),
// PositionalEncoding(max_len, {.dropout = 0.1, .dropout_broadcast_dims = {-1}}).
#pragma once

#include <source_location>
#include <vector>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

struct PositionalEncodingOptions {
  double dropout = 0.0;
  std::vector<int> dropout_broadcast_dims = {-2};
  Mode mode = Mode::train;
};

LayerPtr PositionalEncoding(std::int64_t max_len = 2048, PositionalEncodingOptions options = {},
                            std::source_location created = std::source_location::current());

// LEARNED absolute positions (BERT's and GPT-2's): the same layer with a table drawn at random
// like an Embedding's (scaled_uniform(1.0)) and learned from scratch — an Embedding of the
// positions 0 … max_len − 1. It knows no position it has not trained on, and none past max_len.
LayerPtr PositionalEmbedding(std::int64_t max_len = 2048, PositionalEncodingOptions options = {},
                             std::source_location created = std::source_location::current());

// The sinusoid table itself, (max_len, d) — for teaching and tests.
Tensor sinusoidal_table(std::int64_t max_len, std::int64_t d, DType dtype = DType::float32);

}  // namespace ctrax::layers

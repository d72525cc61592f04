// ctrax/models/sentence_cnn.hpp — a convolutional sentence classifier (Kim 2014), of Trax's layers.
//
//   SentenceCNN(vocab_size, n_classes, {.d_model = 128, .widths = {3, 4, 5}, .n_filters = 100})
//     = Serial(Embedding(V, d),                                tokens (B, L) → (B, L, d)
//              Branch(Serial(Conv1d(f, 3), Relu(), Max(axis=1)),   each width: f filters slid along
//                     Serial(Conv1d(f, 4), Relu(), Max(axis=1)),   the text, each keeping its best
//                     Serial(Conv1d(f, 5), Relu(), Max(axis=1))),  match anywhere ("max over time")
//              Concatenate(3),                                 (B, 3f)
//              Dropout(0.5, mode), Dense(n_classes))           logits
// A filter of width w is a learned n-gram detector: it fires on a phrase of w tokens, wherever it
// stands. Max over time keeps whether (and how strongly) it fired, not where — a bag of learned
// phrases, where the Transformer encoder (TransformerEncoder) relates every token to every other.
// Kim's CNN-rand: embeddings learned from scratch; dropout 0.5 on the penultimate layer only.
// Kim's CNN-non-static: the embeddings start from word vectors learned on unlabelled text (Kim used
// word2vec's) and go on learning with the classifier — here a masked LM's embedding table
// (MaskedLMEmbeddingInSentenceCNN). Its scale needs no change: Trax's Embedding starts at variance
// 1/d, and a body trained with --scale-embeddings (× √d after the table) keeps its table near that.
// Padding (id 0) is read like any token: sequences are padded past the widest filter.
#pragma once

#include <vector>

#include "core/layer/layer.hpp"
#include "core/layer/mode.hpp"
#include "core/train/checkpoint.hpp"
#include "models/transformer.hpp"

namespace ctrax::models {

struct SentenceCNNConfig {
  std::int64_t d_model = 128;                // embedding width
  std::vector<std::int64_t> widths = {3, 4, 5};
  std::int64_t n_filters = 100;              // per width
  double dropout = 0.5;
  Mode mode = Mode::train;
};

LayerPtr SentenceCNN(std::int64_t vocab_size, std::int64_t n_classes, const SentenceCNNConfig& c = {});

// A masked LM's (MaskedLM(vocab_size, c)) embedding table as SentenceCNN's (d_model = c.d_model):
// the one WeightMap, the masked LM's name → the CNN's, for train::load_matching_weights; the rest
// of the body stays in the file, unused. Builds and initialises both to read their names.
std::vector<train::WeightMap> MaskedLMEmbeddingInSentenceCNN(std::int64_t vocab_size, const TransformerConfig& c);

}  // namespace ctrax::models

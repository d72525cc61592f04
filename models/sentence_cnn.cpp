#include "models/sentence_cnn.hpp"

#include <fmt/format.h>

#include "layers/layers.hpp"

namespace ctrax::models {

using namespace ctrax::layers;

LayerPtr SentenceCNN(std::int64_t vocab_size, std::int64_t n_classes, const SentenceCNNConfig& c) {
  if (c.widths.empty()) throw std::invalid_argument("SentenceCNN: give at least one filter width");
  LayerList detectors;
  for (std::int64_t w : c.widths) {
    if (w < 1) throw std::invalid_argument(fmt::format("SentenceCNN: filter widths must be >= 1, got {}", w));
    detectors.push_back(Serial(Conv1d(c.n_filters, w), Relu(), Max(/*axis=*/1)));
  }
  return Serial(Embedding(vocab_size, c.d_model), make_branch(LayerArgs(detectors.begin(), detectors.end())),
                Concatenate(static_cast<int>(c.widths.size())), Dropout({.rate = c.dropout, .mode = c.mode}),
                Dense(n_classes));
}

std::vector<train::WeightMap> MaskedLMEmbeddingInSentenceCNN(std::int64_t vocab_size, const TransformerConfig& c) {
  TransformerConfig train_config = c;   // the same names in every mode
  train_config.mode = Mode::train;
  const LayerPtr mlm = MaskedLM(vocab_size, train_config), cnn = SentenceCNN(vocab_size, 2, {.d_model = c.d_model});
  mlm->init(Signature{ShapeDtype{{1, 8}, DType::int32}, ShapeDtype{{1, 1}, DType::int32}}, Rng(0));
  cnn->init(ShapeDtype{{1, 8}, DType::int32}, Rng(0));
  // Each model's first weight is its Embedding's table (the masked LM's padding mask has none).
  const auto from = mlm->named_weights().front(), to = cnn->named_weights().front();
  if (from.first.find("Embedding") == std::string::npos || from.second.shape() != to.second.shape())
    throw std::logic_error(fmt::format("MaskedLMEmbeddingInSentenceCNN: the masked LM's first weight {} is not the "
                                       "CNN's embedding table {}", from.first, to.first));
  return {{.from = from.first, .to = to.first}};
}

}  // namespace ctrax::models

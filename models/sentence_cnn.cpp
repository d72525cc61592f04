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

}  // namespace ctrax::models

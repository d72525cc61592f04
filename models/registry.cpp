#include "models/registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "layers/heads.hpp"
#include "layers/rnn.hpp"
#include "models/conv_net.hpp"
#include "models/mlp.hpp"
#include "models/resnet.hpp"
#include "models/rnn.hpp"
#include "models/sentence_cnn.hpp"

namespace ctrax::models {

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"TransformerEncoder", "TransformerLM", "Transformer", "MaskedLM",
                                                 "RNNLM", "GRULM", "LSTMSeq2SeqAttn", "SentenceCNN", "MLP",
                                                 "ConvNet", "WideResnet"};
  return names;
}

namespace {

bool is_image_model(const std::string& name) { return name == "MLP" || name == "ConvNet" || name == "WideResnet"; }

bool is_transformer(const std::string& name) {
  return name == "TransformerEncoder" || name == "TransformerLM" || name == "Transformer" || name == "MaskedLM";
}

void at_least(const char* what, std::int64_t value, std::int64_t lo, const std::string& model) {
  if (value < lo) throw std::invalid_argument(fmt::format("{}: {} must be at least {}, got {}", model, what, lo, value));
}

}  // namespace

void check(const ModelSpec& s) {
  const auto& names = model_names();
  if (std::find(names.begin(), names.end(), s.name) == names.end())
    throw std::invalid_argument(fmt::format("no model named '{}': expected one of {}", s.name, fmt::join(names, ", ")));
  if (is_image_model(s.name)) {   // images in, n_classes logits out: no vocabulary, no Transformer sizes
    at_least("n_classes", s.n_classes, 2, s.name);
    if (s.name == "MLP") {
      if (s.layer_widths.empty()) throw std::invalid_argument("MLP: give at least one hidden layer width");
      for (std::int64_t w : s.layer_widths) at_least("each layer width", w, 1, s.name);
    } else if (s.name == "ConvNet") {
      if (s.filters.empty()) throw std::invalid_argument("ConvNet: give at least one stage's filters");
      for (std::int64_t f : s.filters) at_least("each stage's filters", f, 1, s.name);
      at_least("n_blocks", s.n_blocks, 1, s.name);
    } else {
      at_least("n_blocks", s.n_blocks, 1, s.name);
      at_least("widen_factor", s.widen_factor, 1, s.name);
    }
    return;
  }
  const TransformerConfig& c = s.config;
  at_least("vocab_size", s.vocab_size, 2, s.name);
  if (s.output_vocab_size) at_least("output_vocab_size", *s.output_vocab_size, 2, s.name);
  if (s.name == "TransformerEncoder" || s.name == "SentenceCNN") at_least("n_classes", s.n_classes, 2, s.name);
  if (s.name == "SentenceCNN") {
    at_least("n_filters", s.n_filters, 1, s.name);
    if (s.conv_widths.empty()) throw std::invalid_argument("SentenceCNN: give at least one filter width");
    for (std::int64_t w : s.conv_widths) at_least("each filter width", w, 1, s.name);
  }
  at_least("d_model", c.d_model, 1, s.name);
  at_least("n_layers", c.n_layers, 1, s.name);
  const bool heads = is_transformer(s.name) || (s.name == "LSTMSeq2SeqAttn" && !s.score);   // a score reads one head
  if (heads) {
    try {
      layers::check_heads(c.d_model, c.n_heads);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("{}: {}", s.name, e.what()));
    }
  }
  if (is_transformer(s.name)) at_least("d_ff", c.d_ff, 1, s.name);
  if (s.name == "RNNLM" && s.cell != "lstm" && s.cell != "gru")
    throw std::invalid_argument(fmt::format("RNNLM: cell must be lstm or gru, got '{}'", s.cell));
  if (s.name == "LSTMSeq2SeqAttn" && s.decoder_layers < -1)
    throw std::invalid_argument(fmt::format("LSTMSeq2SeqAttn: decoder_layers must be -1 (as n_layers) or at least 0, "
                                            "got {}", s.decoder_layers));
  if (s.attention_weights && (s.name != "LSTMSeq2SeqAttn" || !s.score))
    throw std::invalid_argument(fmt::format(
        "LSTMSeq2SeqAttn returns its attention weights with a score (this model: {}{}); a Transformer's are read by "
        "layers::attention_weights", s.name, s.score ? ", score " + layers::score_name(*s.score) : std::string()));
}

LayerPtr build(const ModelSpec& s, Mode mode) {
  check(s);
  TransformerConfig c = s.config;
  c.mode = mode;
  if (s.name == "TransformerEncoder") return TransformerEncoder(s.vocab_size, s.n_classes, c);
  if (s.name == "TransformerLM") return TransformerLM(s.vocab_size, c);
  if (s.name == "MaskedLM") return MaskedLM(s.vocab_size, c);
  if (s.name == "Transformer") return Transformer(s.vocab_size, s.output_vocab_size, c);
  if (s.name == "SentenceCNN")
    return SentenceCNN(s.vocab_size, s.n_classes,
                       {.d_model = c.d_model, .widths = s.conv_widths, .n_filters = s.n_filters, .dropout = c.dropout,
                        .mode = mode});
  if (s.name == "MLP") {
    std::vector<std::int64_t> widths = s.layer_widths;
    widths.push_back(s.n_classes);
    return MLP({.layer_widths = widths});
  }
  if (s.name == "ConvNet")
    return ConvNet({.filters = s.filters, .convs_per_stage = s.n_blocks, .n_output_classes = s.n_classes,
                    .dropout = c.dropout, .mode = mode});
  if (s.name == "WideResnet")
    return WideResnet({.n_blocks = s.n_blocks, .widen_factor = s.widen_factor, .n_output_classes = s.n_classes, .mode = mode});
  if (s.name == "GRULM") return GRULM(s.vocab_size, {.d_model = c.d_model, .n_layers = c.n_layers, .mode = mode});
  if (s.name == "RNNLM") {
    RNNLMConfig r{.d_model = c.d_model, .n_layers = c.n_layers, .dropout = c.dropout, .mode = mode};
    if (s.cell == "gru") {
      r.rnn_cell = [](std::int64_t n) { return layers::GRUCell(n); };
      r.rnn_cell_d_state_multiplier = 1;
    }
    return RNNLM(s.vocab_size, r);
  }
  return LSTMSeq2SeqAttn(s.vocab_size, s.output_vocab_size.value_or(s.vocab_size),
                         {.d_model = c.d_model, .n_encoder_layers = c.n_layers,
                          .n_decoder_layers = s.decoder_layers < 0 ? c.n_layers : s.decoder_layers,
                          .n_attention_heads = c.n_heads, .attention_dropout = c.dropout, .mode = mode,
                          .score = s.score, .max_len = c.max_len, .return_attention_weights = s.attention_weights,
                          .scale_embeddings = c.scale_embeddings});
}

}  // namespace ctrax::models

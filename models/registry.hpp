// ctrax/models/registry.hpp — every model ctrax makes, by Trax's name, from one configuration.
//
//   models::ModelSpec spec{.name = "TransformerLM", .vocab_size = 256,
//                          .config = {.d_model = 64, .d_ff = 128, .n_layers = 2, .n_heads = 4}};
//   models::check(spec);                              // what every layer would refuse, said first
//   LayerPtr lm = models::build(spec, Mode::predict);
//
// WHY ONE PLACE. The six models take five configuration types: the Transformers one
// TransformerConfig, Trax's recurrent models their own (models/rnn.hpp). Programs that offer a
// choice of model (the examples, `inspect`, the benchmark) describe it once — a ModelSpec: a name
// and the shared TransformerConfig — and this file maps that into each model's own configuration,
// so the mapping (d_model, n_layers, heads, dropout, max_len into the recurrent models) and the
// checks are written once. A model's own function (TransformerLM(vocab, c), RNNLM(vocab, c), …) is
// still how a program that knows its model builds it.
//
// WHAT EACH MODEL READS of the spec:
//   TransformerEncoder  vocab_size, n_classes, config (n_layers blocks)
//   TransformerLM       vocab_size, config (n_layers blocks)
//   MaskedLM            vocab_size, config (TransformerEncoder's body, a Dense(vocab) per position)
//   Transformer         vocab_size, output_vocab_size, config (n_encoder_layers, n_decoder_layers)
//   RNNLM               vocab_size, cell, config.d_model, n_layers, dropout
//   GRULM               vocab_size, config.d_model, n_layers
//   LSTMSeq2SeqAttn     vocab_size, output_vocab_size, config.d_model, n_layers (encoder),
//                       decoder_layers, n_heads, dropout (attention's), max_len, scale_embeddings;
//                       score, attention_weights
//   SentenceCNN         vocab_size, n_classes, config.d_model (embeddings), config.dropout,
//                       conv_widths, n_filters                                        (Kim 2014)
//   MLP                 layer_widths (the hidden ones), n_classes (the last Dense)    (images)
//   ConvNet             filters, n_blocks (convolutions per stage), config.dropout, n_classes (images)
//   WideResnet          n_blocks, widen_factor, n_classes                              (images)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/layer/layer.hpp"
#include "core/layer/mode.hpp"
#include "layers/score_attention.hpp"
#include "models/transformer.hpp"

namespace ctrax::models {

struct ModelSpec {
  std::string name = "TransformerLM";              // one of model_names()
  std::int64_t vocab_size = 256;                   // the input's vocabulary
  std::optional<std::int64_t> output_vocab_size = std::nullopt;   // Transformer, LSTMSeq2SeqAttn: the target's (none: the input's)
  std::int64_t n_classes = 2;                      // TransformerEncoder
  TransformerConfig config = {};                   // sizes, positions, norm (mode: build's)
  std::string cell = "lstm";                       // RNNLM: "lstm" or "gru" cells
  std::optional<layers::Score> score = std::nullopt;   // LSTMSeq2SeqAttn: the notes' score (none: Trax's AttentionQKV)
  int decoder_layers = -1;                         // LSTMSeq2SeqAttn: LSTMs after the attention (-1: n_layers)
  bool attention_weights = false;                  // LSTMSeq2SeqAttn: α as a third output (needs a score)
  std::vector<std::int64_t> conv_widths = {3, 4, 5};     // SentenceCNN: filter widths
  std::int64_t n_filters = 100;                    // SentenceCNN: filters per width
  std::vector<std::int64_t> layer_widths = {512, 512};   // MLP: the hidden Dense widths
  std::vector<std::int64_t> filters = {32, 64};   // ConvNet: channels of each stage
  int n_blocks = 3, widen_factor = 1;              // WideResnet: blocks per group, widening; ConvNet:
                                                   // convolutions per stage (n_blocks)
};

// TransformerEncoder, TransformerLM, Transformer, MaskedLM, RNNLM, GRULM, LSTMSeq2SeqAttn, SentenceCNN, MLP,
// ConvNet, WideResnet.
const std::vector<std::string>& model_names();

// Throws std::invalid_argument naming the setting, what was expected and what came, for what the
// model's layers would refuse (an unknown name; heads that do not divide d_model; a size below 1;
// attention weights without a score) — before any layer is made.
void check(const ModelSpec& spec);

// check(spec), then the model, in `mode`.
LayerPtr build(const ModelSpec& spec, Mode mode);

}  // namespace ctrax::models

#include "models/rnn.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "core/tensor/ops.hpp"
#include "layers/layers.hpp"

namespace ctrax::models {

using namespace ctrax::layers;

namespace {

LayerList repeat(int n, const std::function<LayerPtr()>& make) {
  LayerList out;
  for (int i = 0; i < n; ++i) out.push_back(make());
  return out;
}

void check_layers(const char* model, const char* what, int n, int least) {
  if (n < least) throw std::invalid_argument(fmt::format("{}: {} must be >= {}, got {}", model, what, least, n));
}

// (encoder vectors, decoder vectors, input tokens) → (queries, keys, values, mask): the decoder
// asks, the encoder answers; the mask (B, 1, 1, L_in) is true at real input tokens. (Trax
// broadcasts it to (B, 1, L_tgt, L_in); the attention broadcasts the same way.)
LayerPtr PrepareAttentionInputs() {
  return Fn(
      "PrepareAttentionInputs",
      [](const Tensor& encoder, const Tensor& decoder, const Tensor& input_tokens) {
        const Tensor mask = not_equal(input_tokens, Tensor::scalar(0, input_tokens.dtype()));
        return Stack{decoder, encoder, encoder, reshape(mask, {mask.dim(0), 1, 1, mask.dim(1)})};
      },
      4);
}

}  // namespace

LayerPtr RNNLM(std::int64_t vocab_size, const RNNLMConfig& c) {
  check_layers("RNNLM", "n_layers", c.n_layers, 1);
  const auto cell = c.rnn_cell ? c.rnn_cell : [](std::int64_t n) { return LSTMCell(n); };
  const LayerPtr multi_rnn_cell = Serial(                   // (x, state of every layer)
      Parallel(nullptr, Split(c.n_layers)),                 // x, s_1 … s_n
      SerialWithSideOutputs(repeat(c.n_layers, [&] { return cell(c.d_model); })),
      Parallel(nullptr, Concatenate(c.n_layers)));          // y, new state
  return Serial(
      ShiftRight({.mode = c.mode}),
      Embedding(vocab_size, c.d_model),
      Dropout({.rate = c.dropout, .mode = c.mode}),
      Branch(nullptr, MakeZeroState(c.n_layers * c.rnn_cell_d_state_multiplier)),
      Scan(multi_rnn_cell, 1, 1, c.mode),
      Select({0}, 2),                                        // drops the state
      Dense(vocab_size),
      LogSoftmax());
}

LayerPtr GRULM(std::int64_t vocab_size, const GRULMConfig& c) {
  check_layers("GRULM", "n_layers", c.n_layers, 1);
  return Serial(
      ShiftRight({.mode = c.mode}),
      Embedding(vocab_size, c.d_model),
      repeat(c.n_layers, [&] { return GRU(c.d_model, c.mode); }),
      Dense(vocab_size),
      LogSoftmax());
}

LayerPtr LSTMSeq2SeqAttn(std::int64_t input_vocab_size, std::int64_t target_vocab_size,
                         const LSTMSeq2SeqAttnConfig& c) {
  check_layers("LSTMSeq2SeqAttn", "n_encoder_layers", c.n_encoder_layers, 1);
  check_layers("LSTMSeq2SeqAttn", "n_decoder_layers", c.n_decoder_layers, 0);
  const Mode encoder_mode = c.mode == Mode::predict ? Mode::eval : c.mode;
  // × √d after each embedding when asked (a fresh layer for each: no instance shared by accident)
  const auto scaling = [&] {
    return c.scale_embeddings ? LayerList{ScaleBy(std::sqrt(static_cast<double>(c.d_model)))} : LayerList{};
  };
  LayerPtr input_encoder = Serial(
      Embedding(input_vocab_size, c.d_model), scaling(),
      repeat(c.n_encoder_layers, [&] { return LSTM(c.d_model, {.mode = encoder_mode}); }));
  if (c.mode == Mode::predict) input_encoder = Cache(input_encoder);   // runs once per sequence

  const LayerPtr pre_attention_decoder = Serial(
      ShiftRight({.mode = c.mode}),
      Embedding(target_vocab_size, c.d_model), scaling(),
      LSTM(c.d_model, {.mode = c.mode}));

  if (c.return_attention_weights && !c.score)
    throw std::invalid_argument("LSTMSeq2SeqAttn: return_attention_weights needs a score function (.score)");
  // (q, k, v, mask, tgt) → (decoder vectors, mask, tgt), and with the weights out α at the bottom
  const bool weights = c.return_attention_weights;
  const LayerPtr attention =
      c.score ? Serial(Select({0, 1, 3, 0, 3}, 4),     // s h mask s mask
                       ScoreAttention({.score = *c.score, .max_len = c.max_len, .return_weights = weights}),
                       weights ? LayerList{Select({0, 2, 1}, 3)} : LayerList{},      // a s [α] mask
                       LuongOutput(c.d_model),                        // s̃ [α] mask
                       weights ? LayerList{Select({0, 2, 3, 1}, 4)} : LayerList{})  // s̃ mask tgt [α]
              : LayerPtr(Residual(AttentionQKV(c.d_model, {.n_heads = c.n_attention_heads,
                                                          .dropout = c.attention_dropout,
                                                          .mode = c.mode})));
  return Serial(                    // in tgt
      Select({0, 1, 0, 1}),          // in tgt in tgt
      Parallel(input_encoder, pre_attention_decoder),
      PrepareAttentionInputs(),      // q k v mask tgt
      attention,                     // vec mask tgt
      Select({0, 2}),                // vec tgt
      repeat(c.n_decoder_layers, [&] { return LSTM(c.d_model, {.mode = c.mode}); }),
      Dense(target_vocab_size),
      LogSoftmax());
}

}  // namespace ctrax::models

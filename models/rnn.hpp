// ctrax/models/rnn.hpp — Trax's recurrent models (trax/models/rnn.py), line for line.
//
// RNNLM — a language model whose layers are cells scanned together, one Scan for the whole stack:
//     Serial(ShiftRight(mode), Embedding(V, d), Dropout(rate, mode),
//            Branch([], MakeZeroState(n_layers · multiplier)),        tokens → (vectors, zero state)
//            Scan(MultiRNNCell, axis=1, mode),                          every position, all layers
//            Select([0], n_in=2), Dense(V), LogSoftmax())
//     MultiRNNCell = Serial(Parallel([], Split(n_layers)),              one state per layer
//                           SerialWithSideOutputs([cell(d) × n_layers]),
//                           Parallel([], Concatenate(n_layers)))
//   multiplier = 2 for LSTMCell (its state is [c, h]), 1 for GRUCell. The cells run position by
//   position inside one Scan (a Serial of cells cannot take the all-at-once path of LSTM/GRU).
//
// GRULM — Serial(ShiftRight(mode), Embedding(V, d), [GRU(d) × n_layers], Dense(V), LogSoftmax()).
//
// LSTMSeq2SeqAttn — an LSTM encoder–decoder with attention (Bahdanau/Luong's model, Trax's wiring):
//     Serial(Select([0, 1, 0, 1]),                              in, tgt, in, tgt
//            Parallel(Serial(Embedding(V_in, d), [LSTM(d) × n_encoder_layers]),          encoder
//                     Serial(ShiftRight(mode), Embedding(V_tgt, d), LSTM(d))),   pre-attention decoder
//            PrepareAttentionInputs(),                         q = decoder, k = v = encoder, mask, tgt
//            Residual(AttentionQKV(d, n_heads, dropout, mode)),   decoder + attention, mask, tgt
//            Select([0, 2]),                                   vectors, tgt
//            [LSTM(d) × n_decoder_layers], Dense(V_tgt), LogSoftmax())
//   With .score set, the attention is the notes' RNN attention instead of Trax's multi-head one:
//   ScoreAttention(score) gives the context a_t and LuongOutput(d) the attentional state
//   s̃_t = tanh(W_c[a_t; s_t] + b_c), in place of the residual sum (layers/score_attention.hpp).
//   n_decoder_layers = 0 predicts from s̃_t directly, as the notes and Luong et al. (2015) do;
//   Trax's default, 2, runs two more LSTMs over the attention's output first.
//
// Where ctrax differs, on purpose: the LSTM and GRU layers get the model's mode (Trax builds them in
// train mode, so in predict mode they forget their state between tokens and decoding one token at
// a time does not reproduce the model); in predict mode the encoder runs once per sequence (Cache),
// as in ctrax's Transformer; RNNLM takes any n_layers ≥ 1 (Trax asserts 2); the LSTMs' forget bias
// is on the forget gate alone (layers/rnn.hpp says why).
#pragma once

#include <functional>
#include <optional>

#include "core/layer/layer.hpp"
#include "core/layer/mode.hpp"
#include "layers/score_attention.hpp"

namespace ctrax::models {

struct RNNLMConfig {
  std::int64_t d_model = 512;
  int n_layers = 2;
  std::function<LayerPtr(std::int64_t n_units)> rnn_cell = {};  // empty: LSTMCell
  int rnn_cell_d_state_multiplier = 2;                            // 2 for LSTMCell, 1 for GRUCell
  double dropout = 0.1;
  Mode mode = Mode::train;
};
LayerPtr RNNLM(std::int64_t vocab_size, const RNNLMConfig& c = {});

struct GRULMConfig {
  std::int64_t d_model = 512;
  int n_layers = 1;
  Mode mode = Mode::train;
};
LayerPtr GRULM(std::int64_t vocab_size = 256, const GRULMConfig& c = {});

struct LSTMSeq2SeqAttnConfig {
  std::int64_t d_model = 512;
  int n_encoder_layers = 2;
  int n_decoder_layers = 2;
  int n_attention_heads = 1;
  double attention_dropout = 0.0;
  Mode mode = Mode::train;
  std::optional<layers::Score> score = std::nullopt;  // empty: Trax's AttentionQKV
  std::int64_t max_len = 0;                           // the location score's source positions
  // With a score: the attention weights α (B, L_tgt, L_in) become a third output, for alignment
  // pictures (which source tokens each target token read).
  bool return_attention_weights = false;
  // Multiply both embeddings by √d_model (ScaleBy, as the Transformer's option): not Trax's, but
  // what makes this model learn quickly (docs/02_attention_before_transformers.md).
  bool scale_embeddings = false;
};
// Tokens (in (B, L_in), tgt (B, L_tgt)) → (log-probabilities (B, L_tgt, V_tgt), tgt[, α]).
LayerPtr LSTMSeq2SeqAttn(std::int64_t input_vocab_size = 256, std::int64_t target_vocab_size = 256,
                         const LSTMSeq2SeqAttnConfig& c = {});

}  // namespace ctrax::models

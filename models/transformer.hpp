// ctrax/models/transformer.hpp — the Transformer family, built from combinators exactly as
// trax/models/transformer.py builds it. Read the .cpp side by side with that file.
//
// THE THREE MODELS
//
//   TransformerEncoder(vocab_size, n_classes)   tokens (B, L) int32 → logits (B, n_classes)
//       a classifier: embed, attend with a padding mask, average over positions, classify.
//   TransformerLM(vocab_size)                   tokens (B, L) int32 → logits (B, L, vocab_size)
//       a decoder-only language model (GPT-style): logits at position i predict token i.
//   Transformer(input_vocab, output_vocab)      (source (B, L_e), target (B, L_d)) →
//                                               (logits (B, L_d, output_vocab), target)
//       the encoder–decoder translation model of Vaswani et al. (2017).
//   TransformerDecoder(vocab_size | nullopt)    tokens (B, L) → activations (B, L, d_model)
//       TransformerLM's body without shift and output layer (Trax has it too).
//   MaskedLM(vocab_size)                        (tokens (B, L), positions (B, P)) int32 →
//                                               logits (B, P, vocab_size)
//       BERT's pretraining model (Devlin et al. 2018) on TransformerEncoder's body: the same
//       layers at the same places (EncoderBody), then the hidden states at the masked positions
//       (AtPositions: take_along_axis) and a Dense(vocab) guess at each, instead of Mean and
//       Dense(n_classes) — guessing only where the loss looks (core/data/masked_lm.hpp). So a
//       classifier's body weights have the masked LM's names, and fine-tuning loads them by name
//       (core/train/checkpoint.hpp, load_matching_weights). Trax has no masked-LM head (bert.py:
//       "TODO(kitaev): masked LM head").
//
// Outputs are raw logits (no LogSoftmax, as in Trax since 1.3.7). By default embeddings are not
// scaled by √d_model and the output Dense is not tied to the embedding — Trax's choices, kept.
// TransformerConfig also builds the paper's variant (post-norm, scaled embeddings) and three more
// kinds of positions (learned, rotary, linear bias): see Positions and Norm below.
//
// THE BLOCKS — by default PRE-norm: each sublayer sees LayerNorm(x) and its output is added back to x,
//   x + Dropout(F(LayerNorm(x)))
// which keeps an un-normalised "residual stream" from embedding to output (more stable to train
// than the paper's post-norm; one LayerNorm closes each stack).
//
//   FeedForwardBlock   [Dense(d_ff), activation, Dropout, Dense(d_model)]     position-wise MLP
//   EncoderBlock       [Residual(LayerNorm, Attention, Dropout),              (x, mask) → (x, mask)
//                       Residual(LayerNorm, FeedForwardBlock, Dropout)]
//   DecoderBlock       [Residual(LayerNorm, CausalAttention, Dropout),        x → x
//                       Residual(LayerNorm, FeedForwardBlock, Dropout)]
//   EncoderDecoderBlock                                           (x_d, mask, x_e) → (x_d, mask, x_e)
//                      [Residual(LayerNorm, CausalAttention, Dropout),       (no attention dropout)
//                       Residual(LayerNorm, Select({0,2,2,1,2}), AttentionQKV, Dropout),
//                       Residual(LayerNorm, FeedForwardBlock, Dropout)]
//
// Every Dropout has rate `dropout` and the config's shared axes; attention dropout (on the
// attention probabilities) uses the same rate.
//
// MODES. train: dropout on. eval: dropout off. predict: dropout off, ShiftRight is the identity,
// PositionalEncoding counts positions and CausalAttention keeps a KV cache sized to max_len;
// Transformer wraps its encoder in Cache (encoded once per batch, its PositionalEncoding in eval
// mode) and caches the encoder keys/values of every cross-attention. Build a predict-mode model
// with the same config and copy the trained weights into it (set_all_weights) to decode.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "core/layer/layer_arg.hpp"
#include "core/train/checkpoint.hpp"

namespace ctrax::models {

using layers::LayerList;

// Where the models learn position (docs: the positions chapter).
//   sinusoidal   Trax's PositionalEncoding: fixed sinusoids added to the embeddings (a trainable
//                weight initialised to them, as in Trax)
//   learned      PositionalEmbedding: a (max_len, d_model) table learned from random, added
//   rotary       RoPE: no table; every attention rotates its queries and keys by their positions
//   linear_bias  ALiBi: no table; every self-attention penalises its scores by distance,
//                −m_h·|i − j| per head (cross-attention has no shared axis of positions: none there)
enum class Positions { sinusoidal, learned, rotary, linear_bias };

// Where each block normalises.
//   pre    x + Dropout(F(LayerNorm(x))), one LayerNorm closing the stack (Trax)
//   post   LayerNorm(x + Dropout(F(x))) — the paper's "Add & Norm" (Vaswani et al. 2017), no
//          LayerNorm closing the stack: every block already ends in one
enum class Norm { pre, post };

// Hyper-parameters, Trax's defaults. Use designated initialisers:
//   TransformerLM(256, {.d_model = 64, .d_ff = 128, .n_layers = 2, .n_heads = 4});
// The paper's Transformer:  {.positions = Positions::sinusoidal, .norm = Norm::post,
//                            .scale_embeddings = true}   (with train::noam as the schedule).
struct TransformerConfig {
  std::int64_t d_model = 512;     // width of embeddings, attention and the residual stream
  std::int64_t d_ff = 2048;       // hidden width of each feed-forward block
  int n_layers = 6;               // blocks in TransformerEncoder / TransformerLM / TransformerDecoder
  int n_encoder_layers = 6;       // Transformer only: encoder blocks
  int n_decoder_layers = 6;       // Transformer only: decoder (encoder–decoder) blocks
  int n_heads = 8;                // attention heads; d_model must be a multiple
  std::int64_t max_len = 2048;    // longest sequence (positional table, predict-mode KV cache)
  double dropout = 0.1;           // rate of every Dropout and of attention dropout
  std::vector<int> dropout_shared_axes = {};  // axes along which dropout masks are shared
  Mode mode = Mode::train;        // train, eval or predict (see above)
  std::function<LayerPtr()> ff_activation = {};  // feed-forward nonlinearity; empty = Relu
  Positions positions = Positions::sinusoidal;
  Norm norm = Norm::pre;
  bool scale_embeddings = false;  // multiply embeddings by √d_model (the paper, §3.4)
};

// Trax's _FeedForwardBlock keyword arguments, by name:
//   FeedForwardBlock(d_model, d_ff, {.dropout = 0.1, .mode = mode})   Dense(d_ff), activation,
//                                                                      Dropout, Dense(d_model)
struct FeedForwardOptions {
  double dropout = 0.1;
  std::vector<int> dropout_shared_axes = {};
  Mode mode = Mode::train;
  std::function<LayerPtr()> activation = {};   // empty: Relu
};
LayerList FeedForwardBlock(std::int64_t d_model, std::int64_t d_ff, const FeedForwardOptions& options = {});
LayerList EncoderBlock(const TransformerConfig& c);
LayerList DecoderBlock(const TransformerConfig& c);
LayerList EncoderDecoderBlock(const TransformerConfig& c);

// Embedding, positions, n_layers encoder blocks with the padding mask, the final norm: (B, L) → (B, L, d).
LayerList EncoderBody(std::int64_t vocab_size, const TransformerConfig& c);
LayerPtr TransformerEncoder(std::int64_t vocab_size, std::int64_t n_classes = 10,
                            const TransformerConfig& c = {});
LayerPtr MaskedLM(std::int64_t vocab_size, const TransformerConfig& c = {});
// vocab_size nullopt: the input is already (B, L, d_feature) floats and a Dense embeds it.
LayerPtr TransformerDecoder(std::optional<std::int64_t> vocab_size, const TransformerConfig& c = {});
LayerPtr TransformerLM(std::int64_t vocab_size, const TransformerConfig& c = {});
// output_vocab_size nullopt: source and target share one vocabulary and ONE Embedding instance
// (its weights appear once and get both sides' gradients).
LayerPtr Transformer(std::int64_t input_vocab_size,
                     std::optional<std::int64_t> output_vocab_size = std::nullopt,
                     const TransformerConfig& c = {});

// A MaskedLM's body as a Transformer's encoder (fine-tuning a chatbot or translator from a
// `pretrain` run of the same config and vocabulary): one WeightMap per weight, the masked LM's
// name → the encoder's, for train::load_matching_weights. The encoder holds the body's layers
// (embedding — shared with the decoder's input side — positions, blocks, final norm) at other
// indices, so the names are paired in tree order, shape by shape; builds and initialises both.
std::vector<train::WeightMap> MaskedLMBodyInTransformer(std::int64_t vocab_size, const TransformerConfig& c);

// ELECTRA's layer-wise learning-rate decay (Clark et al. 2020, appendix A; Howard and Ruder's
// discriminative fine-tuning, 2018): fine-tuning a pretrained body, the layers nearest the
// input — the most general, and the best learned in pretraining — change least. Each weight of a
// TransformerEncoder (or MaskedLM) built with config c gets its depth: 0 for the embedding and
// positions, k + 1 for encoder block k's, n_layers + 1 for what follows the blocks (the final
// norm and the head); its factor is decay^(n_layers + 1 − depth), for
// Optimizer::set_rate_factors. So the head learns at the full rate, each block at `decay` times
// the rate of the one above it, and the embedding at decay^(n_layers + 1). `model` must be
// initialised; decay in (0, 1].
std::vector<double> LayerwiseRateFactors(const Layer& model, const TransformerConfig& c, double decay);

}  // namespace ctrax::models

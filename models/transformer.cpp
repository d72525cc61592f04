#include "models/transformer.hpp"

#include "core/tensor/ops.hpp"
#include "layers/layers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ctrax::models {

using namespace ctrax::layers;

namespace {

LayerPtr DropoutOf(const TransformerConfig& c) {
  return Dropout({.rate = c.dropout, .shared_axes = c.dropout_shared_axes, .mode = c.mode});
}

LayerList FFBlock(const TransformerConfig& c) {
  return FeedForwardBlock(c.d_model, c.d_ff, {.dropout = c.dropout, .dropout_shared_axes = c.dropout_shared_axes,
                                              .mode = c.mode, .activation = c.ff_activation});
}

// One sublayer F with its residual connection, normalised as the config says:
//   pre:  Residual(LayerNorm, F, Dropout)        post: Residual(F, Dropout), LayerNorm
LayerList AddAndNorm(const TransformerConfig& c, const LayerList& f) {
  LayerList body = f;
  body.push_back(DropoutOf(c));
  if (c.norm == Norm::post) return {Residual(body), LayerNorm()};
  body.insert(body.begin(), LayerNorm());
  return {Residual(body)};
}

// What follows the embedding: the √d_model scaling (when asked), dropout, and the position
// table (sinusoidal or learned; rotary positions live in the attention layers instead).
LayerList EmbeddingTail(const TransformerConfig& c, Mode mode, bool mode_given = true) {
  LayerList out;
  if (c.scale_embeddings) out.push_back(ScaleBy(std::sqrt(static_cast<double>(c.d_model))));
  out.push_back(DropoutOf(c));
  const PositionalEncodingOptions options = mode_given ? PositionalEncodingOptions{.mode = mode}
                                                       : PositionalEncodingOptions{};
  if (c.positions == Positions::sinusoidal) out.push_back(PositionalEncoding(c.max_len, options));
  if (c.positions == Positions::learned) out.push_back(PositionalEmbedding(c.max_len, options));
  return out;
}

// The LayerNorm that closes a pre-norm stack (a post-norm stack has one in every block).
LayerList FinalNorm(const TransformerConfig& c) {
  if (c.norm == Norm::post) return {};
  return {LayerNorm()};
}

bool rotary(const TransformerConfig& c) { return c.positions == Positions::rotary; }
bool linear_bias(const TransformerConfig& c) { return c.positions == Positions::linear_bias; }

LayerList concat(std::initializer_list<LayerList> parts) {
  LayerList out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// n copies of a block, each built fresh (own weights), flattened into one list.
LayerList repeat(int n, const std::function<LayerList()>& block) {
  LayerList out;
  for (int i = 0; i < n; ++i)
    for (auto& l : block()) out.push_back(l);
  return out;
}

}  // namespace

LayerList FeedForwardBlock(std::int64_t d_model, std::int64_t d_ff, const FeedForwardOptions& o) {
  return {
      Dense(d_ff),
      o.activation ? o.activation() : Relu(),
      Dropout({.rate = o.dropout, .shared_axes = o.dropout_shared_axes, .mode = o.mode}),
      Dense(d_model),
  };
}

LayerList EncoderBlock(const TransformerConfig& c) {
  return concat({
      AddAndNorm(c, {Attention(c.d_model, {.n_heads = c.n_heads, .dropout = c.dropout, .mode = c.mode,
                                           .rotary = rotary(c), .linear_bias = linear_bias(c)})}),
      AddAndNorm(c, FFBlock(c)),
  });
}

LayerList DecoderBlock(const TransformerConfig& c) {
  return concat({
      AddAndNorm(c, {CausalAttention(c.d_model, {.n_heads = c.n_heads, .dropout = c.dropout,
                                                 .max_inference_length = c.max_len, .mode = c.mode,
                                                 .rotary = rotary(c), .linear_bias = linear_bias(c)})}),
      AddAndNorm(c, FFBlock(c)),
  });
}

LayerList EncoderDecoderBlock(const TransformerConfig& c) {
  return concat({                                       // vec_d masks vec_e
      AddAndNorm(c, {CausalAttention(c.d_model, {.n_heads = c.n_heads, .dropout = 0.0,
                                                 .max_inference_length = c.max_len, .mode = c.mode,
                                                 .rotary = rotary(c), .linear_bias = linear_bias(c)})}),
      AddAndNorm(c, {Select({0, 2, 2, 1, 2}),           // vec_d vec_e vec_e masks vec_e
                     AttentionQKV(c.d_model, {.n_heads = c.n_heads, .dropout = c.dropout, .mode = c.mode,
                                              .cache_KV_in_predict = true, .rotary = rotary(c)})}),
                                                        // vec_d masks vec_e
      AddAndNorm(c, FFBlock(c)),
  });
}

LayerList EncoderBody(std::int64_t vocab_size, const TransformerConfig& c) {
  return concat({{Branch(nullptr, PaddingMask()),   // tokens masks
                  Embedding(vocab_size, c.d_model)},
                 EmbeddingTail(c, c.mode, /*mode_given=*/false),   // Trax gives this one no mode
                 repeat(c.n_layers, [&] { return EncoderBlock(c); }),
                 {Select({0}, /*n_in=*/2)},          // drops the masks
                 FinalNorm(c)});
}

LayerPtr TransformerEncoder(std::int64_t vocab_size, std::int64_t n_classes,
                            const TransformerConfig& c) {
  return Serial(
      EncoderBody(vocab_size, c),
      Mean(/*axis=*/1),                // average over length (padding included, as in Trax)
      Dense(n_classes));
}

LayerPtr MaskedLM(std::int64_t vocab_size, const TransformerConfig& c) {
  // (hidden (B, L, d), positions (B, P)) → the hidden states at those positions (B, P, d).
  const LayerPtr at_positions = Fn("AtPositions", [](const Tensor& hidden, const Tensor& positions) {
    const Tensor index = expand(expand_dims(positions, 2), {positions.dim(0), positions.dim(1), hidden.dim(2)});
    return take_along_axis(hidden, index, 1);
  });
  return Serial(EncoderBody(vocab_size, c),   // tokens positions → hidden positions
                at_positions,
                Dense(vocab_size));           // a guess at each chosen position
}

std::vector<double> LayerwiseRateFactors(const Layer& model, const TransformerConfig& c, double decay) {
  if (!(decay > 0 && decay <= 1))
    throw std::invalid_argument(fmt::format("LayerwiseRateFactors: decay must be in (0, 1], got {}", decay));
  // The encoder's top-level layers (Serial flattens its lists): the embedding's (the mask's
  // Branch, Embedding, its tail), the blocks', then the rest.
  const auto before = static_cast<std::int64_t>(2 + EmbeddingTail(c, c.mode).size());
  const auto per_block = static_cast<std::int64_t>(EncoderBlock(c).size());
  const auto& top = model.sublayers();
  if (static_cast<std::int64_t>(top.size()) <= before + c.n_layers * per_block)
    throw std::invalid_argument(fmt::format("LayerwiseRateFactors: {} is not an encoder of {} blocks (it has {} layers "
                                            "at the top, the encoder's body alone {})", model.name(), c.n_layers,
                                            top.size(), before + c.n_layers * per_block));
  std::vector<double> factors;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(top.size()); ++i) {
    const std::int64_t depth = i < before ? 0 : std::min<std::int64_t>(1 + (i - before) / per_block, c.n_layers + 1);
    factors.insert(factors.end(), top[static_cast<std::size_t>(i)]->all_weights().size(),
                   std::pow(decay, static_cast<double>(c.n_layers + 1 - depth)));
  }
  if (factors.size() != model.all_weights().size())
    throw std::logic_error(fmt::format("LayerwiseRateFactors: {} factors for {} weights (a weight shared across layers)",
                                       factors.size(), model.all_weights().size()));
  return factors;
}

LayerPtr TransformerDecoder(std::optional<std::int64_t> vocab_size, const TransformerConfig& c) {
  return Serial(
      vocab_size ? Embedding(*vocab_size, c.d_model) : Dense(c.d_model),
      EmbeddingTail(c, c.mode),
      repeat(c.n_layers, [&] { return DecoderBlock(c); }),
      FinalNorm(c));
}

LayerPtr TransformerLM(std::int64_t vocab_size, const TransformerConfig& c) {
  return Serial(
      ShiftRight({.mode = c.mode}),
      Embedding(vocab_size, c.d_model),
      EmbeddingTail(c, c.mode),
      repeat(c.n_layers, [&] { return DecoderBlock(c); }),
      FinalNorm(c),
      Dense(vocab_size));
}

LayerPtr Transformer(std::int64_t input_vocab_size, std::optional<std::int64_t> output_vocab_size,
                     const TransformerConfig& c) {
  const LayerPtr in_embedder = Embedding(input_vocab_size, c.d_model);
  const LayerPtr out_embedder =
      output_vocab_size ? Embedding(*output_vocab_size, c.d_model) : in_embedder;
  const std::int64_t out_vocab = output_vocab_size.value_or(input_vocab_size);
  const Mode encoder_mode = c.mode == Mode::predict ? Mode::eval : c.mode;

  LayerPtr encoder = Serial(
      in_embedder,
      EmbeddingTail(c, encoder_mode),
      repeat(c.n_encoder_layers, [&] { return EncoderBlock(c); }),
      FinalNorm(c));
  if (c.mode == Mode::predict) encoder = Cache(encoder);

  return Serial(
      Select({0, 1, 1}),                // tok_e tok_d tok_d
      Branch(nullptr, PaddingMask()),   // tok_e mask_e tok_d tok_d
      encoder,                          // vec_e mask_e tok_d tok_d
      Select({2, 1, 0}),                // tok_d mask_e vec_e tok_d
      ShiftRight({.mode = c.mode}),
      out_embedder,
      EmbeddingTail(c, c.mode),
      Branch(nullptr, EncoderDecoderMask()),  // vec_d masks vec_e tok_d
      repeat(c.n_decoder_layers, [&] { return EncoderDecoderBlock(c); }),
      FinalNorm(c),
      Select({0}, /*n_in=*/3),          // vec_d tok_d
      Dense(out_vocab));                // logits tok_d
}

std::vector<train::WeightMap> MaskedLMBodyInTransformer(std::int64_t vocab_size, const TransformerConfig& c) {
  if (c.n_encoder_layers != c.n_layers)
    throw std::invalid_argument(fmt::format("MaskedLMBodyInTransformer: the masked LM has n_layers = {} blocks, the "
                                            "Transformer's encoder n_encoder_layers = {}; give both the same",
                                            c.n_layers, c.n_encoder_layers));
  TransformerConfig train_config = c;   // the same names in every mode
  train_config.mode = Mode::train;
  const LayerPtr mlm = MaskedLM(vocab_size, train_config), transformer = Transformer(vocab_size, std::nullopt, train_config);
  const ShapeDtype tokens{{1, 8}, DType::int32};
  mlm->init(Signature{tokens, ShapeDtype{{1, 1}, DType::int32}}, Rng(0));
  transformer->init(Signature{tokens, tokens}, Rng(0));
  auto body = mlm->named_weights();
  body.resize(body.size() - 2);   // the guess's Dense(vocab): w, b
  const auto encoder = transformer->named_weights();   // the encoder's come first, in the same order
  std::vector<train::WeightMap> maps;
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (i >= encoder.size() || body[i].second.shape() != encoder[i].second.shape())
      throw std::logic_error(fmt::format("MaskedLMBodyInTransformer: the masked LM's {} has no counterpart of its shape in "
                                         "the Transformer ({})", body[i].first,
                                         i < encoder.size() ? encoder[i].first : "none left"));
    maps.push_back({.from = body[i].first, .to = encoder[i].first});
  }
  return maps;
}

}  // namespace ctrax::models

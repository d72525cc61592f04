// ctrax/core/decode/sampling.hpp — generating tokens one at a time (trax/supervised/decoding.py).
//
// A language model gives, at each position, a distribution over the next token. Generation
// feeds it a start token (and a prompt), picks a token from the distribution at the last
// position, feeds that token back, and repeats. In predict mode each call processes only the new
// token: the KV cache in every causal attention layer remembers the keys and values of all earlier
// positions, and PositionalEncoding its position — O(position) per token instead of re-running
// the whole prefix (docs/09_decoding.md).
//
//   auto lm = TransformerLM(vocab, {.mode = Mode::predict, ...});
//   lm->init(ShapeDtype{{1, 1}, DType::int32});
//   train::load_weights("out/model.safetensors", *lm);
//   Tensor tokens = decode::autoregressive_sample(*lm, prompt, 1, {.temperature = 0.8, .top_k = 40});
//
// Picking a token from log-probabilities logp (over the vocabulary):
//   temperature 0      argmax logp                                     (greedy)
//   temperature T > 0  a sample from softmax(logp / T): T < 1 sharpens, T > 1 flattens. Drawn as
//                      argmax(logp / T + Gumbel noise), the Gumbel-max trick Trax uses.
//   top_k k > 0        only the k most likely tokens can be drawn.
//   top_p p < 1        only the nucleus can be drawn (Holtzman et al. 2020, "The Curious Case of
//                      Neural Text Degeneration"): the fewest most likely tokens whose probabilities
//                      at the temperature, softmax(logp / T), sum to p or more — a cut that adapts
//                      where top_k's is fixed: one or two tokens where the model is sure, hundreds
//                      where it is not. With top_k too, both cuts apply.
// The noise comes from Rng(seed) folded with the step: the same seed gives the same samples.
//
// Models: a language model (n_in 1: TransformerLM) gets start_id then the prompt as ONE chunk
// (B, 1 + L_prompt), then one token (B, 1) per step. An encoder-decoder (n_in 2: Transformer)
// gets (inputs, start_id), then (inputs, last token) — its Cache runs the encoder once.
// Each call begins by resetting the model's state (reset_state), so calls are independent.
//
// Differences from Trax: a row stops at eos_id (later positions hold pad_id) — Trax keeps
// sampling finished rows; generation ends when every row has stopped or after max_length tokens.
#pragma once

#include <cstdint>

#include "core/layer/layer.hpp"

namespace ctrax::decode {

struct SampleOptions {
  double temperature = 1.0;       // 0: greedy
  std::int64_t top_k = 0;         // > 0: sample among the k most likely tokens only
  double top_p = 1.0;             // in (0, 1]; < 1: sample within the nucleus of probability top_p only
  std::int32_t start_id = 0;      // fed first (Trax's default 0, the padding id)
  std::int32_t eos_id = 1;        // a row stops after emitting it; negative: never stops early
  std::int32_t pad_id = 0;        // fills a row after its eos
  std::int64_t max_length = 100;  // tokens generated per row, at most
  std::uint64_t seed = 0;         // the sampling noise
  // Read each weight matrix from a copy packed at the first token in the order the cores read
  // fastest (docs/09_decoding.md): the same numbers, faster, for the weights' size in memory more
  // while the call runs. false: no copy.
  bool pack_weights = true;
};

// Generates up to max_length tokens per row with a predict-mode, initialised `model`.
// Language model: `inputs` is the prompt, (B, L_prompt) int32, or undefined (no prompt; B =
// batch_size). Encoder-decoder: `inputs` is the source, (B, L_source) int32.
// Returns (B, T) int32: the generated tokens (not the start token or prompt), T <= max_length.
Tensor autoregressive_sample(Layer& model, const Tensor& inputs = Tensor(),
                             std::int64_t batch_size = 1, const SampleOptions& options = {});

// --- building blocks, shared with beam search -------------------------------------------------

// Resets the state of `model` for decoding `rows` sequences (source `inputs` for an
// encoder-decoder, already `rows` long), and checks the model is in predict mode.
void start_decoding(Layer& model, const Tensor& inputs, std::int64_t rows);
// Feeds `tokens` (rows, L) and returns the log-probabilities at the last position (rows, V), as
// float64. Runs under NoGrad: a predict-mode model's plumbing (Serial, Dense, …) is built without
// a mode, and its weights require gradients, so without the scope every op of every decoded token
// would be recorded on a tape nobody reads.
Tensor next_token_log_probs(Layer& model, const Tensor& inputs, const Tensor& tokens);
// A row-major copy of ids as a (rows, 1) int32 tensor.
Tensor column(const std::vector<std::int32_t>& ids);

}  // namespace ctrax::decode

// ctrax/core/decode/beam_search.hpp — keeping the k most likely partial sequences.
//
// Greedy decoding commits to the single best token at every step; a token that looks second best
// now may lead to a much more likely sentence. Beam search keeps n_beams hypotheses per input:
// at each step every hypothesis is extended by every token, and the n_beams extensions with the
// highest total log-probability Σ log p(token | prefix) survive. An extension that emits eos_id
// is finished and set aside; search for an input ends when it has n_beams finished hypotheses
// and no live one can still beat the worst of them, or after max_length tokens.
//
// Finished hypotheses are ranked by log_prob / length^length_penalty (length counts the
// generated tokens, eos included): 0 ranks by raw log-probability, which favours short outputs;
// 1 ranks by the mean log-probability per token. With n_beams = 1 and length_penalty 0, beam
// search is greedy decoding (a test checks it).
//
// All n_beams hypotheses of all B inputs run as one batch of B · n_beams rows in predict mode.
// When survivors are chosen, the model's state (KV caches, cached encoder outputs) is reordered
// to follow them: every state tensor's leading axis holds rows (times a factor, e.g. heads), and
// row r takes its parent's slice. A survivor keeps its parent's row when it is that parent's
// first, so only the others' caches move. Scalar state (positions) is shared.
//
// Differences from Trax, whose beam_search takes batch_size 1, ignores eos_id and length_penalty
// and always runs max_length steps: here batches, eos and length penalty all work.
#pragma once

#include <cstdint>
#include <vector>

#include "core/layer/layer.hpp"

namespace ctrax::decode {

struct BeamSearchOptions {
  std::int64_t n_beams = 4;
  std::int32_t start_id = 0;
  std::int32_t eos_id = 1;        // negative: no hypothesis ever finishes early
  std::int64_t max_length = 100;  // generated tokens, at most
  double length_penalty = 1.0;    // ranking: log_prob / length^length_penalty
  bool pack_weights = true;       // as SampleOptions::pack_weights (sampling.hpp)
};

struct Hypothesis {
  std::vector<std::int32_t> tokens;  // generated tokens (eos included when it ended with it)
  double log_prob = 0;               // Σ log p
  double score = 0;                  // log_prob / length^length_penalty
};

// For each input row, its n_beams best hypotheses, best first. `inputs` as for
// autoregressive_sample: the prompt (LM; may be undefined, then batch_size rows) or the source
// (encoder-decoder).
std::vector<std::vector<Hypothesis>> beam_search(Layer& model, const Tensor& inputs = Tensor(),
                                                 std::int64_t batch_size = 1,
                                                 const BeamSearchOptions& options = {});

}  // namespace ctrax::decode

// ctrax/core/data/masked_lm.hpp — BERT's masked-language-model batches (Devlin et al. 2018).
//
// A masked LM learns from unlabelled text by guessing tokens hidden from it. Of each sequence's
// n real (non-padding) tokens, exactly max(1, round(0.15 · n)) positions are chosen, uniformly
// without replacement (BERT's create_pretraining_data picks a count per sequence, so a short
// review is never left without a guess); a chosen token is then replaced by
//     the mask token    with probability 0.8   (the model must guess it from context),
//     a random token    with probability 0.1   (so it cannot trust every visible token),
//     itself            with probability 0.1   (so its representation of a visible token is
//                                               also a guess at that token).
// The loss is on the chosen positions only, and so is the guessing: the batch lists each row's
// chosen positions (B, P) — P the most any row has, shorter rows padded with position 0 and
// weight 0 — with the original tokens there as targets (B, P). The model reads its hidden states
// at those positions before its (vocabulary-wide, costly) output layer, as BERT does, so the
// guesses cost P/L of guessing everywhere; WeightedCategoryCrossEntropy over (B, P, vocab)
// averages them. Random tokens are drawn from [first_random_id, vocab_size): not padding, not the
// mask, not the tokenizer's control pieces.
//
// Deterministic: row r of a batch draws from rng.fold_in(r), so the same key gives the same batch.
#pragma once

#include <cstdint>

#include "core/tensor/random.hpp"
#include "core/tensor/tensor.hpp"

namespace ctrax::data {

struct MaskingOptions {
  std::int64_t vocab_size = 0;
  std::int32_t mask_id = 0;           // the tokenizer's mask piece
  std::int32_t pad_id = 0;            // never chosen
  std::int32_t first_random_id = 1;   // random replacements from [first_random_id, vocab_size)
  double select = 0.15, mask = 0.8, random = 0.1;   // the remaining 0.1 keep their token
};

struct MaskedBatch {
  Tensor inputs;      // int32 (B, L): the tokens with the chosen ones replaced
  Tensor positions;   // int32 (B, P): the chosen positions, ascending; 0 where a row has fewer
  Tensor targets;     // int32 (B, P): the original tokens there
  Tensor weights;     // float32 (B, P): 1 for a chosen position, 0 for padding
};

MaskedBatch mask_tokens(const Tensor& tokens, const MaskingOptions& options, const Rng& rng);

}  // namespace ctrax::data

// ctrax/models/electra.hpp — ELECTRA's replaced-token detection (Clark et al. 2020): pretraining a
// TransformerEncoder body that learns from every token, not only from the 15% a masked LM guesses.
//
// WHY. A masked LM (MaskedLM, transformer.hpp) is taught at the chosen 15% of positions only: the
// encoder reads every token, but the loss looks at one in seven. ELECTRA trains two encoders on
// the same masked batch (core/data/masked_lm.hpp):
//   the generator      a small masked LM (the discriminator's width × generator_size) guesses
//                      the chosen tokens; at each chosen position a token is SAMPLED from its
//                      guess (temperature 1, never padding, the mask or a control piece);
//   the discriminator  reads the text with those samples in place of the chosen tokens and says
//                      at EVERY real position whether the token there is the original or a
//                      replacement — a logit per position. A sample equal to the original counts
//                      as original, so an easy position teaches "original" and a plausible
//                      replacement is the hard case.
// Fine-tuning keeps the discriminator's body; the generator is thrown away. The loss:
//     L = CE(generator's guesses at the chosen positions) + λ · BCE(discriminator, every real token)
// with λ = 50 (the paper's: the BCE settles near 0.1–0.3 while the CE sits at 3–6). No gradient
// flows through the sampling (the tokens are integers), so the discriminator's loss does not
// train the generator — the paper's choice (it tried training the generator adversarially, with
// reinforcement learning, and found it worse).
//
//   ElectraPretraining(vocab, discriminator config, generator config, first_sample_id)
//       (inputs (B, L), positions (B, P), targets (B, P), weights (B, P)) int32/f32, a MaskedBatch
//     → (generator logits (B, P, vocab), targets, weights,
//        discriminator logits (B, L), replaced (B, L), real (B, L))       the last two 0/1 floats
//   ElectraLoss(λ)             those six → L (a scalar)
//   ReplacedTokenAccuracy()    those six → the share of real tokens the discriminator calls right
//                              (logit > 0 means "replaced")
//
// THE TREE, stack after each layer:
//   Select([0, 1, 0, 1, 2, 3])                       tok pos tok pos tgt w
//   MaskedLM(vocab, generator)                       g tok pos tgt w            g: the guesses
//   Select([0, 3, 4, 0, 1, 2, 3, 4])                 g tgt w g tok pos tgt w
//   Parallel(-, -, -, SampleTokens)                  g tgt w s tok pos tgt w    s: (B, P) samples
//   Parallel(-, -, -, ReplaceTokens)                 g tgt w x replaced real    x: the new text
//   Parallel(-, -, -, Serial(EncoderBody, Dense(1), Squeeze))   g tgt w d replaced real
// The discriminator is a Serial whose first layers are EncoderBody's, exactly as in MaskedLM and
// TransformerEncoder, so its weights carry their names after one prefix (kElectraDiscriminator)
// and fine-tuning loads them with one WeightMap (electra_body_maps).
//
// Left out: the paper ties the generator's token embeddings to the discriminator's (a projection
// when the widths differ; +0.7 GLUE points for its small model); here each has its own table.
#pragma once

#include <cstdint>
#include <vector>

#include "core/layer/layer.hpp"
#include "core/train/checkpoint.hpp"
#include "models/transformer.hpp"

namespace ctrax::models {

// The generator's config for a discriminator: width, feed-forward width and heads scaled by
// `size`; heads: the fewest (at most the discriminator's) of at most 64 features each, as BERT's; the rest equal.
TransformerConfig ElectraGenerator(const TransformerConfig& discriminator, double size = 0.25);

// first_sample_id: the smallest token id a generator sample may take (ids below it — padding,
// the mask, control pieces — are never sampled; data::MaskingOptions::first_random_id).
LayerPtr ElectraPretraining(std::int64_t vocab_size, const TransformerConfig& discriminator,
                            const TransformerConfig& generator, std::int32_t first_sample_id);
LayerPtr ElectraLoss(double lambda = 50.0);
LayerPtr ReplacedTokenAccuracy();

// Where the discriminator's body sits in ElectraPretraining's weight names.
inline constexpr const char* kElectraDiscriminator = "Serial/Parallel[5]/Serial[3]/";

// The maps that load ELECTRA's discriminator body where `maps` would load a MaskedLM's body: each
// source name moved from the masked LM's root ("Serial/") to kElectraDiscriminator. The default
// (the names as they are, how a TransformerEncoder takes a MaskedLM's body) becomes one map,
// kElectraDiscriminator → "Serial/". MaskedLMBodyInTransformer's maps become the chatbot's.
std::vector<train::WeightMap> electra_body_maps(std::vector<train::WeightMap> maps = {train::WeightMap{}});

}  // namespace ctrax::models

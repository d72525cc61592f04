// The models train through the Loop on data made here, and decode what they learned.
#include <doctest/doctest.h>

#include <optional>
#include <sstream>

#include "core/decode/sampling.hpp"
#include "core/train/adam.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/loop.hpp"
#include "layers/metrics.hpp"
#include "models/rnn.hpp"
#include "models/transformer.hpp"
#include "tests/core/train/temp_dir.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::train;
using namespace ctrax::models;
using ctrax::testing::TempDir;

namespace {

constexpr std::int64_t V = 12, L = 8, B = 16;

TransformerConfig small(Mode mode = Mode::train) {
  return {.d_model = 32, .d_ff = 64, .n_layers = 1, .n_heads = 2, .max_len = 32, .dropout = 0.0,
          .mode = mode};
}

// Sequences that count up from a random start: 1 + ((s + t) mod (V − 1)), so 0 (padding/start)
// never appears. (inputs, targets, weights) with targets = inputs: TransformerLM shifts inside.
Stack counting_batch(std::int64_t i) {
  const Tensor starts = Rng(11).fold_in(static_cast<std::uint64_t>(i)).randint({B}, 0, V - 1);
  Tensor x = Tensor::empty({B, L}, DType::int32);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < L; ++t)
      x.data<std::int32_t>()[b * L + t] =
          static_cast<std::int32_t>(1 + (starts.data<std::int32_t>()[b] + t) % (V - 1));
  return {x, x, Tensor::ones({B, L})};
}

// Random tokens 1..9; class 1 iff the sequence contains a 5.
Stack contains_five_batch(std::int64_t i) {
  const Tensor x = Rng(12).fold_in(static_cast<std::uint64_t>(i)).randint({B, L}, 1, 10);
  Tensor y = Tensor::zeros({B}, DType::int32);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < L; ++t)
      if (x.data<std::int32_t>()[b * L + t] == 5) y.data<std::int32_t>()[b] = 1;
  return {x, y, Tensor::ones({B})};
}

// Random tokens 1..V−1 and their reversal: (source, target, weights). Solvable only by reading the
// source through the attention (the decoder's LSTM alone sees the target's past, not the source).
Stack reverse_batch(std::int64_t i) {
  const Tensor x = Rng(13).fold_in(static_cast<std::uint64_t>(i)).randint({B, L}, 1, V);
  Tensor y = Tensor::empty({B, L}, DType::int32);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < L; ++t) y.data<std::int32_t>()[b * L + t] = x.data<std::int32_t>()[b * L + L - 1 - t];
  return {x, y, Tensor::ones({B, L})};
}

// Adam at `lr` on batches(i), reporting every `every` steps; and the held-out evaluation on
// batches(1000 + i): cross-entropy and accuracy over n_batches.
TrainTask adam_task(Stack (*batches)(std::int64_t), double lr, int every) {
  return {.labeled_data = batches, .loss_layer = layers::WeightedCategoryCrossEntropy(),
          .optimizer = Adam({.learning_rate = lr}), .n_steps_per_checkpoint = every};
}
EvalTask held_out(Stack (*batches)(std::int64_t), int n_batches) {
  return {.labeled_data = [batches](std::int64_t i) { return batches(1000 + i); },
          .metrics = {layers::WeightedCategoryCrossEntropy(), layers::WeightedCategoryAccuracy()},
          .n_eval_batches = n_batches};
}

}  // namespace

TEST_CASE("TransformerLM learns to count through the Loop, and greedy decoding counts on") {
  TempDir dir;
  std::ostringstream out;
  auto lm = TransformerLM(V, small());
  Loop loop(lm, {adam_task(counting_batch, 0.01, 50)},
            {.eval_tasks = {held_out(counting_batch, 2)}, .output_dir = dir.str(), .out = &out});
  loop.run(1);
  const double loss1 = loop.last_value("eval", "WeightedCategoryCrossEntropy");
  const double acc1 = loop.last_value("eval", "WeightedCategoryAccuracy");
  loop.run(149);
  const double loss = loop.last_value("eval", "WeightedCategoryCrossEntropy");
  const double acc = loop.last_value("eval", "WeightedCategoryAccuracy");
  MESSAGE("TransformerLM eval loss " << loss1 << " -> " << loss << ", accuracy " << acc1 << " -> " << acc);
  CHECK(loss < 0.5 * loss1);
  CHECK(acc > 0.8);
  CHECK(acc > acc1 + 0.5);

  // A predict-mode model loads the checkpoint by name and continues a count from a prompt.
  auto decoder = TransformerLM(V, small(Mode::predict));
  decoder->init(ShapeDtype{{1, 1}, DType::int32});
  load_weights(dir / "model.safetensors", *decoder);
  const Tensor prompt = tensor({3, 4, 5, 6}, {1, 4});
  const Tensor next = decode::autoregressive_sample(*decoder, prompt, 1,
                                                    {.temperature = 0, .eos_id = -1, .max_length = 3});
  ctrax::testing::expect_tensor(next, {1, 3}, {7, 8, 9}, 0);
}

TEST_CASE("TransformerEncoder learns a sequence classification through the Loop") {
  std::ostringstream out;
  auto encoder = TransformerEncoder(10, 2, small());
  Loop loop(encoder, {adam_task(contains_five_batch, 0.003, 50)},
            {.eval_tasks = {held_out(contains_five_batch, 4)}, .out = &out});
  loop.run(1);
  const double loss1 = loop.last_value("eval", "WeightedCategoryCrossEntropy");
  const double acc1 = loop.last_value("eval", "WeightedCategoryAccuracy");
  loop.run(199);
  const double loss = loop.last_value("eval", "WeightedCategoryCrossEntropy");
  const double acc = loop.last_value("eval", "WeightedCategoryAccuracy");
  MESSAGE("TransformerEncoder eval loss " << loss1 << " -> " << loss << ", accuracy " << acc1 << " -> " << acc);
  CHECK(loss < 0.6 * loss1);
  CHECK(acc > 0.9);
  CHECK(acc > acc1 + 0.2);
}

TEST_CASE("LSTMSeq2SeqAttn learns to reverse a sequence through its attention (Trax's and the score functions)") {
  std::optional<layers::Score> scores[] = {std::nullopt, layers::Score::dot, layers::Score::general,
                                           layers::Score::additive};
  for (const auto& score : scores) {
    CAPTURE(score ? layers::score_name(*score) : std::string("AttentionQKV"));
    std::ostringstream out;
    auto model = LSTMSeq2SeqAttn(V, V, {.d_model = 32, .n_encoder_layers = 1, .n_decoder_layers = 1,
                                        .score = score, .max_len = L, .scale_embeddings = true});
    Loop loop(model, {adam_task(reverse_batch, 0.01, 100)}, {.eval_tasks = {held_out(reverse_batch, 2)}, .out = &out});
    loop.run(1);
    const double loss1 = loop.last_value("eval", "WeightedCategoryCrossEntropy");
    loop.run(599);
    const double loss = loop.last_value("eval", "WeightedCategoryCrossEntropy");
    const double acc = loop.last_value("eval", "WeightedCategoryAccuracy");
    MESSAGE("reverse: eval loss " << loss1 << " -> " << loss << ", accuracy " << acc);
    CHECK(acc > 0.9);
  }
}

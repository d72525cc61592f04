// ELECTRA's replaced-token detection (models/electra.hpp): the sampling, the replacement, the loss
// on literal values, the gradients of the whole pretraining model, and its discriminator loaded
// into a classifier and into a Transformer's encoder.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include "core/data/masked_lm.hpp"
#include "core/train/adam.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/loop.hpp"
#include "layers/layers.hpp"
#include "models/electra.hpp"
#include "tests/core/train/temp_dir.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::models;
using namespace ctrax::testing;
using ctrax::testing::TempDir;

namespace {

TransformerConfig tiny(double dropout = 0.0) {
  return {.d_model = 8, .d_ff = 12, .n_layers = 2, .n_encoder_layers = 2, .n_decoder_layers = 1,
          .n_heads = 2, .max_len = 16, .dropout = dropout};
}

// A masked batch of two rows of 6 tokens (the second padded), two chosen positions each (the
// second row's second slot unused: weight 0).
Stack batch(DType weights = DType::float32) {
  return {tensor({5, 3, 7, 3, 9, 10, 4, 3, 6, 0, 0, 0}, {2, 6}),   // 3 is the mask
          tensor({1, 3, 1, 0}, {2, 2}),                            // positions
          tensor({8, 6, 5, 0}, {2, 2}),                            // the original tokens there
          Tensor::from_doubles({1, 1, 1, 0}, {2, 2}, weights)};
}

LayerPtr sampler(const LayerPtr& electra) { return electra->sublayers()[3]->sublayers()[3]; }
LayerPtr replacer(const LayerPtr& electra) { return electra->sublayers()[4]->sublayers()[3]; }

}  // namespace

TEST_CASE("ElectraGenerator: a quarter of the width, heads of at most 64 features") {
  const TransformerConfig d{.d_model = 256, .d_ff = 1024, .n_layers = 2, .n_heads = 4};
  const TransformerConfig g = ElectraGenerator(d);
  CHECK(g.d_model == 64);
  CHECK(g.d_ff == 256);
  CHECK(g.n_heads == 1);
  CHECK(g.n_layers == 2);
  CHECK(ElectraGenerator(d, 1.0).n_heads == 4);
  CHECK(ElectraGenerator(d, 0.5).n_heads == 2);
  CHECK_THROWS_WITH_AS(ElectraGenerator(d, 0.0), doctest::Contains("in (0, 1]"), std::invalid_argument);
}

TEST_CASE("ElectraPretraining: shapes, and the discriminator's weights under kElectraDiscriminator with the body's names") {
  const LayerPtr electra = ElectraPretraining(11, tiny(), ElectraGenerator(tiny(), 0.5), 4);
  const Signature out = electra->init(signature_of(batch()), Rng(1));
  REQUIRE(out.size() == 6);
  CHECK(out[0].shape == Shape{2, 2, 11});   // the generator's guesses
  CHECK(out[3].shape == Shape{2, 6});       // a logit per token
  CHECK(out[4].shape == Shape{2, 6});
  CHECK(out[5].shape == Shape{2, 6});
  auto encoder = TransformerEncoder(11, 2, tiny());
  encoder->init(ShapeDtype{{2, 6}, DType::int32});
  const auto body = encoder->named_weights();
  const auto all = electra->named_weights();
  for (std::size_t i = 0; i + 2 < body.size(); ++i) {   // all but the classifier's Dense(2)
    const std::string name = kElectraDiscriminator + body[i].first.substr(std::string("Serial/").size());
    const auto found = std::find_if(all.begin(), all.end(), [&](const auto& w) { return w.first == name; });
    REQUIRE_MESSAGE(found != all.end(), name);
    CHECK(found->second.shape() == body[i].second.shape());
  }
}

TEST_CASE("SampleTokens: draws from the softmax over the ids a sample may take, one draw per row") {
  const LayerPtr electra = ElectraPretraining(6, tiny(), ElectraGenerator(tiny(), 0.5), 3);
  electra->init(signature_of(batch()), Rng(1));
  const LayerPtr sample = sampler(electra);
  // Row 0: id 5 certain among the allowed (ids 0–2 huge but never sampled); rows 1…: equal
  // logits on ids 3, 4, 5.
  const std::int64_t rows = 3000;
  std::vector<double> logits(static_cast<std::size_t>(rows * 6), 0.0);
  for (int k = 0; k < 3; ++k) logits[static_cast<std::size_t>(k)] = 100;
  logits[5] = 50;
  sample->set_rng(Rng(7));
  const auto s = (*sample)(Stack{Tensor::from_doubles(logits, {1, rows, 6})})[0].to_vector<int>();
  CHECK(s[0] == 5);
  std::vector<int> count(6, 0);
  for (std::size_t r = 1; r < s.size(); ++r) ++count[static_cast<std::size_t>(s[r])];
  CHECK(count[0] + count[1] + count[2] == 0);
  for (int k = 3; k < 6; ++k) CHECK(std::abs(count[static_cast<std::size_t>(k)] / double(rows - 1) - 1.0 / 3) < 0.03);
  // The same key draws the same tokens.
  sample->set_rng(Rng(7));
  CHECK((*sample)(Stack{Tensor::from_doubles(logits, {1, rows, 6})})[0].to_vector<int>() == s);
  CHECK_THROWS_WITH_AS((*sample)(Tensor::zeros({2, 2, 3})), doctest::Contains("outside the vocabulary of 3"),
                       std::exception);
}

TEST_CASE("ReplaceTokens: samples at the chosen positions; replaced where they differ from the original") {
  const LayerPtr electra = ElectraPretraining(11, tiny(), ElectraGenerator(tiny(), 0.5), 4);
  electra->init(signature_of(batch()), Rng(1));
  const Stack b = batch();
  // Row 0 samples 8 at position 1 (the original: not replaced) and 4 at 3 (replaced); row 1
  // samples 9 at position 1 (replaced) and a sample in the unused slot that must not land.
  const Stack out = (*replacer(electra))(Stack{tensor({8, 4, 9, 7}, {2, 2}), b[0], b[1], b[2], b[3]});
  expect_tensor(out[0], {2, 6}, {5, 8, 7, 4, 9, 10, 4, 9, 6, 0, 0, 0});
  expect_tensor(out[1], {2, 6}, {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0});
  expect_tensor(out[2], {2, 6}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0});
  CHECK_THROWS_WITH_AS((*replacer(electra))(Stack{tensor({8, 4, 9, 7}, {2, 2}), b[0], tensor({1, 6, 1, 0}, {2, 2}), b[2], b[3]}),
                       doctest::Contains("position 6 of row 0 is outside the 6 tokens"), std::exception);
}

TEST_CASE("ElectraLoss = the generator's cross-entropy + λ · the discriminator's, on literal values; ReplacedTokenAccuracy") {
  // Generator: one row, two positions, vocabulary 2, the second position unweighted.
  const Tensor g = tensor({0.f, 0.f, 1.f, 3.f}, {1, 2, 2});
  const Tensor tgt = tensor({1, 0}, {1, 2});
  const Tensor w = tensor({1.f, 0.f}, {1, 2});
  // Discriminator: three tokens, the third padding (its logit must not count).
  const Tensor d = tensor({0.f, 2.f, -9.f}, {1, 3});
  const Tensor replaced = tensor({0.f, 1.f, 1.f}, {1, 3});
  const Tensor real = tensor({1.f, 1.f, 0.f}, {1, 3});
  const Stack six{g, tgt, w, d, replaced, real};
  const double ce = std::log(2.0);
  const double bce = (std::log(2.0) + (std::log1p(std::exp(2.0)) - 2.0)) / 2;
  CHECK(init_and_run(ElectraLoss(), six)[0].item() == doctest::Approx(ce + 50 * bce).epsilon(1e-6));
  CHECK(init_and_run(ElectraLoss(1.0), six)[0].item() == doctest::Approx(ce + bce).epsilon(1e-6));
  // Logit 0 says "original" (right), 2 says "replaced" (right), the padding's −9 is not counted.
  CHECK(init_and_run(ReplacedTokenAccuracy(), six)[0].item() == doctest::Approx(1.0));
  const Stack wrong{g, tgt, w, tensor({1.f, -2.f, 5.f}, {1, 3}), replaced, real};
  CHECK(init_and_run(ReplacedTokenAccuracy(), wrong)[0].item() == doctest::Approx(0.0));
  CHECK_THROWS_WITH_AS(init_and_run(ElectraLoss(), Stack{g, tgt, w, d, tensor({0.f, 1.f}, {1, 2}), real}),
                       doctest::Contains("must have one shape"), std::exception);
}

TEST_CASE("ElectraPretraining with its loss: gradients of every weight match finite differences") {
  const LayerPtr electra = ElectraPretraining(11, tiny(), ElectraGenerator(tiny(), 0.5), 4);
  // λ = 1: with the paper's 50 the loss is ~50× larger and finite differences' rounding on the
  // attention's key biases (exactly zero gradient: softmax ignores a shift of every score) grows
  // past the checker's tolerance; λ itself is a product, checked on literal values above.
  const LayerPtr with_loss = layers::Serial(electra, ElectraLoss(1.0));
  const Stack b = batch(DType::float64);
  with_loss->init(signature_of(b), Rng(3));
  with_loss->set_rng(Rng(5));
  expect_layer_gradients(with_loss, b);
}

TEST_CASE("ElectraPretraining is deterministic under its key, and the key decides the samples") {
  const LayerPtr electra = ElectraPretraining(11, tiny(0.1), ElectraGenerator(tiny(0.1), 0.5), 4);
  electra->init(signature_of(batch()), Rng(1));
  const auto run = [&](std::uint64_t key) {
    electra->set_rng(Rng(key));
    return (*electra)(batch());
  };
  const Stack a = run(3), again = run(3);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].to_doubles() == again[i].to_doubles());
}

TEST_CASE("The discriminator's body loads into a TransformerEncoder and into a Transformer's encoder") {
  TempDir dir;
  const TransformerConfig c = tiny();
  const LayerPtr electra = ElectraPretraining(11, c, ElectraGenerator(c, 0.5), 4);
  electra->init(signature_of(batch()), Rng(1));
  train::save_checkpoint(dir / "electra.safetensors", *electra, {}, {});
  const auto file = electra->named_weights();
  const auto value_of = [&](const std::string& name) {
    return std::find_if(file.begin(), file.end(), [&](const auto& w) { return w.first == name; })->second;
  };

  auto classifier = TransformerEncoder(11, 2, c);
  classifier->init(ShapeDtype{{2, 6}, DType::int32}, Rng(2));
  const train::LoadReport report = train::load_matching_weights(dir / "electra.safetensors", *classifier, electra_body_maps());
  const std::size_t n_body = classifier->named_weights().size() - 2;
  CHECK(report.loaded.size() == n_body);
  CHECK(report.initialised.size() == 2);   // the classifier's Dense(2)
  CHECK(report.unused.size() == file.size() - n_body);   // the generator and the discriminator's Dense(1)
  for (const auto& [name, w] : classifier->named_weights())
    if (name.rfind("Serial/Dense_2", 0) != 0)
      CHECK(w.to_doubles() == value_of(kElectraDiscriminator + name.substr(7)).to_doubles());

  TransformerConfig t = c;
  t.n_encoder_layers = c.n_layers;
  auto transformer = Transformer(11, std::nullopt, t);
  transformer->init(Signature{ShapeDtype{{2, 6}, DType::int32}, ShapeDtype{{2, 4}, DType::int32}}, Rng(2));
  CHECK(train::load_matching_weights(dir / "electra.safetensors", *transformer,
                                     electra_body_maps(MaskedLMBodyInTransformer(11, t))).loaded.size() == n_body);
  CHECK_THROWS_WITH_AS(electra_body_maps({train::WeightMap{.from = "Branch/", .to = "Serial/"}}),
                       doctest::Contains("start with Serial/"), std::invalid_argument);
}

namespace {

// Sequences that count up from a random start (ids 1…11), masked as BERT masks (mask id 13):
// a token that breaks the count is what a discriminator must learn to spot.
Stack counting_masked(std::int64_t i) {
  constexpr std::int64_t B = 16, L = 12;
  const Tensor starts = Rng(21).fold_in(static_cast<std::uint64_t>(i)).randint({B}, 0, 11);
  Tensor x = Tensor::empty({B, L}, DType::int32);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < L; ++t)
      x.data<std::int32_t>()[b * L + t] = static_cast<std::int32_t>(1 + (starts.data<std::int32_t>()[b] + t) % 11);
  const data::MaskedBatch m = data::mask_tokens(x, {.vocab_size = 14, .mask_id = 13, .first_random_id = 1},
                                                Rng(22).fold_in(static_cast<std::uint64_t>(i)));
  return {m.inputs, m.positions, m.targets, m.weights};
}

}  // namespace

TEST_CASE("ELECTRA learns through the Loop: its discriminator spots the tokens that break a count") {
  // A generator of width 2 stays a poor guesser, so about one token in seven is replaced; a wide
  // one learns to count within ~200 steps and then replaces so few, and so plausibly, that the
  // discriminator's task changes under it (ELECTRA's reason for a small generator).
  std::ostringstream out;
  const TransformerConfig c{.d_model = 32, .d_ff = 64, .n_layers = 1, .n_heads = 2, .max_len = 16, .dropout = 0.0};
  const LayerPtr electra = ElectraPretraining(14, c, ElectraGenerator(c, 0.0625), 1);
  train::Loop loop(electra,
                   {{.labeled_data = counting_masked, .loss_layer = ElectraLoss(),
                     .optimizer = train::Adam({.learning_rate = 0.003}), .n_steps_per_checkpoint = 100}},
                   {.eval_tasks = {{.labeled_data = [](std::int64_t i) { return counting_masked(1000 + i); },
                                    .metrics = {ReplacedTokenAccuracy()}, .metric_names = {"detector"},
                                    .n_eval_batches = 4}},
                    .out = &out});
  loop.run(1);
  const double detector1 = loop.last_value("eval", "detector");
  loop.run(599);
  // The share of tokens replaced in held-out batches: 1 − share is what "all original" scores.
  electra->set_mode(Mode::eval);
  double replaced = 0, real = 0;
  for (int i = 0; i < 4; ++i) {
    const Stack o = (*electra)(counting_masked(1000 + i));
    for (double r : o[4].to_doubles()) replaced += r;
    for (double r : o[5].to_doubles()) real += r;
  }
  const double detector = loop.last_value("eval", "detector");
  MESSAGE("detector " << detector1 << " -> " << detector << " (all original: " << 1 - replaced / real << ")");
  CHECK(detector > 0.96);
  CHECK(detector > 1 - replaced / real + 0.08);
}

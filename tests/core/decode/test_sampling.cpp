#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "core/decode/beam_search.hpp"
#include "core/decode/internal/packed_weights.hpp"
#include "core/decode/sampling.hpp"
#include "core/tensor/runtime.hpp"
#include "tests/core/decode/decode_helpers.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::decode;

TEST_CASE("eos stops a row; later positions hold pad_id; the prompt goes in as one chunk") {
  auto lm = counting_lm();
  // Prompts [2] and [4]: row 0 continues 3, 4, 5; row 1 emits 5 and stops.
  const Tensor out = autoregressive_sample(*lm, tensor({2, 4}, {2, 1}), 1,
                                           {.temperature = 0, .eos_id = 5, .pad_id = 0});
  expect_tensor(out, {2, 3}, {3, 4, 5, 5, 0, 0}, 0);
  // Without a prompt: start 0, then 1, 2, ... up to max_length.
  expect_tensor(autoregressive_sample(*lm, Tensor(), 1, {.temperature = 0, .eos_id = -1, .max_length = 4}),
                {1, 4}, {1, 2, 3, 4}, 0);
}

TEST_CASE("temperature 0 is the argmax of the eval-mode logits at every position") {
  auto [eval, predict] = lm_pair();
  const Tensor prompt = tensor({3, 7, 9, 2, 2, 5}, {2, 3});
  const Tensor out = autoregressive_sample(*predict, prompt, 1,
                                           {.temperature = 0, .eos_id = -1, .max_length = 8});
  REQUIRE(out.shape() == Shape{2, 8});
  const Tensor chosen = argmax((*eval)(joined(prompt, out)), -1);  // (2, 11): position i predicts token i
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t t = 0; t < 8; ++t)
      CHECK(out.data<std::int32_t>()[b * 8 + t] == chosen.data<std::int32_t>()[b * 11 + 3 + t]);
}

TEST_CASE("sampling is reproducible under a seed, and the seed matters") {
  auto [eval, predict] = lm_pair();
  const SampleOptions o{.temperature = 1.0, .eos_id = -1, .max_length = 12, .seed = 7};
  const Tensor a = autoregressive_sample(*predict, Tensor(), 3, o);
  const Tensor b = autoregressive_sample(*predict, Tensor(), 3, o);
  CHECK(a.to_doubles() == b.to_doubles());
  SampleOptions other = o;
  other.seed = 8;
  CHECK(autoregressive_sample(*predict, Tensor(), 3, other).to_doubles() != a.to_doubles());
}

TEST_CASE("top_k = 1 is greedy whatever the temperature") {
  auto [eval, predict] = lm_pair();
  const Tensor greedy = autoregressive_sample(*predict, Tensor(), 2, {.temperature = 0, .eos_id = -1, .max_length = 6});
  const Tensor top1 = autoregressive_sample(*predict, Tensor(), 2,
                                            {.temperature = 5.0, .top_k = 1, .eos_id = -1, .max_length = 6});
  CHECK(greedy.to_doubles() == top1.to_doubles());
}

namespace {

// A language model whose next-token probabilities are always 0.5, 0.3, 0.15 and 0.05.
LayerPtr fixed_lm() {
  auto lm = layers::Fn("Fixed", [](const Tensor& tokens) {
    const Tensor logp = tensor({std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)}, {4});
    return one_hot(tokens, 4) * 0.0 + logp;
  });
  lm->set_mode(Mode::predict);
  lm->init(ShapeDtype{{1, 1}, DType::int32});
  return lm;
}

// How often each of the 4 tokens is drawn first, over 4,000 rows.
std::vector<int> first_token_counts(Layer& lm, double temperature, double top_p) {
  const Tensor out = autoregressive_sample(lm, Tensor(), 4000,
                                           {.temperature = temperature, .top_p = top_p, .eos_id = -1,
                                            .max_length = 1, .seed = 5});
  std::vector<int> counts(4, 0);
  for (const double x : out.to_doubles()) ++counts[static_cast<std::size_t>(x)];
  return counts;
}

}  // namespace

TEST_CASE("top_p draws within the nucleus: the fewest likeliest tokens whose probability at the temperature reaches p") {
  auto lm = fixed_lm();
  // T = 1: 0.5 < 0.7 <= 0.5 + 0.3, so tokens 0 and 1, renormalised: 0.625 and 0.375.
  std::vector<int> c = first_token_counts(*lm, 1.0, 0.7);
  CHECK(c[2] == 0);
  CHECK(c[3] == 0);
  CHECK(std::abs(c[0] / 4000.0 - 0.625) < 0.03);
  // p = 0.9: three tokens (0.95 reaches it), 0.5 / 0.95 of the draws token 0.
  c = first_token_counts(*lm, 1.0, 0.9);
  CHECK(c[3] == 0);
  CHECK(c[2] > 0);
  CHECK(std::abs(c[0] / 4000.0 - 0.5 / 0.95) < 0.03);
  // T = 2 flattens the distribution to ∝ √p: 0.379, 0.294, 0.208, 0.120, so p = 0.7 now takes
  // three tokens (0.673 < 0.7): the nucleus is cut at the temperature, as Hugging Face's is.
  c = first_token_counts(*lm, 2.0, 0.7);
  CHECK(c[3] == 0);
  CHECK(c[2] > 0);
  // p = 1 draws from every token; a tiny p is greedy whatever the temperature.
  c = first_token_counts(*lm, 1.0, 1.0);
  CHECK(c[3] > 0);
  c = first_token_counts(*lm, 5.0, 1e-9);
  CHECK(c[0] == 4000);
}

TEST_CASE("top_p outside (0, 1] and a temperature that is not a number are refused by name") {
  auto lm = fixed_lm();
  for (const double p : {0.0, -0.5, 1.5, std::nan("")})
    CHECK_THROWS_WITH_AS(autoregressive_sample(*lm, Tensor(), 1, {.top_p = p}), doctest::Contains("top_p must be in (0, 1]"),
                         std::invalid_argument);
  CHECK_THROWS_WITH_AS(autoregressive_sample(*lm, Tensor(), 1, {.temperature = std::nan("")}),
                       doctest::Contains("temperature must be 0 or more, got nan"), std::invalid_argument);
}

TEST_CASE("sampled tokens follow the model: with temperature 1, frequent where logp is high") {
  // The counting LM gives its next token logit 10 against 0: probability e^10 / (e^10 + 7).
  auto lm = counting_lm();
  const Tensor out = autoregressive_sample(*lm, Tensor(), 200, {.eos_id = -1, .max_length = 1, .seed = 3});
  int ones = 0;
  for (double x : out.to_doubles()) ones += x == 1;
  CHECK(ones >= 198);
}

TEST_CASE("Transformer (encoder-decoder): greedy decoding equals the eval-mode argmax") {
  auto [eval, predict] = transformer_pair();
  const Tensor source = tensor({4, 7, 2, 9, 0, 0, 5, 3, 8, 1, 6, 2}, {2, 6});
  const Tensor out = autoregressive_sample(*predict, source, 1, {.temperature = 0, .eos_id = -1, .max_length = 5});
  REQUIRE(out.shape() == Shape{2, 5});
  // Eval mode sees the target shifted right: logits at position t predict token t.
  const Tensor chosen = argmax((*eval)(Stack{source, out})[0], -1);
  CHECK(chosen.to_doubles() == out.to_doubles());
}

TEST_CASE("decoding a model that is not in predict mode says how to fix it") {
  auto [eval, predict] = lm_pair();
  CHECK_THROWS_WITH_AS(autoregressive_sample(*eval), doctest::Contains("needs a predict-mode model"),
                       std::invalid_argument);
}

TEST_CASE("decoding records no tape: a predict-mode model's weights require gradients, its tokens do not") {
  // The plumbing of a predict-mode model (Serial, Dense, …) is built without a mode, so called
  // directly it records every op; next_token_log_probs runs it under NoGrad.
  auto [eval, predict] = lm_pair();
  REQUIRE(predict->all_weights().front().requires_grad());
  start_decoding(*predict, Tensor(), 2);
  const Tensor logp = next_token_log_probs(*predict, Tensor(), tensor({1, 4}, {2, 1}));
  CHECK(logp.shape() == Shape{2, 11});
  CHECK_FALSE(logp.requires_grad());
  CHECK(grad_enabled());   // the scope ends with the call
}

TEST_CASE("a sequence longer than max_len stops with the model's error, and the model decodes again") {
  // The whole sequence runs in one parallel region (sampling.cpp): the error thrown at the 33rd
  // position (PositionalEncoding's, before the cache's) leaves it, and the next call opens a clean
  // one. With CTRAX_NUM_THREADS=2 (the test script's) the region has a team.
  auto [eval, predict] = lm_pair();   // max_len 32
  const SampleOptions too_long{.temperature = 0, .eos_id = -1, .max_length = 40};
  CHECK_THROWS_WITH_AS(autoregressive_sample(*predict, Tensor(), 2, too_long),
                       doctest::Contains("positions 32..32 exceed max_len 32 of PositionalEncoding"), LayerError);
  const Tensor out = autoregressive_sample(*predict, Tensor(), 2, {.temperature = 0, .eos_id = -1, .max_length = 8});
  CHECK(out.shape() == Shape{2, 8});
  const Tensor again = autoregressive_sample(*predict, Tensor(), 2, {.temperature = 0, .eos_id = -1, .max_length = 8});
  CHECK(out.to_doubles() == again.to_doubles());
}

TEST_CASE("the decoders' packed weights give the unpacked model's log-probabilities, bit for bit") {
  // autoregressive_sample and beam_search read every one-row product's weight from panels packed
  // at the first token (core/decode/internal/packed_weights.hpp). A model wide enough that its
  // products are cut across the team (d_model 128: matrices of 49k elements and more) gives the
  // same numbers token by token with and without them, for one row and for four, on any team; and
  // greedy decoding still picks the eval model's argmax.
  models::TransformerConfig c{.d_model = 128, .d_ff = 512, .n_layers = 2, .n_heads = 4, .max_len = 24};
  c.mode = Mode::eval;
  auto eval = models::TransformerLM(300, c);
  c.mode = Mode::predict;
  auto predict = models::TransformerLM(300, c);
  eval->init(ShapeDtype{{1, 4}, DType::int32}, Rng(5));
  predict->init(ShapeDtype{{1, 1}, DType::int32});
  predict->set_all_weights(eval->all_weights());
  // One row, and four (a beam's or a batch's): a start token and a prompt of two as one chunk, then
  // one token a row at a time.
  const auto log_probs = [&](bool packed, std::int64_t rows) {
    std::vector<double> out;
    start_decoding(*predict, Tensor(), rows);
    std::optional<PackedWeights> scope;
    if (packed) scope.emplace(*predict);
    std::vector<double> chunk;
    for (std::int64_t r = 0; r < rows; ++r) chunk.insert(chunk.end(), {0.0, 5.0 + r, 9.0});
    Tensor tokens = Tensor::from_doubles(chunk, {rows, 3}, DType::int32);
    for (int t = 0; t < 5; ++t) {
      const std::vector<double> logp = next_token_log_probs(*predict, Tensor(), tokens).to_doubles();
      out.insert(out.end(), logp.begin(), logp.end());
      std::vector<double> next;
      for (std::int64_t r = 0; r < rows; ++r) next.push_back(static_cast<double>((37 * t + 11 * r + 11) % 300));
      tokens = Tensor::from_doubles(next, {rows, 1}, DType::int32);
    }
    return out;
  };
  const int threads_before = num_threads();
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    CAPTURE(threads);
    for (std::int64_t rows : {1, 4}) {
      CAPTURE(rows);
      CHECK(log_probs(true, rows) == log_probs(false, rows));
    }
  }
  set_num_threads(threads_before);
  const Tensor prompt = tensor({5, 9}, {1, 2});
  const Tensor out = autoregressive_sample(*predict, prompt, 1, {.temperature = 0, .eos_id = -1, .max_length = 6});
  const Tensor chosen = argmax((*eval)(joined(prompt, out)), -1);   // position i predicts token i
  for (std::int64_t t = 0; t < 6; ++t)
    CHECK(out.data<std::int32_t>()[t] == chosen.data<std::int32_t>()[2 + t]);
  // pack_weights = false decodes without the copy: the same tokens, greedy and sampled, and the
  // same hypotheses with the same log-probabilities in a beam search.
  for (const bool pack : {true, false}) {
    CAPTURE(pack);
    CHECK(autoregressive_sample(*predict, prompt, 1,
                                {.temperature = 0, .eos_id = -1, .max_length = 6, .pack_weights = pack})
              .to_doubles() == out.to_doubles());
  }
  const SampleOptions sampled{.temperature = 1, .eos_id = -1, .max_length = 8, .seed = 3};
  SampleOptions sampled_unpacked = sampled;
  sampled_unpacked.pack_weights = false;
  CHECK(autoregressive_sample(*predict, Tensor(), 3, sampled).to_doubles() ==
        autoregressive_sample(*predict, Tensor(), 3, sampled_unpacked).to_doubles());
  const auto packed_beams = beam_search(*predict, prompt, 1, {.n_beams = 4, .eos_id = -1, .max_length = 5});
  const auto plain_beams =
      beam_search(*predict, prompt, 1, {.n_beams = 4, .eos_id = -1, .max_length = 5, .pack_weights = false});
  REQUIRE(packed_beams.size() == 1);
  REQUIRE(packed_beams[0].size() == plain_beams[0].size());
  for (std::size_t h = 0; h < packed_beams[0].size(); ++h) {
    CHECK(packed_beams[0][h].tokens == plain_beams[0][h].tokens);
    CHECK(packed_beams[0][h].log_prob == plain_beams[0][h].log_prob);
  }
}

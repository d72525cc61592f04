#include <doctest/doctest.h>

#include "core/decode/beam_search.hpp"
#include "core/decode/sampling.hpp"
#include "tests/core/decode/decode_helpers.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::decode;

namespace {

// Σ of eval-mode log-probabilities of `generated` after the prompt.
double eval_log_prob(Layer& eval, const Tensor& prompt_row, const std::vector<std::int32_t>& generated) {
  Tensor gen = Tensor::empty({1, static_cast<std::int64_t>(generated.size())}, DType::int32);
  std::copy(generated.begin(), generated.end(), gen.data<std::int32_t>());
  const Tensor seq = joined(prompt_row, gen);
  const Tensor logp = log_softmax(eval(seq).to(DType::float64), -1);  // (1, L, V)
  const std::int64_t L = seq.dim(1), V = logp.dim(2), offset = L - gen.dim(1);
  double total = 0;
  for (std::size_t t = 0; t < generated.size(); ++t)
    total += logp.data<double>()[(offset + static_cast<std::int64_t>(t)) * V + generated[t]];
  return total;
}

// Passes its input on and records every `parent` that beam search reorders the state by.
class ParentRecorder final : public Layer {
 public:
  explicit ParentRecorder(std::vector<std::vector<std::int64_t>>* seen)
      : Layer("ParentRecorder", 1, 1, std::source_location::current()), seen_(seen) {}

 protected:
  Stack forward(const Stack& in) override { return {in[0]}; }
  void reorder_own_rows(const std::vector<std::int64_t>& parent) override { seen_->push_back(parent); }

 private:
  std::vector<std::vector<std::int64_t>>* seen_;
};

}  // namespace

TEST_CASE("beam width 1 is greedy decoding") {
  auto [eval, predict] = lm_pair();
  const Tensor prompt = tensor({3, 7, 9, 2, 2, 5}, {2, 3});
  const Tensor greedy = autoregressive_sample(*predict, prompt, 1, {.temperature = 0, .eos_id = 1, .max_length = 10});
  const auto beams = beam_search(*predict, prompt, 1,
                                 {.n_beams = 1, .eos_id = 1, .max_length = 10, .length_penalty = 0});
  REQUIRE(beams.size() == 2);
  for (std::int64_t b = 0; b < 2; ++b) {
    REQUIRE(beams[b].size() == 1);
    const auto& tokens = beams[b][0].tokens;
    for (std::size_t t = 0; t < tokens.size(); ++t)
      CHECK(tokens[t] == greedy.data<std::int32_t>()[b * greedy.dim(1) + static_cast<std::int64_t>(t)]);
  }
}

TEST_CASE("every hypothesis' log_prob is the eval model's, so beams carried the right KV caches") {
  auto [eval, predict] = lm_pair();
  const Tensor prompt = tensor({3, 7, 9, 2, 2, 5}, {2, 3});
  const auto beams = beam_search(*predict, prompt, 1, {.n_beams = 3, .eos_id = -1, .max_length = 6});
  REQUIRE(beams.size() == 2);
  for (std::int64_t b = 0; b < 2; ++b) {
    REQUIRE(beams[b].size() == 3);
    for (std::size_t k = 0; k < 3; ++k) {
      CHECK(beams[b][k].tokens.size() == 6);
      CHECK(beams[b][k].log_prob ==
            doctest::Approx(eval_log_prob(*eval, slice(prompt, 0, b, b + 1), beams[b][k].tokens)).epsilon(1e-5));
      if (k > 0) CHECK(beams[b][k - 1].score >= beams[b][k].score);
    }
    CHECK(beams[b][0].tokens != beams[b][1].tokens);
  }
}

TEST_CASE("a survivor keeps its parent's row when it is that parent's first: only the others' caches move") {
  auto [eval, predict] = lm_pair();
  std::vector<std::vector<std::int64_t>> parents;
  auto model = layers::Serial(std::make_shared<ParentRecorder>(&parents), predict);
  model->set_mode(Mode::predict);
  model->init(ShapeDtype{{1, 1}, DType::int32});
  model->set_all_weights(eval->all_weights());
  const Tensor prompt = tensor({3, 7, 9, 2, 2, 5}, {2, 3});
  const auto beams = beam_search(*model, prompt, 1, {.n_beams = 4, .eos_id = -1, .max_length = 8});
  REQUIRE(parents.size() == 7);   // after every step but the last
  // Step 1: each input's one live beam feeds all four rows, from its own row.
  CHECK(parents[0] == std::vector<std::int64_t>{0, 0, 0, 0, 4, 4, 4, 4});
  for (const auto& parent : parents)
    for (std::size_t r = 0; r < parent.size(); ++r) {
      const auto p = static_cast<std::size_t>(parent[r]);
      CHECK(parent[r] / 4 == static_cast<std::int64_t>(r) / 4);   // within its own input's rows
      CHECK(parent[p] == parent[r]);   // a parent that has a survivor kept its own row: nothing to save first
    }
  // And the caches followed: the same hypotheses' log-probabilities as the eval model gives.
  for (std::int64_t b = 0; b < 2; ++b)
    for (const Hypothesis& h : beams[b])
      CHECK(h.log_prob == doctest::Approx(eval_log_prob(*eval, slice(prompt, 0, b, b + 1), h.tokens)).epsilon(1e-5));
}

TEST_CASE("a wider beam never finds a less likely best sequence than a narrow one, here") {
  auto [eval, predict] = lm_pair();
  const auto narrow = beam_search(*predict, Tensor(), 1, {.n_beams = 1, .eos_id = -1, .max_length = 5, .length_penalty = 0});
  const auto wide = beam_search(*predict, Tensor(), 1, {.n_beams = 4, .eos_id = -1, .max_length = 5, .length_penalty = 0});
  CHECK(wide[0][0].log_prob >= narrow[0][0].log_prob - 1e-5);
}

TEST_CASE("eos finishes hypotheses; a batch of inputs is searched at once") {
  auto lm = counting_lm();
  const auto beams = beam_search(*lm, tensor({2, 4}, {2, 1}), 1, {.n_beams = 2, .eos_id = 5, .max_length = 10});
  REQUIRE(beams.size() == 2);
  CHECK(beams[0][0].tokens == std::vector<std::int32_t>{3, 4, 5});
  CHECK(beams[1][0].tokens == std::vector<std::int32_t>{5});
  CHECK(beams[1][0].log_prob == doctest::Approx(-std::log1p(7 * std::exp(-10.0))));
}

TEST_CASE("length penalty 1 ranks by log-probability per token") {
  auto lm = counting_lm();
  const auto beams = beam_search(*lm, tensor({2}, {1, 1}), 1, {.n_beams = 2, .eos_id = 5, .max_length = 10, .length_penalty = 1.0});
  const auto& best = beams[0][0];
  CHECK(best.score == doctest::Approx(best.log_prob / static_cast<double>(best.tokens.size())));
}

TEST_CASE("Transformer (encoder-decoder): beam search log-probs match the eval model") {
  auto [eval, predict] = transformer_pair();
  const Tensor source = tensor({4, 7, 2, 9, 0, 0, 5, 3, 8, 1, 6, 2}, {2, 6});
  const auto beams = beam_search(*predict, source, 1, {.n_beams = 3, .eos_id = -1, .max_length = 4});
  for (std::int64_t b = 0; b < 2; ++b)
    for (const Hypothesis& h : beams[b]) {
      Tensor target = Tensor::empty({1, 4}, DType::int32);
      std::copy(h.tokens.begin(), h.tokens.end(), target.data<std::int32_t>());
      const Tensor logp = log_softmax((*eval)(Stack{slice(source, 0, b, b + 1), target})[0].to(DType::float64), -1);
      double total = 0;
      for (int t = 0; t < 4; ++t) total += logp.data<double>()[t * 11 + h.tokens[t]];
      CHECK(h.log_prob == doctest::Approx(total).epsilon(1e-5));
    }
}

TEST_CASE("a search longer than max_len stops with the model's error, and the model searches again") {
  auto [eval, predict] = lm_pair();   // max_len 32
  CHECK_THROWS_WITH_AS(beam_search(*predict, Tensor(), 1, {.n_beams = 3, .eos_id = -1, .max_length = 40}),
                       doctest::Contains("positions 32..32 exceed max_len 32 of PositionalEncoding"), LayerError);
  const auto a = beam_search(*predict, Tensor(), 1, {.n_beams = 3, .eos_id = -1, .max_length = 6});
  const auto b = beam_search(*predict, Tensor(), 1, {.n_beams = 3, .eos_id = -1, .max_length = 6});
  REQUIRE(a.size() == 1);
  REQUIRE(a[0].size() == 3);
  CHECK(a[0][0].tokens == b[0][0].tokens);
  CHECK(a[0][0].log_prob == b[0][0].log_prob);
}

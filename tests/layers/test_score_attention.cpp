#include <doctest/doctest.h>

#include <cmath>

#include "layers/layers.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

namespace {

// One decoder state s = (1, 2) and three encoder states h1 = (1, 0), h2 = (0, 1), h3 = (1, 1).
const Tensor kS = tensor({1.0, 2.0}, {1, 1, 2});
const Tensor kH = tensor({1.0, 0.0, 0.0, 1.0, 1.0, 1.0}, {1, 3, 2});
const Tensor kAll = Tensor::full({1, 3}, 1, DType::bool_);

// softmax(e) and Σ α_i h_i, computed by hand from the scores.
void expect_attention(const Stack& out, std::vector<double> e) {
  double total = 0;
  for (double& x : e) total += (x = std::exp(x));
  for (double& x : e) x /= total;
  expect_tensor(out[1], {1, 1, 3}, e, 1e-12);
  expect_tensor(out[0], {1, 1, 2}, {e[0] + e[2], e[1] + e[2]}, 1e-12);
}

Stack run(Score score, const std::vector<Tensor>& weights, ScoreAttentionOptions o = {}) {
  o.score = score;
  o.return_weights = true;
  auto layer = ScoreAttention(o);
  init_and_run(layer, {kS, kH, kAll});
  if (!weights.empty()) layer->set_all_weights(weights);
  return (*layer)(Stack{kS, kH, kAll});
}

}  // namespace

TEST_CASE("dot: e_i = s·h_i") { expect_attention(run(Score::dot, {}), {1, 2, 3}); }

TEST_CASE("scaled_dot: e_i = s·h_i / √d") {
  const double r = 1 / std::sqrt(2.0);
  expect_attention(run(Score::scaled_dot, {}), {r, 2 * r, 3 * r});
}

TEST_CASE("general: e_i = sᵀ W_a h_i") {
  // s W_a = (1, 2)·diag(1, 2) = (1, 4).
  expect_attention(run(Score::general, {tensor({1.0, 0.0, 0.0, 2.0}, {2, 2})}), {1, 4, 5});
}

TEST_CASE("additive (Bahdanau's concat): e_i = v_aᵀ tanh(W_b s + W_c h_i)") {
  const Tensor eye = tensor({1.0, 0.0, 0.0, 1.0}, {2, 2});
  const Stack out = run(Score::additive, {eye, eye, tensor({1.0, -1.0}, {2, 1})});
  // s + h_i = (2, 2), (1, 3), (2, 3); v_a = (1, −1).
  expect_attention(out, {0, std::tanh(1.0) - std::tanh(3.0), std::tanh(2.0) - std::tanh(3.0)});
}

TEST_CASE("location: α = softmax(W_a s), blind to the encoder states' values") {
  const Tensor w = tensor({1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0}, {2, 6});
  expect_attention(run(Score::location, {w}, {.max_len = 6}), {1, 2, 0});   // positions beyond Lk = 3 unused
}

TEST_CASE("padded keys get no weight; a row of padding only gets uniform weights") {
  auto layer = ScoreAttention({.score = Score::dot, .return_weights = true});
  const Tensor mask = tensor({1.f, 0.f, 1.f, 0.f, 0.f, 0.f}, {2, 3}).to(DType::bool_);
  const Tensor h = concatenate({kH, kH}, 0), s = concatenate({kS, kS}, 0);
  const Stack out = init_and_run(layer, {s, h, mask});
  const double a = std::exp(1.0) / (std::exp(1.0) + std::exp(3.0));
  expect_tensor(out[1], {2, 1, 3}, {a, 0, 1 - a, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-12);
  // PaddingMask's (B, 1, 1, Lk) mask works as well.
  expect_close((*layer)(Stack{s, h, reshape(mask, {2, 1, 1, 3})})[1], out[1], 0);
}

TEST_CASE("every score: gradients in the states and the weights, with padding") {
  const Tensor s = randn({2, 3, 4}, 1), h = randn({2, 5, 4}, 2);
  const Tensor mask = tensor({1.f, 1.f, 1.f, 0.f, 0.f, 1.f, 1.f, 1.f, 1.f, 1.f}, {2, 5}).to(DType::bool_);
  for (Score score : {Score::dot, Score::scaled_dot, Score::general, Score::additive, Score::location}) {
    CAPTURE(score_name(score));
    auto layer = ScoreAttention({.score = score, .n_units = 3, .max_len = 7, .return_weights = true});
    init_and_run(layer, {s * 0.5, h, mask});
    expect_layer_gradients(layer, {s * 0.5, h, mask});
  }
}

TEST_CASE("LuongOutput: s̃ = tanh(W_c [a; s] + b_c)") {
  auto out = LuongOutput(1);
  init_and_run(out, {tensor({1.0}, {1, 1}), tensor({2.0}, {1, 1})});
  out->set_all_weights({tensor({1.0, 1.0}, {2, 1}), tensor({0.5}, {1})});
  expect_tensor((*out)(Stack{tensor({1.0}, {1, 1}), tensor({2.0}, {1, 1})})[0], {1, 1}, {std::tanh(3.5)}, 1e-14);
  auto g = LuongOutput(3);
  init_and_run(g, {randn({2, 4, 2}, 3), randn({2, 4, 5}, 4)});
  expect_layer_gradients(g, {randn({2, 4, 2}, 3), randn({2, 4, 5}, 4)});
}

TEST_CASE("score attention says what is wrong") {
  CHECK_THROWS_WITH_AS(init_and_run(ScoreAttention(), {kS, Tensor::zeros({1, 3, 5}, DType::float64), kAll}),
                       doctest::Contains("needs d_s = d_h, got 2 and 5"), LayerError);
  CHECK_THROWS_WITH_AS(init_and_run(ScoreAttention({.score = Score::location, .max_len = 2}), {kS, kH, kAll}),
                       doctest::Contains("3 source positions exceed the 2"), LayerError);
  CHECK_THROWS_WITH_AS(init_and_run(ScoreAttention({.score = Score::location}), {kS, kH, kAll}),
                       doctest::Contains("needs .max_len"), LayerError);
  CHECK_THROWS_WITH_AS(init_and_run(ScoreAttention(), {kS, kH, Tensor::full({1, 2}, 1, DType::bool_)}),
                       doctest::Contains("a bool mask of the 3 keys"), LayerError);
  CHECK_THROWS_WITH_AS(parse_score("cosine"), doctest::Contains("dot, scaled_dot, general, additive, location"),
                       std::invalid_argument);
  CHECK(parse_score("additive") == Score::additive);
}

// tests/docs/test_exercises.cpp — the solutions of the exercises at the end of each docs chapter.
//
// One TEST_CASE per exercise, named "exercise C.N: …" after its chapter C (docs/0C_*.md). Each
// solution is written the way a reader would write it, with the layers and ops the chapter
// teaches, and checks the claim the exercise asks about — so a change that makes a chapter's
// statement false fails here.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>

#include "core/data/bleu.hpp"
#include "core/data/tokenizer.hpp"
#include "core/decode/sampling.hpp"
#include "core/dist/data_parallel.hpp"
#include "core/train/adam.hpp"
#include "core/train/schedules.hpp"
#include "layers/layers.hpp"
#include "models/transformer.hpp"
#include "tests/core/dist/copies.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
namespace tl = ctrax::layers;

namespace {

// The PyTorch note's source batch (chapters 3 and 4): lengths 8, 5, 10, 4, 9, padded to 10.
Tensor note_source() {
  const std::vector<std::vector<int>> rows = {{62, 13, 47, 39, 78, 33, 56, 13}, {60, 96, 51, 32, 90},
                                              {35, 45, 48, 65, 91, 99, 92, 10, 3, 21}, {66, 88, 98, 47},
                                              {77, 65, 51, 77, 19, 15, 35, 19, 23}};
  std::vector<double> ids;
  for (const auto& r : rows) {
    ids.insert(ids.end(), r.begin(), r.end());
    ids.resize(ids.size() + 10 - r.size(), 0.0);
  }
  return Tensor::from_doubles(ids, {5, 10}, DType::int32);
}
const std::int64_t kLengths[] = {8, 5, 10, 4, 9};

Tensor padding_mask_of(const Tensor& tokens) {   // (B, 1, 1, L)
  auto layer = tl::PaddingMask();
  return init_and_run(layer, {tokens})[0];
}

// α = softmax(where(mask, q kᵀ/√d, −1e9)), by separate ops.
Tensor weights(const Tensor& q, const Tensor& k, const Tensor& mask) {
  const Tensor s = matmul(q, k, false, true) / std::sqrt(static_cast<double>(q.dim(-1)));
  return softmax(where(mask, s, Tensor::full(s.shape(), -1e9, s.dtype())));
}

}  // namespace

// ---- Chapter 1: the data stack ----

TEST_CASE("exercise 1.1: Serial's n_in and n_out follow the running-max rule") {
  struct Case { LayerPtr layer; int n_in, n_out; };
  const Case cases[] = {{tl::Serial(tl::Add(), tl::Add()), 3, 1},          // a+b, then +c
                        {tl::Serial(tl::Dup(), tl::Dup()), 1, 3},
                        {tl::Serial(tl::Select({1, 0}), tl::Add()), 2, 1},
                        {tl::Serial(tl::Dup(), tl::Add(), tl::Add()), 2, 1}};  // x+x, then +y
  for (const auto& c : cases) {
    CHECK(c.layer->n_in() == c.n_in);
    CHECK(c.layer->n_out() == c.n_out);
  }
}

TEST_CASE("exercise 1.2: Branch(F, G) is Serial(Select([0, 0]), Parallel(F, G))") {
  auto square = [] { return tl::Fn("Square", [](const Tensor& x) { return x * x; }); };
  auto negate = [] { return tl::Fn("Negate", [](const Tensor& x) { return -x; }); };
  const Tensor x = tensor({1.0f, -2.0f, 3.0f}, {3});
  const Stack a = init_and_run(tl::Branch(square(), negate()), {x});
  const Stack b = init_and_run(tl::Serial(tl::Select({0, 0}), tl::Parallel(square(), negate())), {x});
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  expect_tensor(a[0], {3}, {1, 4, 9});
  expect_tensor(a[1], {3}, {-1, 2, -3});
  expect_close(a[0], b[0]);
  expect_close(a[1], b[1]);
}

// ---- Chapter 2: attention before Transformers ----

TEST_CASE("exercise 2.1: the general score with W_a = I is the dot score") {
  const Tensor s = randn({2, 3, 4}, 1), h = randn({2, 5, 4}, 2);
  const Tensor mask = Tensor::full({2, 5}, 1.0, DType::bool_);
  auto dot = tl::ScoreAttention({.score = tl::Score::dot});
  auto general = tl::ScoreAttention({.score = tl::Score::general});
  const Tensor a_dot = init_and_run(dot, {s, h, mask})[0];
  general->init(signature_of(Stack{s, h, mask}));
  std::vector<double> eye(16, 0.0);
  for (int i = 0; i < 4; ++i) eye[static_cast<std::size_t>(i * 5)] = 1.0;
  general->set_all_weights({Tensor::from_doubles(eye, {4, 4}, DType::float64)});
  expect_close((*general)(Stack{s, h, mask})[0], a_dot, 1e-12);
}

TEST_CASE("exercise 2.2: the context vector is the α-weighted average of the encoder states") {
  const Tensor s = randn({1, 2, 4}, 3), h = randn({1, 6, 4}, 4);
  const Tensor mask = Tensor::full({1, 6}, 1.0, DType::bool_);
  auto att = tl::ScoreAttention({.score = tl::Score::scaled_dot, .return_weights = true});
  const Stack out = init_and_run(att, {s, h, mask});
  const Tensor alpha = out[1];                                  // (1, 2, 6)
  expect_close(sum(alpha, {-1}), Tensor::ones({1, 2}, DType::float64), 1e-12);
  expect_close(out[0], matmul(alpha, h), 1e-12);                // a_t = Σ_i α_ti h_i
}

// ---- Chapter 3: self-attention ----

TEST_CASE("exercise 3.1: without positions, permuting the tokens permutes the outputs") {
  auto att = tl::Attention(8, {.n_heads = 2, .mode = Mode::eval});
  const Tensor x = randn({1, 10, 8}, 5);
  const Tensor all = Tensor::full({1, 1, 1, 10}, 1.0, DType::bool_);
  const Tensor y = init_and_run(att, {x, all})[0];
  const std::vector<std::int64_t> perm = {3, 7, 0, 9, 1, 4, 8, 2, 6, 5};
  auto permuted = [&](const Tensor& t) {   // row i of the result is row perm[i] of t
    const auto v = t.to_doubles();
    std::vector<double> p;
    for (std::int64_t i : perm) p.insert(p.end(), v.begin() + i * 8, v.begin() + (i + 1) * 8);
    return Tensor::from_doubles(p, {1, 10, 8}, t.dtype());
  };
  expect_close((*att)(Stack{permuted(x), all})[0], permuted(y), 1e-12);
}

TEST_CASE("exercise 3.2: q·k has variance d_head; dividing by √d_head brings it back to 1") {
  for (const std::int64_t d : {4, 256}) {
    const Tensor q = Rng(10).normal({4000, d}, 0, 1, DType::float64), k = Rng(11).normal({4000, d}, 0, 1, DType::float64);
    const auto dots = sum(q * k, {-1}).to_doubles();
    double var = 0;
    for (double x : dots) var += x * x;
    var /= static_cast<double>(dots.size());
    CHECK(var == doctest::Approx(static_cast<double>(d)).epsilon(0.1));
    CHECK(var / static_cast<double>(d) == doctest::Approx(1.0).epsilon(0.1));   // the scaled scores
  }
}

TEST_CASE("exercise 3.3: a bias added to every key leaves the attention weights unchanged") {
  const Tensor q = randn({2, 5, 4}, 6), k = randn({2, 7, 4}, 7), b = randn({4}, 8);
  const Tensor all = Tensor::full({1, 1, 7}, 1.0, DType::bool_);
  expect_close(weights(q, k + b, all), weights(q, k, all), 1e-12);
}

TEST_CASE("exercise 3.4: multi-head attention built from matmul, the head ops and softmax equals Attention") {
  auto att = tl::Attention(8, {.n_heads = 2, .mode = Mode::eval});
  const Tensor x = randn({2, 5, 8}, 21);
  const Tensor all = Tensor::full({2, 1, 1, 5}, 1.0, DType::bool_);
  const Tensor expected = init_and_run(att, {x, all})[0];
  const std::vector<Tensor> w = att->all_weights();   // W_q b_q W_k b_k W_v b_v W_o b_o
  REQUIRE(w.size() == 8);
  const auto projected = [&](int i) { return tl::split_heads(matmul(x, w[2 * i]) + w[2 * i + 1], 2); };
  const Tensor q = projected(0), k = projected(1), v = projected(2);     // (B, H, L, d_head)
  const Tensor probs = softmax(matmul(q, k, false, true) / std::sqrt(4.0));
  const Tensor heads = tl::merge_heads(matmul(probs, v));                 // (B, L, d_model)
  expect_close(matmul(heads, w[6]) + w[7], expected, 1e-12);
}

// ---- Chapter 4: masks ----

TEST_CASE("exercise 4.1: with right padding, the look-ahead mask alone gives every real query the combined mask's output") {
  const Tensor src = note_source();
  const Tensor combined = logical_and(reshape(padding_mask_of(src), {5, 1, 10}), tl::causal_mask(10));
  const Tensor q = randn({5, 10, 4}, 9), k = randn({5, 10, 4}, 10), v = randn({5, 10, 4}, 11);
  const auto a = attention(q, k, v, tl::causal_mask(10)).to_doubles();
  const auto b = attention(q, k, v, combined).to_doubles();
  for (std::int64_t row = 0; row < 5; ++row)
    for (std::int64_t i = 0; i < 10; ++i)
      for (std::int64_t f = 0; f < 4; ++f) {
        const auto idx = static_cast<std::size_t>((row * 10 + i) * 4 + f);
        if (i < kLengths[row]) CHECK(a[idx] == doctest::Approx(b[idx]).epsilon(1e-12));   // real queries: equal
      }
}

TEST_CASE("exercise 4.2: TensorFlow's mask (1 = hide) is the logical_not of ctrax's") {
  const Tensor src = note_source();
  const Tensor tf_mask = equal(src, Tensor::scalar(0, DType::int32));   // tf.cast(tf.math.equal(x, 0))
  expect_close(logical_not(tf_mask).to(DType::float64), reshape(padding_mask_of(src), {5, 10}).to(DType::float64));
}

TEST_CASE("exercise 4.3: under EncoderDecoderMask no target query reads source padding") {
  const Tensor src = note_source();
  const Tensor padding = padding_mask_of(src);
  const Tensor x_d = Tensor::zeros({5, 12, 4});
  auto layer = tl::EncoderDecoderMask();
  const Tensor cross = init_and_run(layer, {x_d, padding})[0];          // (5, 1, 12, 10)
  REQUIRE(cross.shape() == Shape{5, 1, 12, 10});
  const Tensor alpha = weights(randn({5, 1, 12, 4}, 12), randn({5, 1, 10, 4}, 13), cross);
  const auto a = alpha.to_doubles();
  for (std::int64_t row = 0; row < 5; ++row)
    for (std::int64_t i = 0; i < 12; ++i)
      for (std::int64_t j = kLengths[row]; j < 10; ++j) CHECK(a[static_cast<std::size_t>((row * 12 + i) * 10 + j)] == 0.0);
}

TEST_CASE("exercise 4.4: implement it — the look-ahead and padding masks from comparisons") {
  const Tensor src = note_source();                                        // (5, 10)
  std::vector<double> positions(10);
  std::iota(positions.begin(), positions.end(), 0.0);
  const Tensor i = Tensor::from_doubles(positions, {10, 1}, DType::int32);  // query position, a column
  const Tensor j = Tensor::from_doubles(positions, {1, 10}, DType::int32);  // key position, a row
  const Tensor look_ahead = logical_not(greater(j, i));                     // j ≤ i, (10, 10)
  const Tensor padding = reshape(not_equal(src, Tensor::scalar(0, DType::int32)), {5, 1, 1, 10});
  expect_close(look_ahead.to(DType::float64), reshape(tl::causal_mask(10), {10, 10}).to(DType::float64), 0);
  expect_close(padding.to(DType::float64), padding_mask_of(src).to(DType::float64), 0);
  // Broadcast together: (5, 1, 10, 10). Row 3 (4 tokens) lets query i see min(i + 1, 4) keys.
  const auto combined = logical_and(padding, look_ahead).to_doubles();
  REQUIRE(combined.size() == 5 * 10 * 10);
  double seen = 0;
  for (std::size_t e = 300; e < 400; ++e) seen += combined[e];
  CHECK(seen == 1 + 2 + 3 + 4 * 7);
}

// ---- Chapter 5: positions ----

namespace {
Tensor sinusoid_table() {   // PositionalEncoding's initial table, (100, 128)
  auto pe = tl::PositionalEncoding(100);
  pe->init(ShapeDtype{{1, 100, 128}, DType::float64}, Rng(0));
  return pe->weights()[0];
}
double row_dot(const std::vector<double>& t, std::int64_t i, std::int64_t j, std::int64_t d) {
  double s = 0;
  for (std::int64_t f = 0; f < d; ++f) s += t[static_cast<std::size_t>(i * d + f)] * t[static_cast<std::size_t>(j * d + f)];
  return s;
}
}  // namespace

TEST_CASE("exercise 5.1: p_i · p_j depends on i − j only") {
  const auto t = sinusoid_table().to_doubles();
  CHECK(row_dot(t, 3, 7, 128) == doctest::Approx(row_dot(t, 40, 44, 128)).epsilon(1e-6));
  CHECK(row_dot(t, 0, 10, 128) == doctest::Approx(row_dot(t, 55, 65, 128)).epsilon(1e-6));
  CHECK(row_dot(t, 5, 5, 128) == doctest::Approx(64.0).epsilon(1e-6));   // d/2 pairs of sin² + cos²
  CHECK(row_dot(t, 5, 5, 128) > row_dot(t, 5, 6, 128));
}

TEST_CASE("exercise 5.2: moving s positions rotates each (sin, cos) pair by ω_k·s") {
  const auto t = sinusoid_table().to_doubles();
  const std::int64_t d = 128, i = 17, s = 9;
  for (const std::int64_t k : {0, 5, 30}) {
    const double w = std::pow(10000.0, -2.0 * static_cast<double>(k) / static_cast<double>(d));
    const double sn = t[static_cast<std::size_t>(i * d + 2 * k)], cs = t[static_cast<std::size_t>(i * d + 2 * k + 1)];
    CHECK(std::cos(w * s) * sn + std::sin(w * s) * cs == doctest::Approx(t[static_cast<std::size_t>((i + s) * d + 2 * k)]).epsilon(1e-5));
    CHECK(-std::sin(w * s) * sn + std::cos(w * s) * cs == doctest::Approx(t[static_cast<std::size_t>((i + s) * d + 2 * k + 1)]).epsilon(1e-5));
  }
}

TEST_CASE("exercise 5.3: rotary scores depend on the offset only") {
  const Tensor q = randn({1, 1, 8}, 14), k = randn({1, 1, 8}, 15);
  auto score = [&](std::int64_t m, std::int64_t n) { return sum(tl::rotate(q, m) * tl::rotate(k, n)).item(); };
  CHECK(score(3, 7) == doctest::Approx(score(8, 12)).epsilon(1e-10));
  CHECK(score(0, 20) == doctest::Approx(score(31, 51)).epsilon(1e-10));
  CHECK(score(3, 7) != doctest::Approx(score(3, 8)).epsilon(1e-6));
}

TEST_CASE("exercise 5.4: ALiBi by hand — scores minus m_h·(i − j), causal, softmax — equals the attention op") {
  const int H = 4;
  const Tensor q = randn({H, 6, 8}, 31), k = randn({H, 6, 8}, 32), v = randn({H, 6, 8}, 33);   // slice n: head n
  const Tensor causal = tl::causal_mask(6);
  const std::vector<double> m = alibi_slopes(H);
  CHECK(m == std::vector<double>{0.25, 0.0625, 0.015625, 0.00390625});   // 2^(−8h/4), h = 1 … 4
  std::vector<double> bias;
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 6; ++j) bias.push_back(-m[static_cast<std::size_t>(h)] * std::abs(i - j));
  const Tensor scores = matmul(q, k, false, true) / std::sqrt(8.0) + Tensor::from_doubles(bias, {H, 6, 6}, DType::float64);
  const Tensor masked = where(causal, scores, Tensor::full({1}, -1e9, DType::float64));
  expect_close(matmul(softmax(masked), v), attention(q, k, v, causal, Tensor(), 0.0, {.slopes = m}), 1e-12);
}

// ---- Chapter 6: the block ----

TEST_CASE("exercise 6.1: LayerNorm of [1, 2, 3, 4] by the formula") {
  auto ln = tl::LayerNorm();
  const Tensor y = init_and_run(ln, {tensor({1.0, 2.0, 3.0, 4.0}, {1, 4})})[0];
  const double mu = 2.5, var = 1.25, r = 1 / std::sqrt(var + 1e-6);
  expect_tensor(y, {1, 4}, {(1 - mu) * r, (2 - mu) * r, (3 - mu) * r, (4 - mu) * r}, 1e-12);
}

TEST_CASE("exercise 6.2: the feed-forward block treats each position on its own") {
  auto ff = tl::Serial(models::FeedForwardBlock(8, 16, {.dropout = 0.0, .mode = Mode::eval}));
  const Tensor x = randn({1, 5, 8}, 16);
  const Tensor y = init_and_run(ff, {x})[0];
  Tensor x2 = x.clone();
  for (int f = 0; f < 8; ++f) x2.data<double>()[2 * 8 + f] += 1.0;   // change position 2
  const auto a = y.to_doubles(), b = (*ff)(Stack{x2})[0].to_doubles();
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t f = 0; f < 8; ++f) {
      const auto idx = static_cast<std::size_t>(i * 8 + f);
      if (i != 2) CHECK(a[idx] == b[idx]);
    }
  CHECK(a[2 * 8] != b[2 * 8]);
}

TEST_CASE("exercise 6.3: a post-norm block's output is normalised at every position; a pre-norm block's is not") {
  const Tensor x = randn({2, 6, 16}, 17) * 3.0;
  for (const auto norm : {models::Norm::post, models::Norm::pre}) {
    auto block = tl::Serial(models::DecoderBlock({.d_model = 16, .d_ff = 32, .n_heads = 2, .max_len = 8, .dropout = 0.0,
                                                  .mode = Mode::eval, .norm = norm}));
    const auto y = init_and_run(block, {x})[0].to_doubles();
    double worst = 0;   // the largest |variance − 1| over positions
    for (std::int64_t p = 0; p < 12; ++p) {
      double mean = 0, var = 0;
      for (int f = 0; f < 16; ++f) mean += y[static_cast<std::size_t>(p * 16 + f)] / 16;
      for (int f = 0; f < 16; ++f) var += std::pow(y[static_cast<std::size_t>(p * 16 + f)] - mean, 2) / 16;
      worst = std::max(worst, std::abs(var - 1));
    }
    if (norm == models::Norm::post) CHECK(worst < 1e-4);
    else CHECK(worst > 0.5);
  }
}

TEST_CASE("exercise 6.4: implement it — a pre-norm decoder block from Residual, LayerNorm, CausalAttention and Dense") {
  const models::TransformerConfig c{.d_model = 8, .d_ff = 16, .n_heads = 2, .max_len = 8, .dropout = 0.0, .mode = Mode::eval};
  auto block = tl::Serial(models::DecoderBlock(c));
  auto mine = tl::Serial(tl::Residual(tl::LayerNorm(), tl::CausalAttention(8, {.n_heads = 2, .mode = Mode::eval})),
                         tl::Residual(tl::LayerNorm(), tl::Dense(16), tl::Relu(), tl::Dense(8)));
  const Tensor x = randn({2, 5, 8}, 41);
  const Tensor expected = init_and_run(block, {x})[0];
  mine->init(signature_of(Stack{x}));
  CHECK(mine->n_params() == block->n_params());
  mine->set_all_weights(block->all_weights());   // in order: γ β, W_q b_q … W_o b_o, γ β, W_1 b_1, W_2 b_2
  expect_close((*mine)(Stack{x})[0], expected, 1e-12);
}

// ---- Chapter 7: the three Transformers ----

TEST_CASE("exercise 7.1: TransformerEncoder's parameters, counted by the formulas") {
  const std::int64_t V = 1000, C = 2, d = 32, f = 64, N = 2, M = 50;
  auto enc = models::TransformerEncoder(V, C, {.d_model = d, .d_ff = f, .n_layers = N, .n_heads = 4, .max_len = M});
  enc->init(ShapeDtype{{1, 8}, DType::int32});
  const std::int64_t block = 2 * 2 * d + 4 * (d * d + d) + 2 * d * f + f + d;
  CHECK(enc->n_params() == V * d + M * d + N * block + 2 * d + (d * C + C));
}

TEST_CASE("exercise 7.2: TransformerLM's logits at position i do not depend on tokens i, i+1, …") {
  auto lm = models::TransformerLM(20, {.d_model = 16, .d_ff = 32, .n_layers = 2, .n_heads = 2, .max_len = 12, .mode = Mode::eval});
  const Tensor a = tensor({3, 5, 7, 9, 11, 13, 15, 17}, {1, 8});
  const Tensor b = tensor({3, 5, 7, 9, 2, 4, 6, 8}, {1, 8});   // tokens 4… changed
  const auto la = init_and_run(lm, {a})[0].to_doubles(), lb = (*lm)(Stack{b})[0].to_doubles();
  for (std::size_t i = 0; i < 5 * 20; ++i) CHECK(la[i] == lb[i]);     // positions 0…4 read tokens 0…3 only
  CHECK(la[5 * 20] != lb[5 * 20]);                                     // position 5 reads token 4
}

TEST_CASE("exercise 7.3: one vocabulary, one embedding table") {
  auto shared = models::Transformer(30, std::nullopt, {.d_model = 8, .d_ff = 16, .n_layers = 1, .n_heads = 2, .max_len = 10});
  auto separate = models::Transformer(30, 30, {.d_model = 8, .d_ff = 16, .n_layers = 1, .n_heads = 2, .max_len = 10});
  const Signature in = {ShapeDtype{{1, 4}, DType::int32}, ShapeDtype{{1, 4}, DType::int32}};
  shared->init(in);
  separate->init(in);
  auto tables = [](const LayerPtr& m) {
    int n = 0;
    for (const Tensor& w : m->all_weights()) n += w.shape() == Shape{30, 8};
    return n;
  };
  CHECK(tables(shared) == 1);
  CHECK(tables(separate) == 2);
  CHECK(separate->n_params() - shared->n_params() == 30 * 8);
}

TEST_CASE("exercise 7.4: implement it — TransformerLM from ShiftRight, Embedding, PositionalEncoding, blocks, LayerNorm and Dense") {
  const models::TransformerConfig c{.d_model = 16, .d_ff = 32, .n_layers = 2, .n_heads = 2, .max_len = 12, .mode = Mode::eval};
  auto lm = models::TransformerLM(20, c);
  auto mine = tl::Serial(tl::ShiftRight({.mode = Mode::eval}), tl::Embedding(20, 16), tl::PositionalEncoding(12, {.mode = Mode::eval}),
                         models::DecoderBlock(c), models::DecoderBlock(c), tl::LayerNorm(), tl::Dense(20));
  const Tensor tokens = tensor({3, 5, 7, 9, 11, 13, 15, 17}, {1, 8});
  const Tensor expected = init_and_run(lm, {tokens})[0];
  mine->init(signature_of(Stack{tokens}));
  CHECK(mine->n_params() == lm->n_params());
  mine->set_all_weights(lm->all_weights());      // eval mode: the Dropout layers have no weights
  expect_close((*mine)(Stack{tokens})[0], expected, 1e-12);
}

// ---- Chapter 8: training ----

TEST_CASE("exercise 8.1: with label smoothing the smallest loss is the entropy of the smoothed target") {
  const double eps = 0.1, C = 4;
  const double hi = 1 - eps + eps / C, lo = eps / C;   // p = (0.925, 0.025, 0.025, 0.025)
  const double entropy = -(hi * std::log(hi) + 3 * lo * std::log(lo));
  const Tensor logits = tensor({std::log(hi), std::log(lo), std::log(lo), std::log(lo)}, {1, 4});
  auto loss = tl::WeightedCategoryCrossEntropy(eps);
  const Tensor value = init_and_run(loss, {logits, tensor({0}, {1}), tensor({1.0}, {1})})[0];
  CHECK(value.item() == doctest::Approx(entropy).epsilon(1e-9));
  CHECK(entropy > 0.3);   // ≈ 0.34 nats: the floor, however sure the model
}

TEST_CASE("exercise 8.2: noam(512, 4000) peaks at step 4000 at 1/√(512·4000), then decays as 1/√step") {
  const auto noam = train::noam(512, 4000);
  const double peak = 1 / std::sqrt(512.0 * 4000.0);
  CHECK(noam(4000) == doctest::Approx(peak).epsilon(1e-12));
  CHECK(noam(3999) < noam(4000));
  CHECK(noam(4001) < noam(4000));
  CHECK(noam(16000) == doctest::Approx(peak / 2).epsilon(1e-12));   // 4× the steps, half the rate
  const auto rsqrt = train::warmup_and_rsqrt_decay(4000, peak);
  CHECK(rsqrt(16000) == doctest::Approx(noam(16000) * std::sqrt(4001.0 / 4000.0)).epsilon(1e-12));
}

TEST_CASE("exercise 8.3: after one Adam step the bias-corrected m̂ is the gradient: w moves by lr·g/(|g| + ε)") {
  Tensor w = tensor({1.0f, -2.0f, 0.5f}, {3});
  const Tensor g = tensor({0.3f, -0.02f, 4.0f}, {3});
  auto opt = train::Adam({.learning_rate = 0.1, .weight_decay_rate = 0});
  std::vector<Tensor> weights = {w};
  opt->update(1, 0.1, weights, {g});
  const auto before = std::vector<double>{1.0, -2.0, 0.5}, grad = g.to_doubles(), after = weights[0].to_doubles();
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(after[i] == doctest::Approx(before[i] - 0.1 * grad[i] / (std::abs(grad[i]) + 1e-5)).epsilon(1e-5));
}

TEST_CASE("exercise 8.4: implement it — label-smoothed, weighted cross-entropy and its gradient by hand") {
  const double eps = 0.1;
  const std::int64_t C = 5;
  Tensor logits = randn({2, 3, C}, 51);
  logits.requires_grad_();
  const Tensor targets = tensor({1, 4, 0, 2, 2, 3}, {2, 3});
  const Tensor w = tensor({1.0, 1.0, 0.0, 1.0, 0.5, 1.0}, {2, 3});
  const Tensor q = one_hot(targets, C, DType::float64) * (1 - eps) + eps / static_cast<double>(C);
  const Tensor per_position = -sum(q * log_softmax(logits), {-1});          // −Σ_c q_c log p_c, (2, 3)
  const double mine = (sum(per_position * w) / sum(w)).item();
  auto loss = tl::WeightedCategoryCrossEntropy(eps);
  const Tensor value = init_and_run(loss, {logits, targets, w})[0];
  CHECK(value.item() == doctest::Approx(mine).epsilon(1e-12));
  // ∂loss/∂z = w·(softmax(z) − q) / Σw: what the model learns from, position by position.
  const Tensor dz = grad(value, {logits})[0];
  expect_close(dz, (softmax(logits) - q) * reshape(w, {2, 3, 1}) / sum(w).item(), 1e-12);
}

// ---- Chapter 9: decoding ----

namespace {
// A small TransformerLM in eval and predict mode with the same weights.
std::pair<LayerPtr, LayerPtr> lm_pair() {
  auto eval = models::TransformerLM(12, {.d_model = 16, .d_ff = 32, .n_layers = 1, .n_heads = 2, .max_len = 16, .mode = Mode::eval});
  eval->init(ShapeDtype{{1, 10}, DType::int32}, Rng(4));
  auto predict = models::TransformerLM(12, {.d_model = 16, .d_ff = 32, .n_layers = 1, .n_heads = 2, .max_len = 16, .mode = Mode::predict});
  predict->init(ShapeDtype{{1, 1}, DType::int32});
  predict->set_all_weights(eval->all_weights());
  return {eval, predict};
}
}  // namespace

TEST_CASE("exercise 9.1: greedy decoding takes the eval model's argmax at every step") {
  auto [eval, predict] = lm_pair();
  const Tensor prompt = tensor({3, 4}, {1, 2});
  const Tensor gen = decode::autoregressive_sample(*predict, prompt, 1, {.temperature = 0, .eos_id = -1, .max_length = 6});
  std::vector<double> text = {3, 4};
  for (double t : gen.to_doubles()) text.push_back(t);
  const auto logits = (*eval)(Stack{Tensor::from_doubles(text, {1, 8}, DType::int32)})[0].to_doubles();   // (1, 8, 12)
  for (std::size_t i = 2; i < 8; ++i) {   // logits at position i score token i (ShiftRight)
    const auto row = logits.begin() + static_cast<std::ptrdiff_t>(i * 12);
    CHECK(std::max_element(row, row + 12) - row == static_cast<std::ptrdiff_t>(text[i]));
  }
}

TEST_CASE("exercise 9.2: sampling among the top 1 is greedy, whatever the temperature and seed") {
  auto [eval, predict] = lm_pair();
  const Tensor prompt = tensor({5}, {1, 1});
  const Tensor greedy = decode::autoregressive_sample(*predict, prompt, 1, {.temperature = 0, .eos_id = -1, .max_length = 8});
  for (const std::uint64_t seed : {1, 2, 3}) {
    const Tensor top1 = decode::autoregressive_sample(*predict, prompt, 1,
                                                      {.temperature = 2.0, .top_k = 1, .eos_id = -1, .max_length = 8, .seed = seed});
    CHECK(top1.to_doubles() == greedy.to_doubles());
  }
}

TEST_CASE("exercise 9.3: a greedy loop written by hand equals autoregressive_sample at temperature 0") {
  auto [eval, predict] = lm_pair();
  const Tensor expected = decode::autoregressive_sample(*predict, Tensor(), 1, {.temperature = 0, .eos_id = -1, .max_length = 8});
  decode::start_decoding(*predict, Tensor(), 1);
  std::vector<double> mine;
  std::int32_t token = 0;                       // the start token
  for (int t = 0; t < 8; ++t) {
    const std::vector<double> lp = decode::next_token_log_probs(*predict, Tensor(), decode::column({token})).to_doubles();
    token = static_cast<std::int32_t>(std::max_element(lp.begin(), lp.end()) - lp.begin());
    mine.push_back(token);
  }
  CHECK(mine == expected.to_doubles());
}

// ---- Chapter 10: real data ----

TEST_CASE("exercise 10.1: BLEU of a perfect translation is 100, and one wrong word costs every n-gram order") {
  const std::vector<std::string> ref = {"ein Mann mit einem orangefarbenen Hut starrt auf etwas ."};
  CHECK(data::corpus_bleu(ref, {ref}).score == doctest::Approx(100.0));
  const auto one_off = data::corpus_bleu({"ein Mann mit einem roten Hut starrt auf etwas ."}, {ref});
  CHECK(one_off.score < 100.0);
  for (double p : one_off.precisions) CHECK(p < 100.0);
}

TEST_CASE("exercise 10.2: the byte tokenizer reads Korean as UTF-8 bytes, id = byte + 2, and decodes it exactly") {
  const data::ByteTokenizer tok;
  const std::string text = "영화 볼래?";
  const auto ids = tok.encode(text);
  CHECK(ids.size() == text.size());   // one token per byte
  CHECK(ids.size() == 14);            // 3 bytes per Hangul syllable: 3 + 3 + 1 + 3 + 3 + 1
  CHECK(ids[0] == static_cast<unsigned char>(text[0]) + 2);
  CHECK(tok.decode(ids) == text);
}

TEST_CASE("exercise 10.3: implement it — BLEU of one sentence: clipped n-gram precisions, brevity penalty, geometric mean") {
  const std::string hyp = "the cat sat on the mat by the door", ref = "the black cat sat on a mat by the door";
  const auto words = [](const std::string& line) {
    std::vector<std::string> out;
    std::istringstream in(line);
    for (std::string word; in >> word;) out.push_back(word);
    return out;
  };
  const auto ngrams = [](const std::vector<std::string>& w, std::size_t n) {
    std::map<std::vector<std::string>, int> counts;
    for (std::size_t i = 0; i + n <= w.size(); ++i) ++counts[{w.begin() + static_cast<std::ptrdiff_t>(i), w.begin() + static_cast<std::ptrdiff_t>(i + n)}];
    return counts;
  };
  const auto h = words(hyp), r = words(ref);
  double log_sum = 0;
  std::array<double, 4> p{};
  for (std::size_t n = 1; n <= 4; ++n) {
    const auto hc = ngrams(h, n), rc = ngrams(r, n);
    int matched = 0, total = 0;
    for (const auto& [gram, count] : hc) {
      total += count;
      const auto it = rc.find(gram);
      matched += std::min(count, it == rc.end() ? 0 : it->second);   // clipped by the reference's count
    }
    p[n - 1] = 100.0 * matched / total;
    log_sum += std::log(static_cast<double>(matched) / total);
  }
  const double bp = h.size() > r.size() ? 1.0 : std::exp(1.0 - static_cast<double>(r.size()) / static_cast<double>(h.size()));
  const data::BleuScore bleu = data::corpus_bleu({hyp}, {{ref}});
  for (std::size_t n = 0; n < 4; ++n) CHECK(bleu.precisions[n] == doctest::Approx(p[n]).epsilon(1e-12));
  CHECK(p[3] == doctest::Approx(100.0 / 6));   // of six 4-grams only "mat by the door" is in the reference
  CHECK(bleu.brevity_penalty == doctest::Approx(bp).epsilon(1e-12));
  CHECK(bleu.score == doctest::Approx(100 * bp * std::exp(log_sum / 4)).epsilon(1e-12));
}

// ---- Chapter 11: performance ----

TEST_CASE("exercise 11.1: the fused attention op equals the separate ops, causal mask and all") {
  const Tensor q = randn({3, 9, 4}, 20), k = randn({3, 9, 4}, 21), v = randn({3, 9, 5}, 22);
  const Tensor fused = attention(q, k, v, tl::causal_mask(9));
  expect_close(fused, matmul(weights(q, k, tl::causal_mask(9)), v), 1e-12);
}

TEST_CASE("exercise 11.2: implement it — causal attention in query blocks, each reading only the keys it sees") {
  const std::int64_t L = 12, block = 4;
  const Tensor q = randn({2, L, 4}, 23), k = randn({2, L, 4}, 24), v = randn({2, L, 5}, 25);
  std::vector<Tensor> rows;
  for (std::int64_t b = 0; b < L / block; ++b) {
    const std::int64_t first = b * block, seen = first + block;   // keys 0 … seen − 1
    const Tensor mask = slice(slice(tl::causal_mask(L), -2, first, seen), -1, 0, seen);
    rows.push_back(matmul(weights(slice(q, 1, first, seen), slice(k, 1, 0, seen), mask), slice(v, 1, 0, seen)));
  }
  expect_close(concatenate(rows, 1), attention(q, k, v, tl::causal_mask(L)), 1e-12);
}

// ---- Chapter 12: more than one machine ----

namespace {
// Rows [a, b) of every item of a batch: what process r of K keeps.
Stack rows_of(const Stack& batch, std::int64_t a, std::int64_t b) {
  Stack out;
  for (const Tensor& x : batch) out.push_back(slice(x, 0, a, b));
  return out;
}
double sum_of(const Tensor& w) {
  double s = 0;
  for (double x : w.to_doubles()) s += x;
  return s;
}
}  // namespace

TEST_CASE("exercise 12.1: the processes' losses weighted by their share of the weight give the batch's loss; their plain mean does not") {
  // Two rows of 4 positions; row 1 is padding but for one token.
  const Tensor logits = randn({2, 4, 5}, 30);
  const Tensor targets = tensor({1, 2, 3, 4, 0, 0, 0, 0}, {2, 4});
  const Tensor w = tensor({1.f, 1.f, 1.f, 1.f, 1.f, 0.f, 0.f, 0.f}, {2, 4});
  auto loss = tl::WeightedCategoryCrossEntropy();
  const Stack batch{logits, targets, w};
  loss->init(signature_of(batch));
  const double whole = (*loss)(batch)[0].item();
  const Stack p0 = rows_of(batch, 0, 1), p1 = rows_of(batch, 1, 2);
  const double L0 = (*loss)(p0)[0].item(), L1 = (*loss)(p1)[0].item();
  const double W = sum_of(w), W0 = sum_of(p0[2]), W1 = sum_of(p1[2]);
  CHECK(whole == doctest::Approx(W0 / W * L0 + W1 / W * L1).epsilon(1e-12));
  CHECK(std::abs((L0 + L1) / 2 - whole) > 1e-3);   // the single token would weigh as much as four
}

TEST_CASE("exercise 12.2: a row window counts a row's elements, not the draw's first axis") {
  // An attention-dropout mask is (B·H, L, L): a process holding rows [2, 4) of B = 4 with H = 3
  // heads needs slices [6, 12) of the whole draw — first·(n/rows) = 2·(2·3·5·5 / 2) elements in.
  const Rng key = Rng(5).fold_in(9);
  const Tensor whole = key.bernoulli({4 * 3, 5, 5}, 0.9).to(DType::float32);
  // Process 1 of 2 (tests/core/dist/copies.hpp plays it) gets rows [2, 4) and their key.
  const dist::DataParallel second(std::make_shared<testing::Copies>(2, 1));
  const Rng mine_key = second.part({Tensor::zeros({4, 5})}, key).rng;
  const Tensor mine = mine_key.bernoulli({2 * 3, 5, 5}, 0.9).to(DType::float32);
  expect_close(mine, slice(whole, 0, 6, 12), 0);
  // Counting by the first axis (6 slices as 6 rows) would start at element 2·25: another mask.
  const Tensor wrong = detail::with_rows(key, 2, 6).bernoulli({6, 5, 5}, 0.9).to(DType::float32);
  CHECK(wrong.to_doubles() != slice(whole, 0, 6, 12).to_doubles());
}

TEST_CASE("exercise 12.3: rows of weight 0 leave a weighted metric unchanged (completing an evaluation batch)") {
  const Tensor logits = randn({5, 3, 4}, 31);
  const Tensor targets = tensor({0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2}, {5, 3});
  const Tensor w = Tensor::full({5, 3}, 1.0);
  auto accuracy = tl::WeightedCategoryAccuracy();
  auto loss = tl::WeightedCategoryCrossEntropy();
  const Stack batch{logits, targets, w};
  accuracy->init(signature_of(batch));
  loss->init(signature_of(batch));
  // 5 rows on 2 processes: a copy of row 0 with weight 0 makes 6 (process 0 of 1 sees them all).
  const Stack padded{concatenate({logits, slice(logits, 0, 0, 1)}, 0), concatenate({targets, slice(targets, 0, 0, 1)}, 0),
                     concatenate({w, Tensor::zeros({1, 3})}, 0)};
  const dist::BatchPart second = dist::DataParallel(std::make_shared<testing::Copies>(2, 1)).padded_part(batch, Rng(0));
  for (std::size_t i = 0; i < batch.size(); ++i)
    expect_close(second.rows[i].to(DType::float64), slice(padded[i], 0, 3, 6).to(DType::float64), 0);
  CHECK((*accuracy)(padded)[0].item() == doctest::Approx((*accuracy)(batch)[0].item()).epsilon(1e-12));
  CHECK((*loss)(padded)[0].item() == doctest::Approx((*loss)(batch)[0].item()).epsilon(1e-6));
}

TEST_CASE("exercise 12.4: implement it — two processes' gradients, weighted by their share and summed, are the batch's") {
  auto model = tl::Serial(tl::Dense(5), tl::WeightedCategoryCrossEntropy());   // (x, targets, w) → loss
  const Tensor x = randn({4, 3, 6}, 61);
  const Tensor targets = tensor({0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1}, {4, 3});
  const Tensor w = tensor({1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0}, {4, 3});
  const Stack batch{x, targets, w};
  model->init(signature_of(batch));
  const std::vector<Tensor> weights = model->all_weights();
  const std::vector<Tensor> whole = grad((*model)(batch)[0], weights);
  std::vector<Tensor> summed, mean;
  for (const Tensor& t : weights) {
    summed.push_back(Tensor::zeros(t.shape(), t.dtype()));
    mean.push_back(Tensor::zeros(t.shape(), t.dtype()));
  }
  for (const auto& [a, b] : {std::pair<std::int64_t, std::int64_t>{0, 2}, {2, 4}}) {   // process 0, process 1
    const Stack mine = rows_of(batch, a, b);
    const double share = sum_of(mine[2]) / sum_of(w);                                   // 6/9, then 3/9
    const std::vector<Tensor> g = grad((*model)(mine)[0], weights);
    for (std::size_t i = 0; i < g.size(); ++i) {
      summed[i] = summed[i] + g[i] * share;
      mean[i] = mean[i] + g[i] * 0.5;
    }
  }
  for (std::size_t i = 0; i < whole.size(); ++i) expect_close(summed[i], whole[i], 1e-12);
  const Tensor off = mean[0] - whole[0];
  CHECK(sum_of(off * off) > 1e-8);   // the plain mean weighs the 3 tokens of process 1 as much as the 6 of process 0
}

#include <doctest/doctest.h>

#include <cmath>

#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using V = std::vector<Tensor>;

namespace {

// The LSTM written step by step with ordinary ops: the definition the fused op must reproduce.
Tensor lstm_by_steps(const Tensor& gx, const Tensor& state0, const Tensor& w_h) {
  const std::int64_t L = gx.dim(1), n = gx.dim(2) / 4;
  Tensor c = slice(state0, 1, 0, n), h = slice(state0, 1, n, 2 * n);
  std::vector<Tensor> states;
  for (std::int64_t t = 0; t < L; ++t) {
    const Tensor g = squeeze(slice(gx, 1, t, t + 1), 1) + matmul(h, w_h);
    const Tensor i = slice(g, 1, 0, n), j = slice(g, 1, n, 2 * n), f = slice(g, 1, 2 * n, 3 * n),
                 o = slice(g, 1, 3 * n, 4 * n);
    c = c * sigmoid(f) + sigmoid(i) * tanh(j);
    h = tanh(c) * sigmoid(o);
    states.push_back(concatenate({c, h}, -1));
  }
  return stack(states, 1);
}

// The GRU, the same way.
Tensor gru_by_steps(const Tensor& gx_ur, const Tensor& gx_c, const Tensor& state0, const Tensor& w_ur,
                    const Tensor& w_c) {
  const std::int64_t L = gx_ur.dim(1), n = gx_c.dim(2);
  Tensor s = state0;
  std::vector<Tensor> states;
  for (std::int64_t t = 0; t < L; ++t) {
    const Tensor a = sigmoid(squeeze(slice(gx_ur, 1, t, t + 1), 1) + matmul(s, w_ur));
    const Tensor u = slice(a, 1, 0, n), r = slice(a, 1, n, 2 * n);
    const Tensor c = tanh(squeeze(slice(gx_c, 1, t, t + 1), 1) + matmul(r * s, w_c));
    s = u * s + (1.0 - u) * c;
    states.push_back(s);
  }
  return stack(states, 1);
}

}  // namespace

TEST_CASE("lstm_recurrence on literal values: one step from c = 1, h = 0 with zero pre-activations") {
  // Every gate is σ(0) = ½ and the candidate tanh(0) = 0: c₁ = 1·½ + ½·0 = ½, h₁ = tanh(½)·½.
  const Tensor S = lstm_recurrence(Tensor::zeros({1, 1, 4}, DType::float64), tensor({1.0, 0.0}, {1, 2}),
                                   Tensor::zeros({1, 4}, DType::float64));
  expect_tensor(S, {1, 1, 2}, {0.5, std::tanh(0.5) * 0.5}, 1e-15);
}

TEST_CASE("gru_recurrence on literal values: one step") {
  // u = r = σ(0) = ½; c = tanh(0 + (½·2)·w_c) = tanh(1·0.5); s₁ = ½·2 + ½·tanh(0.5).
  const Tensor S = gru_recurrence(Tensor::zeros({1, 1, 2}, DType::float64), Tensor::zeros({1, 1, 1}, DType::float64),
                                  tensor({2.0}, {1, 1}), Tensor::zeros({1, 2}, DType::float64), tensor({0.5}, {1, 1}));
  expect_tensor(S, {1, 1, 1}, {1.0 + 0.5 * std::tanh(0.5)}, 1e-15);
}

TEST_CASE("lstm_recurrence equals the LSTM written step by step (f64 and f32, sizes past the parallel threshold)") {
  for (auto [B, L, n] : {std::tuple{2, 5, 3}, std::tuple{64, 3, 160}}) {
    const Tensor gx = randn({B, L, 4 * n}, 1), s0 = randn({B, 2 * n}, 2) * 0.5, w = randn({n, 4 * n}, 3) * 0.3;
    expect_close(lstm_recurrence(gx, s0, w), lstm_by_steps(gx, s0, w), 1e-12);
    expect_close(lstm_recurrence(gx.to(DType::float32), s0.to(DType::float32), w.to(DType::float32)),
                 lstm_by_steps(gx, s0, w), 2e-5);
  }
}

TEST_CASE("gru_recurrence equals the GRU written step by step") {
  for (auto [B, L, n] : {std::tuple{2, 5, 3}, std::tuple{64, 3, 300}}) {
    const Tensor gur = randn({B, L, 2 * n}, 4), gc = randn({B, L, n}, 5), s0 = randn({B, n}, 6) * 0.5,
                 wur = randn({n, 2 * n}, 7) * 0.3, wc = randn({n, n}, 8) * 0.3;
    expect_close(gru_recurrence(gur, gc, s0, wur, wc), gru_by_steps(gur, gc, s0, wur, wc), 1e-12);
  }
}

TEST_CASE("lstm_recurrence: gradients through time in every input") {
  expect_gradients([](const V& x) { return lstm_recurrence(x[0], x[1], x[2]); },
                   {randn({2, 4, 12}, 11), randn({2, 6}, 12) * 0.5, randn({3, 12}, 13) * 0.5});
}

TEST_CASE("gru_recurrence: gradients through time in every input") {
  expect_gradients([](const V& x) { return gru_recurrence(x[0], x[1], x[2], x[3], x[4]); },
                   {randn({2, 4, 6}, 21), randn({2, 4, 3}, 22), randn({2, 3}, 23) * 0.5, randn({3, 6}, 24) * 0.5,
                    randn({3, 3}, 25) * 0.5});
}

TEST_CASE("recurrences check their operands and work on meta tensors") {
  CHECK_THROWS_WITH_AS(lstm_recurrence(Tensor::zeros({2, 3, 8}), Tensor::zeros({2, 3}), Tensor::zeros({2, 8})),
                       "lstm_recurrence: state0 = [c, h] must be f32[2,4], got f32[2,3]", std::invalid_argument);
  CHECK_THROWS_AS(lstm_recurrence(Tensor::zeros({2, 3, 6}), Tensor::zeros({2, 3}), Tensor::zeros({2, 6})),
                  std::invalid_argument);
  CHECK_THROWS_AS(gru_recurrence(Tensor::zeros({2, 3, 4}), Tensor::zeros({2, 3, 3}), Tensor::zeros({2, 2}),
                                 Tensor::zeros({2, 4}), Tensor::zeros({2, 2})),
                  std::invalid_argument);
  const Tensor m = lstm_recurrence(Tensor::meta({2, 5, 8}, DType::float32), Tensor::zeros({2, 4}), Tensor::zeros({2, 8}));
  CHECK(m.is_meta());
  CHECK(m.shape() == Shape{2, 5, 4});
}

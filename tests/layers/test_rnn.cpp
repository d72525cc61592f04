#include <doctest/doctest.h>

#include <cmath>

#include "layers/layers.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

namespace {

double sigm(double v) { return 1 / (1 + std::exp(-v)); }

// The same recurrence through Scan's step-by-step loop: a Serial around the cell hides its
// scan_all, so Scan calls it once per position.
LayerPtr by_steps(LayerPtr cell, int multiplier) {
  return Serial(Branch(nullptr, MakeZeroState(multiplier)), Scan(Serial(std::move(cell)), 1), Select({0}, 2));
}

// Feeds x (B, L, d) to a predict-mode copy of `trained` one position at a time.
Tensor one_at_a_time(const LayerPtr& predict_model, const LayerPtr& trained, const Tensor& x) {
  predict_model->init(ShapeDtype{{x.dim(0), 1, x.dim(2)}, x.dtype()});
  predict_model->set_all_weights(trained->all_weights());
  std::vector<Tensor> ys;
  for (std::int64_t t = 0; t < x.dim(1); ++t) ys.push_back((*predict_model)(slice(x, 1, t, t + 1)));
  return concatenate(ys, 1);
}

}  // namespace

TEST_CASE("LSTMCell, one step on literal values, in Trax's gate order i, j, f, o") {
  auto cell = LSTMCell(1);
  init_and_run(cell, {tensor({1.0}, {1, 1}), tensor({1.0, 0.0}, {1, 2})});
  // W rows: x, h; columns: i, j, f, o. Only j reads x (weight 2); every bias 0.
  cell->set_all_weights({tensor({0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {2, 4}), Tensor::zeros({4}, DType::float64)});
  const Stack out = (*cell)(Stack{tensor({1.0}, {1, 1}), tensor({1.0, 0.0}, {1, 2})});
  const double c = 1.0 * sigm(0) + sigm(0) * std::tanh(2.0), h = std::tanh(c) * sigm(0);
  expect_tensor(out[0], {1, 1}, {h}, 1e-14);
  expect_tensor(out[1], {1, 2}, {c, h}, 1e-14);
}

TEST_CASE("GRUCell, one step on literal values") {
  auto cell = GRUCell(1);
  init_and_run(cell, {tensor({1.0}, {1, 1}), tensor({0.5}, {1, 1})});
  // W1 (x, s → u, r): u reads x with weight 1; W2 (x, r·s → c): c reads r·s with weight 2.
  cell->set_all_weights({tensor({1.0, 0.0, 0.0, 0.0}, {2, 2}), Tensor::zeros({2}, DType::float64),
                         tensor({0.0, 2.0}, {2, 1}), Tensor::zeros({1}, DType::float64)});
  const Stack out = (*cell)(Stack{tensor({1.0}, {1, 1}), tensor({0.5}, {1, 1})});
  const double u = sigm(1.0), r = sigm(0.0), c = std::tanh(2.0 * r * 0.5), s = u * 0.5 + (1 - u) * c;
  expect_tensor(out[0], {1, 1}, {s}, 1e-14);
  expect_tensor(out[1], {1, 1}, {s}, 1e-14);
}

TEST_CASE("cells are initialised: LSTM forget_bias 1.0 on the f gate alone (i, j, o at 0), GRU kernels U(±0.01) as Trax's") {
  auto lstm = LSTMCell(8);
  lstm->init(Signature{{{3, 8}, DType::float32}, {{3, 16}, DType::float32}}, Rng(1));
  CHECK(lstm->weights()[0].shape() == Shape{16, 32});
  const auto b = lstm->weights()[1].to_doubles();
  for (std::size_t k = 0; k < b.size(); ++k) {
    CAPTURE(k);
    CHECK(std::abs(b[k] - (k >= 16 && k < 24 ? 1.0 : 0.0)) < 1e-4);   // gates i, j, f, o of 8 each
  }
  auto custom = LSTMCell(8, 2.5);
  custom->init(Signature{{{3, 8}, DType::float32}, {{3, 16}, DType::float32}}, Rng(1));
  CHECK(std::abs(custom->weights()[1].to_doubles()[20] - 2.5) < 1e-4);
  CHECK(std::abs(custom->weights()[1].to_doubles()[4]) < 1e-4);
  auto gru = GRUCell(8);
  gru->init(Signature{{{3, 8}, DType::float32}, {{3, 8}, DType::float32}}, Rng(1));
  CHECK(gru->weights()[0].shape() == Shape{16, 16});
  CHECK(gru->weights()[2].shape() == Shape{16, 8});
  for (double w : gru->weights()[0].to_doubles()) CHECK(std::abs(w) <= 0.01);
  for (double b : gru->weights()[1].to_doubles()) CHECK(std::abs(b) < 1e-4);
}

TEST_CASE("LSTM and GRU print as Trax's, without their insides, and name their weights by path") {
  auto lstm = LSTM(8);
  CHECK(lstm->to_string() == "LSTM_8");
  CHECK(GRU(4)->to_string() == "GRU_4");
  CHECK(lstm->n_in() == 1);
  CHECK(lstm->n_out() == 1);
  CHECK(LSTM(8, {.return_state = true})->n_out() == 2);
  CHECK(LSTM(8, {.initial_state = true})->n_in() == 2);
  lstm->init(ShapeDtype{{2, 5, 8}, DType::float32});
  const auto named = lstm->named_weights();
  REQUIRE(named.size() == 2);
  CHECK(named[0].first == "LSTM_8/Scan[1]/LSTMCell[0]/w");
}

TEST_CASE("LSTM and GRU: all positions at once equal Scan's step-by-step loop (values and gradients)") {
  const Tensor x = randn({3, 6, 5}, 1);
  auto lstm = LSTM(5);
  const Tensor fast = init_and_run(lstm, {x}, 2)[0];
  auto slow = by_steps(LSTMCell(5), 2);
  init_and_run(slow, {x});
  slow->set_all_weights(lstm->all_weights());
  expect_close(fast, (*slow)(x), 1e-13);

  auto gru = GRU(5);
  const Tensor fast_gru = init_and_run(gru, {x}, 3)[0];
  auto slow_gru = by_steps(GRUCell(5), 1);
  init_and_run(slow_gru, {x});
  slow_gru->set_all_weights(gru->all_weights());
  expect_close(fast_gru, (*slow_gru)(x), 1e-13);

  // Gradients of the two paths agree too (each is checked by finite differences below).
  const auto g_fast = grad(sum((*lstm)(x) * x), lstm->all_weights());
  const auto g_slow = grad(sum((*slow)(x) * x), slow->all_weights());
  for (std::size_t i = 0; i < g_fast.size(); ++i) expect_close(g_fast[i], g_slow[i], 1e-12);
}

TEST_CASE("LSTM and GRU: gradients through time in the inputs and every weight") {
  const Tensor x = randn({2, 4, 3}, 4);
  auto lstm = LSTM(3);
  init_and_run(lstm, {x}, 5);
  expect_layer_gradients(lstm, {x});
  auto gru = GRU(3);
  init_and_run(gru, {x}, 6);
  expect_layer_gradients(gru, {x});
  auto slow = by_steps(LSTMCell(3), 2);   // and through the step-by-step path
  init_and_run(slow, {x}, 7);
  expect_layer_gradients(slow, {x});
}

TEST_CASE("LSTM and GRU in predict mode: one position at a time equals the whole sequence") {
  const Tensor x = randn({2, 7, 4}, 8);
  auto lstm = LSTM(4, {.mode = Mode::eval});
  const Tensor whole = init_and_run(lstm, {x}, 9)[0];
  expect_close(one_at_a_time(LSTM(4, {.mode = Mode::predict}), lstm, x), whole, 1e-13);
  auto gru = GRU(4, Mode::eval);
  const Tensor whole_gru = init_and_run(gru, {x}, 10)[0];
  expect_close(one_at_a_time(GRU(4, Mode::predict), gru, x), whole_gru, 1e-13);
}

TEST_CASE("LSTM with return_state and initial_state carries [c, h] on the stack") {
  const Tensor x = randn({2, 5, 3}, 11);
  auto first = LSTM(3, {.return_state = true});
  const Stack out = init_and_run(first, {x}, 12);
  REQUIRE(out.size() == 2);
  CHECK(out[1].shape() == Shape{2, 6});
  expect_close(slice(out[1], 1, 3, 6), squeeze(slice(out[0], 1, 4, 5), 1), 0);   // h_L is the last output
  // Continuing from that state equals running the longer sequence at once.
  const Tensor more = randn({2, 3, 3}, 13);
  auto cont = LSTM(3, {.initial_state = true});
  init_and_run(cont, {more, out[1]});
  cont->set_all_weights(first->all_weights());
  auto whole = LSTM(3);
  init_and_run(whole, {concatenate({x, more}, 1)});
  whole->set_all_weights(first->all_weights());
  expect_close((*cont)(Stack{more, out[1]})[0], slice((*whole)(concatenate({x, more}, 1)), 1, 5, 8), 1e-13);
}

TEST_CASE("recurrent layers say what is wrong") {
  CHECK_THROWS_WITH_AS(init_and_run(MakeZeroState(), {Tensor::zeros({2, 3})}),
                       doctest::Contains("rank 3 tensor (batch_size, sequence_length, feature_depth)"), LayerError);
  // Trax's LSTM makes its zero state from the input's depth: 6 ≠ 2·4.
  CHECK_THROWS_WITH_AS(init_and_run(LSTM(4), {Tensor::zeros({2, 3, 3})}), doctest::Contains("give it inputs of depth 4"),
                       LayerError);
  CHECK_THROWS_WITH_AS(init_and_run(GRU(4), {Tensor::zeros({2, 3, 3})}), doctest::Contains("give it inputs of depth 4"),
                       LayerError);
  CHECK_THROWS_AS(LSTMCell(0), std::invalid_argument);
}

TEST_CASE("SRU: one Dense for all gates, an element-wise recurrence and a √3 highway, on literal values") {
  // d = n = 1, W = [1, 2, 3] (r, f, y), b = 0, x = [1, 2]:
  //   c₁ = (1 − σ(2))·3,               h₁ = σ(1)·c₁ + (1 − σ(1))·1·√3
  //   c₂ = σ(4)·c₁ + (1 − σ(4))·6,      h₂ = σ(2)·c₂ + (1 − σ(2))·2·√3
  auto sru = SRU(1, nullptr, Mode::eval);
  const Tensor x = Tensor::from_doubles({1, 2}, {1, 2, 1}, DType::float64);
  init_and_run(sru, {x});
  sru->set_all_weights({Tensor::from_doubles({1, 2, 3}, {1, 3}, DType::float64), Tensor::zeros({3}, DType::float64)});
  const double c1 = (1 - sigm(2)) * 3, c2 = sigm(4) * c1 + (1 - sigm(4)) * 6;
  expect_tensor((*sru)(x), {1, 2, 1},
                {sigm(1) * c1 + (1 - sigm(1)) * std::sqrt(3.0), sigm(2) * c2 + (1 - sigm(2)) * 2 * std::sqrt(3.0)}, 1e-13);
  // With an activation on c (Tanh): h₁ = σ(1)·tanh(c₁) + (1 − σ(1))·√3.
  auto sru_tanh = SRU(1, Tanh(), Mode::eval);
  init_and_run(sru_tanh, {x});
  sru_tanh->set_all_weights(sru->all_weights());
  CHECK((*sru_tanh)(x).to_doubles()[0] == doctest::Approx(sigm(1) * std::tanh(c1) + (1 - sigm(1)) * std::sqrt(3.0)).epsilon(1e-13));
}

TEST_CASE("SRU prints as Trax's, learns through time, and decodes one position at a time") {
  auto sru = SRU(3);
  CHECK(sru->to_string() == "SRU_3");
  CHECK(sru->n_in() == 1);
  CHECK(sru->n_out() == 1);
  const Tensor x = randn({2, 4, 3}, 11);
  init_and_run(sru, {x}, 12);
  CHECK(sru->all_weights().size() == 2);   // Dense(3n)'s w and b, nothing else
  expect_layer_gradients(sru, {x});
  auto whole = SRU(3, nullptr, Mode::eval);
  const Tensor y = init_and_run(whole, {x}, 13)[0];
  expect_close(one_at_a_time(SRU(3, nullptr, Mode::predict), whole, x), y, 1e-13);
  CHECK_THROWS_WITH_AS(init_and_run(SRU(4), {x}), doctest::Contains("SRU's highway adds the input to the output"), LayerError);
}

TEST_CASE("ConvGRUCell: the Neural GPU's convolutional GRU, each gate its own SAME convolution") {
  auto cell = ConvGRUCell(4, {3, 3}, Mode::eval);
  const Tensor s = randn({2, 5, 5, 4}, 14);
  const Tensor out = init_and_run(cell, {s}, 15)[0];
  CHECK(out.shape() == s.shape());
  const auto w = cell->all_weights();   // update Conv, reset Conv, candidate Conv: (w, b) each
  REQUIRE(w.size() == 6);
  for (std::size_t i = 0; i < 6; i += 2) CHECK(w[i].shape() == Shape{3, 3, 4, 4});
  const WindowOptions same{.padding = Padding::same};
  const Tensor u = sigmoid(conv2d(s, w[0], same) + w[1] + 0.5);
  const Tensor r = sigmoid(conv2d(s, w[2], same) + w[3] + 0.5);
  const Tensor c = tanh(conv2d(r * s, w[4], same) + w[5]);
  expect_close(out, u * s + (1.0 - u) * c, 1e-13);
  CHECK(cell->to_string().find("AddSigmoidBias(0.5)") != std::string::npos);
  auto small = ConvGRUCell(2, {3, 3}, Mode::eval);
  const Tensor s_small = randn({1, 3, 4, 2}, 16);
  init_and_run(small, {s_small});
  expect_layer_gradients(small, {s_small});
  // GeneralGRUCell with a Dense transform is a GRU over the state alone.
  auto dense_cell = GeneralGRUCell([] { return Dense(3); }, {.dropout_rate_c = 0.0});
  CHECK(init_and_run(dense_cell, {randn({2, 3}, 17)})[0].shape() == Shape{2, 3});
}

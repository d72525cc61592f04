#include <doctest/doctest.h>

#include "layers/layers.hpp"
#include "models/rnn.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::models;

namespace {

const Tensor kSrc = tensor({4, 7, 2, 9, 0, 0, 5, 3, 8, 1, 6, 2}, {2, 6});   // row 0 padded
const Tensor kTgt = tensor({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
const Tensor kLM = tensor({3, 1, 4, 1, 5, 9, 2, 6, 5, 3}, {2, 5});

using MakeLM = std::function<LayerPtr(Mode)>;

// The encoder–decoder fed the source whole at every step and the target one token at a time
// reproduces its eval-mode log-probabilities (expect_lm_eval_equals_predict's rule for the target).
void expect_seq2seq_eval_equals_predict(const LSTMSeq2SeqAttnConfig& config) {
  auto c = config;
  c.mode = Mode::eval;
  auto eval = LSTMSeq2SeqAttn(11, 11, c);
  eval->init(signature_of(Stack{kSrc, kTgt}), Rng(3));
  const Tensor expected = (*eval)(Stack{kSrc, kTgt})[0];
  c.mode = Mode::predict;
  auto predict = LSTMSeq2SeqAttn(11, 11, c);
  predict->init({ShapeDtype{{2, 6}, DType::int32}, ShapeDtype{{2, 1}, DType::int32}}, Rng(8));
  predict->set_all_weights(eval->all_weights());
  std::vector<int> prev = {0, 0};
  for (int t = 0; t < 4; ++t) {
    const Stack out = (*predict)(Stack{kSrc, tensor({prev[0], prev[1]}, {2, 1})});
    expect_close(out[0], slice(expected, 1, t, t + 1), 1e-5);
    prev = {kTgt.data<std::int32_t>()[t], kTgt.data<std::int32_t>()[4 + t]};
  }
}

}  // namespace

TEST_CASE("RNNLM, GRULM and LSTMSeq2SeqAttn: tokens to log-probabilities of the right shapes") {
  auto rnnlm = RNNLM(11, {.d_model = 6});
  CHECK(rnnlm->init(ShapeDtype{{3, 5}, DType::int32}, Rng(1))[0].shape == Shape{3, 5, 11});
  auto grulm = GRULM(11, {.d_model = 6, .n_layers = 2});
  CHECK(grulm->init(ShapeDtype{{3, 5}, DType::int32}, Rng(1))[0].shape == Shape{3, 5, 11});
  auto s2s = LSTMSeq2SeqAttn(13, 11, {.d_model = 6});
  const Signature out = s2s->init(signature_of(Stack{kSrc, kTgt}), Rng(1));
  REQUIRE(out.size() == 2);
  CHECK(out[0].shape == Shape{2, 4, 11});
  CHECK(out[1].shape == Shape{2, 4});   // the targets ride along, as in Trax
  // log-probabilities: every row sums to one
  const Tensor p = exp((*s2s)(Stack{kSrc, kTgt})[0]);
  expect_close(sum(p, {-1}), Tensor::ones({2, 4}), 1e-5);
}

TEST_CASE("the models print as Trax builds them") {
  CHECK(RNNLM(11, {.d_model = 6})->to_string() == R"(Serial[
  ShiftRight(1)
  Embedding_11_6
  Dropout
  Branch_out2[
    None
    MakeZeroState
  ]
  Scan_in2_out2[
    Serial_in2_out2[
      Parallel_in2_out3[
        Serial
        Split_out2
      ]
      Serial_in3_out3[
        LSTMCell_in2_out2
        Select[0,2,1]_in3_out3
        LSTMCell_in2_out2
        Select[0,2,1]_in3_out3
      ]
      Parallel_in3_out2[
        Serial
        Concatenate_in2
      ]
    ]
  ]
  Select[0]_in2
  Dense_11
  LogSoftmax
])");
  CHECK(GRULM(11, {.d_model = 6, .n_layers = 2})->to_string() ==
        "Serial[\n  ShiftRight(1)\n  Embedding_11_6\n  GRU_6\n  GRU_6\n  Dense_11\n  LogSoftmax\n]");
  const std::string s2s = LSTMSeq2SeqAttn(11, 11, {.d_model = 6})->to_string();
  CHECK(s2s.starts_with(R"(Serial_in2_out2[
  Select[0,1,0,1]_in2_out4
  Parallel_in2_out2[
    Serial[
      Embedding_11_6
      LSTM_6
      LSTM_6
    ]
    Serial[
      ShiftRight(1)
      Embedding_11_6
      LSTM_6
    ]
  ]
  PrepareAttentionInputs_in3_out4
  Serial_in4_out2[
    Branch_in4_out3[
      None
      Serial_in4_out2[)"));
  CHECK(s2s.ends_with(R"(    Add_in2
  ]
  Select[0,2]_in3_out2
  LSTM_6
  LSTM_6
  Dense_11
  LogSoftmax
])"));
  const std::string luong = LSTMSeq2SeqAttn(11, 11, {.d_model = 6, .score = layers::Score::additive})->to_string();
  CHECK_MESSAGE(luong.find(R"(  Serial_in4_out2[
    Select[0,1,3,0,3]_in4_out5
    ScoreAttention_additive_in3
    LuongOutput_in2[
      Concatenate_in2
      Dense_6
      Tanh
    ]
  ])") != std::string::npos, luong);
  // scale_embeddings: ScaleBy(√d) after both embeddings; 0 decoder layers: Dense right after.
  const std::string scaled =
      LSTMSeq2SeqAttn(11, 11, {.d_model = 16, .n_decoder_layers = 0, .scale_embeddings = true})->to_string();
  CHECK_MESSAGE(scaled.find("Embedding_11_16\n      ScaleBy(4)\n      LSTM_16") != std::string::npos, scaled);
  CHECK_MESSAGE(scaled.find("Embedding_11_16\n      ScaleBy(4)\n      LSTM_16\n    ]\n  ]") != std::string::npos, scaled);
  CHECK_MESSAGE(scaled.find("Select[0,2]_in3_out2\n  Dense_11") != std::string::npos, scaled);
}

TEST_CASE("LSTMSeq2SeqAttn can hand out its attention weights: rows of α sum to one, padding gets none") {
  auto plain = LSTMSeq2SeqAttn(11, 11, {.d_model = 6, .mode = Mode::eval, .score = layers::Score::general});
  plain->init(signature_of(Stack{kSrc, kTgt}), Rng(4));
  auto reader = LSTMSeq2SeqAttn(11, 11, {.d_model = 6, .mode = Mode::eval, .score = layers::Score::general,
                                          .return_attention_weights = true});
  const Signature out = reader->init(signature_of(Stack{kSrc, kTgt}), Rng(5));
  REQUIRE(out.size() == 3);
  CHECK(out[2].shape == Shape{2, 4, 6});
  reader->set_all_weights(plain->all_weights());
  const Stack got = (*reader)(Stack{kSrc, kTgt});
  expect_close(got[0], (*plain)(Stack{kSrc, kTgt})[0], 0);   // the same model, one more output
  expect_close(sum(got[2], {-1}), Tensor::ones({2, 4}), 1e-6);
  const auto a = got[2].to_doubles();
  for (int t = 0; t < 4; ++t) CHECK(a[t * 6 + 4] + a[t * 6 + 5] == 0.0);   // row 0's two padded source tokens
  CHECK_THROWS_AS(LSTMSeq2SeqAttn(11, 11, {.return_attention_weights = true}), std::invalid_argument);
}

TEST_CASE("the models are deterministic under a seed") {
  for (auto make : {MakeLM([](Mode m) { return RNNLM(11, {.d_model = 6, .mode = m}); }),
                    MakeLM([](Mode m) { return GRULM(11, {.d_model = 6, .mode = m}); })}) {
    const Tensor x = tensor({3, 1, 4, 1, 5, 9}, {2, 3});
    auto a = make(Mode::train), b = make(Mode::train);
    a->init(signature_of(Stack{x}), Rng(5));
    b->init(signature_of(Stack{x}), Rng(5));
    a->set_rng(Rng(6));
    b->set_rng(Rng(6));
    expect_close((*a)(x), (*b)(x), 0);
  }
}

TEST_CASE("eval == predict: RNNLM (LSTM and GRU cells) and GRULM one token at a time") {
  expect_lm_eval_equals_predict([](Mode m) { return RNNLM(11, {.d_model = 6, .mode = m}); }, kLM);
  expect_lm_eval_equals_predict([](Mode m) {
    return RNNLM(11, {.d_model = 6, .n_layers = 3, .rnn_cell = [](std::int64_t n) { return layers::GRUCell(n); },
                      .rnn_cell_d_state_multiplier = 1, .mode = m});
  }, kLM);
  expect_lm_eval_equals_predict([](Mode m) { return GRULM(11, {.d_model = 6, .n_layers = 2, .mode = m}); }, kLM);
}

TEST_CASE("eval == predict: LSTMSeq2SeqAttn with Trax's attention and with every score function") {
  expect_seq2seq_eval_equals_predict({.d_model = 6, .n_attention_heads = 2});
  for (auto score : {layers::Score::dot, layers::Score::scaled_dot, layers::Score::general, layers::Score::additive,
                     layers::Score::location}) {
    CAPTURE(layers::score_name(score));
    expect_seq2seq_eval_equals_predict({.d_model = 6, .score = score, .max_len = 8});
  }
  expect_seq2seq_eval_equals_predict({.d_model = 6, .n_decoder_layers = 0, .score = layers::Score::general,
                                      .scale_embeddings = true});
}

// The shared checker on a model's probabilities, exp(log-probabilities), in every weight. (On the
// log-probabilities themselves, ≈ −log V each, the checked sum is large enough that its rounding
// error over 2ε, ~1e-8, exceeds the tolerance for the smallest gradients.)
void expect_model_gradients(const LayerPtr& model, const Stack& inputs) {
  const auto weights = model->all_weights();
  const std::size_t n = inputs.size();
  Stack all = inputs;
  for (const Tensor& w : weights) all.push_back(w.to(DType::float64).detach());
  expect_gradients(StackFn([&](const Stack& s) {
                     model->bind_all_weights(Stack(s.begin() + static_cast<std::ptrdiff_t>(n), s.end()));
                     return Stack{exp((*model)(Stack(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n)))[0])};
                   }),
                   all);
  model->bind_all_weights(weights);
}

TEST_CASE("gradients through the RNN models (float64, every weight)") {
  const Tensor x = tensor({3, 1, 4, 1, 5, 9}, {2, 3});
  auto lm = RNNLM(7, {.d_model = 3, .dropout = 0.0});
  lm->init(signature_of(Stack{x}), Rng(1));
  expect_model_gradients(lm, {x});
  auto gru = GRULM(7, {.d_model = 3, .n_layers = 2});
  gru->init(signature_of(Stack{x}), Rng(1));
  expect_model_gradients(gru, {x});
  for (auto score : {std::optional<layers::Score>(), std::optional(layers::Score::additive)}) {
    auto s2s = LSTMSeq2SeqAttn(11, 11, {.d_model = 4, .n_encoder_layers = 1, .n_decoder_layers = 1, .score = score});
    s2s->init(signature_of(Stack{kSrc, kTgt}), Rng(2));
    expect_model_gradients(s2s, {kSrc, kTgt});
  }
}


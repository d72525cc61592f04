#include <doctest/doctest.h>

#include "layers/rnn.hpp"
#include "models/conv_net.hpp"
#include "models/mlp.hpp"
#include "models/registry.hpp"
#include "models/resnet.hpp"
#include "models/rnn.hpp"
#include "models/sentence_cnn.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::models;

namespace {

const TransformerConfig kSmall{.d_model = 8, .d_ff = 16, .n_layers = 2, .n_encoder_layers = 2, .n_decoder_layers = 1,
                               .n_heads = 2, .max_len = 12, .dropout = 0.1};

// The same tree (printed as Trax prints it) and the same weights, drawn from the same seed.
void expect_same_model(const LayerPtr& a, const LayerPtr& b, const Signature& input) {
  a->init(input, Rng(5));
  b->init(input, Rng(5));
  CHECK(a->to_string() == b->to_string());
  const auto wa = a->all_weights(), wb = b->all_weights();
  REQUIRE(wa.size() == wb.size());
  for (std::size_t i = 0; i < wa.size(); ++i) testing::expect_close(wa[i], wb[i], 0);
}

Signature tokens(std::int64_t B, std::int64_t L) { return {ShapeDtype{{B, L}, DType::int32}}; }

}  // namespace

TEST_CASE("registry: each name builds the model its own function builds, with the spec mapped into its config") {
  const Signature lm_in = tokens(2, 6), pair = {ShapeDtype{{2, 6}, DType::int32}, ShapeDtype{{2, 5}, DType::int32}};
  TransformerConfig eval = kSmall;
  eval.mode = Mode::eval;
  expect_same_model(build({.name = "TransformerLM", .vocab_size = 11, .config = kSmall}, Mode::eval),
                    TransformerLM(11, eval), lm_in);
  expect_same_model(build({.name = "TransformerEncoder", .vocab_size = 11, .n_classes = 3, .config = kSmall}, Mode::eval),
                    TransformerEncoder(11, 3, eval), lm_in);
  expect_same_model(build({.name = "Transformer", .vocab_size = 11, .output_vocab_size = 7, .config = kSmall}, Mode::eval),
                    Transformer(11, 7, eval), pair);
  expect_same_model(build({.name = "GRULM", .vocab_size = 11, .config = kSmall}, Mode::eval),
                    GRULM(11, {.d_model = 8, .n_layers = 2, .mode = Mode::eval}), lm_in);
  expect_same_model(build({.name = "RNNLM", .vocab_size = 11, .config = kSmall}, Mode::eval),
                    RNNLM(11, {.d_model = 8, .n_layers = 2, .dropout = 0.1, .mode = Mode::eval}), lm_in);
  expect_same_model(build({.name = "RNNLM", .vocab_size = 11, .config = kSmall, .cell = "gru"}, Mode::eval),
                    RNNLM(11, {.d_model = 8, .n_layers = 2, .rnn_cell = [](std::int64_t n) { return layers::GRUCell(n); },
                               .rnn_cell_d_state_multiplier = 1, .dropout = 0.1, .mode = Mode::eval}),
                    lm_in);
  // LSTMSeq2SeqAttn: n_layers encoder LSTMs, decoder_layers after the attention, n_heads heads,
  // dropout as the attention's; a score replaces Trax's AttentionQKV.
  expect_same_model(build({.name = "LSTMSeq2SeqAttn", .vocab_size = 11, .config = kSmall, .decoder_layers = 1}, Mode::eval),
                    LSTMSeq2SeqAttn(11, 11, {.d_model = 8, .n_encoder_layers = 2, .n_decoder_layers = 1,
                                             .n_attention_heads = 2, .attention_dropout = 0.1, .mode = Mode::eval,
                                             .max_len = 12}),
                    pair);
  expect_same_model(build({.name = "LSTMSeq2SeqAttn", .vocab_size = 11, .config = kSmall,
                           .score = layers::Score::additive, .attention_weights = true}, Mode::eval),
                    LSTMSeq2SeqAttn(11, 11, {.d_model = 8, .n_encoder_layers = 2, .n_decoder_layers = 2,
                                             .n_attention_heads = 2, .attention_dropout = 0.1, .mode = Mode::eval,
                                             .score = layers::Score::additive, .max_len = 12,
                                             .return_attention_weights = true}),
                    pair);
  // The image models: the hidden widths then the classes; WideResnet's blocks and widening.
  expect_same_model(build({.name = "MLP", .n_classes = 10, .layer_widths = {32, 16}}, Mode::eval),
                    MLP({.layer_widths = {32, 16, 10}}), {ShapeDtype{{2, 28, 28, 1}}});
  expect_same_model(build({.name = "WideResnet", .n_classes = 10, .n_blocks = 1, .widen_factor = 2}, Mode::eval),
                    WideResnet({.n_blocks = 1, .widen_factor = 2, .mode = Mode::eval}), {ShapeDtype{{2, 32, 32, 1}}});
  expect_same_model(build({.name = "ConvNet", .n_classes = 10, .config = {.dropout = 0.2}, .filters = {8, 16}, .n_blocks = 2},
                          Mode::eval),
                    ConvNet({.filters = {8, 16}, .convs_per_stage = 2, .dropout = 0.2, .mode = Mode::eval}),
                    {ShapeDtype{{2, 28, 28, 1}}});
  expect_same_model(build({.name = "SentenceCNN", .vocab_size = 11, .n_classes = 3, .config = kSmall, .n_filters = 4}, Mode::eval),
                    SentenceCNN(11, 3, {.d_model = 8, .n_filters = 4, .dropout = 0.1, .mode = Mode::eval}), lm_in);
  expect_same_model(build({.name = "MaskedLM", .vocab_size = 11, .config = kSmall}, Mode::eval),
                    MaskedLM(11, eval), {ShapeDtype{{2, 6}, DType::int32}, ShapeDtype{{2, 2}, DType::int32}});
  CHECK(model_names().size() == 11);
}

TEST_CASE("MaskedLM is TransformerEncoder's body with a guess per position: the body's weights have the same names") {
  TransformerConfig c = kSmall;
  auto mlm = MaskedLM(11, c);
  auto classifier = TransformerEncoder(11, 3, c);
  const Signature out = mlm->init(Signature{ShapeDtype{{2, 5}, DType::int32}, ShapeDtype{{2, 3}, DType::int32}});
  CHECK(out[0].shape == Shape{2, 3, 11});   // a guess at each of 3 positions per row
  // The guesses read the body's output at the positions asked for: position 4 of row 1 as asked
  // alone equals it among others.
  const Tensor tokens = Tensor::from_doubles({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 5}, DType::int32);
  const Tensor three = Tensor::from_doubles({0, 1, 2, 0, 2, 4}, {2, 3}, DType::int32);
  const Tensor one = Tensor::from_doubles({4, 4}, {2, 1}, DType::int32);
  mlm->set_mode(Mode::eval);
  const Tensor a3 = (*mlm)(Stack{tokens, three})[0], a1 = (*mlm)(Stack{tokens, one})[0];
  CHECK(std::abs(a3.to_doubles()[(1 * 3 + 2) * 11 + 5] - a1.to_doubles()[(1 * 1 + 0) * 11 + 5]) < 1e-6);
  classifier->init(ShapeDtype{{2, 5}, DType::int32});
  const auto a = mlm->named_weights(), b = classifier->named_weights();
  REQUIRE(a.size() == b.size());   // the same body; one Dense head each
  for (std::size_t i = 0; i + 2 < a.size(); ++i) {
    CHECK(a[i].first == b[i].first);
    CHECK(a[i].second.shape() == b[i].second.shape());
  }
  CHECK(a.back().second.shape() == Shape{11});   // Dense(vocab)'s bias
  CHECK(b.back().second.shape() == Shape{3});    // Dense(n_classes)'s
  CHECK(a[a.size() - 2].first != b[b.size() - 2].first);   // the heads sit at different places
}

TEST_CASE("registry: check refuses, naming the model and the setting, before any layer is made") {
  const auto error = [](const ModelSpec& s) {
    try {
      check(s);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error({.name = "Transformer-XL"}).find("no model named 'Transformer-XL': expected one of TransformerEncoder, "
                                               "TransformerLM") == 0);
  TransformerConfig odd = kSmall;
  odd.n_heads = 3;
  CHECK(error({.name = "TransformerLM", .config = odd}) ==
        "TransformerLM: Dimensionality of feature embedding (8) is not a multiple of the requested number of attention "
        "heads (3).");
  CHECK(error({.name = "MLP", .n_classes = 10, .layer_widths = {}}) == "MLP: give at least one hidden layer width");
  CHECK(error({.name = "WideResnet", .n_classes = 10, .n_blocks = 0}) == "WideResnet: n_blocks must be at least 1, got 0");
  CHECK(error({.name = "ConvNet", .n_classes = 10, .filters = {16, 0}}) ==
        "ConvNet: each stage's filters must be at least 1, got 0");
  CHECK(error({.name = "WideResnet", .n_classes = 1}) == "WideResnet: n_classes must be at least 2, got 1");
  // A score attends with one head: the heads are not read.
  CHECK(error({.name = "LSTMSeq2SeqAttn", .config = odd, .score = layers::Score::dot}) == "no error");
  CHECK(error({.name = "LSTMSeq2SeqAttn", .config = odd}).find("attention heads (3)") != std::string::npos);
  CHECK(error({.name = "TransformerLM", .vocab_size = 1}) == "TransformerLM: vocab_size must be at least 2, got 1");
  CHECK(error({.name = "TransformerEncoder", .n_classes = 1}) == "TransformerEncoder: n_classes must be at least 2, got 1");
  CHECK(error({.name = "RNNLM", .cell = "rnn"}) == "RNNLM: cell must be lstm or gru, got 'rnn'");
  CHECK(error({.name = "TransformerLM", .attention_weights = true}).find("returns its attention weights with a score") !=
        std::string::npos);
  CHECK_THROWS_AS(build({.name = "TransformerLM", .config = odd}, Mode::train), std::invalid_argument);
}

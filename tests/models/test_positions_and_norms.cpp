#include <doctest/doctest.h>

#include "layers/layers.hpp"
#include "models/transformer.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::models;

namespace {

TransformerConfig variant(Positions positions, Norm norm, bool scale, Mode mode) {
  return {.d_model = 8, .d_ff = 12, .n_layers = 2, .n_encoder_layers = 2, .n_decoder_layers = 1,
          .n_heads = 2, .max_len = 16, .dropout = 0.1, .mode = mode, .positions = positions,
          .norm = norm, .scale_embeddings = scale};
}

struct Variant {
  const char* name;
  Positions positions;
  Norm norm;
  bool scale;
};

const Variant kVariants[] = {
    {"learned, pre-norm", Positions::learned, Norm::pre, false},
    {"rotary, pre-norm", Positions::rotary, Norm::pre, false},
    {"sinusoidal, post-norm, scaled (the paper)", Positions::sinusoidal, Norm::post, true},
    {"rotary, post-norm", Positions::rotary, Norm::post, false},
    {"learned, post-norm, scaled", Positions::learned, Norm::post, true},
    {"linear bias, pre-norm", Positions::linear_bias, Norm::pre, false},
    {"linear bias, post-norm", Positions::linear_bias, Norm::post, false},
};

}  // namespace

TEST_CASE("eval == predict for every position kind and norm: TransformerLM one token at a time") {
  const Tensor x = tensor({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8}, {2, 6});
  for (const Variant& v : kVariants) {
    CAPTURE(v.name);
    expect_lm_eval_equals_predict([&](Mode m) { return TransformerLM(11, variant(v.positions, v.norm, v.scale, m)); }, x);
  }
}

TEST_CASE("eval == predict for every position kind and norm: Transformer's decoder") {
  const Tensor src = tensor({4, 7, 2, 9, 0, 0, 5, 3, 8, 1, 6, 2}, {2, 6});
  const Tensor tgt = tensor({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  for (const Variant& v : kVariants) {
    CAPTURE(v.name);
    auto eval = Transformer(11, std::nullopt, variant(v.positions, v.norm, v.scale, Mode::eval));
    eval->init(signature_of(Stack{src, tgt}), Rng(3));
    const Tensor expected = (*eval)(Stack{src, tgt})[0];
    auto predict = Transformer(11, std::nullopt, variant(v.positions, v.norm, v.scale, Mode::predict));
    predict->init({ShapeDtype{{2, 6}, DType::int32}, ShapeDtype{{2, 1}, DType::int32}}, Rng(8));
    predict->set_all_weights(eval->all_weights());
    std::vector<int> prev = {0, 0};
    for (int t = 0; t < 4; ++t) {
      expect_close((*predict)(Stack{src, tensor({prev[0], prev[1]}, {2, 1})})[0], slice(expected, 1, t, t + 1),
                   1e-5);
      prev = {tgt.data<std::int32_t>()[t], tgt.data<std::int32_t>()[4 + t]};
    }
  }
}

TEST_CASE("the variants' trees: post-norm ends each sublayer in LayerNorm and drops the final one") {
  const std::string pre = TransformerLM(11, variant(Positions::sinusoidal, Norm::pre, false, Mode::train))->to_string();
  const std::string post = TransformerLM(11, variant(Positions::sinusoidal, Norm::post, true, Mode::train))->to_string();
  CHECK(pre.find("ScaleBy") == std::string::npos);
  CHECK(post.find("ScaleBy(2.828)") != std::string::npos);   // √8
  // pre: Residual[LayerNorm, ...]; post: Residual[...], LayerNorm at the stack level
  CHECK(pre.find("  Serial[\n    Branch_out2[\n      None\n      Serial[\n        LayerNorm") != std::string::npos);
  CHECK(post.find("  Serial[\n    Branch_out2[\n      None\n      Serial[\n        LayerNorm") == std::string::npos);
  // the model's last two layers: pre closes with LayerNorm, Dense; post with a block's LayerNorm
  CHECK(pre.find("  LayerNorm\n  Dense_11\n]") != std::string::npos);
  auto count = [](const std::string& s, const std::string& w) {
    std::size_t n = 0;
    for (auto p = s.find(w); p != std::string::npos; p = s.find(w, p + 1)) ++n;
    return n;
  };
  CHECK(count(pre, "LayerNorm") == 2 * 2 + 1);   // two per block, one closing
  CHECK(count(post, "LayerNorm") == 2 * 2);      // two per block, none closing
  const std::string rot = TransformerLM(11, variant(Positions::rotary, Norm::pre, false, Mode::train))->to_string();
  CHECK(rot.find("PositionalEncoding") == std::string::npos);
  CHECK(count(rot, "Rotate") == 2 * 2);          // q and k of each block's attention
  const std::string learned = TransformerLM(11, variant(Positions::learned, Norm::pre, false, Mode::train))->to_string();
  CHECK(learned.find("PositionalEmbedding") != std::string::npos);
}

TEST_CASE("rotary positions work past any table: no max_len limit but the KV cache's") {
  auto lm = TransformerLM(11, variant(Positions::rotary, Norm::pre, false, Mode::eval));
  lm->init(ShapeDtype{{1, 40}, DType::int32}, Rng(1));   // 40 > max_len 16: fine without a table
  CHECK((*lm)(Tensor::zeros({1, 40}, DType::int32)).shape() == Shape{1, 40, 11});
  auto sin = TransformerLM(11, variant(Positions::sinusoidal, Norm::pre, false, Mode::eval));
  CHECK_THROWS_WITH_AS(sin->init(ShapeDtype{{1, 40}, DType::int32}), doctest::Contains("exceed max_len 16"),
                       LayerError);
}

TEST_CASE("the variants pass the gradient checker end to end (through the loss)") {
  for (Positions p : {Positions::learned, Positions::rotary, Positions::linear_bias}) {
    for (Norm n : {Norm::pre, Norm::post}) {
      CAPTURE(static_cast<int>(p));
      CAPTURE(static_cast<int>(n));
      auto lm = TransformerLM(5, {.d_model = 4, .d_ff = 6, .n_layers = 1, .n_heads = 2, .max_len = 8,
                                  .dropout = 0.0, .positions = p, .norm = n, .scale_embeddings = true});
      auto model = layers::Serial(lm, layers::WeightedCategoryCrossEntropy());
      const Tensor x = tensor({1, 3, 2, 4, 0, 2}, {2, 3});
      const Tensor w = tensor({1.0, 1.0, 0.5, 1.0, 0.0, 1.0}, {2, 3});
      model->init(signature_of(Stack{x, x, w}));
      expect_layer_gradients(model, {x, x, w});
    }
  }
  for (Positions p : {Positions::rotary, Positions::linear_bias}) {
    auto model = layers::Serial(
        Transformer(5, std::nullopt, {.d_model = 4, .d_ff = 6, .n_encoder_layers = 1, .n_decoder_layers = 1,
                                      .n_heads = 2, .max_len = 8, .dropout = 0.0, .positions = p, .norm = Norm::post}),
        layers::CategoryCrossEntropy());
    const Tensor src = tensor({1, 3, 2, 0, 4, 2, 1, 0}, {2, 4});
    const Tensor tgt = tensor({2, 4, 1, 3, 3, 2}, {2, 3});
    model->init(signature_of(Stack{src, tgt}));
    expect_layer_gradients(model, {src, tgt});
  }
  auto enc = layers::Serial(TransformerEncoder(5, 3, {.d_model = 4, .d_ff = 6, .n_layers = 1, .n_heads = 2, .max_len = 8,
                                                      .dropout = 0.0, .positions = Positions::linear_bias}),
                            layers::CategoryCrossEntropy());
  const Tensor x = tensor({1, 3, 2, 0, 4, 2, 0, 0}, {2, 4});
  const Tensor y = tensor({2, 0}, {2});
  enc->init(signature_of(Stack{x, y}));
  expect_layer_gradients(enc, {x, y});
}

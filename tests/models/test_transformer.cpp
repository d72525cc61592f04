#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/train/checkpoint.hpp"
#include "layers/layers.hpp"
#include "models/transformer.hpp"
#include "tests/core/train/temp_dir.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::models;

namespace {

// A tiny configuration: every structural feature, seconds to test.
TransformerConfig tiny(Mode mode = Mode::train, double dropout = 0.1) {
  return {.d_model = 8, .d_ff = 12, .n_layers = 2, .n_encoder_layers = 2, .n_decoder_layers = 1,
          .n_heads = 2, .max_len = 16, .dropout = dropout, .mode = mode};
}

Tensor tokens(std::initializer_list<int> values, std::int64_t B, std::int64_t L) {
  return tensor(values, {B, L});
}

// Hand-computed parameter counts (d = d_model, f = d_ff).
std::int64_t dense(std::int64_t in, std::int64_t out) { return in * out + out; }
std::int64_t attention(std::int64_t d) { return 4 * dense(d, d); }
std::int64_t feed_forward(std::int64_t d, std::int64_t f) { return dense(d, f) + dense(f, d); }
std::int64_t layer_norm(std::int64_t d) { return 2 * d; }
std::int64_t block(std::int64_t d, std::int64_t f) {  // encoder or decoder block
  return layer_norm(d) + attention(d) + layer_norm(d) + feed_forward(d, f);
}

}  // namespace

TEST_CASE("TransformerLM: (B, L) tokens to (B, L, vocab) float logits") {
  auto lm = TransformerLM(11, tiny());
  const Signature out = lm->init(ShapeDtype{{3, 5}, DType::int32}, Rng(1));
  CHECK(out.size() == 1);
  CHECK(out[0].shape == Shape{3, 5, 11});
  CHECK(out[0].dtype == DType::float32);
  const Tensor logits = (*lm)(tokens({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3, 4, 5}, 3, 5));
  CHECK(logits.shape() == Shape{3, 5, 11});
}

TEST_CASE("TransformerEncoder: (B, L) tokens to (B, n_classes) logits") {
  auto enc = TransformerEncoder(11, 3, tiny());
  CHECK(enc->n_in() == 1);
  CHECK(enc->n_out() == 1);
  const Signature out = enc->init(ShapeDtype{{2, 6}, DType::int32});
  CHECK(out[0].shape == Shape{2, 3});
}

TEST_CASE("Transformer: (source, target) to (logits, target)") {
  auto t = Transformer(11, 7, tiny());
  CHECK(t->n_in() == 2);
  CHECK(t->n_out() == 2);
  const Signature out =
      t->init({ShapeDtype{{2, 6}, DType::int32}, ShapeDtype{{2, 4}, DType::int32}});
  CHECK(out[0].shape == Shape{2, 4, 7});
  CHECK(out[1].shape == Shape{2, 4});
  CHECK(out[1].dtype == DType::int32);
}

TEST_CASE("attention_weights reads Transformer's attentions in order: encoder, then decoder self and cross") {
  auto t = Transformer(11, 7, tiny(Mode::eval));
  const Tensor src = tokens({1, 2, 3, 0, 0, 0, 4, 5, 6, 7, 8, 9}, 2, 6);   // row 0: three pieces, then padding
  const Tensor tgt = tokens({1, 2, 3, 4, 5, 6, 1, 2}, 2, 4);
  t->init(signature_of(Stack{src, tgt}), Rng(2));
  const auto w = layers::attention_weights(*t, {src, tgt}, 2);
  REQUIRE(w.size() == 4);   // 2 encoder blocks; 1 decoder block: causal self-attention, cross-attention
  CHECK(w[0].layer == "PureAttention");
  CHECK(w[1].layer == "PureAttention");
  CHECK(w[2].layer == "DotProductCausalAttention");
  CHECK(w[3].layer == "PureAttention");
  CHECK(w[0].weights.shape() == Shape{2, 2, 6, 6});
  CHECK(w[2].weights.shape() == Shape{2, 2, 4, 4});
  CHECK(w[3].weights.shape() == Shape{2, 2, 4, 6});   // target queries over source keys
  const auto cross = w[3].weights.to_doubles();        // row 0's padded source pieces get nothing
  for (int row = 0; row < 2 * 4; ++row)
    for (int j = 3; j < 6; ++j) CHECK(cross[static_cast<std::size_t>(row * 6 + j)] == 0.0);
  auto lm = TransformerLM(11, tiny(Mode::eval));
  lm->init(ShapeDtype{{1, 5}, DType::int32}, Rng(3));
  CHECK(layers::attention_weights(*lm, {tokens({1, 2, 3, 4, 5}, 1, 5)}, 2).size() == 2);   // one per DecoderBlock
}

TEST_CASE("parameter counts match hand-computed totals") {
  const std::int64_t d = 8, f = 12, V = 11, M = 16;
  auto lm = TransformerLM(V, tiny());
  lm->init(ShapeDtype{{1, 4}, DType::int32});
  CHECK(lm->n_params() == V * d + M * d + 2 * block(d, f) + layer_norm(d) + dense(d, V));

  auto enc = TransformerEncoder(V, 3, tiny());
  enc->init(ShapeDtype{{1, 4}, DType::int32});
  CHECK(enc->n_params() == V * d + M * d + 2 * block(d, f) + layer_norm(d) + dense(d, 3));

  // decoder block: causal self-attention, attention over the encoder, feed-forward
  const std::int64_t enc_dec_block = 3 * layer_norm(d) + 2 * attention(d) + feed_forward(d, f);
  const std::int64_t encoder = M * d + 2 * block(d, f) + layer_norm(d);
  const std::int64_t decoder = M * d + enc_dec_block + layer_norm(d);
  const Signature sig{ShapeDtype{{1, 4}, DType::int32}, ShapeDtype{{1, 3}, DType::int32}};
  auto shared = Transformer(V, std::nullopt, tiny());
  shared->init(sig);
  CHECK(shared->n_params() == V * d + encoder + decoder + dense(d, V));  // one embedding
  auto separate = Transformer(V, 5, tiny());
  separate->init(sig);
  CHECK(separate->n_params() == V * d + 5 * d + encoder + decoder + dense(d, 5));
}

TEST_CASE("Trax's default sizes give the totals of trax/models/transformer.py") {
  auto lm = TransformerLM(32000);  // 512/2048/6/8, max_len 2048
  lm->init(ShapeDtype{{1, 1}, DType::int32});
  CHECK(lm->n_params() == 32000 * 512 + 2048 * 512 + 6 * block(512, 2048) + layer_norm(512) +
                              dense(512, 32000));
}

TEST_CASE("Transformer without an output vocabulary shares one Embedding instance") {
  auto t = Transformer(11, std::nullopt, tiny());
  const auto& s = t->sublayers();
  // Select, Branch, encoder (Serial: Embedding first), Select, ShiftRight, Embedding, ...
  CHECK(s[2]->sublayers()[0] == s[5]);
  auto separate = Transformer(11, 11, tiny());
  CHECK(separate->sublayers()[2]->sublayers()[0] != separate->sublayers()[5]);
}

TEST_CASE("Transformer in predict mode caches the encoder and the cross-attention K/V") {
  auto t = Transformer(11, std::nullopt, tiny(Mode::predict));
  CHECK(t->sublayers()[2]->name() == "Cache");
  // the encoder, then K and V of the one decoder block's attention over the encoder
  const std::string tree = t->to_string();
  int n_caches = 0;
  for (auto at = tree.find("Cache"); at != std::string::npos; at = tree.find("Cache", at + 1)) ++n_caches;
  CHECK(n_caches == 3);
  CHECK(Transformer(11, std::nullopt, tiny(Mode::eval))->to_string().find("Cache") == std::string::npos);
}

TEST_CASE("the same seed gives the same weights and outputs; another seed does not") {
  const Tensor x = tokens({1, 2, 3, 4, 5, 6, 7, 8}, 2, 4);
  auto run = [&](std::uint64_t seed) {
    auto lm = TransformerLM(11, tiny(Mode::train, 0.3));
    lm->init(signature_of(Stack{x}), Rng(seed));
    return (*lm)(x).to_doubles();
  };
  CHECK(run(5) == run(5));
  CHECK(run(5) != run(6));
}

TEST_CASE("printed trees of the blocks are Trax's") {
  auto ff = layers::Serial(FeedForwardBlock(8, 12, {.dropout = 0.1, .mode = Mode::train}));
  CHECK(ff->to_string() == "Serial[\n  Dense_12\n  Relu\n  Dropout\n  Dense_8\n]");
  auto enc = TransformerEncoder(11, 3, {.d_model = 8, .d_ff = 12, .n_layers = 1, .n_heads = 2});
  CHECK(enc->to_string() ==
        "Serial[\n"
        "  Branch_out2[\n"
        "    None\n"
        "    PaddingMask(0)\n"
        "  ]\n"
        "  Embedding_11_8\n"
        "  Dropout\n"
        "  PositionalEncoding\n"
        "  Serial_in2_out2[\n"
        "    Branch_in2_out3[\n"
        "      None\n"
        "      Serial_in2_out2[\n"
        "        LayerNorm\n"
        "        Serial_in2_out2[\n"
        "          Select[0,0,0]_out3\n"
        "          Serial_in4_out2[\n"
        "            Parallel_in3_out3[\n"
        "              Dense_8\n"
        "              Dense_8\n"
        "              Dense_8\n"
        "            ]\n"
        "            PureAttention_in4_out2\n"
        "            Dense_8\n"
        "          ]\n"
        "        ]\n"
        "        Dropout\n"
        "      ]\n"
        "    ]\n"
        "    Add_in2\n"
        "  ]\n"
        "  Serial[\n"
        "    Branch_out2[\n"
        "      None\n"
        "      Serial[\n"
        "        LayerNorm\n"
        "        Dense_12\n"
        "        Relu\n"
        "        Dropout\n"
        "        Dense_8\n"
        "        Dropout\n"
        "      ]\n"
        "    ]\n"
        "    Add_in2\n"
        "  ]\n"
        "  Select[0]_in2\n"
        "  LayerNorm\n"
        "  Mean\n"
        "  Dense_3\n"
        "]");
}

TEST_CASE("TransformerLM and Transformer print Trax's top-level structure") {
  auto top_level = [](const LayerPtr& m) {
    std::vector<std::string> names;
    for (const auto& l : m->sublayers()) names.push_back(l->display_name());
    return names;
  };
  TransformerConfig c = tiny();
  c.n_layers = 1;
  CHECK(top_level(TransformerLM(11, c)) ==
        std::vector<std::string>{"ShiftRight(1)", "Embedding_11_8", "Dropout", "PositionalEncoding",
                                 "Serial", "Serial", "LayerNorm", "Dense_11"});
  CHECK(top_level(Transformer(11, 7, c)) ==
        std::vector<std::string>{"Select[0,1,1]_in2_out3", "Branch_out2", "Serial_in2_out2",
                                 "Select[2,1,0]_in3_out3", "ShiftRight(1)", "Embedding_7_8", "Dropout",
                                 "PositionalEncoding", "Branch_in2_out2", "Serial", "Serial_in3_out3",
                                 "Serial", "LayerNorm", "Select[0]_in3", "Dense_7"});
}

TEST_CASE("predict-mode Transformer names its weights as the train-mode one (Cache is transparent)") {
  auto train = Transformer(11, std::nullopt, tiny(Mode::train));
  auto predict = Transformer(11, std::nullopt, tiny(Mode::predict));
  train->init({ShapeDtype{{2, 6}, DType::int32}, ShapeDtype{{2, 4}, DType::int32}});
  predict->init({ShapeDtype{{2, 6}, DType::int32}, ShapeDtype{{2, 1}, DType::int32}});
  const auto a = train->named_weights(), b = predict->named_weights();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].first == b[i].first);
    CHECK(a[i].second.shape() == b[i].second.shape());
  }
}

TEST_CASE("eval == predict: TransformerLM fed one token at a time reproduces eval logits") {
  const Tensor x = tokens({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8}, 2, 6);
  expect_lm_eval_equals_predict([](Mode m) { return TransformerLM(11, tiny(m)); }, x);
}

TEST_CASE("reset_state empties the KV caches and keeps every weight (the same tensors, no re-draw)") {
  auto predict = TransformerLM(11, tiny(Mode::predict));
  predict->init(ShapeDtype{{2, 1}, DType::int32}, Rng(4));
  const auto before = predict->all_weights();
  const auto values = before[0].to_doubles();
  const Tensor first = tensor({0, 0}, {2, 1});
  const Tensor logits = (*predict)(first).to(DType::float64);
  const Tensor second = (*predict)(tensor({3, 5}, {2, 1}));  // fills a second cache position
  const auto caches = predict->named_state();
  predict->reset_state({ShapeDtype{{2, 1}, DType::int32}});
  // The caches keep their buffers (no fresh pages to fault in per sequence), the counts go to 0.
  const auto reset = predict->named_state();
  REQUIRE(reset.size() == caches.size());
  int kept = 0;
  for (std::size_t i = 0; i < reset.size(); ++i)
    if (reset[i].second.rank() == 3) {
      CHECK(reset[i].second.raw_data() == caches[i].second.raw_data());
      ++kept;
    } else {
      CHECK(reset[i].second.to_doubles() == std::vector<double>{0.0});
    }
  CHECK(kept == 2 * 2);   // tiny(): two decoder blocks, K and V each
  const auto after = predict->all_weights();
  REQUIRE(after.size() == before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    CHECK(after[i].raw_data() == before[i].raw_data());  // the same storage, not a copy
    CHECK_FALSE(after[i].is_meta());
  }
  const auto now = after[0].to_doubles();
  CHECK(std::equal(now.begin(), now.end(), values.begin(), values.end()));
  expect_close((*predict)(first).to(DType::float64), logits, 0.0);  // position 0 again
  expect_close((*predict)(tensor({3, 5}, {2, 1})), second, 0.0);       // then position 1
  // Another batch size cannot keep them: new caches of its shape.
  predict->reset_state({ShapeDtype{{3, 1}, DType::int32}});
  for (const auto& [name, s] : predict->named_state())
    if (s.rank() == 3) CHECK_MESSAGE(s.dim(0) % 3 == 0, name);
  CHECK((*predict)(tensor({0, 0, 0}, {3, 1})).dim(0) == 3);
}

TEST_CASE("eval == predict: Transformer's decoder one token at a time reproduces eval logits") {
  const Tensor src = tokens({4, 7, 2, 9, 0, 0, 5, 3, 8, 1, 6, 2}, 2, 6);  // row 0 padded
  const Tensor tgt = tokens({1, 2, 3, 4, 5, 6, 1, 2}, 2, 4);
  auto eval = Transformer(11, std::nullopt, tiny(Mode::eval));
  eval->init(signature_of(Stack{src, tgt}), Rng(3));
  const Tensor expected = (*eval)(Stack{src, tgt})[0];  // (2, 4, 11)

  auto predict = Transformer(11, std::nullopt, tiny(Mode::predict));
  predict->init({ShapeDtype{{2, 6}, DType::int32}, ShapeDtype{{2, 1}, DType::int32}}, Rng(8));
  predict->set_all_weights(eval->all_weights());
  std::vector<int> prev = {0, 0};
  for (int t = 0; t < 4; ++t) {
    const Stack out = (*predict)(Stack{src, tensor({prev[0], prev[1]}, {2, 1})});
    expect_close(out[0], slice(expected, 1, t, t + 1), 1e-5);
    prev = {tgt.data<std::int32_t>()[t], tgt.data<std::int32_t>()[4 + t]};
  }
}

TEST_CASE("padding is masked: tokens behind padding do not change the encoder at real positions") {
  auto enc = TransformerEncoder(11, 3, tiny(Mode::eval));
  const Tensor a = tokens({4, 7, 2, 0, 0, 5, 3, 8, 1, 0}, 2, 5);
  enc->init(signature_of(Stack{a}), Rng(4));
  // Everything up to (and including) the encoder blocks, with the same layer instances.
  const auto& s = enc->sublayers();
  const LayerPtr body = layers::make_serial({layers::LayerList(s.begin() + 1, s.end() - 4)});
  const Tensor mask = init_and_run(layers::PaddingMask(), {a})[0];
  const auto trained = body->all_weights();  // init() below re-creates them: put them back
  body->init(signature_of(Stack{a, mask}));
  body->set_all_weights(trained);
  // b = a with different tokens at the padded positions, under a's mask
  const Tensor b = tokens({4, 7, 2, 9, 6, 5, 3, 8, 1, 10}, 2, 5);
  const Tensor ya = body->operator()(Stack{a, mask})[0];
  const Tensor yb = body->operator()(Stack{b, mask})[0];
  CHECK(ya.shape() == Shape{2, 5, 8});
  expect_close(slice(slice(yb, 0, 0, 1), 1, 0, 3), slice(slice(ya, 0, 0, 1), 1, 0, 3), 1e-6);
  expect_close(slice(slice(yb, 0, 1, 2), 1, 0, 4), slice(slice(ya, 0, 1, 2), 1, 0, 4), 1e-6);
  // ... while without the mask they would differ
  const Tensor all = Tensor::ones({2, 1, 1, 5}, DType::bool_);
  CHECK(body->operator()(Stack{b, all})[0].to_doubles() != body->operator()(Stack{a, all})[0].to_doubles());
}

TEST_CASE("a model built wrongly fails with the layer's path") {
  auto lm = TransformerLM(11, {.d_model = 8, .d_ff = 12, .n_layers = 1, .n_heads = 2, .max_len = 4});
  try {
    lm->init(ShapeDtype{{1, 6}, DType::int32});
    FAIL("no error");
  } catch (const LayerError& e) {
    CHECK(e.path() == "Serial/PositionalEncoding[3]");
    CHECK(e.message().find("exceed max_len 4") != std::string::npos);
  }
}

TEST_CASE("a tiny TransformerLM passes the gradient checker end to end (through the loss)") {
  auto lm = TransformerLM(5, {.d_model = 4, .d_ff = 6, .n_layers = 1, .n_heads = 2,
                              .max_len = 8, .dropout = 0.0});
  auto loss = layers::WeightedCategoryCrossEntropy();
  auto model = layers::make_serial({lm, loss});
  const Tensor x = tokens({1, 3, 2, 4, 0, 2}, 2, 3);
  const Tensor w = tensor({1.0, 1.0, 0.5, 1.0, 0.0, 1.0}, {2, 3});
  model->init(signature_of(Stack{x, x, w}));
  expect_layer_gradients(model, {x, x, w});
}

TEST_CASE("a tiny TransformerEncoder and Transformer pass the gradient checker (through the loss)") {
  const TransformerConfig c{.d_model = 4, .d_ff = 6, .n_layers = 1, .n_encoder_layers = 1,
                            .n_decoder_layers = 1, .n_heads = 2, .max_len = 8, .dropout = 0.0};
  SUBCASE("TransformerEncoder") {
    auto model = layers::make_serial({TransformerEncoder(5, 3, c), layers::CategoryCrossEntropy()});
    const Tensor x = tokens({1, 3, 2, 0, 4, 2, 0, 0}, 2, 4);  // padded rows
    const Tensor y = tensor({2, 0}, {2});
    model->init(signature_of(Stack{x, y}));
    expect_layer_gradients(model, {x, y});
  }
  SUBCASE("Transformer (shared embedding)") {
    auto model = layers::make_serial({Transformer(5, std::nullopt, c),
                                      layers::CategoryCrossEntropy()});
    const Tensor src = tokens({1, 3, 2, 0, 4, 2, 1, 0}, 2, 4);
    const Tensor tgt = tokens({2, 4, 1, 3, 3, 2}, 2, 3);
    model->init(signature_of(Stack{src, tgt}));
    expect_layer_gradients(model, {src, tgt});
  }
}

TEST_CASE("TransformerDecoder embeds tokens, or projects float features, to (B, L, d_model)") {
  auto tok = TransformerDecoder(11, tiny());
  CHECK(tok->init(ShapeDtype{{2, 5}, DType::int32})[0].shape == Shape{2, 5, 8});
  CHECK(tok->sublayers()[0]->name() == "Embedding_11_8");
  auto dense = TransformerDecoder(std::nullopt, tiny());
  CHECK(dense->init(ShapeDtype{{2, 5, 3}})[0].shape == Shape{2, 5, 8});
  CHECK(dense->sublayers()[0]->name() == "Dense_8");
}

TEST_CASE("MaskedLMBodyInTransformer: a masked LM's body becomes the Transformer's encoder, pre- and post-norm") {
  for (const Norm norm : {Norm::pre, Norm::post}) {
    CAPTURE(static_cast<int>(norm));
    TempDir dir;
    TransformerConfig c = tiny(Mode::train, 0.0);
    c.n_encoder_layers = c.n_layers;
    c.norm = norm;
    c.scale_embeddings = norm == Norm::post;
    auto mlm = MaskedLM(11, c);
    mlm->init(Signature{ShapeDtype{{2, 6}, DType::int32}, ShapeDtype{{2, 1}, DType::int32}}, Rng(1));
    train::save_checkpoint(dir / "mlm.safetensors", *mlm, {}, {});
    auto transformer = Transformer(11, std::nullopt, c);
    transformer->init(Signature{ShapeDtype{{2, 6}, DType::int32}, ShapeDtype{{2, 4}, DType::int32}}, Rng(2));
    const auto before = transformer->named_weights();
    const train::LoadReport report =
        train::load_matching_weights(dir / "mlm.safetensors", *transformer, MaskedLMBodyInTransformer(11, c));
    const std::size_t n_body = mlm->named_weights().size() - 2;
    CHECK(report.loaded.size() == n_body);
    CHECK(report.unused.size() == 2);   // the masked LM's guess, Dense(11)
    CHECK(report.initialised.size() == before.size() - n_body);   // the decoder and the output layer
    for (const auto& name : report.initialised) {   // untouched
      const auto was = std::find_if(before.begin(), before.end(), [&](const auto& w) { return w.first == name; });
      const auto now = transformer->named_weights();
      const auto is = std::find_if(now.begin(), now.end(), [&](const auto& w) { return w.first == name; });
      CHECK(was->second.to_doubles() == is->second.to_doubles());
    }
    // The encoder now computes what the masked LM's body computes: a model of the body alone
    // (the same names as in the masked LM) against the Transformer's encoder on (tokens, mask).
    auto body = layers::Serial(EncoderBody(11, c));
    body->init(ShapeDtype{{2, 6}, DType::int32}, Rng(3));
    CHECK(train::load_matching_weights(dir / "mlm.safetensors", *body).unused.size() == 2);
    const Tensor x = tokens({3, 4, 5, 6, 0, 0, 7, 8, 9, 10, 2, 0}, 2, 6);
    const LayerPtr encoder = transformer->sublayers()[2];
    const Stack masked = init_and_run(layers::Branch(nullptr, layers::PaddingMask()), Stack{x});
    expect_close((*encoder)(masked)[0], (*body)(x), 1e-6);
  }
  TransformerConfig uneven = tiny();   // 2 layers, an encoder of 2: fine; 1 is not
  uneven.n_encoder_layers = 1;
  CHECK_THROWS_WITH_AS(MaskedLMBodyInTransformer(11, uneven), doctest::Contains("give both the same"),
                       std::invalid_argument);
}

TEST_CASE("LayerwiseRateFactors: decay^(n_layers + 1 − depth) — embedding 0, block k k + 1, the rest n_layers + 1") {
  const TransformerConfig c{.d_model = 8, .d_ff = 16, .n_layers = 2, .n_heads = 2, .max_len = 16};
  for (const bool scaled : {false, true}) {   // √d_model scaling adds a layer before the blocks
    TransformerConfig cs = c;
    cs.scale_embeddings = scaled;
    const LayerPtr model = TransformerEncoder(10, 2, cs);
    model->init(ShapeDtype{{1, 4}, DType::int32}, Rng(0));
    const std::vector<double> f = LayerwiseRateFactors(*model, cs, 0.5);
    const auto named = model->named_weights();
    REQUIRE(f.size() == named.size());
    // Serial's top-level indices: the mask's Branch 0, Embedding 1, [ScaleBy], Dropout, positions;
    // then two layers (attention, feed-forward) per block; Select, LayerNorm, Mean, Dense.
    const int first_block = scaled ? 5 : 4;
    std::map<std::string, double> expected{
        {"Serial/Embedding_10_8[1]/table", 0.125},
        {fmt::format("Serial/PositionalEncoding[{}]/pe", first_block - 1), 0.125},
        {fmt::format("Serial/LayerNorm[{}]/scale", first_block + 5), 1.0},
        {fmt::format("Serial/Dense_2[{}]/w", first_block + 7), 1.0}};
    for (int k = 0; k < 4; ++k)   // each block's attention and feed-forward: their first LayerNorm
      expected[fmt::format("Serial/Serial[{}]/Branch[0]/Parallel[1]/Serial[1]/LayerNorm[0]/scale", first_block + k)] =
          k < 2 ? 0.25 : 0.5;
    int found = 0;
    for (std::size_t i = 0; i < named.size(); ++i)
      if (const auto it = expected.find(named[i].first); it != expected.end()) {
        CHECK_MESSAGE(f[i] == it->second, named[i].first);
        ++found;
      }
    CHECK(found == static_cast<int>(expected.size()));
    CHECK(std::count(f.begin(), f.end(), 1.0) == 4);   // final LayerNorm's scale, bias; Dense's w, b
  }
  const LayerPtr lm = TransformerLM(10, c);
  lm->init(ShapeDtype{{1, 4}, DType::int32}, Rng(0));
  CHECK_THROWS_AS(LayerwiseRateFactors(*lm, {.n_layers = 6}, 0.8), std::invalid_argument);   // not an encoder of 6
  const LayerPtr encoder = TransformerEncoder(10, 2, c);
  encoder->init(ShapeDtype{{1, 4}, DType::int32}, Rng(0));
  CHECK_THROWS_WITH_AS(LayerwiseRateFactors(*encoder, c, 0.0), "LayerwiseRateFactors: decay must be in (0, 1], got 0",
                       std::invalid_argument);
}

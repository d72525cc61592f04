// The image models: Trax's MLP, WideResnet and Resnet50, and ConvNet of Trax's layers — trees,
// hand-counted parameters, training.
#include <doctest/doctest.h>

#include <sstream>

#include "core/train/adam.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/loop.hpp"
#include "layers/metrics.hpp"
#include "models/conv_net.hpp"
#include "models/mlp.hpp"
#include "models/resnet.hpp"
#include "models/sentence_cnn.hpp"
#include "models/transformer.hpp"
#include "tests/core/train/temp_dir.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::models;

namespace {
// Parameters of a k×k Conv from c_in to c_out channels (kernel and bias), a BatchNorm over c
// channels (β and γ), a Dense from n to m.
std::int64_t conv_params(std::int64_t k, std::int64_t c_in, std::int64_t c_out) { return k * k * c_in * c_out + c_out; }
std::int64_t bn_params(std::int64_t c) { return 2 * c; }
std::int64_t dense_params(std::int64_t n, std::int64_t m) { return n * m + m; }
}  // namespace

TEST_CASE("MLP: Trax's layers, the last width the output, no activation after it") {
  auto mlp = MLP({.layer_widths = {512, 512, 10}});
  CHECK(mlp->init(ShapeDtype{{2, 28, 28}})[0].shape == Shape{2, 10});
  CHECK(mlp->to_string() == "Serial[\n  Flatten_keep1\n  Dense_512\n  Relu\n  Dense_512\n  Relu\n  Dense_10\n]");
  CHECK(mlp->n_params() == dense_params(784, 512) + dense_params(512, 512) + dense_params(512, 10));   // 669,706
  CHECK(mlp->n_params() == 669706);
  auto with_out = MLP({.layer_widths = {8}, .out_activation = true, .flatten = false});
  CHECK(with_out->to_string() == "Serial[\n  Dense_8\n  Relu\n]");
  CHECK_THROWS_WITH_AS(MLP({.layer_widths = {}}), doctest::Contains("at least one layer width"), std::invalid_argument);
}

TEST_CASE("WideResnet: 32×32 images to logits, its parameters counted by hand") {
  // One block per group: the stem, three groups (block + shortcut conv), the final BatchNorm, Dense.
  const std::int64_t group1 = bn_params(16) + conv_params(3, 16, 16) + bn_params(16) + conv_params(3, 16, 16) + conv_params(3, 16, 16);
  const std::int64_t group2 = bn_params(16) + conv_params(3, 16, 32) + bn_params(32) + conv_params(3, 32, 32) + conv_params(3, 16, 32);
  const std::int64_t group3 = bn_params(32) + conv_params(3, 32, 64) + bn_params(64) + conv_params(3, 64, 64) + conv_params(3, 32, 64);
  const std::int64_t one = conv_params(3, 1, 16) + group1 + group2 + group3 + bn_params(64) + dense_params(64, 10);
  auto wrn1 = WideResnet({.n_blocks = 1});
  CHECK(wrn1->init(ShapeDtype{{2, 32, 32, 1}})[0].shape == Shape{2, 10});
  CHECK(wrn1->n_params() == one);
  CHECK(one == 100698);
  // Each further block of a group adds BatchNorm, Conv, BatchNorm, Conv at the group's width.
  const std::int64_t extra = [&] {
    std::int64_t s = 0;
    for (std::int64_t c : {16, 32, 64}) s += 2 * (bn_params(c) + conv_params(3, c, c));
    return s;
  }();
  auto wrn2 = WideResnet({.n_blocks = 2, .widen_factor = 1});
  wrn2->init(ShapeDtype{{1, 32, 32, 1}});
  CHECK(wrn2->n_params() == one + extra);
  auto wide = WideResnet({.n_blocks = 1, .widen_factor = 2});
  CHECK(wide->init(ShapeDtype{{1, 32, 32, 3}})[0].shape == Shape{1, 10});
  // The tree: Trax's top-level layers in order.
  const std::string tree = wrn1->to_string();
  CHECK(tree.rfind("Serial[\n  ToFloat\n  Conv\n", 0) == 0);
  CHECK(tree.find("AvgPool\n  Flatten_keep1\n  Dense_10\n]") != std::string::npos);
  // 28×28 images leave 7×7 maps, which AvgPool(8×8) cannot take: the error names the layer.
  CHECK_THROWS_WITH_AS(WideResnet()->init(ShapeDtype{{1, 28, 28, 1}}), doctest::Contains("AvgPool"), LayerError);
}

TEST_CASE("ConvNet: stages of 3×3 convolutions and 2×2 max pools, its parameters counted by hand") {
  auto net = ConvNet({.filters = {32, 64}, .convs_per_stage = 2});
  // 28×28 → 14×14 (32 channels) → 7×7 (64): the classifier reads 7·7·64 = 3,136 features.
  CHECK(net->init(ShapeDtype{{2, 28, 28, 1}})[0].shape == Shape{2, 10});
  const std::int64_t stage1 = conv_params(3, 1, 32) + bn_params(32) + conv_params(3, 32, 32) + bn_params(32);
  const std::int64_t stage2 = conv_params(3, 32, 64) + bn_params(64) + conv_params(3, 64, 64) + bn_params(64);
  CHECK(net->n_params() == stage1 + stage2 + dense_params(7 * 7 * 64, 10));
  CHECK(net->n_params() == 96746);
  CHECK(net->to_string() ==
        "Serial[\n  ToFloat\n  Conv\n  BatchNorm\n  Relu\n  Conv\n  BatchNorm\n  Relu\n  MaxPool\n"
        "  Conv\n  BatchNorm\n  Relu\n  Conv\n  BatchNorm\n  Relu\n  MaxPool\n  Flatten_keep1\n  Dropout\n  Dense_10\n]");
  // One convolution per stage, three stages: 28 → 14 → 7 → 3 (VALID pooling drops the odd row).
  auto three = ConvNet({.filters = {8, 8, 8}, .convs_per_stage = 1, .n_output_classes = 4});
  three->init(ShapeDtype{{1, 28, 28, 1}});
  CHECK(three->n_params() == conv_params(3, 1, 8) + 2 * conv_params(3, 8, 8) + 3 * bn_params(8) + dense_params(3 * 3 * 8, 4));
  CHECK_THROWS_WITH_AS(ConvNet({.filters = {}}), doctest::Contains("at least one stage"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ConvNet({.filters = {8, 0}}), doctest::Contains("filters must be >= 1, got 0"), std::invalid_argument);
}

TEST_CASE("Resnet50: Trax's layers have torchvision's parameters plus a bias per convolution") {
  auto resnet = Resnet50();
  CHECK(resnet->init(ShapeDtype{{1, 224, 224, 3}})[0].shape == Shape{1, 1001});
  // torchvision's resnet50 has 25,557,032 parameters for 1000 classes and no convolution biases.
  // The 1001st class adds 2048 + 1; Trax's Conv has a bias: the output channels of all 53 convolutions.
  std::int64_t biases = 64;   // the stem
  for (const auto& [d, identity_blocks] : std::vector<std::pair<std::int64_t, int>>{{64, 2}, {128, 3}, {256, 5}, {512, 2}})
    biases += (d + d + 4 * d + 4 * d) + identity_blocks * (d + d + 4 * d);   // ConvBlock (with its shortcut), IdentityBlocks
  CHECK(biases == 26560);
  CHECK(resnet->n_params() == 25557032 + 2049 + biases);
}

TEST_CASE("image models: the same seed draws the same weights") {
  auto a = WideResnet({.n_blocks = 1}), b = WideResnet({.n_blocks = 1});
  a->init(ShapeDtype{{1, 32, 32, 1}}, Rng(5));
  b->init(ShapeDtype{{1, 32, 32, 1}}, Rng(5));
  const auto wa = a->all_weights(), wb = b->all_weights();
  REQUIRE(wa.size() == wb.size());
  for (std::size_t i = 0; i < wa.size(); ++i) CHECK(wa[i].to_doubles() == wb[i].to_doubles());
}

TEST_CASE("WideResnet learns to tell a square from a bar, wherever they are, through the Loop") {
  constexpr std::int64_t B = 8;
  // (images (B, 32, 32, 1), labels, weights): on a noisy background, a bright 6×6 square (class 1)
  // or a 2×18 bar of the same brightness in all (class 0), each at a random place. (The global
  // average pool before the classifier sees what is there, not where: a task of shapes.)
  const auto squares = [](std::int64_t i) {
    const Rng rng = Rng(21).fold_in(static_cast<std::uint64_t>(i));
    Tensor x = rng.normal({B, 32, 32, 1}, 0.0, 0.3);
    const Tensor where = rng.fold_in(1).randint({B, 3}, 0, 12);
    Tensor y = Tensor::zeros({B}, DType::int32);
    for (std::int64_t b = 0; b < B; ++b) {
      const std::int32_t* w = where.data<std::int32_t>() + b * 3;
      const bool square = w[0] % 2 == 1;
      const std::int64_t height = square ? 6 : 2, width = square ? 6 : 18, row = 2 + w[1] * 2, col = 2 + w[2];
      y.data<std::int32_t>()[b] = square;
      for (std::int64_t r = row; r < row + height; ++r)
        for (std::int64_t c = col; c < col + width; ++c) x.data<float>()[(b * 32 + r) * 32 + c] += 1.0f;
    }
    return Stack{x, y, Tensor::ones({B})};
  };
  std::ostringstream out;
  train::Loop loop(WideResnet({.n_blocks = 1, .n_output_classes = 2}),
                   {{.labeled_data = squares, .loss_layer = layers::WeightedCategoryCrossEntropy(),
                     .optimizer = train::Adam({.learning_rate = 0.003}), .n_steps_per_checkpoint = 40}},
                   {.eval_tasks = {{.labeled_data = [&](std::int64_t i) { return squares(1000 + i); },
                                    .metrics = {layers::WeightedCategoryAccuracy()}, .n_eval_batches = 4}},
                    .out = &out});
  loop.run(40);
  const double acc = loop.last_value("eval", "WeightedCategoryAccuracy");
  MESSAGE("WideResnet held-out accuracy after 40 steps: " << acc);
  CHECK(acc > 0.9);   // evaluated in eval mode: BatchNorm's running statistics
}

TEST_CASE("SentenceCNN (Kim 2014): filters of widths 3, 4, 5 over the embeddings, max over time, its parameters by hand") {
  auto cnn = SentenceCNN(1000, 2, {.d_model = 32, .n_filters = 10});
  CHECK(cnn->init(ShapeDtype{{4, 16}, DType::int32})[0].shape == Shape{4, 2});
  // Embedding 1000·32; per width w a Conv1d of w·32·10 + 10; the Dense from 3·10 to 2.
  CHECK(cnn->n_params() == 1000 * 32 + (3 + 4 + 5) * 32 * 10 + 3 * 10 + dense_params(30, 2));
  const std::string tree = cnn->to_string();
  CHECK(tree.find("Embedding_1000_32") != std::string::npos);
  CHECK(tree.find("Concatenate_in3") != std::string::npos);
  // A filter fires wherever its phrase stands: moving the tokens along (padding after) keeps the logits.
  auto eval = SentenceCNN(20, 2, {.d_model = 8, .n_filters = 4, .mode = Mode::eval});
  const Tensor a = tensor({3, 5, 7, 9, 0, 0, 0, 0}, {1, 8}), b = tensor({0, 0, 3, 5, 7, 9, 0, 0}, {1, 8});
  eval->init(ShapeDtype{{1, 8}, DType::int32}, Rng(2));
  const auto la = (*eval)(Stack{a})[0].to_doubles(), lb = (*eval)(Stack{b})[0].to_doubles();
  CHECK(la[0] != lb[0]);   // the padding's own windows differ, so not exactly equal ...
  auto shift = SentenceCNN(20, 2, {.d_model = 8, .widths = {2}, .n_filters = 4, .mode = Mode::eval});
  shift->init(ShapeDtype{{1, 8}, DType::int32}, Rng(2));
  const Tensor c = tensor({3, 5, 3, 5, 3, 5, 3, 5}, {1, 8}), d = tensor({5, 3, 5, 3, 5, 3, 5, 3}, {1, 8});
  // ... but a text made of one repeated pair reads the same windows wherever it starts.
  testing::expect_close((*shift)(Stack{c})[0], (*shift)(Stack{d})[0], 1e-6);
}

TEST_CASE("MaskedLMEmbeddingInSentenceCNN: a masked LM's embedding table becomes the CNN's (Kim's CNN-non-static)") {
  TempDir dir;
  const TransformerConfig c{.d_model = 8, .d_ff = 16, .n_layers = 1, .n_heads = 2, .max_len = 16,
                            .scale_embeddings = true};
  auto mlm = MaskedLM(11, c);
  mlm->init(Signature{ShapeDtype{{2, 6}, DType::int32}, ShapeDtype{{2, 1}, DType::int32}}, Rng(1));
  train::save_checkpoint(dir / "mlm.safetensors", *mlm, {}, {});
  auto cnn = SentenceCNN(11, 2, {.d_model = 8, .n_filters = 3});
  cnn->init(ShapeDtype{{2, 6}, DType::int32}, Rng(2));
  const auto before = cnn->named_weights();
  const train::LoadReport report =
      train::load_matching_weights(dir / "mlm.safetensors", *cnn, MaskedLMEmbeddingInSentenceCNN(11, c));
  REQUIRE(report.loaded == std::vector<std::string>{"Serial/Embedding_11_8[0]/table"});
  CHECK(report.unused.size() == mlm->named_weights().size() - 1);   // the rest of the body and its guess
  CHECK(report.initialised.size() == before.size() - 1);            // the filters and the Dense
  const auto after = cnn->named_weights();
  CHECK(after[0].second.to_doubles() == mlm->named_weights()[0].second.to_doubles());
  for (std::size_t i = 1; i < after.size(); ++i) CHECK(after[i].second.to_doubles() == before[i].second.to_doubles());
  // A CNN of another width cannot take the table: its embedding's name carries the width, so the
  // mapped name is none of its weights, and the load says so, naming it.
  auto wide = SentenceCNN(11, 2, {.d_model = 16, .n_filters = 3});
  wide->init(ShapeDtype{{2, 6}, DType::int32}, Rng(2));
  std::string message;
  try {
    train::load_matching_weights(dir / "mlm.safetensors", *wide, MaskedLMEmbeddingInSentenceCNN(11, c));
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  CHECK_MESSAGE(message.find("no weight of") != std::string::npos, message);
  CHECK_MESSAGE(message.find("Serial/Embedding_11_8[0]/table") != std::string::npos, message);
}

#include <doctest/doctest.h>

#include "core/layer/combinators.hpp"
#include "layers/attention.hpp"
#include "layers/batch_norm.hpp"
#include "layers/causal_attention.hpp"
#include "layers/dense.hpp"
#include "layers/positional_encoding.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("CausalAttention is built and printed as in Trax") {
  CHECK(CausalAttention(8, {.n_heads = 2})->to_string() ==
        "Serial[\n"
        "  Branch_out3[\n"
        "    Serial[\n"
        "      Dense_8\n"
        "      SplitIntoHeads\n"
        "    ]\n"
        "    Serial[\n"
        "      Dense_8\n"
        "      SplitIntoHeads\n"
        "    ]\n"
        "    Serial[\n"
        "      Dense_8\n"
        "      SplitIntoHeads\n"
        "    ]\n"
        "  ]\n"
        "  DotProductCausalAttention_in3\n"
        "  MergeHeads\n"
        "  Dense_8\n"
        "]");
  CHECK_THROWS_WITH_AS(CausalAttention(10, {.n_heads = 3}), doctest::Contains("(10) is not a multiple"),
                       std::invalid_argument);
}

TEST_CASE("a position never sees the future: changing token 3 leaves outputs 0..2 alone") {
  auto att = CausalAttention(6, {.n_heads = 2});
  const Tensor x = randn({2, 4, 6}, 1);
  const Tensor y = init_and_run(att, {x})[0];
  Tensor x2 = x.clone();
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 6; ++i) x2.data<double>()[b * 24 + 18 + i] += 5.0;
  const Tensor y2 = (*att)(x2);
  expect_close(slice(y2, 1, 0, 3), slice(y, 1, 0, 3), 1e-12);
  CHECK(slice(y2, 1, 3, 4).to_doubles() != slice(y, 1, 3, 4).to_doubles());
}

TEST_CASE("predict mode with the KV cache reproduces eval mode, token by token and in chunks") {
  const Tensor x = randn({2, 5, 8}, 3);
  auto eval = CausalAttention(8, {.n_heads = 2, .max_inference_length = 16, .mode = Mode::eval});
  const Tensor expected = init_and_run(eval, {x}, 4)[0];
  auto predict = CausalAttention(8, {.n_heads = 2, .max_inference_length = 16, .mode = Mode::predict});
  predict->init(ShapeDtype{{2, 1, 8}, DType::float64}, Rng(4));
  predict->set_all_weights(eval->all_weights());
  SUBCASE("one position per call") {
    for (int t = 0; t < 5; ++t)
      expect_close((*predict)(slice(x, 1, t, t + 1)), slice(expected, 1, t, t + 1), 1e-10);
  }
  SUBCASE("a prompt of three, then one at a time") {
    expect_close((*predict)(slice(x, 1, 0, 3)), slice(expected, 1, 0, 3), 1e-10);
    for (int t = 3; t < 5; ++t)
      expect_close((*predict)(slice(x, 1, t, t + 1)), slice(expected, 1, t, t + 1), 1e-10);
  }
}

TEST_CASE("the KV cache reports overflow with its size") {
  auto att = CausalAttention(4, {.n_heads = 1, .max_inference_length = 3, .mode = Mode::predict});
  att->init(ShapeDtype{{1, 1, 4}});
  (*att)(Tensor::zeros({1, 2, 4}));
  CHECK_THROWS_WITH_AS((*att)(Tensor::zeros({1, 2, 4})),
                       doctest::Contains("max_inference_length = 3 positions; 2 are filled and 2 more"),
                       LayerError);
}

TEST_CASE("the KV cache rejects a batch it was not initialised for") {
  auto att = CausalAttention(4, {.n_heads = 1, .max_inference_length = 8, .mode = Mode::predict});
  att->init(ShapeDtype{{1, 1, 4}});
  CHECK_THROWS_WITH_AS((*att)(Tensor::zeros({3, 1, 4})), doctest::Contains("re-initialise"),
                       LayerError);
}

TEST_CASE("CausalAttention passes the gradient checker") {
  auto att = CausalAttention(4, {.n_heads = 2});
  att->init(ShapeDtype{{2, 3, 4}, DType::float64});
  expect_layer_gradients(att, {randn({2, 3, 4})});
}

TEST_CASE("ConfigurableAttention with Dense projections and DotProductCausalAttention is CausalAttention") {
  auto configurable = ConfigurableAttention(Dense(8), Dense(8), Dense(8), Dense(8), DotProductCausalAttention(), 2);
  auto causal = CausalAttention(8, {.n_heads = 2});
  CHECK(configurable->to_string() == causal->to_string());
  const Tensor x = randn({2, 5, 8}, 51);
  const Tensor y = init_and_run(causal, {x}, 52)[0];
  init_and_run(configurable, {x});
  configurable->set_all_weights(causal->all_weights());
  expect_close((*configurable)(x), y, 1e-13);
  expect_layer_gradients(configurable, {randn({1, 3, 8}, 53)});
  CHECK_THROWS_WITH_AS(ConfigurableAttention(Dense(8), nullptr, Dense(8), Dense(8), DotProductCausalAttention()),
                       doctest::Contains("give all five layers"), std::invalid_argument);
}

TEST_CASE("a layer keeping decoding state at two places of a predict-mode tree is refused at init, naming both") {
  // One CausalAttention used twice: in predict mode both places would write their keys into its one KV
  // cache and count each token twice — every token wrong, in silence (Trax shares the state too).
  auto attention = CausalAttention(8, {.n_heads = 2, .mode = Mode::predict});
  auto model = Serial(Dense(8), attention, attention);
  try {
    model->init(ShapeDtype{{1, 1, 8}});
    FAIL("a KV cache shared at two places was accepted");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.starts_with("Serial: the layer Serial created at tests/layers/test_causal_attention.cpp:"));
    CHECK(what.find("sits at two places of the tree (Serial/Serial[1] and Serial/Serial[2]) and keeps decoding "
                    "state") != std::string::npos);
  }
  // The same sharing in eval mode is Trax's weight sharing, as are a shared Dense and, in predict mode,
  // a shared BatchNorm (its running statistics are read, never written, outside training).
  auto eval_attention = CausalAttention(8, {.n_heads = 2, .mode = Mode::eval});
  CHECK_NOTHROW(Serial(eval_attention, eval_attention)->init(ShapeDtype{{1, 3, 8}}));
  auto dense = Dense(8);
  auto predict_attention = CausalAttention(8, {.n_heads = 2, .mode = Mode::predict});
  CHECK_NOTHROW(Serial(dense, predict_attention, dense)->init(ShapeDtype{{1, 1, 8}}));
  auto norm = BatchNorm({.axis = {0, 1}, .mode = Mode::predict});
  CHECK_NOTHROW(Serial(norm, Dense(8), norm)->init(ShapeDtype{{1, 1, 8}}));
  // Initialised in train mode and set to predict after: reset_state (start_decoding's) refuses it.
  auto trained_attention = CausalAttention(8, {.n_heads = 2});
  auto trained = Serial(trained_attention, trained_attention);
  trained->init(ShapeDtype{{1, 3, 8}});
  trained->set_mode(Mode::predict);
  CHECK_THROWS_WITH_AS(trained->reset_state({ShapeDtype{{1, 1, 8}}}),
                       doctest::Contains("sits at two places of the tree"), std::invalid_argument);
  // A position counter too: PositionalEncoding in predict mode.
  auto positions = PositionalEncoding(16, {.mode = Mode::predict});
  CHECK_THROWS_WITH_AS(Serial(positions, Dense(8), positions)->init(ShapeDtype{{1, 1, 8}}),
                       doctest::Contains("(Serial/PositionalEncoding[0] and Serial/PositionalEncoding[2])"),
                       std::invalid_argument);
}

#include <doctest/doctest.h>

#include <cmath>

#include "layers/attention.hpp"
#include "layers/causal_attention.hpp"
#include "layers/heads.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("dot_product_attention on literal values: softmax(q·kᵀ/√d)·v") {
  const Tensor q = tensor({1.f, 0.f}, {1, 1, 2});
  const Tensor k = tensor({1.f, 0.f, 0.f, 1.f}, {1, 2, 2});
  const Tensor val = tensor({10.f, 20.f}, {1, 2, 1});
  const double p0 = std::exp(1 / std::sqrt(2.0)) / (std::exp(1 / std::sqrt(2.0)) + 1);
  expect_tensor(dot_product_attention(q, k, val, Tensor(), 0, Mode::eval, Rng(0)), {1, 1, 1},
                {10 * p0 + 20 * (1 - p0)}, 1e-5);
  // masking key 0 leaves all weight on key 1
  const Tensor mask = tensor({false, true}, {1, 1, 2});
  expect_tensor(dot_product_attention(q, k, val, mask, 0, Mode::eval, Rng(0)), {1, 1, 1}, {20});
  // every key masked: −1e9 everywhere gives a uniform average, not NaN
  const Tensor none = tensor({false, false}, {1, 1, 2});
  expect_tensor(dot_product_attention(q, k, val, none, 0, Mode::eval, Rng(0)), {1, 1, 1}, {15});
}

TEST_CASE("attention dropout acts in train mode only, reproducibly") {
  const Tensor q = randn({1, 4, 8}, 1), k = randn({1, 6, 8}, 2), val = randn({1, 6, 8}, 3);
  const Tensor eval = dot_product_attention(q, k, val, Tensor(), 0.5, Mode::eval, Rng(1));
  const Tensor a = dot_product_attention(q, k, val, Tensor(), 0.5, Mode::train, Rng(1));
  const Tensor b = dot_product_attention(q, k, val, Tensor(), 0.5, Mode::train, Rng(1));
  expect_close(a, b);
  CHECK(a.to_doubles() != eval.to_doubles());
  expect_close(dot_product_attention(q, k, val, Tensor(), 0.0, Mode::train, Rng(1)), eval);
}

TEST_CASE("PureAttention attends per head and passes the mask through") {
  const Tensor q = randn({2, 3, 4}, 1), k = randn({2, 5, 4}, 2), val = randn({2, 5, 4}, 3);
  const Tensor mask = tensor({true, true, false, true, false, true, true, true, true, false},
                             {2, 1, 1, 5});
  auto pa = PureAttention({.n_heads = 2});
  CHECK(pa->to_string() == "PureAttention_in4_out2");
  const Stack out = init_and_run(pa, {q, k, val, mask});
  CHECK(out.size() == 2);
  CHECK(out[1].same_as(mask));
  const Tensor expected = merge_heads(dot_product_attention(
      split_heads(q, 2), split_heads(k, 2), split_heads(val, 2), mask, 0, Mode::eval, Rng(0)));
  expect_close(out[0], expected, 1e-12);
}

TEST_CASE("a padding key changes nothing when masked") {
  const Tensor q = randn({1, 2, 4}, 1), k = randn({1, 3, 4}, 2), val = randn({1, 3, 4}, 3);
  const Tensor mask = tensor({true, true, false}, {1, 1, 1, 3});
  auto pa = PureAttention({.n_heads = 2});
  const Tensor before = init_and_run(pa, {q, k, val, mask})[0];
  Tensor k2 = k.clone(), v2 = val.clone();
  for (int i = 8; i < 12; ++i) k2.data<double>()[i] = v2.data<double>()[i] = 100.0 + i;
  expect_close((*pa)(Stack{q, k2, v2, mask})[0], before, 1e-12);
}

TEST_CASE("PureAttention checks d_model against n_heads as Trax does") {
  const ShapeDtype x{{1, 2, 6}};
  CHECK_THROWS_WITH_AS(PureAttention({.n_heads = 4})->init({x, x, x, ShapeDtype{{1, 1, 1, 2}, DType::bool_}}),
                       doctest::Contains("is not a multiple of the requested number of attention heads (4)"),
                       LayerError);
}

TEST_CASE("Attention and AttentionQKV are built and printed as in Trax") {
  CHECK(Attention(8, {.n_heads = 2})->to_string() ==
        "Serial_in2_out2[\n"
        "  Select[0,0,0]_out3\n"
        "  Serial_in4_out2[\n"
        "    Parallel_in3_out3[\n"
        "      Dense_8\n"
        "      Dense_8\n"
        "      Dense_8\n"
        "    ]\n"
        "    PureAttention_in4_out2\n"
        "    Dense_8\n"
        "  ]\n"
        "]");
  CHECK(AttentionQKV(8, {.n_heads = 2, .mode = Mode::predict, .cache_KV_in_predict = true})->to_string().find("Cache[\n      Dense_8\n    ]") !=
        std::string::npos);
  CHECK(AttentionQKV(8, {.n_heads = 2, .mode = Mode::eval, .cache_KV_in_predict = true})->to_string().find("Cache") == std::string::npos);
}

TEST_CASE("Attention maps (x, mask) to (y, mask) with 4·(d² + d) weights") {
  auto att = Attention(8, {.n_heads = 2});
  const Tensor x = randn({2, 3, 8});
  const Tensor mask = tensor({true, true, false, true, true, true}, {2, 1, 1, 3});
  att->init(signature_of(Stack{x, mask}));
  CHECK(att->n_params() == 4 * (8 * 8 + 8));
  const Stack out = (*att)(Stack{x, mask});
  CHECK(out[0].shape() == Shape{2, 3, 8});
  CHECK(out[1].same_as(mask));
}

TEST_CASE("the attention layers pass the gradient checker") {
  const Tensor mask = tensor({true, true, false, true, true, true}, {2, 1, 1, 3});
  SUBCASE("DotProductAttention") {
    auto l = DotProductAttention();
    const Stack in{randn({2, 3, 4}, 1), randn({2, 3, 4}, 2), randn({2, 3, 4}, 3), tensor({true, false, true, true, true, true, true, true, true}, {1, 3, 3})};
    l->init(signature_of(in));
    expect_layer_gradients(l, in);
  }
  SUBCASE("PureAttention") {
    auto l = PureAttention({.n_heads = 2});
    const Stack in{randn({2, 3, 4}, 1), randn({2, 3, 4}, 2), randn({2, 3, 4}, 3), mask};
    l->init(signature_of(in));
    expect_layer_gradients(l, in);
  }
  SUBCASE("AttentionQKV") {
    auto l = AttentionQKV(4, {.n_heads = 2});
    const Stack in{randn({2, 3, 4}, 1), randn({2, 3, 4}, 2), randn({2, 3, 4}, 3), mask};
    l->init(signature_of(in));
    expect_layer_gradients(l, in);
  }
  SUBCASE("Attention") {
    auto l = Attention(4, {.n_heads = 2});
    const Stack in{randn({2, 3, 4}, 1), mask};
    l->init(signature_of(in));
    expect_layer_gradients(l, in);
  }
}

TEST_CASE("one AttentionOptions: a field the layer does not read is refused, naming the layer and the field") {
  CHECK_THROWS_WITH_AS(Attention(8, {.n_heads = 2, .max_inference_length = 16}),
                       "Attention: .max_inference_length = 16 is CausalAttention's option (its KV cache); Attention "
                       "has no KV cache",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(PureAttention({.cache_KV_in_predict = true}),
                       "PureAttention: .cache_KV_in_predict is AttentionQKV's option; PureAttention does not read it",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(CausalAttention(8, {.n_heads = 2, .cache_KV_in_predict = true}),
                       "CausalAttention: .cache_KV_in_predict is AttentionQKV's option; CausalAttention does not read it",
                       std::invalid_argument);
  CHECK_NOTHROW(AttentionQKV(8, {.n_heads = 2, .mode = Mode::predict, .cache_KV_in_predict = true}));
  CHECK_NOTHROW(CausalAttention(8, {.n_heads = 2, .max_inference_length = 16}));
}

#include <doctest/doctest.h>

#include <cmath>

#include "core/layer/trace.hpp"
#include "layers/attention.hpp"
#include "layers/attention_weights.hpp"
#include "layers/causal_attention.hpp"
#include "layers/heads.hpp"
#include "layers/masks.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

namespace {

// softmax(where(mask, q kᵀ/√d, −1e9)) by separate ops: the independent path.
Tensor weights_by_hand(const Tensor& q, const Tensor& k, const Tensor& mask) {
  const Tensor scores = matmul(q, k, false, true) * Tensor::scalar(1.0 / std::sqrt(static_cast<double>(q.dim(-1))), q.dtype());
  return softmax(where(mask, scores, Tensor::full(scores.shape(), -1e9, scores.dtype())));
}

}  // namespace

TEST_CASE("attention_weights of CausalAttention: the layer's own softmax, causal, rows summing to 1") {
  auto att = CausalAttention(8, {.n_heads = 2, .mode = Mode::eval});
  const Tensor x = randn({2, 5, 8}, 3);
  att->init(signature_of(Stack{x}), Rng(0));
  const auto w = attention_weights(*att, {x}, 2);
  REQUIRE(w.size() == 1);
  CHECK(w[0].layer == "DotProductCausalAttention");
  REQUIRE(w[0].weights.shape() == Shape{2, 2, 5, 5});
  // The same q and k, read by a Trace, through matmul and softmax.
  Trace trace({"DotProductCausalAttention"});
  (*att)(Stack{x});
  REQUIRE(trace.kept().size() == 1);
  const Stack& in = trace.kept()[0].inputs;
  const Tensor expected = reshape(weights_by_hand(in[0], in[1], causal_mask(5)), {2, 2, 5, 5});
  expect_close(w[0].weights, expected, 1e-12);
  const auto a = w[0].weights.to_doubles();
  for (int row = 0; row < 2 * 2 * 5; ++row) {
    const int i = row % 5;
    double total = 0;
    for (int j = 0; j < 5; ++j) {
      total += a[static_cast<std::size_t>(row * 5 + j)];
      if (j > i) CHECK(a[static_cast<std::size_t>(row * 5 + j)] == 0.0);   // the future: exactly 0
    }
    CHECK(total == doctest::Approx(1.0).epsilon(1e-12));
  }
}

TEST_CASE("attention_weights of Attention with a padding mask: per head, padded keys get 0") {
  auto att = Attention(6, {.n_heads = 3, .mode = Mode::eval});
  const Tensor x = randn({1, 4, 6}, 5);
  auto padding = PaddingMask();
  const Tensor tokens = Tensor::from_doubles({7, 8, 9, 0}, {1, 4}, DType::int32);   // key 3 is padding
  const Tensor mask = init_and_run(padding, {tokens})[0];
  (void)(Tensor::from_doubles({7, 8, 9, 0}, {1, 4}, DType::int32));   // key 3 is padding
  att->init(signature_of(Stack{x, mask}), Rng(1));
  const auto w = attention_weights(*att, {x, mask}, 3);
  REQUIRE(w.size() == 1);
  CHECK(w[0].layer == "PureAttention");
  REQUIRE(w[0].weights.shape() == Shape{1, 3, 4, 4});
  Trace trace({"PureAttention"});
  (*att)(Stack{x, mask});
  const Stack& in = trace.kept().at(0).inputs;
  expect_close(w[0].weights, weights_by_hand(split_heads(in[0], 3), split_heads(in[1], 3), mask), 1e-12);
  const auto a = w[0].weights.to_doubles();
  for (int row = 0; row < 3 * 4; ++row) CHECK(a[static_cast<std::size_t>(row * 4 + 3)] == 0.0);
}

TEST_CASE("attention_weights refuses train and predict mode, and a wrong head count") {
  auto train = CausalAttention(4, {.n_heads = 2});
  const Tensor x = randn({1, 3, 4});
  train->init(signature_of(Stack{x}));
  CHECK_THROWS_WITH_AS(attention_weights(*train, {x}, 2), doctest::Contains("needs a model in eval mode, got"),
                       std::invalid_argument);
  auto eval = CausalAttention(4, {.n_heads = 2, .mode = Mode::eval});
  eval->init(signature_of(Stack{x}));
  CHECK_THROWS_WITH_AS(attention_weights(*eval, {x}, 3), doctest::Contains("not a multiple of n_heads 3"),
                       std::invalid_argument);
}

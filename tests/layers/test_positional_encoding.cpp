#include <doctest/doctest.h>

#include <cmath>

#include "layers/positional_encoding.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("the sinusoid table interleaves sin and cos at Trax's frequencies") {
  const Tensor pe = sinusoidal_table(3, 4);
  const double w1 = std::exp(-2.0 * std::log(10000.0) / 4);  // ω_1 = 10000^(-2/4) = 0.01
  expect_tensor(pe, {3, 4},
                {0, 1, 0, 1,
                 std::sin(1.0), std::cos(1.0), std::sin(w1), std::cos(w1),
                 std::sin(2.0), std::cos(2.0), std::sin(2 * w1), std::cos(2 * w1)},
                1e-6);
  CHECK_THROWS_AS(sinusoidal_table(3, 5), std::invalid_argument);
}

TEST_CASE("PositionalEncoding adds pe[0:L] to every batch row; the table is a trainable weight") {
  auto p = PositionalEncoding(8);
  const Tensor x = Tensor::zeros({2, 3, 4});
  const Tensor y = init_and_run(p, {x})[0];
  const Tensor pe = sinusoidal_table(3, 4);
  expect_close(slice(y, 0, 0, 1), reshape(pe, {1, 3, 4}));
  expect_close(slice(y, 0, 1, 2), reshape(pe, {1, 3, 4}));
  CHECK(p->weight_names() == std::vector<std::string>{"pe"});
  CHECK(p->weights()[0].shape() == Shape{8, 4});
  CHECK(p->weights()[0].requires_grad());
}

TEST_CASE("PositionalEncoding rejects sequences longer than max_len") {
  auto p = PositionalEncoding(4);
  CHECK_THROWS_WITH_AS(p->init(ShapeDtype{{1, 5, 2}}),
                       doctest::Contains("exceed max_len 4"), LayerError);
}

TEST_CASE("PositionalEncoding in predict mode counts positions across calls") {
  auto p = PositionalEncoding(8, {.mode = Mode::predict});
  p->init(ShapeDtype{{1, 1, 4}});
  const Tensor pe = sinusoidal_table(8, 4);
  const Tensor first = (*p)(Tensor::zeros({1, 2, 4}));   // positions 0, 1 (a prompt chunk)
  const Tensor second = (*p)(Tensor::zeros({1, 1, 4}));  // position 2
  expect_close(first, reshape(slice(pe, 0, 0, 2), {1, 2, 4}));
  expect_close(second, reshape(slice(pe, 0, 2, 3), {1, 1, 4}));
  p->init(ShapeDtype{{1, 1, 4}});  // re-initialising restarts at position 0
  expect_close((*p)(Tensor::zeros({1, 1, 4})), reshape(slice(pe, 0, 0, 1), {1, 1, 4}));
}

TEST_CASE("PositionalEncoding dropout drops encoding features for all positions, train mode only") {
  // Trax's default dropout_broadcast_dims (-2,) shares the mask along the length axis: a dropped
  // feature is dropped at every position.
  auto p = PositionalEncoding(16, {.dropout = 0.5});
  const Tensor y = init_and_run(p, {Tensor::zeros({1, 16, 64})}, 3)[0];
  const auto vals = y.to_doubles();
  const auto pe = sinusoidal_table(16, 64).to_doubles();
  int dropped = 0;
  for (int i = 0; i < 64; ++i) {
    const bool kept = vals[64 + i] != 0.0;  // position 1: pe is nonzero there
    dropped += !kept;
    for (int pos = 0; pos < 16; ++pos)
      CHECK(vals[pos * 64 + i] == doctest::Approx(kept ? 2 * pe[pos * 64 + i] : 0.0).epsilon(1e-5));
  }
  CHECK(dropped > 16);
  CHECK(dropped < 48);
  auto eval = PositionalEncoding(16, {.dropout = 0.5, .mode = Mode::eval});
  expect_close(init_and_run(eval, {Tensor::zeros({1, 16, 64})}, 3)[0],
               reshape(sinusoidal_table(16, 64), {1, 16, 64}));
}

TEST_CASE("PositionalEncoding passes the gradient checker") {
  auto p = PositionalEncoding(5);
  p->init(ShapeDtype{{2, 3, 4}, DType::float64});
  expect_layer_gradients(p, {randn({2, 3, 4})});
}

TEST_CASE("PositionalEmbedding: a learned (max_len, d) table from random, added like the sinusoids") {
  auto p = PositionalEmbedding(8);
  const Tensor x = Tensor::zeros({2, 3, 4});
  const Tensor y = init_and_run(p, {x}, 5)[0];
  CHECK(p->to_string() == "PositionalEmbedding");
  REQUIRE(p->weights().size() == 1);
  const Tensor table = p->weights()[0];
  CHECK(table.shape() == Shape{8, 4});
  CHECK(table.requires_grad());
  expect_close(slice(y, 0, 0, 1), reshape(slice(table, 0, 0, 3), {1, 3, 4}), 0.0);   // x + table[0:3]
  for (double v : table.to_doubles()) CHECK(std::abs(v) <= std::sqrt(3.0 / 4.0));   // scaled_uniform(1), fan 4
  CHECK_FALSE(table.to_doubles() == sinusoidal_table(8, 4).to_doubles());
  CHECK_THROWS_WITH_AS(init_and_run(PositionalEmbedding(2), {x}), doctest::Contains("exceed max_len 2 of PositionalEmbedding"),
                       LayerError);
}
